#include "obs/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace ayatori::obs {

bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  std::string h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  std::string p = address.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  int value = std::stoi(p);
  if (value > 65535) return false;
  *host = h;
  *port = value;
  return true;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler handler) {
  handlers_[path] = std::move(handler);
}

Status HttpServer::Start(const std::string& address) {
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, &host, &port)) {
    return {StatusCode::kInvalidArgument,
            "listen address \"" + address + "\" is not host:port (e.g. 127.0.0.1:8080 or :8080)"};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* res = nullptr;
  std::string portStr = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), portStr.c_str(), &hints, &res);
  if (rc != 0) {
    return {StatusCode::kInvalidArgument,
            "listen address \"" + address + "\": " + gai_strerror(rc)};
  }
  int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0) {
    std::string err = std::strerror(errno);
    freeaddrinfo(res);
    if (fd >= 0) close(fd);
    return {StatusCode::kUnavailable, "cannot listen on " + address + ": " + err};
  }
  freeaddrinfo(res);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listenFd_ = fd;
  if (pipe2(wakePipe_, O_CLOEXEC) != 0) {
    return {StatusCode::kInternal, std::string("pipe: ") + std::strerror(errno)};
  }
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  [[maybe_unused]] auto n = write(wakePipe_[1], "x", 1);
  thread_.join();
  close(listenFd_);
  close(wakePipe_[0]);
  close(wakePipe_[1]);
  listenFd_ = -1;
}

void HttpServer::Serve() {
  while (true) {
    std::array<pollfd, 2> fds{pollfd{listenFd_, POLLIN, 0}, pollfd{wakePipe_[0], POLLIN, 0}};
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      int conn = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn >= 0) {
        HandleConnection(conn);
        close(conn);
      }
    }
  }
}

void HttpServer::HandleConnection(int fd) {
  // Read the request head with a short timeout so a silent client cannot block probes.
  std::string request;
  std::array<char, 4096> buf{};
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 2000) <= 0) return;
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n <= 0) return;
    request.append(buf.data(), static_cast<size_t>(n));
  }
  HttpResponse resp;
  std::string_view line(request);
  line = line.substr(0, line.find("\r\n"));
  auto sp1 = line.find(' ');
  auto sp2 = line.find(' ', sp1 == std::string_view::npos ? 0 : sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos) {
    resp = {400, "text/plain", "bad request\n"};
  } else {
    std::string method(line.substr(0, sp1));
    std::string path(line.substr(sp1 + 1, sp2 - sp1 - 1));
    path = path.substr(0, path.find('?'));
    auto it = handlers_.find(path);
    if (method != "GET" && method != "HEAD") {
      resp = {405, "text/plain", "method not allowed\n"};
    } else if (it == handlers_.end()) {
      resp = {404, "text/plain", "not found\n"};
    } else {
      resp = it->second();
      if (method == "HEAD") resp.body.clear();
    }
  }
  const char* reason = resp.code == 200 ? "OK" : resp.code == 404 ? "Not Found" : "Error";
  std::string out = "HTTP/1.1 " + std::to_string(resp.code) + " " + reason +
                    "\r\nContent-Type: " + resp.contentType +
                    "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                    "\r\nConnection: close\r\n\r\n" + resp.body;
  size_t off = 0;
  while (off < out.size()) {
    ssize_t n = write(fd, out.data() + off, out.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace ayatori::obs
