#include "kube/resource.h"

namespace ayatori::kube {

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string ResourcePath(const ResourceRef& ref, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path =
      ref.group.empty() ? "/api/" + ref.version : "/apis/" + ref.group + "/" + ref.version;
  if (ref.namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += UrlEncode(ns);
  }
  path += "/";
  path += ref.resource;
  if (!name.empty()) {
    path += "/";
    path += UrlEncode(name);
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
    q += UrlEncode(v);
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

ResourceRef ConfigMapsResource() { return {"", "v1", "configmaps", true}; }
ResourceRef SecretsResource() { return {"", "v1", "secrets", true}; }
ResourceRef NamespacesResource() { return {"", "v1", "namespaces", false}; }
ResourceRef LeasesResource() { return {"coordination.k8s.io", "v1", "leases", true}; }
ResourceRef EventsResource() { return {"events.k8s.io", "v1", "events", true}; }
ResourceRef CustomResourceDefinitionsResource() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
}

}  // namespace ayatori::kube
