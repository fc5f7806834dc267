#include "logapi/front_proxy.h"

#include <algorithm>
#include <cctype>

namespace ayatori::logapi {
namespace {

using nlohmann::json;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Extra keys travel percent-encoded in header names (kube-apiserver escapes them); decoded as
// the apiserver's own request-header authenticator decodes them.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() &&
        std::isxdigit(static_cast<unsigned char>(s[i + 1])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2])) != 0) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// A data value holding a JSON array of strings; an absent key keeps `fallback`.
StatusOr<std::vector<std::string>> StringList(const json& data, const char* key,
                                              std::vector<std::string> fallback) {
  if (!data.contains(key)) return fallback;
  const json& v = data.at(key);
  if (!v.is_string())
    return Status(StatusCode::kInvalidArgument, std::string(key) + " is not a string");
  json list = json::parse(v.get<std::string>(), nullptr, false);
  if (!list.is_array()) {
    return Status(StatusCode::kInvalidArgument, std::string(key) + " is not a JSON array");
  }
  std::vector<std::string> out;
  for (const json& item : list) {
    if (!item.is_string()) {
      return Status(StatusCode::kInvalidArgument, std::string(key) + " holds a non-string");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

StatusOr<RequestHeaderConfig> RequestHeaderConfigFromConfigMap(const json& configMap) {
  const json data = configMap.value("data", json::object());
  const std::string where = std::string("ConfigMap ") + kAuthenticationConfigMapNamespace + "/" +
                            kAuthenticationConfigMapName;
  RequestHeaderConfig config;
  if (!data.is_object() || !data.contains("requestheader-client-ca-file") ||
      !data.at("requestheader-client-ca-file").is_string() ||
      data.at("requestheader-client-ca-file").get<std::string>().empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  where +
                      " has no requestheader-client-ca-file: kube-apiserver runs without "
                      "--requestheader-client-ca-file, so it cannot proxy to aggregated APIs");
  }
  config.clientCaPem = data.at("requestheader-client-ca-file").get<std::string>();
  struct Field {
    const char* key;
    std::vector<std::string>* out;
  };
  for (const Field& f :
       {Field{"requestheader-allowed-names", &config.allowedNames},
        Field{"requestheader-username-headers", &config.usernameHeaders},
        Field{"requestheader-group-headers", &config.groupHeaders},
        Field{"requestheader-extra-headers-prefix", &config.extraHeaderPrefixes}}) {
    auto list = StringList(data, f.key, *f.out);
    if (!list.ok())
      return Status(StatusCode::kInvalidArgument, where + ": " + list.status().message());
    *f.out = std::move(*list);
  }
  return config;
}

StatusOr<UserInfo> AuthenticateFrontProxy(const RequestHeaderConfig& config,
                                          const std::optional<std::string>& verifiedCommonName,
                                          const Headers& headers) {
  if (!verifiedCommonName) {
    return Status(StatusCode::kUnauthorized,
                  "no client certificate signed by the request-header client CA: only "
                  "kube-apiserver's front proxy may call this API");
  }
  if (!config.allowedNames.empty() &&
      std::find(config.allowedNames.begin(), config.allowedNames.end(), *verifiedCommonName) ==
          config.allowedNames.end()) {
    return Status(StatusCode::kUnauthorized,
                  "the client certificate's common name \"" + *verifiedCommonName +
                      "\" is not one of the request-header allowed names");
  }
  UserInfo user;
  for (const std::string& h : config.usernameHeaders) {
    for (const auto& [name, value] : headers) {
      if (user.name.empty() && EqualsIgnoreCase(name, h) && !value.empty()) user.name = value;
    }
  }
  if (user.name.empty()) {
    return Status(StatusCode::kUnauthorized, "the front proxy named no user (no username header)");
  }
  for (const auto& [name, value] : headers) {
    for (const std::string& h : config.groupHeaders) {
      if (EqualsIgnoreCase(name, h)) user.groups.push_back(value);
    }
    for (const std::string& prefix : config.extraHeaderPrefixes) {
      if (!prefix.empty() && StartsWithIgnoreCase(name, prefix) && name.size() > prefix.size()) {
        user.extra[Lower(Unescape(std::string_view(name).substr(prefix.size())))].push_back(value);
      }
    }
  }
  return user;
}

}  // namespace ayatori::logapi
