// SHA-256 (FIPS 180-4) of files and byte strings, as lowercase hex: the
// source file's and the output's digests in the self-describing metadata and
// in --report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nnapi_convert {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex();  // finishes the digest; update() may not follow

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(const void* data, size_t size);
// Throws std::runtime_error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace nnapi_convert
