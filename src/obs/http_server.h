// The /healthz, /readyz and /metrics endpoints over HTTP/1.1, GET and HEAD only, on Debian's
// cpp-httplib. Connections are served concurrently by a small pool of threads, with read, write
// and keep-alive timeouts: a client that stalls (sends half a request, or never reads a large
// /metrics response) holds one pool thread for a few seconds at most and never delays a probe
// served by another. Enough for kubelet probes and Prometheus scrapes; not a web framework.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "ayatori/status.h"

namespace ayatori::obs {

struct HttpResponse {
  int code = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
};

// Who a path is served to. /metrics is kLoopbackOnly: anyone who can reach the pod could
// otherwise read it (the numbers of Jobs, their backends and outcomes); a scraper reaches it
// through a sidecar in the pod that authenticates it (docs/operations.md, "Metrics"). Probes
// come from the kubelet over the pod network: /healthz and /readyz are kAnyone.
enum class Access { kAnyone, kLoopbackOnly };

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before Start(). Handlers run on the pool's threads, possibly several at once.
  void Handle(const std::string& path, Handler handler, Access access = Access::kAnyone);
  // Binds "host:port" (port 0 picks a free one; numeric hosts only) and serves on background
  // threads.
  Status Start(const std::string& address);
  // Stops accepting and returns once every connection is closed, which a stalled client delays by
  // two write timeouts (4 s) at most.
  void Stop();
  int port() const { return port_; }

 private:
  class Listener;  // the cpp-httplib server, kept out of this header

  struct Route {
    Handler handler;
    Access access = Access::kAnyone;
  };
  std::map<std::string, Route> handlers_;
  std::unique_ptr<Listener> listener_;
  std::thread thread_;
  int port_ = 0;
};

// Splits "host:port" (host may be empty = 0.0.0.0, or "[::1]"); false if malformed.
bool SplitHostPort(const std::string& address, std::string* host, int* port);

// Whether a peer address (as the server reports it: "127.0.0.1", "::1", "::ffff:127.0.0.1") is
// a loopback address.
bool IsLoopbackAddress(const std::string& address);

}  // namespace ayatori::obs
