//===- FileDigest.cpp - SHA-256 of a file through libcrypto's EVP interface (MLIR-free) ---===//
#include "dsa/Runtime/Host/FileDigest.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace dsa::runtime {

Result<std::string> sha256OfFile(const std::string &path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file)
    return makeError("cannot read '" + path + "': " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX *)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    return makeError("SHA-256 of '" + path + "': libcrypto cannot start a digest");
  std::vector<unsigned char> chunk(1 << 16);
  size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), file.get())) > 0)
    if (EVP_DigestUpdate(ctx.get(), chunk.data(), n) != 1)
      return makeError("SHA-256 of '" + path + "': libcrypto failed");
  if (std::ferror(file.get()))
    return makeError("cannot read '" + path + "': read error");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1 || length != 32)
    return makeError("SHA-256 of '" + path + "': libcrypto failed");
  static const char hex[] = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < length; ++i) {
    text += hex[digest[i] >> 4];
    text += hex[digest[i] & 15];
  }
  return text;
}

bool isSha256Hex(const std::string &text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

Status checkFileDigest(const std::string &path, const std::string &expected) {
  Result<std::string> actual = sha256OfFile(path);
  if (!actual)
    return makeError(actual.error());
  if (*actual != expected)
    return makeError("'" + path + "' has SHA-256 " + *actual + ", the description records " + expected +
                     " (the file was changed, truncated or replaced after it was described)");
  return Status::success();
}

} // namespace dsa::runtime
