// Status and StatusOr: expected failures as values at library boundaries.
//
// Every message names the thing that failed (file, field path, value) and what
// was expected, so callers can print it as is. Thread-safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace fs::protocol {

class Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kCorruption, kIOError, kUnsupported, kCancelled };

  Status() = default;
  static Status ok() { return Status(); }
  static Status invalidArgument(std::string msg) { return {Code::kInvalidArgument, std::move(msg)}; }
  static Status notFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status corruption(std::string msg) { return {Code::kCorruption, std::move(msg)}; }
  static Status ioError(std::string msg) { return {Code::kIOError, std::move(msg)}; }
  static Status unsupported(std::string msg) { return {Code::kUnsupported, std::move(msg)}; }
  // The caller asked a long operation to stop (a cancel flag); not a failure of the input.
  static Status cancelled(std::string msg) { return {Code::kCancelled, std::move(msg)}; }

  bool isOk() const { return code_ == Code::kOk; }
  explicit operator bool() const { return isOk(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>" for logs; message() alone for users.
  std::string toString() const;
  // The same code with another message (a path rewritten for the user, a context added).
  Status withMessage(std::string msg) const { return {code_, std::move(msg)}; }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status explaining why there is none.
// REQUIRES: value() only when isOk().
template <class T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT
  bool isOk() const { return value_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace fs::protocol
