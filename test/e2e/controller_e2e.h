// Support for the end-to-end tests that drive Ayatori as a user does: the real ayatori-controller
// binary as a subprocess, the real kube-apiserver of the "apiserver" fixture (through kubectl),
// and real dockerds (hack/dockerd.sh). Every wait polls a condition with a deadline.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ayatori/status.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/wait.h"

namespace ayatori::e2e {

using nlohmann::json;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

// The Job resource for kubectl, unambiguous next to batch/v1 Jobs.
inline constexpr const char* kJobResource = "jobs.execution.ayatori.ddupan.top";
inline constexpr const char* kJobUidLabel = "execution.ayatori.ddupan.top/job-uid";

// ---------------------------------------------------------------------------------------------
// kubectl against the fixture's control plane.

// kubectl --kubeconfig=<fixture's> ARGS, with `input` on stdin.
testing::ProcessResult Kubectl(const std::vector<std::string>& args, const std::string& input = "");
// kubectl apply -f - of one object (or a List); fails the test with kubectl's message on error.
bool Apply(const json& object);
// kubectl create -f - of one object; returns the created object (nullopt + test failure on error).
std::optional<json> Create(const json& object);
// kubectl get RESOURCE NAME -o json; nullopt when it does not exist (other errors fail the test).
std::optional<json> Get(const std::string& resource, const std::string& ns,
                        const std::string& name);
// The Events of a namespace as kubectl prints them in JSON (for "no Secret in Events" checks).
std::string EventsJson(const std::string& ns);
// Installs the CRDs of config/crd and waits until they are established.
bool InstallCrds();

// ---------------------------------------------------------------------------------------------
// Jobs.

// A Job of class `jobClass` running `task` (image, command, args, env ...), `spec` merged in.
json JobManifest(const std::string& ns, const std::string& name, const std::string& jobClass,
                 const json& task, const json& spec = json::object());
// A DockerExecutionParameters named `name` with `spec` (endpoint included by the caller) and a
// JobClass of the same name using it, secretEnvForwarding Allowed, `classSpec` merged in.
bool ApplyDockerClass(const std::string& name, const json& parametersSpec,
                      const json& classSpec = json::object());
// A KubernetesExecutionParameters named `name` with `parametersSpec` and a JobClass of the same
// name using it (controller execution.ayatori.ddupan.top/kubernetes), secretEnvForwarding Denied
// (the backend never needs a Secret's value), `classSpec` merged in.
bool ApplyKubernetesClass(const std::string& name, const json& parametersSpec,
                          const json& classSpec = json::object());

// The condition of `type` in a Job's status, or nullptr.
const json* FindCondition(const json& job, const std::string& type);
// "<status>/<reason>" of a condition, "" when absent.
std::string ConditionSummary(const json& job, const std::string& type);
// Conditions, times, result and references of a Job in one line, for failure messages.
std::string Describe(const json& job);
// RFC 3339 "2006-01-02T15:04:05Z" -> seconds since the epoch; nullopt if malformed.
std::optional<long long> ParseTime(const std::string& rfc3339);

// Polls the Job every 100 ms until `done` accepts it; fails the test (naming `what` and the last
// state seen) when `timeout` passes. Returns the last Job read (empty when none was).
json WaitForJob(const std::string& ns, const std::string& name,
                const std::function<bool(const json&)>& done, std::chrono::milliseconds timeout,
                const std::string& what);
// Waits for Succeeded=True or False.
json WaitForFinished(const std::string& ns, const std::string& name,
                     std::chrono::milliseconds timeout = 120s);
// Polls until the Job no longer exists.
bool WaitForJobGone(const std::string& ns, const std::string& name,
                    std::chrono::milliseconds timeout = 60s);

// ---------------------------------------------------------------------------------------------
// Docker (the docker CLI against one dockerd).

// docker ARGS with DOCKER_HOST=`dockerHost`.
testing::ProcessResult Docker(const std::string& dockerHost, const std::vector<std::string>& args);
// Ids of every container (running or not) that carries the Job UID label.
std::vector<std::string> ContainersOf(const std::string& dockerHost, const std::string& uid);
// docker inspect of one container; nullopt if it does not exist.
std::optional<json> InspectContainer(const std::string& dockerHost, const std::string& id);
// Output of the Job's container (stdout and stderr).
std::string ContainerLogs(const std::string& dockerHost, const std::string& id);

// ---------------------------------------------------------------------------------------------
// The private registry of the "docker_registry" fixture (hack/registry.sh).

// Its address, htpasswd user and password, and the image only it holds.
struct PrivateRegistry {
  std::string addr, user, password, image;
};
// Reads $AYATORI_REGISTRY_DIR/env.sh into `registry`; a fatal failure when a field is missing
// (call it in ASSERT_NO_FATAL_FAILURE).
void ReadPrivateRegistry(PrivateRegistry* registry);
// Applies a kubernetes.io/dockerconfigjson Secret `name` in `ns` that logs in to `registry` with
// `password` (the registry's own or a wrong one); fails the test with kubectl's message on error.
bool ApplyPullSecret(const PrivateRegistry& registry, const std::string& ns,
                     const std::string& name, const std::string& password);

// ---------------------------------------------------------------------------------------------
// The controller binary.

// A test with its own namespace and its own ayatori-controller process. TearDown deletes the
// namespace's Jobs through the controller (starting it again if the test killed it), so no
// finalizer is left behind, then the namespace, then kills the controller.
class ControllerTest : public ::testing::Test {
 protected:
  // Creates the namespace (prefix + pid + counter) and starts the controller with `flags`; its
  // log goes to RunPath("<suite>.<test>.controller.log").
  void StartControllerAndNamespace(const std::string& nsPrefix,
                                   const std::vector<std::string>& flags);
  // Starts the controller again after a Kill() (same flags, same log file).
  void RestartController();
  // Starts $AYATORI_BINARY_DIR/cmd/ayatori-controller/ayatori-controller with the fixture's
  // kubeconfig, --metrics-address=127.0.0.1:0, JSON logs at debug level and flags_, its output
  // appended to `logPath`; waits up to 60 s until it logs "controller ready".
  Status StartControllerProcess(const std::string& logPath);
  void TearDown() override;

  // A Job named `name` in the test's namespace, created with kubectl; returns its uid.
  std::string CreateJob(const std::string& name, const std::string& jobClass, const json& task,
                        const json& spec = json::object());
  // kubectl patch --type=merge of the Job.
  void PatchJob(const std::string& name, const json& patch);

  std::string ns_;
  testing::ControllerProcess controller_;
  std::vector<std::string> flags_;
  // A program that runs the controller (its argv before the controller's path), e.g.
  // {"ip", "netns", "exec", NAME}; empty: the controller is started directly.
  std::vector<std::string> launcher_;
};

// A path for a per-test file below $AYATORI_BINARY_DIR/run/e2e/ (created), e.g. a controller log.
std::string RunPath(const std::string& fileName);

// DOCKER_HOST of the "dockerd" fixture.
std::string FixtureDockerHost();

// A short random suffix for names that must be unique across runs (secrets in output, etc.).
std::string RandomToken(size_t hexChars = 16);

}  // namespace ayatori::e2e
