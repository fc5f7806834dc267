// Status and StatusOr<T>: typed results without exceptions across library boundaries (Abseil
// style; C++20 has no std::expected). Codes mirror what callers branch on: the Kubernetes API
// error classes plus transport failures.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ayatori {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // bad input from a user or a file; message names the problem
  kNotFound,            // 404
  kAlreadyExists,       // 409 reason AlreadyExists
  kConflict,            // 409 (resourceVersion / precondition)
  kGone,                // 410: resourceVersion too old; relist
  kInvalid,             // 422: object rejected by validation
  kUnauthorized,        // 401
  kForbidden,           // 403
  kTooManyRequests,     // 429
  kServerError,         // 5xx
  kUnavailable,         // transport: connection refused, TLS, timeout
  kDeadlineExceeded,    // the caller's deadline passed
  kFailedPrecondition,  // the operation cannot run in the current state
  kInternal,            // a bug or an unexpected response
  kCancelled,           // shutdown
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ayatori
