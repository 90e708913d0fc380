// What nnapi-convert does for durability after writing an output, for the
// floor programs' --durable: fsync of the file, then of its directory.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace bench {

// fsync of `path`, then of its directory; false on any failure.
inline bool sync_file_and_directory(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  bool ok = true;
  for (const std::string& p : {path, dir}) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    ok = ok && fd >= 0 && ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
  }
  return ok;
}

}  // namespace bench
