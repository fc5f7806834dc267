#include "obs/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace ayatori::obs {
namespace {

// Closed after this long without progress (a request that does not arrive, a response not read).
constexpr unsigned int kIdleTimeoutSeconds = 2;
// Memory for one connection's request line and headers (and its read buffer): a longer request
// is answered 431 or 414 and closed.
constexpr size_t kConnectionMemory = size_t{16} * 1024;
// Connections at once, and from one peer address: a client that opens many cannot take them all.
constexpr unsigned int kMaxConnections = 64;
constexpr unsigned int kMaxConnectionsPerAddress = 16;
// Event loops (each serves any number of connections); two so that rendering /metrics never
// delays a probe.
constexpr unsigned int kThreads = 2;

std::string PeerAddress(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  return info == nullptr ? "" : AddressText(info->client_addr);
}

MHD_Result Queue(MHD_Connection* connection, const HttpResponse& r) {
  MHD_Response* response = MHD_create_response_from_buffer(
      r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, r.contentType.c_str());
  MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned int>(r.code), response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

struct HttpServer::Daemon {
  MHD_Daemon* daemon = nullptr;
  ~Daemon() {
    if (daemon != nullptr) MHD_stop_daemon(daemon);
  }

  // libmicrohttpd's access handler: called once the request's line and headers are in (and
  // again for each piece of a body, which is never read: the first call answers).
  static MHD_Result Handle(void* cls, MHD_Connection* connection, const char* url,
                           const char* method, const char* /*version*/, const char* /*uploadData*/,
                           size_t* /*uploadDataSize*/, void** /*state*/) {
    const auto* server = static_cast<const HttpServer*>(cls);
    const std::string m = method;
    const char* length =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (m != "GET" && m != "HEAD")
      return Queue(connection, {405, "text/plain", "method not allowed\n"});
    if (MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_TRANSFER_ENCODING) != nullptr ||
        (length != nullptr && std::string(length) != "0")) {
      return Queue(connection, {413, "text/plain", "a request takes no body\n"});
    }
    auto it = server->handlers_.find(url);
    if (it == server->handlers_.end()) return Queue(connection, {404, "text/plain", "not found\n"});
    if (it->second.access == Access::kLoopbackOnly && !IsLoopbackAddress(PeerAddress(connection))) {
      return Queue(connection,
                   {403, "text/plain",
                    std::string(url) + " is served on localhost only: scrape it through the pod's "
                                       "authenticating proxy (docs/operations.md, \"Metrics\")\n"});
    }
    try {
      return Queue(connection, it->second.handler());
    } catch (...) {
      return Queue(connection, {500, "text/plain", "internal error\n"});
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

std::string AddressText(const sockaddr* address) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (address == nullptr) return "";
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text.data(),
              text.size());
  } else if (address->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text.data(),
              text.size());
  }
  return text.data();
}

bool IsLoopbackAddress(const std::string& address) {
  return address.starts_with("127.") || address == "::1" || address.starts_with("::ffff:127.");
}

HttpServer::HttpServer() = default;

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler handler, Access access) {
  handlers_[path] = Route{std::move(handler), access};
}

Status HttpServer::Start(const std::string& address) {
  if (daemon_) return {StatusCode::kFailedPrecondition, "already serving"};
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, &host, &port)) {
    return {StatusCode::kInvalidArgument,
            "listen address \"" + address + "\" is not host:port (e.g. 127.0.0.1:8080 or :8080)"};
  }
  if (host.empty()) host = "0.0.0.0";
  addrinfo hints{};
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &resolved);
      rc != 0) {
    return {StatusCode::kInvalidArgument,
            "listen address \"" + address + "\": " + gai_strerror(rc)};
  }
  sockaddr_storage bind{};
  std::memcpy(&bind, resolved->ai_addr, resolved->ai_addrlen);
  const bool ipv6 = resolved->ai_family == AF_INET6;
  freeaddrinfo(resolved);

  // SO_REUSEADDR only (libmicrohttpd's default): a second controller on the same port fails to
  // bind instead of sharing it (SO_REUSEPORT).
  errno = 0;
  auto daemon = std::make_unique<Daemon>();
  daemon->daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | (ipv6 ? MHD_USE_IPv6 : 0), 0, nullptr,
      nullptr, &Daemon::Handle, this, MHD_OPTION_SOCK_ADDR, &bind, MHD_OPTION_CONNECTION_TIMEOUT,
      kIdleTimeoutSeconds, MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnectionMemory,
      MHD_OPTION_CONNECTION_LIMIT, kMaxConnections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      kMaxConnectionsPerAddress, MHD_OPTION_THREAD_POOL_SIZE, kThreads, MHD_OPTION_END);
  if (daemon->daemon == nullptr) {
    return {StatusCode::kUnavailable, "cannot listen on " + address + ": " +
                                          (errno != 0 ? std::strerror(errno) : "bind failed")};
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon->daemon, MHD_DAEMON_INFO_BIND_PORT);
  port_ = info != nullptr ? info->port : port;
  daemon_ = std::move(daemon);
  return Status::Ok();
}

void HttpServer::Stop() { daemon_.reset(); }

}  // namespace ayatori::obs
