// A minimal HTTP/1.1 server for /healthz, /readyz and /metrics: one thread, GET only, one
// request per connection. Enough for kubelet probes and Prometheus scrapes; not a web framework.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "ayatori/status.h"

namespace ayatori::obs {

struct HttpResponse {
  int code = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;
  HttpServer() = default;
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Handle(const std::string& path, Handler handler);
  // Binds "host:port" (port 0 picks a free one) and serves on a background thread.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  void Serve();
  void HandleConnection(int fd);

  std::map<std::string, Handler> handlers_;
  int listenFd_ = -1;
  int port_ = 0;
  int wakePipe_[2] = {-1, -1};
  std::thread thread_;
};

// Splits "host:port" (host may be empty = 0.0.0.0, or "[::1]"); false if malformed.
bool SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace ayatori::obs
