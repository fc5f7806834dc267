// FakeDockerEngine: a stand-in Docker Engine on a unix socket of its own, for unit tests of what
// the adapter does with the engine's answers (the runtime list at acceptance, image pulls and
// their credentials) without a dockerd. It answers each request from a table of canned answers
// and records what it was asked. Not a replacement for the e2e tests on the real dockerd.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ayatori::adapters::docker::testing {

class FakeDockerEngine {
 public:
  struct Request {
    std::string method;
    std::string path;                            // with the query, without the /v<version> prefix
    std::map<std::string, std::string> headers;  // names in lower case
  };

  // Listens on a fresh socket; GET /version answers API version 1.41, anything unanswered 404.
  FakeDockerEngine();
  ~FakeDockerEngine();
  FakeDockerEngine(const FakeDockerEngine&) = delete;
  FakeDockerEngine& operator=(const FakeDockerEngine&) = delete;

  // unix://<socket>
  std::string endpoint() const { return "unix://" + socketPath_; }

  // Requests "<METHOD> <path>" that start with `methodAndPath` (e.g. "GET /info") get `status`
  // and `body` (JSON); the longest matching prefix wins.
  void Answer(const std::string& methodAndPath, int status, std::string body);

  std::vector<Request> Requests() const;
  // How many requests "<METHOD> <path>" started with `methodAndPath`.
  int Count(const std::string& methodAndPath) const;

 private:
  void Serve();
  void Handle(int connection);

  std::string dir_;
  std::string socketPath_;
  int fd_ = -1;
  mutable std::mutex mu_;
  std::map<std::string, std::pair<int, std::string>> answers_;
  std::vector<Request> requests_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace ayatori::adapters::docker::testing
