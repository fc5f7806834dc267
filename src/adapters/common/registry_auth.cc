#include "adapters/common/registry_auth.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/base64.h"

namespace ayatori::adapters {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string NormalizeHost(std::string_view host) {
  std::string h = Lower(host);
  if (h == "index.docker.io" || h == "registry-1.docker.io" || h == "registry.hub.docker.com") {
    return "docker.io";
  }
  return h;
}

// True when `s` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
// above U+10FFFF), which is what a JSON string can carry.
bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t more = 0;
    uint32_t cp = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
      more = 1;
      cp = lead & 0x1Fu;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      more = 2;
      cp = lead & 0x0Fu;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      more = 3;
      cp = lead & 0x07u;
    } else {
      return false;
    }
    if (s.size() - i <= more) return false;
    for (size_t k = 1; k <= more; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xC0u) != 0x80u) return false;
      cp = (cp << 6) | (next & 0x3Fu);
    }
    if ((more == 2 && cp < 0x800) || (more == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += more + 1;
  }
  return true;
}

bool IsRegistryComponent(std::string_view c) {
  return c.find('.') != std::string_view::npos || c.find(':') != std::string_view::npos ||
         c == "localhost";
}

// The OCI distribution reference grammar (github.com/distribution/reference, regexp.go), piece
// by piece: ParseImageReference splits the reference, these check each piece.
const std::regex& DomainPattern() {
  static const std::regex re(
      R"((?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|)"
      R"([a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?)");
  return re;
}
const std::regex& RemoteNamePattern() {
  static const std::regex re(R"([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)"
                             R"((?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)");
  return re;
}
const std::regex& TagPattern() {
  static const std::regex re(R"([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})");
  return re;
}
const std::regex& DigestPattern() {
  static const std::regex re(
      R"([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})");
  return re;
}

constexpr size_t kMaxNameLength = 255;

}  // namespace

std::string ImageReference::PullTag() const {
  if (!digest.empty()) return digest;
  if (!tag.empty()) return tag;
  return "latest";
}

StatusOr<ImageReference> ParseImageReference(std::string_view image) {
  auto invalid = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument,
                  "invalid image reference \"" + std::string(image) + "\": " + why);
  };
  if (image.empty()) return invalid("empty");
  for (char c : image) {
    if (std::isspace(static_cast<unsigned char>(c)) ||
        std::iscntrl(static_cast<unsigned char>(c))) {
      return invalid("contains whitespace or control characters");
    }
  }
  ImageReference ref;
  std::string_view rest = image;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (ref.digest.find(':') == std::string::npos) return invalid("digest must be algorithm:hex");
  }
  auto slash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    ref.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (ref.tag.empty()) return invalid("empty tag");
  }
  if (rest.empty() || rest.front() == '/' || rest.back() == '/' ||
      rest.find("//") != std::string_view::npos) {
    return invalid("empty name component");
  }
  if (rest.size() > kMaxNameLength) {
    return invalid("the repository name is longer than " + std::to_string(kMaxNameLength));
  }
  ref.name = std::string(rest);
  auto first = rest.find('/');
  if (first != std::string_view::npos && IsRegistryComponent(rest.substr(0, first))) {
    const std::string domain(rest.substr(0, first));
    if (!std::regex_match(domain, DomainPattern())) {
      return invalid("\"" + domain + "\" is not a registry host[:port]");
    }
    ref.registry = NormalizeHost(domain);
    ref.path = std::string(rest.substr(first + 1));
  } else {
    ref.registry = "docker.io";
    ref.path = std::string(rest);
  }
  if (!std::regex_match(ref.path, RemoteNamePattern())) {
    return invalid(
        "the repository path must be lower-case letters and digits, separated by '.', '_', "
        "'__', '-' within a component and '/' between components");
  }
  if (!ref.tag.empty() && !std::regex_match(ref.tag, TagPattern())) {
    return invalid("the tag must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'");
  }
  if (!ref.digest.empty() && !std::regex_match(ref.digest, DigestPattern())) {
    return invalid("the digest must be algorithm:hex (e.g. sha256: and 64 hex digits)");
  }
  if (ref.registry == "docker.io" && ref.path.find('/') == std::string::npos) {
    ref.path = "library/" + ref.path;
  }
  return ref;
}

bool ImageNamedBy(const nlohmann::json& inspect, const ImageReference& ref) {
  auto matches = [&](const char* field, bool byDigest) {
    auto it = inspect.find(field);
    if (!inspect.is_object() || it == inspect.end() || !it->is_array()) return false;
    for (const auto& entry : *it) {
      if (!entry.is_string()) continue;
      auto named = ParseImageReference(entry.get<std::string>());
      if (!named.ok() || named->registry != ref.registry || named->path != ref.path) continue;
      if (byDigest ? named->digest == ref.digest : named->PullTag() == ref.PullTag()) return true;
    }
    return false;
  };
  return ref.digest.empty() ? matches("RepoTags", false) : matches("RepoDigests", true);
}

RegistryKey NormalizeRegistryKey(std::string_view key) {
  for (std::string_view scheme : {"https://", "http://"}) {
    if (key.substr(0, scheme.size()) == scheme) {
      key.remove_prefix(scheme.size());
      break;
    }
  }
  RegistryKey out;
  auto slash = key.find('/');
  out.host = NormalizeHost(key.substr(0, slash));
  if (slash != std::string_view::npos) {
    std::string_view path = key.substr(slash + 1);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    // Legacy index URLs ("https://index.docker.io/v1/") name the registry, not a repository.
    if (path != "v1" && path != "v2") out.pathPrefix = std::string(path);
  }
  return out;
}

StatusOr<std::optional<RegistryCredentials>> SelectRegistryCredentials(
    const std::vector<SensitiveString>& dockerConfigJsons, const ImageReference& image) {
  if (dockerConfigJsons.empty()) return std::optional<RegistryCredentials>();
  std::optional<RegistryCredentials> best;
  size_t bestPrefix = 0;
  std::vector<std::string> covered;
  for (size_t i = 0; i < dockerConfigJsons.size(); ++i) {
    const std::string where = "imagePullSecrets[" + std::to_string(i) + "]";
    auto doc = nlohmann::json::parse(dockerConfigJsons[i].reveal(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      return Status(StatusCode::kInvalidArgument,
                    where + " is not a valid .dockerconfigjson (not a JSON object)");
    }
    auto auths = doc.find("auths");
    if (auths == doc.end() || !auths->is_object()) {
      return Status(StatusCode::kInvalidArgument,
                    where + " is not a valid .dockerconfigjson (no \"auths\" object)");
    }
    for (const auto& item : auths->items()) {
      // Named, not a structured binding: clang 14 cannot capture a binding in the lambda below.
      const std::string& key = item.key();
      const nlohmann::json& entry = item.value();
      RegistryKey rk = NormalizeRegistryKey(key);
      const std::string entryName = where + " entry \"" + key + "\"";
      if (!entry.is_object()) {
        return Status(StatusCode::kInvalidArgument, entryName + " is not an object");
      }
      RegistryCredentials creds;
      creds.serverAddress = rk.host == "docker.io" ? "https://index.docker.io/v1/" : rk.host;
      auto str = [&](const char* field) -> std::optional<std::string> {
        auto it = entry.find(field);
        if (it == entry.end() || !it->is_string()) return std::nullopt;
        return it->get<std::string>();
      };
      if (auto auth = str("auth"); auth && !auth->empty()) {
        auto decoded = base::Base64Decode(*auth);
        auto sep = decoded.ok() ? decoded->find(':') : std::string::npos;
        if (!decoded.ok() || sep == std::string::npos) {
          return Status(StatusCode::kInvalidArgument,
                        entryName + ": \"auth\" is not base64 of username:password");
        }
        // The engine gets them as JSON strings (RegistryAuthHeaderValue), which must be UTF-8.
        if (!IsUtf8(*decoded)) {
          return Status(StatusCode::kInvalidArgument,
                        entryName + ": \"auth\" decodes to a username:password that is not UTF-8");
        }
        creds.username = decoded->substr(0, sep);
        creds.password = SensitiveString(decoded->substr(sep + 1));
      } else if (auto user = str("username"); user && !user->empty()) {
        creds.username = *user;
        creds.password = SensitiveString(str("password").value_or(""));
      } else if (auto token = str("identitytoken"); token && !token->empty()) {
        creds.identityToken = SensitiveString(*token);
      } else {
        return Status(StatusCode::kInvalidArgument,
                      entryName + " has neither \"auth\" nor \"username\" nor \"identitytoken\"");
      }
      covered.push_back(rk.host + (rk.pathPrefix.empty() ? "" : "/" + rk.pathPrefix));
      if (rk.host != image.registry) continue;
      bool pathMatches = rk.pathPrefix.empty() || image.path == rk.pathPrefix ||
                         image.path.rfind(rk.pathPrefix + "/", 0) == 0;
      if (!pathMatches) continue;
      size_t specificity = rk.pathPrefix.size() + 1;
      if (!best || specificity > bestPrefix) {
        best = std::move(creds);
        bestPrefix = specificity;
      }
    }
  }
  if (!best) {
    std::string list;
    for (const auto& c : covered) list += (list.empty() ? "" : ", ") + c;
    return Status(StatusCode::kInvalidArgument,
                  "no imagePullSecret has credentials for registry \"" + image.registry +
                      "\" (image \"" + image.name + "\"; the secrets cover: " +
                      (list.empty() ? "nothing" : list) + "); not pulling anonymously");
  }
  return best;
}

SensitiveString RegistryAuthHeaderValue(const RegistryCredentials& credentials) {
  nlohmann::json doc;
  if (!credentials.identityToken.reveal().empty()) {
    doc["identitytoken"] = credentials.identityToken.reveal();
  } else {
    doc["username"] = credentials.username;
    doc["password"] = credentials.password.reveal();
  }
  doc["serveraddress"] = credentials.serverAddress;
  // Replace, not throw: SelectRegistryCredentials admits only UTF-8, and hand-made credentials
  // must not crash the adapter either.
  return SensitiveString(
      base::Base64UrlEncode(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

}  // namespace ayatori::adapters
