#include "logapi/log_api.h"

#include <charconv>
#include <vector>

namespace ayatori::logapi {
namespace {

using nlohmann::json;

std::string GroupVersion() { return std::string(kGroup) + "/" + kVersion; }

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

// A DNS-1123 subdomain (Job names) or label (namespaces): lower-case alphanumerics, '-' and,
// for a subdomain, '.'; alphanumeric at both ends; at most 253 (63) characters.
bool IsDnsName(std::string_view s, bool allowDots, size_t maxLength) {
  if (s.empty() || s.size() > maxLength) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && !(allowDots && c == '.')) return false;
  }
  return true;
}

StatusOr<bool> ParseBool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v.empty()) return true;  // "?follow" alone means true
  if (v == "false" || v == "0") return false;
  return Status(StatusCode::kInvalidArgument, key + " must be true or false");
}

StatusOr<int64_t> ParseInt(const std::string& key, const std::string& v, int64_t min) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < min) {
    return Status(StatusCode::kInvalidArgument,
                  key + " must be an integer >= " + std::to_string(min));
  }
  return n;
}

}  // namespace

Route ParseRoute(std::string_view path) {
  const auto s = Segments(path);
  Route r;
  if (s.empty() || s[0] != "apis") return r;
  if (s.size() == 1) {
    r.kind = Route::Kind::kApiGroupList;
    return r;
  }
  if (s[1] != kGroup) return r;
  if (s.size() == 2) {
    r.kind = Route::Kind::kApiGroup;
    return r;
  }
  if (s[2] != kVersion) return r;
  if (s.size() == 3) {
    r.kind = Route::Kind::kApiResourceList;
  } else if (s.size() == 8 && s[3] == "namespaces" && s[5] == "jobs" && s[7] == "log" &&
             IsDnsName(s[4], false, 63) && IsDnsName(s[6], true, 253)) {
    r.kind = Route::Kind::kJobLog;
    r.namespace_ = std::string(s[4]);
    r.name = std::string(s[6]);
  }
  return r;
}

json ApiGroup() {
  json version = {{"groupVersion", GroupVersion()}, {"version", kVersion}};
  return {{"kind", "APIGroup"},
          {"apiVersion", "v1"},
          {"name", kGroup},
          {"versions", json::array({version})},
          {"preferredVersion", version}};
}

json ApiGroupList() {
  json group = ApiGroup();
  group.erase("kind");
  group.erase("apiVersion");
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array({group})}};
}

json ApiResourceList() {
  // Only the subresource: the Jobs themselves are the CRD's (execution.ayatori.ddupan.top).
  json log = {{"name", "jobs/log"},
              {"singularName", ""},
              {"namespaced", true},
              {"kind", "JobLog"},
              {"verbs", json::array({"get"})}};
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", GroupVersion()},
          {"resources", json::array({log})}};
}

StatusOr<LogOptions> ParseLogQuery(const std::multimap<std::string, std::string>& query) {
  LogOptions o;
  for (const auto& [key, value] : query) {
    if (key == "follow" || key == "timestamps") {
      auto b = ParseBool(key, value);
      if (!b.ok()) return b.status();
      (key == "follow" ? o.follow : o.timestamps) = *b;
    } else if (key == "tailLines" || key == "sinceSeconds") {
      auto n = ParseInt(key, value, key == "tailLines" ? 0 : 1);
      if (!n.ok()) return n.status();
      (key == "tailLines" ? o.tailLines : o.sinceSeconds) = *n;
    }
  }
  return o;
}

json StatusDocument(int code, const std::string& reason, const std::string& message,
                    const std::string& name) {
  json doc = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason},
              {"code", code}};
  if (!name.empty()) doc["details"] = {{"name", name}, {"group", kGroup}, {"kind", "jobs"}};
  return doc;
}

Status BackendErrorForReader(const Status& adapterError, const std::string& what,
                             const std::string& backend) {
  const char* category = nullptr;
  switch (adapterError.code()) {
    case StatusCode::kOk:
    case StatusCode::kNotFound:
    case StatusCode::kGone:
    case StatusCode::kForbidden:
    case StatusCode::kTooManyRequests:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kInvalidArgument:
      return adapterError;
    case StatusCode::kUnavailable:
      category = "unreachable";
      break;
    case StatusCode::kDeadlineExceeded:
      category = "timed out";
      break;
    case StatusCode::kServerError:
      category = "backend error";
      break;
    case StatusCode::kCancelled:
      category = "cancelled";
      break;
    default:
      category = "unexpected answer";
      break;
  }
  return Status(adapterError.code(),
                "the " + backend + " backend could not be reached for the log of " + what + " (" +
                    category + "); the controller's log has the details");
}

json LogSubjectAccessReview(const UserInfo& user, const std::string& ns, const std::string& name) {
  json spec = {{"user", user.name},
               {"groups", user.groups},
               {"resourceAttributes",
                {{"namespace", ns},
                 {"verb", "get"},
                 {"group", kGroup},
                 {"version", kVersion},
                 {"resource", "jobs"},
                 {"subresource", "log"},
                 {"name", name}}}};
  if (!user.extra.empty()) spec["extra"] = user.extra;
  return {
      {"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}};
}

Status ReviewVerdict(const json& review, const UserInfo& user, const std::string& ns,
                     const std::string& name) {
  const json status = review.value("status", json::object());
  if (status.is_object() && status.value("allowed", false) == true &&
      status.value("denied", false) == false) {
    return Status::Ok();
  }
  std::string message = "jobs." + std::string(kGroup) + " \"" + name + "\" is forbidden: User \"" +
                        user.name + "\" cannot get resource \"jobs/log\" in API group \"" + kGroup +
                        "\" in the namespace \"" + ns + "\"";
  const std::string reason = status.is_object() ? status.value("reason", std::string()) : "";
  if (!reason.empty()) message += ": " + reason;
  return Status(StatusCode::kForbidden, message);
}

}  // namespace ayatori::logapi
