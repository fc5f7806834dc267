// Decoding of API errors: a metav1.Status body (or a bare HTTP status when the body is not one)
// becomes an ayatori::Status whose code is the Kubernetes error class, like client-go's
// k8s.io/apimachinery/pkg/api/errors (IsNotFound, IsConflict, IsGone, ...).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::kube {

struct StatusCause {
  std::string reason;  // FieldValueInvalid, FieldValueRequired, ...
  std::string message;
  std::string field;  // metadata.name, spec.task.image, ...
};

// The decoded metav1.Status of a failed request.
struct ApiError {
  StatusCode code = StatusCode::kInternal;
  int httpCode = 0;
  std::string reason;   // NotFound, AlreadyExists, Conflict, Expired, Invalid, Forbidden, ...
  std::string message;  // the server's message (it already lists the causes)
  std::vector<StatusCause> causes;
  int retryAfterSeconds = 0;  // details.retryAfterSeconds, 0 when absent

  Status ToStatus() const { return Status(code, message); }
};

// The error class of an HTTP status and metav1.Status reason (the reason wins when it is more
// specific: 409 AlreadyExists vs. 409 Conflict, 504 Timeout, reason Expired/Gone -> kGone).
StatusCode CodeFor(int httpCode, std::string_view reason);

// An HTTP status code and the metav1.Status reason that goes with it.
struct HttpError {
  int code = 500;
  std::string reason = "InternalError";
  bool operator==(const HttpError&) const = default;
};

// The HTTP error that stands for `code` (CodeFor's inverse, for servers and proxies that answer
// with an ayatori::Status): 400 BadRequest, 401, 403, 404, 409 AlreadyExists / Conflict, 410 Gone,
// 422 Invalid, 429, 503 ServiceUnavailable (unavailable, timed out, cancelled); every other code
// (an internal or a server error) 500 InternalError.
HttpError HttpErrorFor(StatusCode code);

// Decodes a failed response. `body` is usually a metav1.Status; anything else yields a message
// with the HTTP code and a short excerpt of the body.
ApiError DecodeApiError(int httpCode, std::string_view body);

// Decodes the object of a watch ERROR event (a metav1.Status).
ApiError DecodeStatusObject(const nlohmann::json& status);

}  // namespace ayatori::kube
