// Unit tests of the archive check (src/core/archive_check.cpp) that the CLI
// suites cannot see: resources across many refusals in one process.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/archive_check.h"
#include "nnapi_convert/conversion.h"

using nnapi_convert::check_torchscript_archive;
using nnapi_convert::ConvertError;

namespace {

int open_descriptors() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  while (readdir(d)) ++n;
  closedir(d);
  return n;
}

std::string write_file(const std::string& name, const std::string& bytes) {
  std::string path = ::testing::TempDir() + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

}  // namespace

// Found by fuzz_archive (docs/reliability.md): a zip refused while its
// directory was read (from Archive's constructor) left its file open, so a
// long-running process (the fuzzer, a batch) ran out of descriptors.
TEST(ArchiveCheck, ClosesTheFileOnEveryRefusal) {
  const std::string cases[] = {
      "PK\x03\x04 too short",                          // shorter than a zip's end record
      "PK\x03\x04" + std::string(100, 'x'),            // no end-of-central-directory record
      std::string("PK\x05\x06\0\0\0\0\1\0\1\0", 12) +  // a directory past the end
          std::string("\x2e\0\0\0\xff\xff\0\0\0\0", 10),
  };
  int i = 0;
  for (const std::string& bytes : cases) {
    const std::string path = write_file("archive_check_" + std::to_string(i++) + ".pt", bytes);
    const int before = open_descriptors();
    for (int k = 0; k < 200; ++k) {
      EXPECT_THROW(check_torchscript_archive(path, "model file"), ConvertError);
    }
    EXPECT_EQ(open_descriptors(), before) << "descriptors leaked on " << path;
    std::remove(path.c_str());
  }
}
