// `kubectl ayatori ui`'s local web server (docs/kubectl-ayatori.md, "ui"): the page's static
// files (assets.h, embedded at build time) and its JSON API (api.h), on cpp-httplib, bound to a
// loopback address only. Every request passes the guard (guard.h) first; every response carries
// a Content-Security-Policy that allows only this server's own scripts, styles and requests (no
// inline script), and no CORS header is ever sent. Bounded: no request body beyond
// kMaxRequestBody, a thread pool of kThreads, and a log is relayed chunk by chunk as the log API
// sends it (nothing is buffered here).
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"
#include "commands.h"
#include "guard.h"

namespace httplib {
class DataSink;
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ayatori::plugin::ui {

inline constexpr size_t kMaxRequestBody = 4096;
inline constexpr size_t kThreads = 8;
// The longest tailLines a log request may ask for (the page asks for less).
inline constexpr int64_t kMaxTailLines = 100000;

struct ServerOptions {
  std::string address = "127.0.0.1";  // a loopback address; anything else is refused
  int port = 0;                       // 0: a free one
  std::string namespace_;             // the page's namespace at first ("" with allNamespaces)
  bool allNamespaces = false;
  // How often a followed log that is silent sends a comment line: a client that went away is
  // noticed by the failed write, and its stream (and thread) ends, even when the Job prints
  // nothing for hours.
  std::chrono::milliseconds logHeartbeat{15000};
};

class Server {
 public:
  // `client` and `streamer` must outlive the server; `token` is the URL's secret (NewToken()).
  Server(KubeClient& client, PathStreamer streamer, ServerOptions options, std::string token);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and serves on a background thread. kInvalidArgument for an address that is not
  // loopback; kUnavailable when it cannot bind.
  Status Start();
  // Stops serving; a followed log ends.
  void Stop();
  int port() const { return port_; }
  // http://HOST:PORT/?token=TOKEN: what the user opens.
  std::string Url() const;

 private:
  void Route();
  // Whether the guard lets `req` through to its route; if not, `res` is its answer.
  bool Admit(const httplib::Request& req, httplib::Response& res);
  void RouteStatic();
  void RouteApi();
  void RouteJobApi();
  void Reply(httplib::Response& res, int code, const nlohmann::json& body) const;
  // The log request's follow and tailLines; false (and a 400 in `res`) when tailLines is bad.
  bool ParseLogOptions(const httplib::Request& req, httplib::Response& res,
                       LogOptions& options) const;
  void ServeLog(const httplib::Request& req, httplib::Response& res);
  // Relays the log API's `path` to `sink` as events; false when the client went away.
  bool StreamLog(const std::string& path, httplib::DataSink& sink);

  KubeClient& client_;
  PathStreamer streamer_;
  ServerOptions options_;
  GuardConfig guard_;
  std::unique_ptr<httplib::Server> http_;
  std::stop_source stop_;
  std::thread thread_;
  int port_ = 0;
};

// Whether `address` is a numeric loopback address (127.0.0.0/8 or ::1).
bool IsLoopback(const std::string& address);

// The complete UTF-8 characters of `carry` + `data`; an incomplete character at the end is kept
// in `carry` for the next chunk, so a character split between two chunks of a log survives.
std::string TakeCompleteUtf8(std::string& carry, std::string_view data);

}  // namespace ayatori::plugin::ui
