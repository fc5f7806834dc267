// Who may talk to `kubectl ayatori ui`'s local server, as a pure function of a request's facts
// (unit-tested in test/kubectl-ayatori/ui/guard_test.cc). The server holds the user's cluster
// credentials, so any web page the user visits is an attacker: it may make the browser send
// requests to 127.0.0.1 (CSRF), or rebind its own DNS name to 127.0.0.1 (DNS rebinding). The
// defences, as Jupyter's: the Host must be the loopback name and port the server printed; a
// random token in the printed URL is exchanged for a SameSite=Strict HttpOnly cookie; every API
// call carries a custom header (a cross-origin page cannot add one without a CORS preflight,
// which this server never grants); an Origin, when sent, must be the server's own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::plugin::ui {

// The header every /api/ request must carry (its value is "1").
inline constexpr const char* kApiHeader = "X-Ayatori-UI";

struct GuardConfig {
  std::vector<std::string> hosts;  // the accepted Host values, e.g. "127.0.0.1:8080"
  std::string token;               // the secret of the printed URL
  std::string cookieName;          // per port: two servers on one host keep their own cookies
};

// A request as the guard sees it; absent headers are nullopt.
struct RequestFacts {
  std::string method;
  std::string path;                   // without the query
  std::optional<std::string> host;    // Host
  std::optional<std::string> origin;  // Origin
  std::optional<std::string> cookie;  // Cookie (every cookie, as sent)
  std::optional<std::string> api;     // kApiHeader
  std::optional<std::string> token;   // ?token= of the query
};

struct Verdict {
  enum class Kind {
    kAllow,
    kExchange,  // the right token in the query: set the cookie and redirect to the path
    kRefuse,
  };
  Kind kind = Kind::kRefuse;
  int code = 403;      // for kRefuse
  std::string reason;  // for kRefuse: what was wrong, for the user
};

Verdict Check(const GuardConfig& config, const RequestFacts& request);

// The Host values of a server bound to `address` (numeric) on `port`: the address itself, and
// "localhost" when it is a loopback one.
std::vector<std::string> HostsFor(const std::string& address, int port);

// The value of cookie `name` in a Cookie header; nullopt when absent.
std::optional<std::string> CookieValue(const std::string& header, const std::string& name);

// Equal without a timing that tells how many leading characters matched.
bool ConstantTimeEqual(const std::string& a, const std::string& b);

// 32 random bytes from the kernel, as 64 hex digits.
StatusOr<std::string> NewToken();

// The Set-Cookie header of the exchange: HttpOnly (no script reads it), SameSite=Strict (no other
// site's page sends it), Path=/.
std::string SetCookieHeader(const GuardConfig& config);

}  // namespace ayatori::plugin::ui
