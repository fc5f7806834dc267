// The log API server against clients that play the attacker: real TLS connections on a real
// socket, the server as the controller runs it; only the Jobs' output (JobLogs) and the
// authorizer are stand-ins. The PKI is made with the openssl command at the start.
#include "logapi/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <sstream>

#include "api/json.h"
#include "controller/kinds.h"
#include "kube/testing/fake_kube_client.h"
#include "obs/metrics.h"
#include "test/support/process.h"
#include "test/support/wait.h"

namespace ayatori::logapi {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::RunProcess;

constexpr const char* kLogPrefix = "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The front proxy's CA and client certificate, and a client certificate of another CA.
struct Pki {
  std::string dir;
  std::string CaPem() const { return ReadFile(dir + "/ca.crt"); }
};

const Pki& TestPki() {
  static const Pki pki = [] {
    std::string tmpl = ::testing::TempDir() + "logapi-pki-XXXXXX";
    Pki p{mkdtemp(tmpl.data())};
    auto run = [](const std::vector<std::string>& argv) {
      auto r = RunProcess(argv);
      EXPECT_EQ(r.exitCode, 0) << argv[1] << ": " << r.err;
    };
    for (const std::string ca : {"ca", "other-ca"}) {
      run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
           "-nodes", "-days", "2", "-subj", "/CN=" + ca, "-keyout", p.dir + "/" + ca + ".key",
           "-out", p.dir + "/" + ca + ".crt"});
      const std::string client = ca == "ca" ? "proxy" : "stranger";
      run({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-subj", "/CN=front-proxy-client", "-keyout", p.dir + "/" + client + ".key", "-out",
           p.dir + "/" + client + ".csr"});
      run({"openssl", "x509", "-req", "-in", p.dir + "/" + client + ".csr", "-CA",
           p.dir + "/" + ca + ".crt", "-CAkey", p.dir + "/" + ca + ".key", "-CAcreateserial",
           "-days", "2", "-out", p.dir + "/" + client + ".crt"});
    }
    return p;
  }();
  return pki;
}

// Output of Jobs: "done" prints a line and ends; "silent" prints nothing until the reader
// leaves (it honours LogOptions::stop, as the Docker adapter does).
class FakeLogs final : public JobLogs {
 public:
  Status Stream(const std::string& /*ns*/, const std::string& name, const LogOptions& options,
                const LogSink& sink) override {
    ++calls;
    if (name == "done") {
      sink("hello\n");
      return Status::Ok();
    }
    ++silent;
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, options.stop, [] { return false; });
    --silent;
    return Status::Ok();
  }
  std::atomic<int> calls{0};
  std::atomic<int> silent{0};
};

// A TCP connection to the server on loopback from the address `from` (any of 127.0.0.0/8 is
// this host's: tests play clients of several addresses), closed when destroyed.
class TcpConnection {
 public:
  TcpConnection() = default;
  ~TcpConnection() {
    if (fd_ >= 0) close(fd_);
  }
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  bool Connect(int port, const char* from) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in source{};
    source.sin_family = AF_INET;
    if (fd_ < 0 || inet_pton(AF_INET, from, &source.sin_addr) != 1 ||
        bind(fd_, reinterpret_cast<sockaddr*>(&source), sizeof(source)) != 0) {
      return false;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  int fd() const { return fd_; }
  // The first byte of a TLS ClientHello (a handshake record) and nothing more: the connection
  // passes TCP_DEFER_ACCEPT, and its handshake waits for the rest.
  bool StartHandshake() { return send(fd_, "\x16", 1, MSG_NOSIGNAL) == 1; }
  // Whether the server closed the connection (end of stream or reset) within `timeout`.
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::array<char, 256> buf{};
    for (auto now = std::chrono::steady_clock::now(); now < deadline;
         now = std::chrono::steady_clock::now()) {
      pollfd p{fd_, POLLIN | POLLRDHUP, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      if (poll(&p, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
      ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        return true;
      }
    }
    return false;
  }

 private:
  int fd_ = -1;
};

// A TLS client on a blocking socket with a receive timeout.
class Client {
 public:
  Client() : ctx_(SSL_CTX_new(TLS_client_method())) {}
  ~Client() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // `name`: "proxy", "stranger" (another CA) or "" (no certificate); `from`: the client's
  // address. False when the handshake failed on this side.
  bool Connect(int port, const std::string& name, const char* from = "127.0.0.1") {
    if (!name.empty()) {
      const std::string base = TestPki().dir + "/" + name;
      SSL_CTX_use_certificate_file(ctx_, (base + ".crt").c_str(), SSL_FILETYPE_PEM);
      SSL_CTX_use_PrivateKey_file(ctx_, (base + ".key").c_str(), SSL_FILETYPE_PEM);
    }
    if (!tcp_.Connect(port, from)) return false;
    timeval tv{1, 0};
    setsockopt(tcp_.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, tcp_.fd());
    return SSL_connect(ssl_) == 1;
  }
  bool Send(std::string_view bytes) {
    return SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) ==
           static_cast<int>(bytes.size());
  }
  // Reads until `done` holds for what came, the peer closes (closed() then true) or `timeout`.
  std::string Read(const std::function<bool(const std::string&)>& done,
                   std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::array<char, 4096> buf{};
    while (!done(got_) && !closed_ && std::chrono::steady_clock::now() < deadline) {
      int n = SSL_read(ssl_, buf.data(), static_cast<int>(buf.size()));
      if (n > 0) {
        got_.append(buf.data(), static_cast<size_t>(n));
        continue;
      }
      int err = SSL_get_error(ssl_, n);
      bool timedOut = err == SSL_ERROR_WANT_READ ||
                      (err == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK));
      ERR_clear_error();
      if (!timedOut) closed_ = true;
    }
    return got_;
  }
  std::string ReadUntilClosed(std::chrono::milliseconds timeout) {
    return Read([](const std::string&) { return false; }, timeout);
  }
  std::string ReadHead(std::chrono::milliseconds timeout) {
    return Read([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; },
                timeout);
  }
  bool closed() const { return closed_; }
  void Close() { shutdown(tcp_.fd(), SHUT_RDWR); }

 private:
  SSL_CTX* ctx_;
  TcpConnection tcp_;  // closed after ssl_ is freed
  SSL* ssl_ = nullptr;
  std::string got_;
  bool closed_ = false;
};

std::string Get(const std::string& job, const std::string& user, bool follow) {
  return "GET " + std::string(kLogPrefix) + "ns/jobs/" + job + "/log" +
         (follow ? "?follow=true" : "") + " HTTP/1.1\r\nHost: logs\r\nX-Remote-User: " + user +
         "\r\n\r\n";
}

class LogApiServerTest : public ::testing::Test {
 protected:
  void Start(LogApiLimits limits = {}) {
    LogApiServerOptions options;
    options.address = "127.0.0.1:0";
    options.requestHeader.clientCaPem = TestPki().CaPem();
    options.limits = limits;
    options.metrics = &metrics_;
    server_ = std::make_unique<LogApiServer>(
        logs_,
        [this](const UserInfo&, const std::string&, const std::string&) {
          ++authorized_;
          return Status::Ok();
        },
        options);
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  // A finished Job's log, read as `user` from the address `from`, within `timeout`.
  std::string ReadDone(const std::string& user, std::chrono::milliseconds timeout,
                       const char* from = "127.0.0.1") {
    Client c;
    if (!c.Connect(server_->port(), "proxy", from) || !c.Send(Get("done", user, false))) {
      return "";
    }
    return c.Read([](const std::string& s) { return s.find("hello\n") != std::string::npos; },
                  timeout);
  }
  // The server with these handshake caps and a silence timeout longer than any test: a connection
  // admitted to its handshake holds its slot until the test closes it.
  void StartWithHandshakeCaps(int total, int perClient) {
    LogApiLimits limits;
    limits.maxHandshakes = total;
    limits.maxHandshakesPerClient = perClient;
    limits.silenceTimeout = 60s;
    limits.requestTimeout = 60s;
    ASSERT_NO_FATAL_FAILURE(Start(limits));
  }
  // One connection from each of `addresses` that starts a handshake and stays in it, added to
  // `out`; returns once the server counts them all.
  void StallHandshakes(const std::vector<const char*>& addresses,
                       std::vector<std::unique_ptr<TcpConnection>>& out) {
    const int before = server_->handshakes();
    for (const char* from : addresses) {
      out.push_back(std::make_unique<TcpConnection>());
      ASSERT_TRUE(out.back()->Connect(server_->port(), from)) << from;
      ASSERT_TRUE(out.back()->StartHandshake()) << from;
    }
    const int expected = before + static_cast<int>(addresses.size());
    ASSERT_TRUE(Eventually([&] { return server_->handshakes() == expected; }, 10s))
        << server_->handshakes() << " handshakes, " << expected << " expected";
  }
  // Connections closed by the handshake caps: `limit` "client" or "total".
  double Refused(const std::string& limit) {
    return metrics_.GetCounter(obs::metrics::kLogsApiConnectionsRefused, {{"limit", limit}})
        .Value();
  }

  obs::Registry metrics_;
  FakeLogs logs_;
  std::atomic<int> authorized_{0};
  std::unique_ptr<LogApiServer> server_;
};

TEST_F(LogApiServerTest, FortyFollowsOfASilentJobLeaveOtherReadersServedAndTheFortyFirstGets429) {
  ASSERT_NO_FATAL_FAILURE(Start());  // the defaults: 48 follows, 40 per user
  std::vector<std::unique_ptr<Client>> followers;
  for (int i = 0; i < 40; ++i) {
    followers.push_back(std::make_unique<Client>());
    ASSERT_TRUE(followers.back()->Connect(server_->port(), "proxy"));
    ASSERT_TRUE(followers.back()->Send(Get("silent", "mallory", true)));
  }
  ASSERT_TRUE(Eventually([&] { return logs_.silent == 40; }, 10s)) << logs_.silent;
  EXPECT_EQ(server_->follows(), 40);

  Client extra;
  ASSERT_TRUE(extra.Connect(server_->port(), "proxy"));
  ASSERT_TRUE(extra.Send(Get("silent", "mallory", true)));
  std::string head = extra.ReadHead(5s);
  EXPECT_TRUE(head.starts_with("HTTP/1.1 429")) << head;
  EXPECT_NE(head.find("Retry-After: 10\r\n"), std::string::npos) << head;

  // Another user, while the forty follow.
  auto start = std::chrono::steady_clock::now();
  std::string out = ReadDone("alice", 5s);
  EXPECT_NE(out.find("hello\n"), std::string::npos) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);

  // The followers leave: their slots, threads and backend reads are released within seconds
  // although the Job stays silent, and the others are served within 10 s.
  for (auto& f : followers) f->Close();
  start = std::chrono::steady_clock::now();
  EXPECT_TRUE(Eventually([&] { return server_->follows() == 0 && logs_.silent == 0; }, 10s))
      << server_->follows() << " follows, " << logs_.silent << " backend reads";
  out = ReadDone("alice", 10s);
  EXPECT_NE(out.find("hello\n"), std::string::npos) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST_F(LogApiServerTest, TheTotalCapHoldsAcrossUsers) {
  LogApiLimits limits;
  limits.maxFollows = 3;
  limits.maxFollowsPerUser = 2;
  ASSERT_NO_FATAL_FAILURE(Start(limits));
  std::vector<std::unique_ptr<Client>> followers;
  for (const char* user : {"a", "a", "b"}) {
    followers.push_back(std::make_unique<Client>());
    ASSERT_TRUE(followers.back()->Connect(server_->port(), "proxy"));
    ASSERT_TRUE(followers.back()->Send(Get("silent", user, true)));
  }
  ASSERT_TRUE(Eventually([&] { return server_->follows() == 3; }, 10s));
  Client c;
  ASSERT_TRUE(c.Connect(server_->port(), "proxy"));
  ASSERT_TRUE(c.Send(Get("silent", "c", true)));
  std::string head = c.ReadHead(5s);
  EXPECT_TRUE(head.starts_with("HTTP/1.1 429")) << head;
  EXPECT_NE(head.find("Retry-After:"), std::string::npos) << head;
}

TEST_F(LogApiServerTest, AClientWithoutTheFrontProxyCertificateIsRefusedAtTheHandshake) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const char* cert : {"", "stranger"}) {
    Client c;
    // With TLS 1.3 the client's side of the handshake ends before the server checks the
    // certificate: the refusal arrives as an alert instead of any HTTP response.
    if (c.Connect(server_->port(), cert)) {
      c.Send(Get("done", "alice", false));
      std::string got = c.ReadUntilClosed(5s);
      EXPECT_TRUE(c.closed()) << cert;
      EXPECT_EQ(got, "") << cert;
    }
  }
  EXPECT_EQ(authorized_, 0);
  EXPECT_EQ(logs_.calls, 0);
}

TEST_F(LogApiServerTest, ASlowLorisIsDroppedByTimeoutWhileOthersAreServed) {
  LogApiLimits limits;
  limits.requestTimeout = 2s;
  ASSERT_NO_FATAL_FAILURE(Start(limits));
  Client loris;
  ASSERT_TRUE(loris.Connect(server_->port(), "proxy"));
  const std::string request = Get("done", "loris", false);
  const auto start = std::chrono::steady_clock::now();
  size_t sent = 0;
  int reads = 0;
  // The attacker's pace, a byte a second: each byte comes well within the read timeout.
  while (sent < request.size() && loris.Send(request.substr(sent, 1))) {
    ++sent;
    std::string out = ReadDone("alice", 5s);
    ++reads;
    EXPECT_NE(out.find("hello\n"), std::string::npos) << out;
    loris.Read([](const std::string&) { return false; }, 1s);
    if (loris.closed()) break;
  }
  EXPECT_TRUE(loris.closed());
  EXPECT_LT(sent, request.size());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
  EXPECT_EQ(authorized_, reads) << "the loris's request reached the handler";
}

// Connections that never send a byte (anyone on the pod network can open them) wait in the
// kernel (TCP_DEFER_ACCEPT, 3 s); then each takes a handshake slot of its address, and those beyond
// the per-client cap are closed at once: the front proxy, from another address, is served while
// they arrive and while the admitted ones wait out their silence timeout.
TEST_F(LogApiServerTest, SilentConnectionsDoNotStarveTheFrontProxy) {
  ASSERT_NO_FATAL_FAILURE(Start());  // the defaults: 16 handshakes per client, 32 in all
  std::vector<std::unique_ptr<TcpConnection>> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(std::make_unique<TcpConnection>());
    ASSERT_TRUE(idle.back()->Connect(server_->port(), "127.0.0.1")) << i;
  }
  // Served from the start until the kernel has handed the silent connections over and the cap
  // has closed the rest of them (their addresses' handshakes never exceed the cap meanwhile).
  int round = 0;
  int maxHandshakes = 0;
  const bool capped = Eventually(
      [&] {
        const auto start = std::chrono::steady_clock::now();
        std::string out = ReadDone("alice", 5s, "127.0.0.2");
        EXPECT_NE(out.find("hello\n"), std::string::npos) << "round " << round << ": " << out;
        EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "round " << round;
        ++round;
        maxHandshakes = std::max(maxHandshakes, server_->handshakes());
        return Refused("client") > 0;
      },
      30s, 100ms);
  EXPECT_TRUE(capped) << "no silent connection reached the server in 30 s";
  EXPECT_LE(maxHandshakes, 16);
  EXPECT_EQ(Refused("total"), 0);
  for (int i = 0; i < 3; ++i, ++round) {
    const auto start = std::chrono::steady_clock::now();
    std::string out = ReadDone("alice", 5s, "127.0.0.2");
    EXPECT_NE(out.find("hello\n"), std::string::npos) << "round " << round << ": " << out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "round " << round;
  }
}

// A client address with `maxHandshakesPerClient` connections in their handshake: its next one is
// closed at once (long before the silence timeout), while a client of another address is served.
TEST_F(LogApiServerTest, AnAddressBeyondItsHandshakeCapIsClosedAtOnceWhileAnotherIsServed) {
  ASSERT_NO_FATAL_FAILURE(StartWithHandshakeCaps(8, 4));
  std::vector<std::unique_ptr<TcpConnection>> attacker;
  ASSERT_NO_FATAL_FAILURE(
      StallHandshakes({"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"}, attacker));

  TcpConnection fifth;
  ASSERT_TRUE(fifth.Connect(server_->port(), "127.0.0.1"));
  ASSERT_TRUE(fifth.StartHandshake());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(fifth.ClosedWithin(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "the silence timeout is 60 s";
  EXPECT_EQ(Refused("client"), 1);
  EXPECT_EQ(server_->handshakes(), 4);

  // Another address, meanwhile; its slot is released once its handshake is done.
  const auto served = std::chrono::steady_clock::now();
  std::string out = ReadDone("alice", 5s, "127.0.0.2");
  EXPECT_NE(out.find("hello\n"), std::string::npos) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - served, 5s);
  EXPECT_EQ(server_->handshakes(), 4);

  // The attacker leaves: its address is served again.
  attacker.clear();
  ASSERT_TRUE(Eventually([&] { return server_->handshakes() == 0; }, 10s)) << server_->handshakes();
  out = ReadDone("alice", 5s, "127.0.0.1");
  EXPECT_NE(out.find("hello\n"), std::string::npos) << out;
  EXPECT_EQ(Refused("total"), 0);
}

// Attackers of several addresses fill the total cap: a connection of yet another address is closed
// at once, and admitted again once a slot is free.
TEST_F(LogApiServerTest, TheHandshakeCapHoldsAcrossAddresses) {
  ASSERT_NO_FATAL_FAILURE(StartWithHandshakeCaps(4, 2));
  std::vector<std::unique_ptr<TcpConnection>> attackers;
  ASSERT_NO_FATAL_FAILURE(
      StallHandshakes({"127.0.0.3", "127.0.0.3", "127.0.0.4", "127.0.0.4"}, attackers));
  TcpConnection other;
  ASSERT_TRUE(other.Connect(server_->port(), "127.0.0.5"));
  ASSERT_TRUE(other.StartHandshake());
  EXPECT_TRUE(other.ClosedWithin(10s));
  EXPECT_EQ(Refused("total"), 1);
  EXPECT_EQ(Refused("client"), 0);

  attackers.pop_back();
  ASSERT_TRUE(Eventually([&] { return server_->handshakes() == 3; }, 10s)) << server_->handshakes();
  std::string out = ReadDone("alice", 5s, "127.0.0.5");
  EXPECT_NE(out.find("hello\n"), std::string::npos) << out;
}

TEST_F(LogApiServerTest, AnOversizeChunkedBodyIsRefusedUnread) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const char* method : {"POST", "GET"}) {
    Client c;
    ASSERT_TRUE(c.Connect(server_->port(), "proxy"));
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.Send(std::string(method) + " " + kLogPrefix +
                       "ns/jobs/done/log HTTP/1.1\r\nHost: logs\r\nX-Remote-User: alice\r\n"
                       "Transfer-Encoding: chunked\r\n\r\nfffffffffff\r\n"));
    // A body that would never end; the server reads none of it.
    const std::string mib(size_t{1} << 20, 'x');
    c.Send(mib);
    std::string got = c.ReadUntilClosed(5s);
    EXPECT_TRUE(c.closed()) << method;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << method;
    EXPECT_TRUE(
        got.starts_with(std::string("HTTP/1.1 ") + (std::string(method) == "GET" ? "413" : "405")))
        << method << ": " << got;
  }
  EXPECT_EQ(authorized_, 0);
  EXPECT_EQ(logs_.calls, 0);
}

TEST_F(LogApiServerTest, AnEndlessHeaderLineIsCutOff) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Client c;
  ASSERT_TRUE(c.Connect(server_->port(), "proxy"));
  ASSERT_TRUE(c.Send("GET /apis HTTP/1.1\r\nX-Remote-User: alice\r\nX-Long: "));
  const std::string kib(1024, 'y');
  size_t sent = 0;
  while (sent < (size_t{16} << 20) && c.Send(kib)) sent += kib.size();
  c.ReadUntilClosed(5s);
  EXPECT_TRUE(c.closed());
  EXPECT_LT(sent, size_t{16} << 20) << "the server kept reading";
  EXPECT_EQ(authorized_, 0);
}

TEST_F(LogApiServerTest, OnlyGetIsServed) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const char* method : {"HEAD", "DELETE", "PUT"}) {
    Client c;
    ASSERT_TRUE(c.Connect(server_->port(), "proxy"));
    ASSERT_TRUE(c.Send(std::string(method) + " /apis HTTP/1.1\r\nX-Remote-User: a\r\n\r\n"));
    std::string head = c.ReadHead(5s);
    EXPECT_TRUE(head.starts_with("HTTP/1.1 405")) << method << ": " << head;
  }
  Client c;
  ASSERT_TRUE(c.Connect(server_->port(), "proxy"));
  ASSERT_TRUE(c.Send("GET /apis HTTP/1.1\r\nX-Remote-User: a\r\n\r\n"));
  EXPECT_TRUE(c.ReadHead(5s).starts_with("HTTP/1.1 200"));
}

// What Start answers for a server with `limits`.
Status StartWith(const LogApiLimits& limits) {
  FakeLogs logs;
  LogApiServerOptions options;
  options.address = "127.0.0.1:0";
  options.requestHeader.clientCaPem = TestPki().CaPem();
  options.limits = limits;
  LogApiServer server(
      logs, [](const UserInfo&, const std::string&, const std::string&) { return Status::Ok(); },
      options);
  return server.Start();
}

TEST(LogApiServerLimits, CapsThatCannotWorkAreAClearError) {
  for (auto [total, perHolder] : {std::pair{0, 1}, std::pair{4, 0}, std::pair{4, 5}}) {
    LogApiLimits follows;
    follows.maxFollows = total;
    follows.maxFollowsPerUser = perHolder;
    Status s = StartWith(follows);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << total << "/" << perHolder;
    EXPECT_NE(s.message().find("follow caps"), std::string::npos) << s.ToString();
    LogApiLimits handshakes;
    handshakes.maxHandshakes = total;
    handshakes.maxHandshakesPerClient = perHolder;
    s = StartWith(handshakes);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << total << "/" << perHolder;
    EXPECT_NE(s.message().find("handshake caps"), std::string::npos) << s.ToString();
  }
  LogApiLimits limits;
  limits.silenceTimeout = 500ms;  // TCP_DEFER_ACCEPT counts whole seconds
  Status s = StartWith(limits);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("silence timeout"), std::string::npos) << s.ToString();
}

// A backend that cannot be reached: its error names the engine's address, as curl's do.
class FakeUnreachableAdapter final : public Adapter {
 public:
  std::string Name() const override { return "docker"; }
  Status Start(std::function<void(const std::string&, const std::string&)>) override {
    return Status::Ok();
  }
  Status Validate(const ExecutionRequest&) override { return Status::Ok(); }
  Observation Ensure(const ExecutionRequest&) override { return {}; }
  Observation Observe(const ExecutionKey&) override { return {}; }
  Observation Cancel(const ExecutionKey&) override { return {}; }
  Status Delete(const ExecutionKey&) override { return Status::Ok(); }
  Status StreamLogs(const ExecutionKey&, const LogOptions&, const LogSink&) override {
    return Status(StatusCode::kUnavailable,
                  "GET http://127.0.0.1:2375/v1.43/containers/c0ffee/logs: Failed to connect to "
                  "127.0.0.1 port 2375 after 0 ms: Couldn't connect to server");
  }
};

TEST(AdapterJobLogs, AnUnreachableBackendIsReportedWithoutItsAddress) {
  kube::testing::FakeKubeClient client;
  adapters::AdapterRegistry registry;
  AdapterDescriptor descriptor;
  descriptor.controllerName = "execution.ayatori.ddupan.top/docker";
  ASSERT_TRUE(registry.Register(descriptor, std::make_shared<FakeUnreachableAdapter>()).ok());
  api::Job job;
  job.metadata.namespace_ = "team-a";
  job.metadata.name = "hello";
  job.spec.task.image = "busybox";
  auto created = client.Create(controller::kJobs, "team-a", api::ToJson(job), {});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  job.metadata.uid = created->value("/metadata/uid"_json_pointer, std::string());
  job.metadata.resourceVersion = created->value("/metadata/resourceVersion"_json_pointer, "");
  job.status.resolvedJobClass =
      api::ResolvedJobClass{"default", "8aa4e2a4-8f1d-4c6b-9d2e-0a1b2c3d4e5f",
                            descriptor.controllerName, std::nullopt, std::nullopt};
  job.status.execution = api::ExecutionStatus{"docker", {{"Container", "c0ffee"}}};
  ASSERT_TRUE(client.UpdateStatus(controller::kJobs, "team-a", api::ToJson(job), {}).ok());

  std::vector<std::string> operatorLog;
  AdapterJobLogs logs(client, registry, "ayatori-system", {},
                      [&](const std::string& line) { operatorLog.push_back(line); });
  Status s = logs.Stream("team-a", "hello", {}, [](std::string_view) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.message().find("127.0.0.1"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("2375"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("could not be reached"), std::string::npos) << s.message();
  // The operator keeps the details.
  ASSERT_EQ(operatorLog.size(), 1u);
  EXPECT_NE(operatorLog[0].find("127.0.0.1 port 2375"), std::string::npos) << operatorLog[0];
}

}  // namespace
}  // namespace ayatori::logapi
