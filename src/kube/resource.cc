#include "kube/resource.h"

#include <algorithm>

#include "base/url.h"

namespace ayatori::kube {

std::string ResourcePath(const ResourceRef& ref, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path =
      ref.group.empty() ? "/api/" + ref.version : "/apis/" + ref.group + "/" + ref.version;
  if (ref.namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += base::PercentEncode(ns);
  }
  path += "/";
  path += ref.resource;
  if (!name.empty()) {
    path += "/";
    path += base::PercentEncode(name);
    if (!subresource.empty()) {
      path += "/";
      path += subresource;
    }
  }
  return path;
}

std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    q += q.empty() ? "?" : "&";
    q += k;
    q += "=";
    q += base::PercentEncode(v);
  }
  return q;
}

std::string ObjectKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

std::pair<std::string, std::string> SplitObjectKey(std::string_view key) {
  auto slash = key.find('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

Status ValidateNamespaceName(std::string_view ns) {
  const std::string quoted = "\"" + std::string(ns) + "\"";
  if (ns.empty()) return Status(StatusCode::kInvalidArgument, "a namespace name is empty");
  if (ns.size() > 63) {
    return Status(StatusCode::kInvalidArgument,
                  "namespace " + quoted + " is longer than 63 characters");
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : ns) {
    if (!alnum(c) && c != '-') {
      return Status(StatusCode::kInvalidArgument,
                    "namespace " + quoted +
                        " is not a valid name: only lowercase letters, digits and '-' (RFC 1123 "
                        "label)");
    }
  }
  if (!alnum(ns.front()) || !alnum(ns.back())) {
    return Status(StatusCode::kInvalidArgument,
                  "namespace " + quoted + " must start and end with a lowercase letter or digit");
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> ParseNamespaceList(std::string_view list) {
  std::vector<std::string> out;
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  if (trim(list).empty()) return out;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string_view name =
        trim(list.substr(start, comma == std::string_view::npos ? list.npos : comma - start));
    if (name.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "namespace list \"" + std::string(list) + "\" has an empty entry");
    }
    if (Status s = ValidateNamespaceName(name); !s.ok()) return s;
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return Status(StatusCode::kInvalidArgument,
                    "namespace \"" + std::string(name) + "\" is listed twice");
    }
    out.emplace_back(name);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

ResourceRef ConfigMapsResource() { return {"", "v1", "configmaps", true}; }
ResourceRef SecretsResource() { return {"", "v1", "secrets", true}; }
ResourceRef NamespacesResource() { return {"", "v1", "namespaces", false}; }
ResourceRef LeasesResource() { return {"coordination.k8s.io", "v1", "leases", true}; }
ResourceRef EventsResource() { return {"events.k8s.io", "v1", "events", true}; }
ResourceRef CustomResourceDefinitionsResource() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
}
ResourceRef BatchJobsResource() { return {"batch", "v1", "jobs", true}; }
ResourceRef PodsResource() { return {"", "v1", "pods", true}; }
ResourceRef CoreEventsResource() { return {"", "v1", "events", true}; }
ResourceRef SubjectAccessReviewsResource() {
  return {"authorization.k8s.io", "v1", "subjectaccessreviews", false};
}

}  // namespace ayatori::kube
