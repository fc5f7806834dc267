// HttpServer over real sockets on 127.0.0.1: what it serves, and that stalled clients (one that
// never reads a large /metrics response, one that sends half a request, one with an endless
// header) neither delay /healthz nor keep Stop() waiting.
#include "obs/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "test/support/wait.h"

namespace ayatori::obs {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// How long a probe may take while other clients stall; kubelet's default probe timeout is 1 s.
constexpr milliseconds kProbeDeadline{1000};
// Stop() waits for connections to end: a stalled writer ends after at most two write timeouts
// (2 s each: waiting for writability, then the blocked send); plus slack for a loaded machine.
constexpr milliseconds kStopDeadline{6000};

class Connection {
 public:
  // A small receive buffer makes a client that does not read fill up sooner.
  explicit Connection(int port, bool smallReceiveBuffer = false) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (smallReceiveBuffer) {
      int size = 4096;
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Connection() { close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool connected() const { return connected_; }
  bool Send(const std::string& data) const {
    return send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  struct Read {
    std::string data;
    bool closed = false;  // by the peer, before the deadline
  };
  // Reads until the peer closes the connection or `timeout` passes.
  Read ReadAll(milliseconds timeout) const {
    Read r;
    auto deadline = Clock::now() + timeout;
    std::vector<char> buf(65536);
    while (true) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return r;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return r;
      ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) {
        r.closed = true;
        return r;
      }
      r.data.append(buf.data(), static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Answer {
  std::string response;  // status line, headers and body, as far as they came in time
  milliseconds took{};
};

Answer Request(int port, const std::string& method, const std::string& path,
               milliseconds timeout = kProbeDeadline) {
  auto start = Clock::now();
  Connection c(port);
  Answer a;
  if (c.connected() &&
      c.Send(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")) {
    a.response = c.ReadAll(timeout).data;
  }
  a.took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  return a;
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The stalled clients below close while the server may be writing to them; the controller
    // ignores SIGPIPE for the same reason (cmd/ayatori-controller/main.cc).
    std::signal(SIGPIPE, SIG_IGN);
    server_ = std::make_unique<HttpServer>();
    server_->Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
    server_->Handle("/metrics", [this] {
      ++metricsRequests_;
      return HttpResponse{200, "text/plain; version=0.0.4", std::string(32 << 20, 'm')};
    });
    server_->Handle("/boom", []() -> HttpResponse { throw std::runtime_error("boom"); });
    Status s = server_->Start("127.0.0.1:0");
    ASSERT_TRUE(s.ok()) << s.ToString();
    port_ = server_->port();
    ASSERT_GT(port_, 0);
  }

  void ExpectHealthzAnswersPromptly() {
    Answer a = Request(port_, "GET", "/healthz");
    EXPECT_TRUE(StartsWith(a.response, "HTTP/1.1 200 OK\r\n")) << a.response;
    EXPECT_NE(a.response.find("\r\n\r\nok\n"), std::string::npos) << a.response;
    EXPECT_LT(a.took, kProbeDeadline);
  }

  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::atomic<int> metricsRequests_{0};
};

TEST_F(HttpServerTest, ServesHandlersAndAnswersOtherRequestsWithErrors) {
  ExpectHealthzAnswersPromptly();
  Answer query = Request(port_, "GET", "/healthz?verbose=1");
  EXPECT_TRUE(StartsWith(query.response, "HTTP/1.1 200 OK\r\n")) << query.response;

  Answer head = Request(port_, "HEAD", "/healthz");
  EXPECT_TRUE(StartsWith(head.response, "HTTP/1.1 200 OK\r\n")) << head.response;
  EXPECT_NE(head.response.find("Content-Length: 3\r\n"), std::string::npos) << head.response;
  EXPECT_TRUE(head.response.ends_with("\r\n\r\n")) << head.response;

  Answer missing = Request(port_, "GET", "/nope");
  EXPECT_TRUE(StartsWith(missing.response, "HTTP/1.1 404 ")) << missing.response;
  EXPECT_TRUE(missing.response.ends_with("not found\n")) << missing.response;

  Answer post = Request(port_, "POST", "/healthz");
  EXPECT_TRUE(StartsWith(post.response, "HTTP/1.1 405 ")) << post.response;

  Answer boom = Request(port_, "GET", "/boom");
  EXPECT_TRUE(StartsWith(boom.response, "HTTP/1.1 500 ")) << boom.response;
  EXPECT_EQ(boom.response.find("boom"), std::string::npos) << boom.response;

  // Not HTTP: libmicrohttpd closes the connection (without an answer, or with a 400).
  Connection garbage(port_);
  ASSERT_TRUE(garbage.Send("NOT-HTTP\r\n\r\n"));
  Connection::Read r = garbage.ReadAll(kProbeDeadline);
  EXPECT_TRUE(r.closed);
  EXPECT_TRUE(r.data.empty() || StartsWith(r.data, "HTTP/1.1 400 ")) << r.data;
}

// A request line and headers beyond 16 KiB are refused, not buffered, and the probes go on.
TEST_F(HttpServerTest, AnEndlessHeaderIsRefusedAndProbesGoOn) {
  Connection c(port_);
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: "));
  const std::string kib(1024, 'y');
  size_t sent = 0;
  while (sent < (size_t{16} << 20) && c.Send(kib)) sent += kib.size();
  Connection::Read r = c.ReadAll(milliseconds(5000));
  EXPECT_TRUE(r.closed);
  EXPECT_LT(sent, size_t{16} << 20) << "the server kept reading";
  EXPECT_TRUE(r.data.empty() || StartsWith(r.data, "HTTP/1.1 431 ") ||
              StartsWith(r.data, "HTTP/1.1 414 "))
      << r.data.substr(0, 200);
  ExpectHealthzAnswersPromptly();
}

TEST_F(HttpServerTest, ClientThatNeverReadsALargeMetricsResponseDoesNotDelayHealthz) {
  Connection stalled(port_, /*smallReceiveBuffer=*/true);
  ASSERT_TRUE(stalled.connected());
  ASSERT_TRUE(stalled.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  // The server is now writing 32 MiB that nobody reads: the socket buffers fill and its write
  // blocks.
  ASSERT_TRUE(testing::Eventually([&] { return metricsRequests_ == 1; }, milliseconds(5000)));
  for (int i = 0; i < 5; ++i) ExpectHealthzAnswersPromptly();
}

TEST_F(HttpServerTest, ClientsThatSendHalfARequestOrNothingDoNotDelayHealthz) {
  std::vector<std::unique_ptr<Connection>> stalled;
  for (int i = 0; i < 3; ++i) {
    stalled.push_back(std::make_unique<Connection>(port_));
    ASSERT_TRUE(stalled.back()->connected());
    ASSERT_TRUE(stalled.back()->Send("GET /heal"));
  }
  stalled.push_back(std::make_unique<Connection>(port_));  // connects, says nothing
  ASSERT_TRUE(stalled.back()->connected());
  for (int i = 0; i < 5; ++i) ExpectHealthzAnswersPromptly();
  // The server gives up on a half request after its read timeout and closes the connection.
  auto closed = stalled.front()->ReadAll(kStopDeadline);
  EXPECT_TRUE(closed.closed);
  EXPECT_EQ(closed.data, "");
}

TEST_F(HttpServerTest, StopReturnsPromptlyWithStalledClientsConnected) {
  Connection reader(port_, /*smallReceiveBuffer=*/true);
  ASSERT_TRUE(reader.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  Connection half(port_);
  ASSERT_TRUE(half.Send("GET /heal"));
  ASSERT_TRUE(testing::Eventually([&] { return metricsRequests_ == 1; }, milliseconds(5000)));

  auto start = Clock::now();
  server_->Stop();
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  EXPECT_LT(took, kStopDeadline);
  std::printf("Stop() with two stalled clients took %lld ms\n",
              static_cast<long long>(took.count()));
  EXPECT_EQ(Request(port_, "GET", "/healthz").response, "") << "still serving after Stop()";
}

TEST_F(HttpServerTest, StopRightAfterStartReturns) {
  HttpServer other;
  other.Handle("/healthz", [] { return HttpResponse{}; });
  ASSERT_TRUE(other.Start("127.0.0.1:0").ok());
  auto start = Clock::now();
  other.Stop();
  EXPECT_LT(Clock::now() - start, kStopDeadline);
}

TEST_F(HttpServerTest, StartRejectsBadAddressesAndAPortInUse) {
  HttpServer other;
  Status s = other.Start("localhost:0");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = other.Start("8080");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = other.Start("127.0.0.1:" + std::to_string(port_));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.ToString();
}

// /metrics is answered to loopback peers only; /healthz to anyone (the kubelet probes over the
// pod network). The "remote" peer is this host's own non-loopback address, which the server sees
// as a peer off localhost.
TEST(HttpServerAccess, MetricsAreRefusedOffLocalhostAndServedOnIt) {
  std::string external;
  ifaddrs* addrs = nullptr;
  ASSERT_EQ(getifaddrs(&addrs), 0);
  for (ifaddrs* a = addrs; a != nullptr && external.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    std::array<char, INET_ADDRSTRLEN> text{};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text.data(),
              text.size());
    if (!std::string(text.data()).starts_with("127.")) external = text.data();
  }
  freeifaddrs(addrs);
  if (external.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address";
  HttpServer server;
  server.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  server.Handle(
      "/metrics",
      [] {
        return HttpResponse{200, "text/plain", "secret 1\n"};
      },
      Access::kLoopbackOnly);
  ASSERT_TRUE(server.Start("0.0.0.0:0").ok());
  auto ask = [&](const std::string& host, const std::string& path) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server.port()));
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    std::string got;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
      send(fd, req.data(), req.size(), MSG_NOSIGNAL);
      std::array<char, 4096> buf{};
      for (ssize_t n; (n = recv(fd, buf.data(), buf.size(), 0)) > 0;) {
        got.append(buf.data(), static_cast<size_t>(n));
      }
    }
    close(fd);
    return got;
  };
  std::string off = ask(external, "/metrics");
  EXPECT_TRUE(StartsWith(off, "HTTP/1.1 403")) << off;
  EXPECT_EQ(off.find("secret"), std::string::npos) << off;
  EXPECT_TRUE(StartsWith(ask(external, "/healthz"), "HTTP/1.1 200")) << external;
  std::string on = ask("127.0.0.1", "/metrics");
  EXPECT_TRUE(StartsWith(on, "HTTP/1.1 200")) << on;
  EXPECT_NE(on.find("secret 1"), std::string::npos) << on;
  server.Stop();
}

TEST(HttpServerAccess, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("::ffff:127.0.0.5"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("::ffff:10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("1127.0.0.1"));
}

}  // namespace
}  // namespace ayatori::obs
