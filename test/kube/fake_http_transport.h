// A scripted HttpTransport for unit tests of the REST client: each request gets the next
// scripted response (or a transport error); streams deliver their body in given chunks.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "kube/http.h"

namespace ayatori::kube::testing {

struct FakeResponse {
  FakeResponse(int s, std::string b, std::string ra = "")
      : status(s), body(std::move(b)), retryAfter(std::move(ra)) {}
  static FakeResponse Failure(Status error) {
    FakeResponse r(0, "");
    r.transportError = std::move(error);
    return r;
  }

  int status = 200;
  std::string body;
  std::string retryAfter;
  std::vector<std::string> chunks;  // for streams: the 2xx body in pieces
  Status transportError;            // non-OK: the request fails in transport
};

class FakeHttpTransport final : public HttpTransport {
 public:
  void Push(FakeResponse r) {
    std::lock_guard lock(mu_);
    script_.push_back(std::move(r));
  }
  std::vector<HttpRequest> Requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  HttpRequest LastRequest() const {
    std::lock_guard lock(mu_);
    return requests_.empty() ? HttpRequest{} : requests_.back();
  }

  StatusOr<HttpResponse> Do(const HttpRequest& request) override {
    FakeResponse r = Next(request);
    if (!r.transportError.ok()) return r.transportError;
    HttpResponse resp{r.status, r.body, r.retryAfter};
    for (const auto& c : r.chunks) resp.body += c;
    return resp;
  }

  StatusOr<HttpResponse> Stream(const HttpRequest& request, std::stop_token stop,
                                const std::function<bool(std::string_view)>& onData) override {
    FakeResponse r = Next(request);
    if (!r.transportError.ok()) return r.transportError;
    HttpResponse resp{r.status, "", r.retryAfter};
    if (r.status < 200 || r.status >= 300) {
      resp.body = r.body;
      return resp;
    }
    for (const auto& c : r.chunks) {
      if (stop.stop_requested()) return Status(StatusCode::kCancelled, "stopped");
      if (!onData(c)) return resp;
    }
    return resp;
  }

 private:
  FakeResponse Next(const HttpRequest& request) {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
    if (script_.empty()) {
      return FakeResponse::Failure(Status(StatusCode::kInternal, "no scripted response"));
    }
    FakeResponse r = std::move(script_.front());
    script_.pop_front();
    return r;
  }

  mutable std::mutex mu_;
  std::deque<FakeResponse> script_;
  std::vector<HttpRequest> requests_;
};

}  // namespace ayatori::kube::testing
