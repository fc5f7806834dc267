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

// RETURN_IF_ERROR(expr): returns the Status of `expr` (a Status or a StatusOr) from the enclosing
// function when it is not OK. The function may return Status or any StatusOr.
#define RETURN_IF_ERROR(expr)                                              \
  do {                                                                     \
    if (auto ayatori_status_or_ = (expr); !ayatori_status_or_.ok()) {      \
      return ::ayatori::internal::StatusOf(std::move(ayatori_status_or_)); \
    }                                                                      \
  } while (false)

// ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a StatusOr<T>); when it is not OK returns its
// Status from the enclosing function, else moves the value into `lhs`, which may declare a
// variable (`ASSIGN_OR_RETURN(auto job, ParseJob(text));`). Expands to more than one statement:
// not for the body of an unbraced if.
#define ASSIGN_OR_RETURN(lhs, expr) \
  AYATORI_ASSIGN_OR_RETURN_IMPL_(AYATORI_STATUS_CONCAT_(ayatori_status_or_, __LINE__), lhs, expr)

#define AYATORI_STATUS_CONCAT_INNER_(a, b) a##b
#define AYATORI_STATUS_CONCAT_(a, b) AYATORI_STATUS_CONCAT_INNER_(a, b)
// `tmp` is a name and `lhs` may be a declaration ("auto job"): neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define AYATORI_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return std::move(tmp).status();       \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace ayatori::internal {
inline Status StatusOf(Status s) { return s; }
template <typename T>
Status StatusOf(StatusOr<T> s) {
  return s.status();
}
}  // namespace ayatori::internal
