// What a client of the Job log API sends (logapi/): the request path, the query parameters and
// the front proxy's identity headers. Input: the path on the first line, then lines "name: value"
// (headers) and "name=value" (query parameters). Any bytes give a route (or 404), log options (or
// an error naming the parameter) and a user (or 401), never an exception or a crash.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "logapi/front_proxy.h"
#include "logapi/log_api.h"

using namespace ayatori;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string_view path = input.substr(0, eol);
  const logapi::Route route = logapi::ParseRoute(path);
  if (route.kind == logapi::Route::Kind::kJobLog) {
    FUZZ_CHECK(!route.namespace_.empty() && !route.name.empty());
    FUZZ_CHECK(path.find(route.namespace_) != std::string_view::npos);
    FUZZ_CHECK(path.find(route.name) != std::string_view::npos);
  }

  logapi::Headers headers;
  std::multimap<std::string, std::string> query;
  std::string_view rest = eol == std::string_view::npos ? "" : input.substr(eol + 1);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 1);
    if (const size_t colon = line.find(": "); colon != std::string_view::npos) {
      headers.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 2)));
    } else if (const size_t eq = line.find('='); eq != std::string_view::npos) {
      query.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    }
  }
  auto options = logapi::ParseLogQuery(query);
  if (!options.ok()) FUZZ_CHECK(!options.status().message().empty());

  logapi::RequestHeaderConfig config;
  config.allowedNames = {"front-proxy-client"};
  for (const std::optional<std::string>& cn :
       {std::optional<std::string>("front-proxy-client"), std::optional<std::string>("other"),
        std::optional<std::string>()}) {
    auto user = logapi::AuthenticateFrontProxy(config, cn, headers);
    if (user.ok()) {
      FUZZ_CHECK(cn.has_value() && *cn == "front-proxy-client");
      FUZZ_CHECK(!user->name.empty());
    } else {
      FUZZ_CHECK(user.status().code() == StatusCode::kUnauthorized);
    }
  }
  return 0;
}
