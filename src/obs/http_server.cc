#include "obs/http_server.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ayatori::obs {
namespace {

// Connections served at once. Probes and scrapes take milliseconds, so a pool this size answers
// them even while several stalled clients each hold a thread until their timeout.
constexpr size_t kPoolThreads = 8;
// A request must arrive, and a response make progress, within these; a kept-alive connection
// idle longer is closed. They also bound how long Stop() waits for a stalled client: a response
// nobody reads ends after one blocked send and one wait for writability, two write timeouts.
constexpr time_t kReadTimeoutSeconds = 2;
constexpr time_t kWriteTimeoutSeconds = 2;
constexpr time_t kKeepAliveSeconds = 1;
constexpr size_t kKeepAliveRequests = 20;
constexpr size_t kMaxRequestBody = size_t{16} * 1024;  // the endpoints take no body

// Replaces httplib's default socket options, which add SO_REUSEPORT: a second controller on the
// same port would then share it silently instead of failing to bind. (httplib sets the read and
// write timeouts on each accepted connection itself, as SO_RCVTIMEO and SO_SNDTIMEO, so even one
// send of a large response to a client that does not read ends.)
void SetSocketOptions(int fd) {
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
}

void Reply(httplib::Response& res, const HttpResponse& r) {
  res.status = r.code;
  res.set_content(r.body, r.contentType.c_str());
}

}  // namespace

// httplib's stop() does nothing until the listening thread has marked itself running, so a Stop()
// right after Start() could leave that thread accepting forever. Closing the listening socket
// here works in every state: the accept loop ends as soon as it finds the socket closed.
class HttpServer::Listener final : public httplib::Server {
 public:
  void Close() {
    socket_t fd = svr_sock_.exchange(INVALID_SOCKET);
    if (fd != INVALID_SOCKET) {
      shutdown(fd, SHUT_RDWR);  // wakes a thread blocked in accept()
      close(fd);
    }
  }
};

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

HttpServer::HttpServer() = default;

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler handler, Access access) {
  handlers_[path] = Route{std::move(handler), access};
}

bool IsLoopbackAddress(const std::string& address) {
  return address.starts_with("127.") || address == "::1" || address.starts_with("::ffff:127.");
}

Status HttpServer::Start(const std::string& address) {
  if (thread_.joinable()) return {StatusCode::kFailedPrecondition, "already serving"};
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, &host, &port)) {
    return {StatusCode::kInvalidArgument,
            "listen address \"" + address + "\" is not host:port (e.g. 127.0.0.1:8080 or :8080)"};
  }
  if (host.empty()) host = "0.0.0.0";
  // Checked here for a clear message: httplib only says that binding failed.
  addrinfo hints{};
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* resolved = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &resolved); rc != 0) {
    return {StatusCode::kInvalidArgument,
            "listen address \"" + address + "\": " + gai_strerror(rc)};
  }
  freeaddrinfo(resolved);

  auto listener = std::make_unique<Listener>();
  listener->new_task_queue = [] { return new httplib::ThreadPool(kPoolThreads); };
  listener->set_socket_options(SetSocketOptions);
  listener->set_read_timeout(kReadTimeoutSeconds, 0);
  listener->set_write_timeout(kWriteTimeoutSeconds, 0);
  listener->set_keep_alive_timeout(kKeepAliveSeconds);
  listener->set_keep_alive_max_count(kKeepAliveRequests);
  listener->set_payload_max_length(kMaxRequestBody);
  listener->set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    using Result = httplib::Server::HandlerResponse;
    if (req.method != "GET" && req.method != "HEAD") {
      Reply(res, {405, "text/plain", "method not allowed\n"});
    } else if (req.has_header("Transfer-Encoding") ||
               (req.has_header("Content-Length") &&
                req.get_header_value("Content-Length") != "0")) {
      Reply(res, {413, "text/plain", "a request takes no body\n"});
    } else {
      return Result::Unhandled;
    }
    return Result::Handled;
  });
  listener->Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    auto it = handlers_.find(req.path);
    if (it == handlers_.end()) return Reply(res, {404, "text/plain", "not found\n"});
    if (it->second.access == Access::kLoopbackOnly && !IsLoopbackAddress(req.remote_addr)) {
      return Reply(res, {403, "text/plain",
                         req.path + " is served on localhost only: scrape it through the pod's "
                                    "authenticating proxy (docs/operations.md, \"Metrics\")\n"});
    }
    Reply(res, it->second.handler());
  });
  listener->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
        Reply(res, {500, "text/plain", "internal error\n"});
      });

  errno = 0;
  const int flags = AI_PASSIVE | AI_NUMERICHOST;
  int bound = port == 0 ? listener->bind_to_any_port(host, flags)
                        : (listener->bind_to_port(host, port, flags) ? port : -1);
  if (bound <= 0) {
    return {StatusCode::kUnavailable, "cannot listen on " + address + ": " +
                                          (errno != 0 ? std::strerror(errno) : "bind failed")};
  }
  port_ = bound;
  listener_ = std::move(listener);
  thread_ = std::thread([l = listener_.get()] { l->listen_after_bind(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  listener_->Close();
  thread_.join();  // httplib joins its pool: every connection has ended
  listener_.reset();
}

}  // namespace ayatori::obs
