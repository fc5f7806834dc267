#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>

#include "http/http.h"
#include "test/kube/integration_util.h"
#include "test/kube/pem.h"
#include "test/support/wait.h"

namespace ayatori::http {
namespace {

using namespace std::chrono_literals;

TlsOptions AdminTls() {
  kube::RestConfig admin = kube::testing::AdminConfig();
  return TlsOptions{.caPem = admin.caPem,
                    .clientCertPem = admin.clientCertPem,
                    .clientKeyPem = admin.clientKeyPem};
}

class CurlTransportTest : public ::testing::Test {
 protected:
  Request Get(const std::string& path) {
    return Request{.method = "GET", .url = server_ + path, .timeout = 30s};
  }

  std::string server_ = kube::testing::AdminConfig().server;
  std::unique_ptr<Transport> transport_ = NewCurlTransport(AdminTls(), {});
};

// The three answers to a body past its limit (http.h, BodyOverflow), on one answer that is the
// same at every call.
TEST_F(CurlTransportTest, ABodyPastItsLimitFailsOrKeepsItsHeadOrItsTail) {
  Request whole = Get("/apis");
  whole.identityEncoding = true;
  auto full = transport_->Do(whole);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  ASSERT_EQ(full->status, 200) << full->body;
  ASSERT_GT(full->body.size(), 2000u) << "the checks below could not fail";

  Request failing = whole;
  failing.maxBodyBytes = 512;
  std::optional<Failure> failure;
  failing.onFailure = [&](const Failure& f) { failure = f; };
  auto failed = transport_->Do(failing);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("exceeds 512 bytes"), std::string::npos)
      << failed.status().message();
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->kind, FailureKind::kBodyTooLarge);

  Request head = whole;
  head.maxBodyBytes = 512;
  head.overflow = BodyOverflow::kKeepHead;
  auto headAnswer = transport_->Do(head);
  ASSERT_TRUE(headAnswer.ok()) << headAnswer.status().ToString();
  EXPECT_EQ(headAnswer->status, 200);
  EXPECT_EQ(headAnswer->body, full->body.substr(0, 512));

  Request tail = whole;
  tail.maxBodyBytes = 256;
  tail.overflow = BodyOverflow::kKeepTail;
  auto tailAnswer = transport_->Do(tail);
  ASSERT_TRUE(tailAnswer.ok()) << tailAnswer.status().ToString();
  EXPECT_GE(tailAnswer->body.size(), 256u);
  EXPECT_LE(tailAnswer->body.size(), 2 * 256u);
  EXPECT_TRUE(full->body.ends_with(tailAnswer->body)) << "the tail is the answer's end";

  // The transport is usable again after answers it cut short.
  auto again = transport_->Do(Get("/version"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, 200);
}

// A server whose certificate the configured CA did not sign is refused, and said to be so.
TEST_F(CurlTransportTest, AServerCertificateFromAnotherCaIsUntrusted) {
  TlsOptions stranger = AdminTls();
  stranger.caPem = kube::testing::MakeSelfSigned("another-ca").cert;
  auto transport = NewCurlTransport(stranger, {});
  Request r = Get("/version");
  std::optional<Failure> failure;
  r.onFailure = [&](const Failure& f) { failure = f; };
  auto answer = transport->Do(r);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->kind, FailureKind::kTlsUntrustedPeer)
      << failure->summary << " / " << failure->detail;
}

// A port nobody listens on: a network failure naming the request, not an HTTP answer.
TEST_F(CurlTransportTest, ARefusedConnectionIsANetworkFailure) {
  // A port that was free a moment ago: bound, not listening, then closed.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x";
  auto transport = NewCurlTransport({}, {});
  std::optional<Failure> failure;
  Request r{.method = "GET", .url = url, .timeout = 10s};
  r.onFailure = [&](const Failure& f) { failure = f; };
  auto answer = transport->Do(r);
  close(fd);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(answer.status().message().rfind("GET " + url + ": ", 0), 0u)
      << answer.status().message();
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->kind, FailureKind::kNetwork);
  EXPECT_FALSE(failure->summary.empty());
}

// A stream reports its status before its body, and its stop token ends it at once.
TEST_F(CurlTransportTest, AStreamReportsItsStatusFirstAndStopsAtOnce) {
  Request watch = Get("/api/v1/namespaces?watch=1");
  watch.timeout = 0ms;
  std::optional<int> statusBeforeData;
  std::atomic<bool> gotData{false};
  bool dataBeforeStatus = false;
  watch.onStatus = [&](int code) { statusBeforeData = code; };
  std::stop_source stop;
  auto done = std::async(std::launch::async, [&] {
    return transport_->Stream(watch, stop.get_token(), [&](std::string_view) {
      if (!statusBeforeData) dataBeforeStatus = true;
      gotData = true;
      return true;
    });
  });
  ASSERT_TRUE(ayatori::testing::Eventually([&] { return gotData.load(); }, 10s))
      << "the watch sends the existing namespaces at once";
  const auto t0 = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(done.wait_for(5s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(done.get().status().code(), StatusCode::kCancelled);
  EXPECT_FALSE(dataBeforeStatus);
  EXPECT_EQ(statusBeforeData, 200);
}

}  // namespace
}  // namespace ayatori::http
