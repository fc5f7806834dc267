#include "test/e2e/controller_e2e.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "base/base64.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {

using testing::ProcessResult;
using testing::RunProcess;

namespace {

std::string Kubeconfig() {
  static const std::string path = testing::TestenvVar("KUBECONFIG");
  return path;
}

std::string KubectlPath() {
  static const std::string path = testing::Kubectl();
  return path;
}

bool IsNotFound(const ProcessResult& r) {
  return r.err.find("NotFound") != std::string::npos ||
         r.err.find("not found") != std::string::npos;
}

}  // namespace

ProcessResult Kubectl(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {KubectlPath(), "--kubeconfig=" + Kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, input);
}

bool Apply(const json& object) {
  auto r = Kubectl({"apply", "-f", "-"}, object.dump());
  EXPECT_EQ(r.exitCode, 0) << "kubectl apply failed: " << r.err;
  return r.exitCode == 0;
}

std::optional<json> Create(const json& object) {
  auto r = Kubectl({"create", "-o", "json", "-f", "-"}, object.dump());
  EXPECT_EQ(r.exitCode, 0) << "kubectl create failed: " << r.err;
  if (r.exitCode != 0) return std::nullopt;
  return json::parse(r.out, nullptr, false);
}

std::optional<json> Get(const std::string& resource, const std::string& ns,
                        const std::string& name) {
  std::vector<std::string> args = {"get", resource, name, "-o", "json"};
  if (!ns.empty()) args.insert(args.end(), {"-n", ns});
  auto r = Kubectl(args);
  if (r.exitCode != 0) {
    EXPECT_TRUE(IsNotFound(r)) << "kubectl get " << resource << " " << name << ": " << r.err;
    return std::nullopt;
  }
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded()) {
    ADD_FAILURE() << "kubectl get " << resource << " " << name << " printed no JSON: " << r.out;
    return std::nullopt;
  }
  return j;
}

std::string EventsJson(const std::string& ns) {
  auto r = Kubectl({"get", "events", "-n", ns, "-o", "json"});
  EXPECT_EQ(r.exitCode, 0) << "kubectl get events: " << r.err;
  return r.out;
}

constexpr const char* kControllerNamespaceManifest =
    R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ayatori-system"}})";

bool InstallCrds() {
  std::string crds = testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/config/crd/";
  auto r = Kubectl({"apply", "-f", crds});
  if (r.exitCode != 0) {
    ADD_FAILURE() << "kubectl apply -f " << crds << ": " << r.err;
    return false;
  }
  r = Kubectl({"wait", "--for=condition=established", "--timeout=60s", "-f", crds});
  EXPECT_EQ(r.exitCode, 0) << "CRDs not established: " << r.err;
  if (r.exitCode != 0) return false;
  // The controller's namespace (its backend snapshot ConfigMaps; it never creates namespaces).
  r = Kubectl({"apply", "-f", "-"}, kControllerNamespaceManifest);
  EXPECT_EQ(r.exitCode, 0) << "kubectl apply namespace ayatori-system: " << r.err;
  return r.exitCode == 0;
}

json JobManifest(const std::string& ns, const std::string& name, const std::string& jobClass,
                 const json& task, const json& spec) {
  json s = {{"jobClassName", jobClass}, {"task", task}};
  s.merge_patch(spec);
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", s}};
}

namespace {

// `kind` (Docker or Kubernetes ExecutionParameters) named `name` with `parametersSpec`, and a
// JobClass of that name for `controller` using it, `classSpec` merged into its spec.
bool ApplyClass(const std::string& name, const std::string& kind, const json& parametersSpec,
                const json& classSpec) {
  json params = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                 {"kind", kind},
                 {"metadata", {{"name", name}}},
                 {"spec", parametersSpec}};
  json spec = {{"parametersRef",
                {{"group", "execution.ayatori.ddupan.top"}, {"kind", kind}, {"name", name}}}};
  spec.merge_patch(classSpec);
  json cls = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
              {"kind", "JobClass"},
              {"metadata", {{"name", name}}},
              {"spec", spec}};
  return Apply(params) && Apply(cls);
}

}  // namespace

bool ApplyDockerClass(const std::string& name, const json& parametersSpec, const json& classSpec) {
  json spec = {{"controllerName", "execution.ayatori.ddupan.top/docker"},
               {"secretEnvForwarding", "Allowed"}};
  spec.merge_patch(classSpec);
  return ApplyClass(name, "DockerExecutionParameters", parametersSpec, spec);
}

bool ApplyKubernetesClass(const std::string& name, const json& parametersSpec,
                          const json& classSpec) {
  json spec = {{"controllerName", "execution.ayatori.ddupan.top/kubernetes"},
               {"secretEnvForwarding", "Denied"}};
  spec.merge_patch(classSpec);
  return ApplyClass(name, "KubernetesExecutionParameters", parametersSpec, spec);
}

const json* FindCondition(const json& job, const std::string& type) {
  auto status = job.find("status");
  if (status == job.end() || !status->is_object()) return nullptr;
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return nullptr;
  for (const auto& c : *conditions) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

std::string ConditionSummary(const json& job, const std::string& type) {
  const json* c = FindCondition(job, type);
  if (c == nullptr) return "";
  return c->value("status", "") + "/" + c->value("reason", "");
}

std::string Describe(const json& job) {
  if (!job.is_object()) return "<no Job>";
  std::ostringstream s;
  s << job.value("/metadata/namespace"_json_pointer, "") << "/"
    << job.value("/metadata/name"_json_pointer, "")
    << " uid=" << job.value("/metadata/uid"_json_pointer, "");
  const json status = job.value("status", json::object());
  for (const char* type : {"Accepted", "Scheduled", "Succeeded"}) {
    const json* c = FindCondition(job, type);
    if (c == nullptr) continue;
    s << " " << type << "=" << c->value("status", "") << "/" << c->value("reason", "") << " ("
      << c->value("message", "") << ")";
  }
  for (const char* field : {"startTime", "completionTime", "result", "execution"}) {
    if (status.contains(field)) s << " " << field << "=" << status[field].dump();
  }
  if (job.contains("/metadata/deletionTimestamp"_json_pointer)) s << " deleting";
  return s.str();
}

std::optional<long long> ParseTime(const std::string& rfc3339) {
  std::tm tm{};
  const char* end = strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  return static_cast<long long>(timegm(&tm));
}

json WaitForJob(const std::string& ns, const std::string& name,
                const std::function<bool(const json&)>& done, std::chrono::milliseconds timeout,
                const std::string& what) {
  json last;
  const bool accepted = testing::Eventually(
      [&] {
        auto job = Get(kJobResource, ns, name);
        if (!job) return false;
        last = std::move(*job);
        return done(last);
      },
      timeout, 100ms);
  if (accepted) return last;
  ADD_FAILURE() << "timed out after " << timeout.count() << " ms waiting for " << ns << "/" << name
                << ": " << what << "; last seen: " << Describe(last);
  return last;
}

json WaitForFinished(const std::string& ns, const std::string& name,
                     std::chrono::milliseconds timeout) {
  return WaitForJob(
      ns, name,
      [](const json& j) {
        const json* c = FindCondition(j, "Succeeded");
        return c != nullptr &&
               (c->value("status", "") == "True" || c->value("status", "") == "False");
      },
      timeout, "Succeeded True or False");
}

bool WaitForJobGone(const std::string& ns, const std::string& name,
                    std::chrono::milliseconds timeout) {
  return testing::Eventually(
      [&] {
        auto r = Kubectl({"get", kJobResource, name, "-n", ns, "-o", "name"});
        return r.exitCode != 0 && IsNotFound(r);
      },
      timeout, 100ms);
}

ProcessResult Docker(const std::string& dockerHost, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"docker"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, "", {"DOCKER_HOST=" + dockerHost});
}

std::vector<std::string> ContainersOf(const std::string& dockerHost, const std::string& uid) {
  auto r = Docker(dockerHost, {"ps", "-aq", "--no-trunc", "--filter",
                               std::string("label=") + kJobUidLabel + "=" + uid});
  EXPECT_EQ(r.exitCode, 0) << "docker ps: " << r.err;
  std::vector<std::string> ids;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) ids.push_back(line);
  }
  return ids;
}

std::optional<json> InspectContainer(const std::string& dockerHost, const std::string& id) {
  auto r = Docker(dockerHost, {"inspect", "--type", "container", id});
  if (r.exitCode != 0) return std::nullopt;
  json j = json::parse(r.out, nullptr, false);
  if (!j.is_array() || j.empty()) return std::nullopt;
  return j[0];
}

std::string ContainerLogs(const std::string& dockerHost, const std::string& id) {
  auto r = Docker(dockerHost, {"logs", id});
  EXPECT_EQ(r.exitCode, 0) << "docker logs " << id << ": " << r.err;
  return r.out + r.err;
}

void ReadPrivateRegistry(PrivateRegistry* registry) {
  auto vars =
      adapters::docker::e2e::ReadEnvFile(testing::RequiredEnv("AYATORI_REGISTRY_DIR") + "/env.sh");
  *registry = {vars["REGISTRY_ADDR"], vars["REGISTRY_USER"], vars["REGISTRY_PASSWORD"],
               vars["REGISTRY_IMAGE"]};
  ASSERT_FALSE(registry->addr.empty() || registry->user.empty() || registry->password.empty() ||
               registry->image.empty())
      << "the registry's env.sh lacks REGISTRY_ADDR, _USER, _PASSWORD or _IMAGE";
}

bool ApplyPullSecret(const PrivateRegistry& registry, const std::string& ns,
                     const std::string& name, const std::string& password) {
  json config = {{"auths",
                  {{registry.addr,
                    {{"username", registry.user},
                     {"password", password},
                     {"auth", base::Base64Encode(registry.user + ":" + password)}}}}}};
  return Apply({{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"type", "kubernetes.io/dockerconfigjson"},
                {"data", {{".dockerconfigjson", base::Base64Encode(config.dump())}}}});
}

void ControllerTest::StartControllerAndNamespace(const std::string& nsPrefix,
                                                 const std::vector<std::string>& flags) {
  flags_ = flags;
  ns_ = testing::CreateTestNamespace(nsPrefix);
  ASSERT_FALSE(ns_.empty());
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string log =
      RunPath(std::string(info->test_suite_name()) + "." + info->name() + ".controller.log");
  std::remove(log.c_str());
  Status s = StartControllerProcess(log);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

void ControllerTest::RestartController() {
  Status s = StartControllerProcess(controller_.logPath());
  ASSERT_TRUE(s.ok()) << s.ToString();
}

Status ControllerTest::StartControllerProcess(const std::string& logPath) {
  std::string binary = testing::ControllerBinaryPath();
  if (binary.empty()) return {StatusCode::kFailedPrecondition, "AYATORI_BINARY_DIR is not set"};
  std::vector<std::string> args = {"--kubeconfig=" + Kubeconfig(), "--metrics-address=127.0.0.1:0",
                                   "--log-format=json", "--log-level=debug"};
  args.insert(args.end(), flags_.begin(), flags_.end());
  if (!launcher_.empty()) {
    args.insert(args.begin(), binary);
    args.insert(args.begin(), launcher_.begin() + 1, launcher_.end());
    binary = launcher_[0];
  }
  return controller_.Start(binary, args, logPath, 60s);
}

void ControllerTest::TearDown() {
  if (ns_.empty()) return;
  if (!controller_.Running() && !controller_.logPath().empty()) {
    Status s = StartControllerProcess(controller_.logPath());
    EXPECT_TRUE(s.ok()) << "restarting the controller for cleanup: " << s.ToString();
  }
  auto r = Kubectl({"delete", kJobResource, "--all", "-n", ns_, "--timeout=90s"});
  EXPECT_EQ(r.exitCode, 0) << "deleting the Jobs of " << ns_
                           << " through the controller: " << r.err;
  Kubectl({"delete", "namespace", ns_, "--wait=false"});
  controller_.Kill();
  if (HasFailure()) {
    std::cerr << "controller log: " << controller_.logPath() << "\n";
  }
}

std::string ControllerTest::CreateJob(const std::string& name, const std::string& jobClass,
                                      const json& task, const json& spec) {
  auto created = Create(JobManifest(ns_, name, jobClass, task, spec));
  if (!created) return "";
  return created->value("/metadata/uid"_json_pointer, "");
}

void ControllerTest::PatchJob(const std::string& name, const json& patch) {
  auto r = Kubectl({"patch", kJobResource, name, "-n", ns_, "--type=merge", "-p", patch.dump()});
  EXPECT_EQ(r.exitCode, 0) << "kubectl patch " << name << ": " << r.err;
}

std::string RunPath(const std::string& fileName) {
  std::string dir = testing::RequiredEnv("AYATORI_BINARY_DIR") + "/run/e2e";
  mkdir((testing::RequiredEnv("AYATORI_BINARY_DIR") + "/run").c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  return dir + "/" + fileName;
}

std::string FixtureDockerHost() {
  std::string dir = testing::RequiredEnv("AYATORI_DOCKERD_DIR");
  std::ifstream in(dir + "/env.sh");
  if (!in) {
    ADD_FAILURE() << dir << "/env.sh does not exist: the dockerd fixture (hack/dockerd.sh up) "
                  << "is not running";
    return "unix:///nonexistent/docker.sock";
  }
  const std::string prefix = "export DOCKER_HOST=";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  ADD_FAILURE() << dir << "/env.sh has no DOCKER_HOST";
  return "unix:///nonexistent/docker.sock";
}

std::string RandomToken(size_t hexChars) {
  static std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < hexChars; ++i) s.push_back(digits[rng() % 16]);
  return s;
}

}  // namespace ayatori::e2e
