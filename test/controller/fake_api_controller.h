// A JobController over the in-memory FakeKubeClient, for unit tests of the controller's own
// machinery (workers, wake-ups) rather than of the API server: manifests for the objects it
// reads, and FakeAdapter, the in-process test backend behind a decorator that records the
// Validate calls of a reconcile round's resolution and throws for chosen Jobs.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "adapters/registry.h"
#include "adapters/testing/in_process_adapter.h"
#include "api/json.h"
#include "controller/controller.h"
#include "controller/kinds.h"
#include "kube/testing/fake_kube_client.h"
#include "obs/metrics.h"

namespace ayatori::controller::testing {

class FakeAdapter final : public Adapter {
 public:
  // What Validate throws for a Job named in throwFor.
  enum class Throw { kJsonTypeError, kNonStdException };

  std::string Name() const override { return backend_.Name(); }
  Status Start(std::function<void(const std::string&, const std::string&)> notify) override {
    return backend_.Start(std::move(notify));
  }
  void Stop() override { backend_.Stop(); }
  Status Validate(const ExecutionRequest& request) override {
    const std::string& name = request.job.metadata.name;
    Throw kind{};
    {
      std::lock_guard lock(mu_);
      validations_[name].push_back(std::chrono::steady_clock::now());
      auto it = throwFor_.find(name);
      if (it == throwFor_.end()) return backend_.Validate(request);
      kind = it->second;
    }
    if (kind == Throw::kNonStdException) throw 42;
    // What reading a malformed object with nlohmann::json does: type_error 302.
    nlohmann::json notANumber = "text";
    return Status(StatusCode::kInternal, std::to_string(notANumber.get<int>()));
  }
  Observation Ensure(const ExecutionRequest& request) override { return backend_.Ensure(request); }
  Observation Observe(const ExecutionKey& key) override { return backend_.Observe(key); }
  Observation Cancel(const ExecutionKey& key) override { return backend_.Cancel(key); }
  Status Delete(const ExecutionKey& key) override { return backend_.Delete(key); }

  void ThrowFor(const std::string& jobName, Throw kind) {
    std::lock_guard lock(mu_);
    throwFor_[jobName] = kind;
  }
  // When Validate was called for a Job name (once per reconcile round that resolved it).
  std::vector<std::chrono::steady_clock::time_point> Validations(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = validations_.find(name);
    return it == validations_.end() ? std::vector<std::chrono::steady_clock::time_point>{}
                                    : it->second;
  }

 private:
  adapters::InProcessTestAdapter backend_;
  mutable std::mutex mu_;
  std::map<std::string, Throw> throwFor_;
  std::map<std::string, std::vector<std::chrono::steady_clock::time_point>> validations_;
};

// --- manifests ---------------------------------------------------------------------------------

// A Job of class `className` ("" = none) with extra env and imagePullSecrets.
inline nlohmann::json JobJson(const std::string& ns, const std::string& name,
                              const std::string& className, std::vector<api::EnvVar> env = {},
                              std::vector<std::string> pullSecrets = {}) {
  api::Job job;
  job.metadata.namespace_ = ns;
  job.metadata.name = name;
  job.spec.jobClassName = className;
  job.spec.task.image = "registry.invalid/task:1";
  job.spec.task.env = std::move(env);
  for (auto& p : pullSecrets) job.spec.task.imagePullSecrets.push_back({std::move(p)});
  return api::ToJson(job);
}

inline api::EnvVar FromSecret(const std::string& secret, const std::string& key) {
  return {"FROM_" + secret, std::nullopt, api::EnvVarSource{api::KeySelector{secret, key}, {}}};
}

inline api::EnvVar FromConfigMap(const std::string& cm, const std::string& key) {
  return {"FROM_" + cm, std::nullopt, api::EnvVarSource{{}, api::KeySelector{cm, key}}};
}

// A JobClass served by the FakeAdapter, allowed to forward Secret values.
inline nlohmann::json JobClassJson(const std::string& name, bool isDefault = false,
                                   const std::string& parametersKind = "",
                                   const std::string& parametersName = "") {
  api::JobClass c;
  c.metadata.name = name;
  c.spec.controllerName = adapters::kControllerTest;
  c.spec.secretEnvForwarding = api::SecretEnvForwarding::kAllowed;
  if (isDefault) c.metadata.annotations[api::kIsDefaultClassAnnotation] = "true";
  if (!parametersKind.empty()) {
    c.spec.parametersRef = api::ParametersRef{api::kGroup, parametersKind, parametersName, ""};
  }
  return api::ToJson(c);
}

// Secret and ConfigMap with the given keys (values do not matter here).
inline nlohmann::json SecretJson(const std::string& ns, const std::string& name,
                                 const std::vector<std::string>& keys,
                                 const std::string& value = "dmFsdWU=") {
  nlohmann::json data = nlohmann::json::object();
  for (const auto& k : keys) data[k] = value;
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"type", "Opaque"},
          {"data", data}};
}

inline nlohmann::json ConfigMapJson(const std::string& ns, const std::string& name,
                                    const std::vector<std::string>& keys,
                                    const std::string& value = "value") {
  nlohmann::json data = nlohmann::json::object();
  for (const auto& k : keys) data[k] = value;
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"data", data}};
}

inline nlohmann::json NamespaceJson(const std::string& name, const std::string& defaultClass = "") {
  nlohmann::json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  if (!defaultClass.empty()) {
    ns["metadata"]["annotations"] = {{api::kDefaultClassAnnotation, defaultClass}};
  }
  return ns;
}

// --- the controller ----------------------------------------------------------------------------

// The parameters kind of the fake adapter: the controller runs an informer on it because the
// adapter's descriptor names it.
inline constexpr const char* kTestParametersKind = "TestExecutionParameters";
inline const ResourceRef kTestParameters{api::kGroup, api::kVersion, "testexecutionparameters",
                                         false};

class FakeApiController {
 public:
  explicit FakeApiController(ControllerOptions options = {})
      : adapter_(std::make_shared<FakeAdapter>()) {
    AdapterDescriptor descriptor = adapters::TestDescriptor();
    descriptor.parameters = ParametersKind{
        api::kGroup, api::kVersion, kTestParametersKind, kTestParameters.resource, {"endpoint"}};
    if (Status s = registry_.Register(descriptor, adapter_); !s.ok()) {
      throw std::logic_error(s.ToString());
    }
    options.syncTimeout = std::chrono::seconds(10);
    options_ = std::move(options);
  }
  ~FakeApiController() { Stop(); }

  Status Start() {
    controller_ = std::make_unique<JobController>(client_, registry_, SystemClock::Instance(),
                                                  metrics_, nullptr, options_);
    return controller_->Start();
  }
  void Stop() {
    if (controller_) controller_->Stop();
  }

  Status Create(const ResourceRef& ref, const nlohmann::json& object) {
    std::string ns = object["metadata"].value("namespace", "");
    return client_.Create(ref, ns, object, {}).status();
  }
  // Replaces an object with `object` (its resourceVersion is filled in).
  Status Replace(const ResourceRef& ref, nlohmann::json object) {
    std::string ns = object["metadata"].value("namespace", "");
    std::string name = object["metadata"].value("name", "");
    auto current = client_.Peek(ref, ns, name);
    if (!current) return {StatusCode::kNotFound, name};
    object["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
    return client_.Update(ref, ns, object, {}).status();
  }

  // "True", "False" or "" (no Accepted condition yet) for a Job in the fake API.
  std::string Accepted(const std::string& ns, const std::string& name) const {
    auto j = client_.Peek(kJobs, ns, name);
    if (!j) return "";
    auto job = api::JobFromJson(*j);
    if (!job.ok()) return "";
    for (const auto& c : job->status.conditions) {
      if (c.type == api::kConditionAccepted) {
        return c.status == api::ConditionStatus::kTrue ? "True" : "False";
      }
    }
    return "";
  }

  double Counter(const std::string& name) {
    // Families exist once something counted; Render() is the registry's public reading.
    std::string text = metrics_.Render();
    auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) return 0;
    return std::stod(text.substr(at + name.size() + 2));
  }

  kube::testing::FakeKubeClient& client() { return client_; }
  FakeAdapter& adapter() { return *adapter_; }
  JobController& controller() { return *controller_; }

 private:
  kube::testing::FakeKubeClient client_;
  adapters::AdapterRegistry registry_;
  std::shared_ptr<FakeAdapter> adapter_;
  obs::Registry metrics_;
  ControllerOptions options_;
  std::unique_ptr<JobController> controller_;
};

}  // namespace ayatori::controller::testing
