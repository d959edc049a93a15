//===- Result.h - value-or-error return type for the MLIR-free libraries -----===//
//
// The MLIR side of the project is compiled without C++ exceptions (LLVM_ENABLE_EH is OFF in Debian's LLVM), so
// the MLIR-free libraries (Numerics, golden harness, interpreter kernels, runtime) never let an exception cross
// their public API: every fallible call returns a dsa::Result<T> (or dsa::Status) that carries either the value or
// a message naming the bad field.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_SUPPORT_RESULT_H
#define DSA_SUPPORT_RESULT_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace dsa {

/// A failure message. Messages name the offending field/operand and the expected vs. actual value.
struct Error {
  std::string message;
};

inline Error makeError(std::string message) { return Error{std::move(message)}; }

/// Either a T or an Error.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Error error) : error_(std::move(error.message)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const std::string &error() const { return error_; }

  T &operator*() { assert(ok()); return *value_; }
  const T &operator*() const { assert(ok()); return *value_; }
  T *operator->() { assert(ok()); return &*value_; }
  const T *operator->() const { assert(ok()); return &*value_; }
  T take() { assert(ok()); return std::move(*value_); }

private:
  std::optional<T> value_;
  std::string error_;
};

/// Success or an Error.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : failed_(true), error_(std::move(error.message)) {}
  static Status success() { return Status(); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &error() const { return error_; }

private:
  bool failed_ = false;
  std::string error_;
};

} // namespace dsa

#endif // DSA_SUPPORT_RESULT_H
