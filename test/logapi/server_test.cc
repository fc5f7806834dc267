// The log API server against clients that play the attacker: real TLS connections on a real
// socket, the server as the controller runs it; only the Jobs' output (JobLogs) and the
// authorizer are stand-ins. The PKI is made with the openssl command at the start.
#include "logapi/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
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

// A TLS client on a blocking socket with a receive timeout.
class Client {
 public:
  Client() : ctx_(SSL_CTX_new(TLS_client_method())) {}
  ~Client() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
    SSL_CTX_free(ctx_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // `name`: "proxy", "stranger" (another CA) or "" (no certificate). False when the handshake
  // failed on this side.
  bool Connect(int port, const std::string& name) {
    if (!name.empty()) {
      const std::string base = TestPki().dir + "/" + name;
      SSL_CTX_use_certificate_file(ctx_, (base + ".crt").c_str(), SSL_FILETYPE_PEM);
      SSL_CTX_use_PrivateKey_file(ctx_, (base + ".key").c_str(), SSL_FILETYPE_PEM);
    }
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
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
  void Close() { shutdown(fd_, SHUT_RDWR); }

 private:
  SSL_CTX* ctx_;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
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

  // A finished Job's log, read as `user`, within `timeout`.
  std::string ReadDone(const std::string& user, std::chrono::milliseconds timeout) {
    Client c;
    if (!c.Connect(server_->port(), "proxy") || !c.Send(Get("done", user, false))) return "";
    return c.Read([](const std::string& s) { return s.find("hello\n") != std::string::npos; },
                  timeout);
  }

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
// kernel (TCP_DEFER_ACCEPT) or are dropped after 3 s of silence: the front proxy is served.
TEST_F(LogApiServerTest, SilentConnectionsDoNotStarveTheFrontProxy) {
  ASSERT_NO_FATAL_FAILURE(Start());
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(fd);
  }
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    std::string out = ReadDone("alice", 5s);
    EXPECT_NE(out.find("hello\n"), std::string::npos) << "round " << round << ": " << out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "round " << round;
  }
  for (int fd : idle) close(fd);
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

TEST(LogApiServerLimits, CapsThatCannotWorkAreAClearError) {
  FakeLogs logs;
  for (auto [total, perUser] : {std::pair{0, 1}, std::pair{4, 0}, std::pair{4, 5}}) {
    LogApiServerOptions options;
    options.address = "127.0.0.1:0";
    options.requestHeader.clientCaPem = TestPki().CaPem();
    options.limits.maxFollows = total;
    options.limits.maxFollowsPerUser = perUser;
    LogApiServer server(
        logs, [](const UserInfo&, const std::string&, const std::string&) { return Status::Ok(); },
        options);
    Status s = server.Start();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << total << "/" << perUser;
    EXPECT_NE(s.message().find("follow caps"), std::string::npos) << s.ToString();
  }
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
