// SHA-256 (FIPS 180-4) of files and byte strings, as lowercase hex: the
// source file's and the output's digests in the self-describing metadata and
// in --report. Computed by OpenSSL's libcrypto, which uses the CPU's SHA
// instructions where it has them.
#pragma once

#include <cstddef>
#include <string>

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace nnapi_convert {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  std::string hex();  // finishes the digest; update() may not follow

 private:
  EVP_MD_CTX* ctx_;
};

std::string sha256_hex(const void* data, size_t size);
// Throws std::runtime_error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace nnapi_convert
