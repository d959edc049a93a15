//===- FileDigest.h - SHA-256 of a file, the step libraries' integrity check (MLIR-free, libcrypto) --------===//
//
// A step description records the SHA-256 of its library file ("library_sha256", StepDescription.h); the loaders
// (CPUStepLibrary::open, GpuStepLibrary::open) compare it with the file's before handing the file to the dynamic
// loader, which would otherwise map a truncated or damaged shared object and die in it (SIGBUS, SIGSEGV). The digest
// is OpenSSL's (libcrypto's EVP interface): the compiler computes it with the same function when it writes the
// description.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_HOST_FILEDIGEST_H
#define DSA_RUNTIME_HOST_FILEDIGEST_H

#include "dsa/Support/Result.h"

#include <string>

namespace dsa::runtime {

/// The SHA-256 of the file at `path` as 64 lower-case hex digits. Errors: the file cannot be opened or read
/// ("cannot read '<path>': ..."), libcrypto fails.
Result<std::string> sha256OfFile(const std::string &path);

/// Whether `text` is a SHA-256 as sha256OfFile writes it (64 lower-case hex digits).
bool isSha256Hex(const std::string &text);

/// Checks the file at `path` against `expected` (sha256OfFile's form): an error naming the file and both digests
/// ("'<path>' has SHA-256 <actual>, the description records <expected> (the file was changed, truncated or
/// replaced after it was described)"), or the read error.
Status checkFileDigest(const std::string &path, const std::string &expected);

} // namespace dsa::runtime

#endif
