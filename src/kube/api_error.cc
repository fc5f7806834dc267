#include "kube/api_error.h"

#include <cstdint>
#include <string>

#include "ayatori/json_get.h"

namespace ayatori::kube {
namespace {

// An int field of a metav1.Status; 0 (absent) when out of range.
int IntOrZero(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX ? static_cast<int>(v) : 0; }

}  // namespace

StatusCode CodeFor(int httpCode, std::string_view reason) {
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "Expired" || reason == "Gone") return StatusCode::kGone;
  if (reason == "NotFound") return StatusCode::kNotFound;
  if (reason == "Conflict") return StatusCode::kConflict;
  if (reason == "Invalid") return StatusCode::kInvalid;
  if (reason == "Forbidden") return StatusCode::kForbidden;
  if (reason == "Unauthorized") return StatusCode::kUnauthorized;
  if (reason == "TooManyRequests") return StatusCode::kTooManyRequests;
  switch (httpCode) {
    case 400:
    case 405:
    case 406:
    case 413:
    case 415:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthorized;
    case 403:
      return StatusCode::kForbidden;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kConflict;
    case 410:
      return StatusCode::kGone;
    case 422:
      return StatusCode::kInvalid;
    case 429:
      return StatusCode::kTooManyRequests;
    default:
      break;
  }
  if (httpCode >= 500) return StatusCode::kServerError;
  if (httpCode >= 400) return StatusCode::kInvalidArgument;
  return StatusCode::kInternal;
}

HttpError HttpErrorFor(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
      return {400, "BadRequest"};
    case StatusCode::kUnauthorized:
      return {401, "Unauthorized"};
    case StatusCode::kForbidden:
      return {403, "Forbidden"};
    case StatusCode::kNotFound:
      return {404, "NotFound"};
    case StatusCode::kAlreadyExists:
      return {409, "AlreadyExists"};
    case StatusCode::kConflict:
      return {409, "Conflict"};
    case StatusCode::kGone:
      return {410, "Gone"};
    case StatusCode::kInvalid:
      return {422, "Invalid"};
    case StatusCode::kTooManyRequests:
      return {429, "TooManyRequests"};
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kCancelled:
      return {503, "ServiceUnavailable"};
    default:
      return {};
  }
}

ApiError DecodeStatusObject(const nlohmann::json& s) {
  ApiError e;
  // Fields of another type read as absent: the server's reply must not crash its client.
  e.httpCode = IntOrZero(GetInt(s, "code"));
  e.reason = GetString(s, "reason");
  e.message = GetString(s, "message");
  if (const nlohmann::json* details = GetObject(s, "details")) {
    e.retryAfterSeconds = IntOrZero(GetInt(*details, "retryAfterSeconds"));
    auto causes = details->find("causes");
    if (causes != details->end() && causes->is_array()) {
      for (const auto& c : *causes) {
        if (!c.is_object()) continue;
        e.causes.push_back(
            {GetString(c, "reason"), GetString(c, "message"), GetString(c, "field")});
      }
    }
  }
  e.code = CodeFor(e.httpCode, e.reason);
  if (e.message.empty()) {
    e.message = "the server reported " + (e.reason.empty() ? "an error" : e.reason) + " (HTTP " +
                std::to_string(e.httpCode) + ")";
  }
  return e;
}

ApiError DecodeApiError(int httpCode, std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (GetString(j, "kind") == "Status") {
    ApiError e = DecodeStatusObject(j);
    // The HTTP code is authoritative for the class when the body's code is missing or odd.
    if (e.httpCode == 0 || e.httpCode != httpCode) {
      e.httpCode = httpCode;
      e.code = CodeFor(httpCode, e.reason);
    }
    return e;
  }
  ApiError e;
  e.httpCode = httpCode;
  e.code = CodeFor(httpCode, "");
  std::string excerpt(body.substr(0, 200));
  for (char& c : excerpt) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  e.message = "HTTP " + std::to_string(httpCode) + (excerpt.empty() ? "" : ": " + excerpt);
  return e;
}

}  // namespace ayatori::kube
