// The /healthz, /readyz and /metrics endpoints over HTTP/1.1, GET and HEAD only, on Debian's
// libmicrohttpd: one event loop (no thread per connection), so a client that stalls — sends half
// a request, sends it a byte a second, or never reads a large /metrics response — holds a
// connection slot, never a thread, and never delays a probe. Limits: 2 s of inactivity, 16 KiB
// for a request's line and headers (else 431/414), no request body (413), 64 connections in all
// and 16 from one address. Enough for kubelet probes and Prometheus scrapes; not a web framework.
#pragma once

#include <sys/socket.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

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
  // Stops accepting, closes every connection and returns.
  void Stop();
  int port() const { return port_; }

 private:
  struct Daemon;  // the libmicrohttpd daemon, kept out of this header

  struct Route {
    Handler handler;
    Access access = Access::kAnyone;
  };
  std::map<std::string, Route> handlers_;
  std::unique_ptr<Daemon> daemon_;
  int port_ = 0;
};

// Splits "host:port" (host may be empty = 0.0.0.0, or "[::1]"); false if malformed.
bool SplitHostPort(const std::string& address, std::string* host, int* port);

// The numeric text of an IPv4 or IPv6 socket address ("127.0.0.1", "::1"); "" for another family
// or nullptr.
std::string AddressText(const sockaddr* address);

// Whether a peer address (as the server reports it: "127.0.0.1", "::1", "::ffff:127.0.0.1") is
// a loopback address.
bool IsLoopbackAddress(const std::string& address);

}  // namespace ayatori::obs
