#include "guard.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace ayatori::plugin::ui {

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

Verdict Refuse(int code, std::string reason) {
  return {Verdict::Kind::kRefuse, code, std::move(reason)};
}

bool HostAccepted(const GuardConfig& config, const std::string& host) {
  for (const auto& h : config.hosts) {
    if (h == host) return true;
  }
  return false;
}

}  // namespace

Verdict Check(const GuardConfig& config, const RequestFacts& request) {
  // DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 sends
  // "Host: evil.example:PORT"; its requests are same-origin to the browser, so only the Host
  // tells them apart.
  if (!request.host || !HostAccepted(config, *request.host)) {
    return Refuse(421, "this server answers only to http://" + config.hosts.front() +
                           " (the Host header was " +
                           (request.host ? "\"" + *request.host + "\"" : std::string("absent")) +
                           ")");
  }
  if (request.origin) {
    bool same = false;
    for (const auto& h : config.hosts) same = same || *request.origin == "http://" + h;
    if (!same) return Refuse(403, "requests from another origin are refused");
  } else if (request.method != "GET" && request.method != "HEAD") {
    // Browsers send Origin with every POST; a request that changes something without one did
    // not come from this page.
    return Refuse(403, "a request that changes something must carry its Origin");
  }
  const std::optional<std::string> cookie =
      request.cookie ? CookieValue(*request.cookie, config.cookieName) : std::nullopt;
  const bool authenticated = cookie && ConstantTimeEqual(*cookie, config.token);
  const bool api = StartsWith(request.path, "/api/");
  if (!authenticated) {
    if (!api && request.method == "GET" && request.token &&
        ConstantTimeEqual(*request.token, config.token)) {
      return {Verdict::Kind::kExchange, 0, ""};
    }
    return Refuse(401,
                  "not signed in: open the URL with the token that `kubectl ayatori ui` printed");
  }
  if (api && (!request.api || *request.api != "1")) {
    return Refuse(403, std::string("an API request must carry the ") + kApiHeader + " header");
  }
  return {Verdict::Kind::kAllow, 0, ""};
}

std::vector<std::string> HostsFor(const std::string& address, int port) {
  const std::string p = ":" + std::to_string(port);
  if (address.find(':') != std::string::npos) {
    std::vector<std::string> hosts = {"[" + address + "]" + p};
    if (address == "::1") hosts.push_back("localhost" + p);
    return hosts;
  }
  std::vector<std::string> hosts = {address + p};
  if (StartsWith(address, "127.")) hosts.push_back("localhost" + p);
  return hosts;
}

std::optional<std::string> CookieValue(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(pos, end - pos);
    const size_t first = pair.find_first_not_of(' ');
    pair = first == std::string::npos ? "" : pair.substr(first);
    const size_t eq = pair.find('=');
    if (eq != std::string::npos && pair.compare(0, eq, name) == 0 && eq == name.size()) {
      return pair.substr(eq + 1);
    }
    pos = end + 1;
  }
  return std::nullopt;
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

StatusOr<std::string> NewToken() {
  std::array<unsigned char, 32> bytes{};
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status(StatusCode::kInternal, std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 0xf];
  }
  return token;
}

std::string SetCookieHeader(const GuardConfig& config) {
  return config.cookieName + "=" + config.token + "; Path=/; HttpOnly; SameSite=Strict";
}

}  // namespace ayatori::plugin::ui
