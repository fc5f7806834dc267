// FakeOpenSandbox: an in-memory OpenSandbox server and execd behind the HttpTransport seam, for
// unit tests of the adapter's HTTP handling and of faults the real stack cannot produce on demand
// (an answer lost after the server acted, a stream cut after its last event, 5xx, 422, endpoints
// with a path). It models what the adapter relies on: sandboxes with metadata, the guarded task
// command and its marker (TaskCommand/ProbeCommand in src/adapters/opensandbox/spec.h), command
// status and logs. Not a replacement for the e2e tests on the real server.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/opensandbox/spec.h"
#include "kube/http.h"

namespace ayatori::adapters::opensandbox::testing {

class FakeOpenSandbox final : public kube::HttpTransport {
 public:
  static constexpr const char* kServer = "http://fake-server:8080/v1";
  static constexpr const char* kExecdHost = "fake-execd:44772";

  struct Command {
    std::string content;
    bool running = true;
    int exitCode = 0;
    std::string error;
    std::string output;
  };
  struct Fault {
    std::string method, urlContains, bodyContains;
    enum class Kind { kLoseAnswer, kFailBefore, kHttp } kind = Kind::kLoseAnswer;
    int httpStatus = 0;
    std::string httpBody;

    // The server acts on the request; its answer is lost (a transport error for the caller).
    static Fault Lose(std::string method, std::string url, std::string body = "") {
      return Make(std::move(method), std::move(url), std::move(body), Kind::kLoseAnswer);
    }
    // The request never reaches the server (connection refused).
    static Fault Refuse(std::string method, std::string url, std::string body = "") {
      return Make(std::move(method), std::move(url), std::move(body), Kind::kFailBefore);
    }
    // The server answers `status` with `responseBody` without acting.
    static Fault Http(std::string method, std::string url, int status, std::string responseBody) {
      Fault f = Make(std::move(method), std::move(url), "", Kind::kHttp);
      f.httpStatus = status;
      f.httpBody = std::move(responseBody);
      return f;
    }

   private:
    static Fault Make(std::string method, std::string url, std::string body, Kind kind) {
      Fault f;
      f.method = std::move(method);
      f.urlContains = std::move(url);
      f.bodyContains = std::move(body);
      f.kind = kind;
      return f;
    }
  };

  // The next request matching (method, URL and body substrings) gets the fault.
  void Inject(Fault f) {
    std::lock_guard lock(mu_);
    faults_.push_back(std::move(f));
  }
  void SetServerDown(bool down) {
    std::lock_guard lock(mu_);
    serverDown_ = down;
  }
  // What GET .../endpoints/44772 answers as "endpoint" (default kExecdHost).
  void SetEndpoint(std::string endpoint) {
    std::lock_guard lock(mu_);
    endpoint_ = std::move(endpoint);
  }
  // Event-stream framing of POST /command: with "data: " prefixes, and/or cut (transport error)
  // right after the last event, as upstream issue #1277 describes.
  void SetStreamStyle(bool dataPrefix, bool cutAfterEvents) {
    std::lock_guard lock(mu_);
    dataPrefix_ = dataPrefix;
    cutStream_ = cutAfterEvents;
  }
  void FinishCommand(const std::string& id, int exitCode, std::string error = "",
                     const std::string& output = "") {
    std::lock_guard lock(mu_);
    auto& c = commands_[id];
    c.running = false;
    c.exitCode = exitCode;
    c.error = std::move(error);
    c.output += output;
  }
  void SetSandboxState(const std::string& id, const std::string& state) {
    std::lock_guard lock(mu_);
    sandboxes_[id]["status"] = {{"state", state}, {"reason", "TEST"}};
  }
  void SetSandboxExpiresAt(const std::string& id, const std::string& rfc3339) {
    std::lock_guard lock(mu_);
    sandboxes_[id]["expiresAt"] = rfc3339;
  }
  void RemoveSandbox(const std::string& id) {
    std::lock_guard lock(mu_);
    sandboxes_.erase(id);
  }
  // Commands run in an execd whose sandbox belongs to another Job.
  void SetForeign(bool foreign) {
    std::lock_guard lock(mu_);
    foreign_ = foreign;
  }
  void ForgetCommands() {
    std::lock_guard lock(mu_);
    commands_.clear();
  }

  int SandboxCount() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(sandboxes_.size());
  }
  // Commands that got past the guard, i.e. started the task.
  int TaskStarts() const {
    std::lock_guard lock(mu_);
    return taskStarts_;
  }
  std::optional<Command> GetCommand(const std::string& id) const {
    std::lock_guard lock(mu_);
    auto it = commands_.find(id);
    if (it == commands_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<kube::HttpRequest> Requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  nlohmann::json LastCreateBody() const {
    std::lock_guard lock(mu_);
    return lastCreate_;
  }

  StatusOr<kube::HttpResponse> Do(const kube::HttpRequest& r) override;
  StatusOr<kube::HttpResponse> Stream(const kube::HttpRequest& r, std::stop_token stop,
                                      const std::function<bool(std::string_view)>& onData) override;

 private:
  // The answer to `r` after any injected fault.
  StatusOr<kube::HttpResponse> Respond(const kube::HttpRequest& r);
  kube::HttpResponse Handle(const kube::HttpRequest& r);
  kube::HttpResponse Server(const std::string& method, const std::string& path,
                            const std::string& body);
  kube::HttpResponse Execd(const std::string& method, const std::string& path,
                           const std::string& body);
  std::optional<Fault> TakeFault(const kube::HttpRequest& r);

  mutable std::mutex mu_;
  std::vector<Fault> faults_;
  std::vector<kube::HttpRequest> requests_;
  std::map<std::string, nlohmann::json> sandboxes_;
  std::map<std::string, Command> commands_;
  std::map<std::string, std::string> markers_;  // Job UID -> command id that started the task
  std::string endpoint_ = kExecdHost;
  nlohmann::json lastCreate_;
  bool serverDown_ = false;
  bool foreign_ = false;
  bool dataPrefix_ = false;
  bool cutStream_ = false;
  int taskStarts_ = 0;
  int nextId_ = 1;
};

}  // namespace ayatori::adapters::opensandbox::testing
