// Helpers for the Docker adapter's e2e tests, which run against real dockerds started by
// hack/dockerd.sh (the CTest fixture "dockerd", or a test's own) and a real registry
// (hack/registry.sh, fixture "docker_registry").
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/docker/docker_adapter.h"

namespace ayatori::adapters::docker::e2e {

// Variables of an env.sh written by hack/dockerd.sh or hack/registry.sh ("export K=V" lines);
// fails the test if the file is missing.
std::map<std::string, std::string> ReadEnvFile(const std::string& path);

// DOCKER_HOST of the dockerd whose directory is `dockerdDir`.
std::string DockerHostOf(const std::string& dockerdDir);
// DOCKER_HOST of the fixture's dockerd ($AYATORI_DOCKERD_DIR).
std::string FixtureEndpoint();

// A fresh Kubernetes-style UID.
std::string NewUid();

// DockerExecutionParameters JSON for `endpoint` plus `spec` fields.
nlohmann::json Parameters(const std::string& endpoint,
                          const nlohmann::json& spec = nlohmann::json::object());

ExecutionRequest MakeRequest(const std::string& endpoint, const std::string& name,
                             const std::string& image, std::vector<std::string> command,
                             std::vector<std::string> args = {},
                             const nlohmann::json& spec = nlohmann::json::object());

// The key the controller would keep: UID, namespace/name, references and parameters.
ExecutionKey KeyOf(const ExecutionRequest& request, const Observation& observed = {});

// Observes until `done` holds or the deadline passes (then fails the test with `what`).
Observation WaitFor(Adapter& adapter, const ExecutionKey& key,
                    const std::function<bool(const Observation&)>& done,
                    std::chrono::milliseconds deadline, const std::string& what);
Observation WaitForStopped(Adapter& adapter, const ExecutionKey& key,
                           std::chrono::milliseconds deadline = std::chrono::seconds(60));

// Containers carrying the Job UID label on the engine, counted through the Engine API.
int CountContainers(const std::string& endpoint, const std::string& uid);
// Removes an image from the engine (ignores "no such image").
void RemoveImage(const std::string& endpoint, const std::string& image);

// A TCP listener on 127.0.0.1 with an ephemeral port.
class TcpListener {
 public:
  TcpListener();
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;
  int port() const { return port_; }
  // An accepted connection, or -1 when none arrived before the deadline.
  int Accept(std::chrono::milliseconds deadline);
  // Connections accepted so far, including by Accept.
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  int accepted_ = 0;
};

// A TcpListener whose own thread answers every connection with "pong\n", so that a container
// that reaches it has an answer to print (network isolation tests and their controls).
class PongServer {
 public:
  PongServer();
  ~PongServer();  // Stop()
  PongServer(const PongServer&) = delete;
  PongServer& operator=(const PongServer&) = delete;
  int port() const { return listener_.port(); }
  // Stops answering and joins the thread; accepted() is final afterwards.
  void Stop();
  int accepted() const { return listener_.accepted(); }

 private:
  TcpListener listener_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Reads from `fd` until the peer closes it or the deadline passes; true on EOF.
bool WaitForPeerClose(int fd, std::chrono::milliseconds deadline);

// Runs hack/<script> with extra environment; fails the test with its output on error. `out`, if
// given, receives what it printed on stdout.
bool RunHackScript(const std::string& script, const std::vector<std::string>& args,
                   const std::vector<std::string>& extraEnv, std::string* out = nullptr);

std::string PhaseName(const Observation& o);

}  // namespace ayatori::adapters::docker::e2e
