// A fault for the OpenSandbox adapter's e2e tests (opensandbox_e2e_test.cc, contract_test.cc):
// the answer of a chosen request lost after the real server acted on it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "kube/http.h"

namespace ayatori::adapters::opensandbox {

// A transport around the real one that loses the answer of chosen requests after the server has
// acted on them (the request goes through; the caller sees a transport error): the "response
// lost" fault. Not a fake: every request reaches the real server.
class AnswerLosingTransport final : public kube::HttpTransport {
 public:
  explicit AnswerLosingTransport(std::shared_ptr<kube::HttpTransport> real)
      : real_(std::move(real)) {}
  // Loses the answer of the next request whose method matches and whose URL and body contain
  // the given texts.
  void LoseNext(std::string method, std::string urlContains, std::string bodyContains = "") {
    std::lock_guard lock(mu_);
    method_ = std::move(method);
    path_ = std::move(urlContains);
    body_ = std::move(bodyContains);
  }
  std::string lostBody() {
    std::lock_guard lock(mu_);
    return lost_;
  }
  int lostCount() const { return lostCount_; }

  StatusOr<kube::HttpResponse> Do(const kube::HttpRequest& r) override {
    auto resp = real_->Do(r);
    if (Matches(r) && resp.ok()) return Lose(resp->body);
    return resp;
  }
  StatusOr<kube::HttpResponse> Stream(
      const kube::HttpRequest& r, std::stop_token stop,
      const std::function<bool(std::string_view)>& onData) override {
    if (!Matches(r)) return real_->Stream(r, stop, onData);
    std::string seen;
    auto resp = real_->Stream(r, stop, [&](std::string_view d) {
      seen.append(d);
      return seen.find("execution_complete") == std::string::npos;
    });
    if (!resp.ok()) return resp;
    return Lose(seen);
  }

 private:
  bool Matches(const kube::HttpRequest& r) {
    std::lock_guard lock(mu_);
    if (method_.empty() || r.method != method_ || r.url.find(path_) == std::string::npos ||
        r.body.find(body_) == std::string::npos) {
      return false;
    }
    method_.clear();
    return true;
  }
  Status Lose(const std::string& body) {
    std::lock_guard lock(mu_);
    lost_ = body;
    ++lostCount_;
    return Status(StatusCode::kUnavailable, "injected fault: the answer was lost");
  }

  std::shared_ptr<kube::HttpTransport> real_;
  std::mutex mu_;
  std::string method_, path_, body_, lost_;
  std::atomic<int> lostCount_{0};
};

}  // namespace ayatori::adapters::opensandbox
