#include "util/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <stdexcept>
#include <vector>

namespace nnapi_convert {

// A failure of libcrypto here is an allocation failure or a broken library:
// nothing a user did, so it is an internal error.
Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    throw std::runtime_error("OpenSSL could not start a SHA-256 digest");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t size) {
  if (size > 0 && EVP_DigestUpdate(ctx_, data, size) != 1) {
    throw std::runtime_error("OpenSSL could not update a SHA-256 digest");
  }
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_, digest, &n) != 1) {
    throw std::runtime_error("OpenSSL could not finish a SHA-256 digest");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, size_t size) {
  Sha256 s;
  s.update(data, size);
  return s.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("could not read '" + path + "' for its SHA-256");
  Sha256 s;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    s.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error("could not read '" + path + "' for its SHA-256");
  return s.hex();
}

}  // namespace nnapi_convert
