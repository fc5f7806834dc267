#include "test/support/controller_harness.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <streambuf>

#include "api/json.h"
#include "base/base64.h"
#include "controller/kinds.h"
#include "kube/config.h"
#include "obs/log.h"
#include "test/support/process.h"
#include "test/support/testenv.h"

namespace ayatori::testing {

// ---------------------------------------------------------------------------------------------
// Log capture.

struct LogCapture::Sink : std::streambuf {
  mutable std::mutex mu;
  std::string text;
  bool echo = false;

 protected:
  int_type overflow(int_type ch) override {
    if (ch == traits_type::eof()) return ch;
    char c = traits_type::to_char_type(ch);
    std::lock_guard lock(mu);
    text.push_back(c);
    if (echo) std::cerr.put(c);
    return ch;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard lock(mu);
    text.append(s, static_cast<size_t>(n));
    if (echo) std::cerr.write(s, n);
    return n;
  }
};

LogCapture::LogCapture() : sink_(new Sink) {
  const char* echo = std::getenv("AYATORI_TEST_LOG");
  sink_->echo = echo != nullptr && std::string(echo) == "1";
  // Leaked on purpose: threads of the process may log until its very end.
  auto* stream = new std::ostream(sink_);
  obs::ConfigureLogging(obs::LogLevel::kDebug, obs::LogFormat::kJson, stream);
}

LogCapture& LogCapture::Install() {
  static LogCapture* capture = new LogCapture();
  return *capture;
}

std::string LogCapture::Text() const {
  std::lock_guard lock(sink_->mu);
  return sink_->text;
}

size_t LogCapture::Size() const {
  std::lock_guard lock(sink_->mu);
  return sink_->text.size();
}

std::string LogCapture::LinesWith(std::string_view needle, size_t maxLines) const {
  std::istringstream in(Text());
  std::string line, out;
  size_t n = 0;
  while (std::getline(in, line) && n < maxLines) {
    if (line.find(needle) == std::string::npos) continue;
    out += line + "\n";
    ++n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// RecordingAdapter.

RecordingAdapter::RecordingAdapter(std::shared_ptr<adapters::InProcessTestAdapter> backend)
    : backend_(std::move(backend)) {}

Status RecordingAdapter::Start(std::function<void(const std::string&, const std::string&)> notify) {
  return backend_->Start(std::move(notify));
}

void RecordingAdapter::Stop() { backend_->Stop(); }

Status RecordingAdapter::Validate(const ExecutionRequest& request) {
  return backend_->Validate(request);
}

std::optional<Refusal> RecordingAdapter::AcceptanceRefusal(const ExecutionRequest& request) {
  return backend_->AcceptanceRefusal(request);
}

Observation RecordingAdapter::Ensure(const ExecutionRequest& request) {
  Count(request.job.metadata.uid, Call::kEnsure);
  return backend_->Ensure(request);
}

Observation RecordingAdapter::Observe(const ExecutionKey& key) {
  Count(key.uid, Call::kObserve);
  return backend_->Observe(key);
}

Observation RecordingAdapter::Cancel(const ExecutionKey& key) {
  Count(key.uid, Call::kCancel);
  return backend_->Cancel(key);
}

Status RecordingAdapter::Delete(const ExecutionKey& key) {
  Count(key.uid, Call::kDelete);
  return backend_->Delete(key);
}

void RecordingAdapter::Count(const std::string& uid, Call call) {
  std::lock_guard lock(mu_);
  calls_[{uid, call}]++;
}

int RecordingAdapter::Calls(const std::string& uid, Call call) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find({uid, call});
  return it == calls_.end() ? 0 : it->second;
}

// ---------------------------------------------------------------------------------------------
// Manifests and conditions.

nlohmann::json Env(const std::vector<std::pair<std::string, std::string>>& vars) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [name, value] : vars) env.push_back({{"name", name}, {"value", value}});
  return env;
}

nlohmann::json JobManifest(const std::string& ns, const std::string& name,
                           const nlohmann::json& spec) {
  nlohmann::json base = {
      {"jobClassName", kTestJobClass},
      {"task", {{"image", "registry.invalid/ayatori/test:1"}, {"command", {"/bin/true"}}}},
  };
  if (!spec.is_null()) base.merge_patch(spec);
  return {{"apiVersion", api::kApiVersion},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", base}};
}

const api::Condition* FindCondition(const api::Job& job, const char* type) {
  return api::FindCondition(job.status.conditions, type);
}

std::string ConditionSummary(const api::Job& job, const char* type) {
  const api::Condition* c = FindCondition(job, type);
  return c == nullptr ? "" : api::ToString(c->status) + "/" + c->reason;
}

bool HasCondition(const api::Job& job, const char* type, api::ConditionStatus status,
                  const std::string& reason) {
  const api::Condition* c = FindCondition(job, type);
  return c != nullptr && c->status == status && c->reason == reason;
}

bool IsFinished(const api::Job& job) {
  const api::Condition* c = FindCondition(job, api::kConditionSucceeded);
  return c != nullptr && c->status != api::ConditionStatus::kUnknown;
}

std::string Describe(const api::Job& job) {
  std::ostringstream out;
  out << job.metadata.namespace_ << "/" << job.metadata.name << " uid=" << job.metadata.uid
      << " gen=" << job.metadata.generation << " desired=" << api::ToString(job.spec.desiredState)
      << " conditions=[";
  for (const auto& c : job.status.conditions) {
    out << c.type << "=" << api::ToString(c.status) << "/" << c.reason << " ";
  }
  out << "]";
  if (job.status.startTime) out << " start=" << api::FormatTime(*job.status.startTime);
  if (job.status.completionTime) {
    out << " completion=" << api::FormatTime(*job.status.completionTime);
  }
  if (job.status.result) {
    out << " result=" << job.status.result->reason;
    if (job.status.result->exitCode) out << "(" << *job.status.result->exitCode << ")";
  }
  if (job.status.execution) {
    out << " refs=[";
    for (const auto& r : job.status.execution->references) out << r.type << ":" << r.id << " ";
    out << "]";
  }
  out << " finalizers=" << job.metadata.finalizers.size();
  if (job.metadata.deletionTimestamp) out << " deleting";
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// ControllerHarness.

ControllerHarness& ControllerHarness::Instance() {
  static ControllerHarness* harness = [] {
    auto* h = new ControllerHarness();
    h->Setup();
    return h;
  }();
  return *harness;
}

ControllerHarness::ControllerHarness()
    : logs_(&LogCapture::Install()),
      backend_(std::make_shared<adapters::InProcessTestAdapter>()),
      recording_(std::make_shared<RecordingAdapter>(backend_)) {
  if (Status s = registry_.Register(adapters::TestDescriptor(), recording_); !s.ok()) {
    throw std::logic_error(s.ToString());
  }
}

ControllerHarness::~ControllerHarness() { StopController(); }

namespace {

// Runs kubectl with the control plane's kubeconfig.
ProcessResult Kubectl(const std::string& kubeconfig, std::vector<std::string> args) {
  std::vector<std::string> argv{testing::Kubectl(), "--kubeconfig", kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

// Create, or replace what exists under that name.
Status CreateOrReplace(KubeClient& client, const ResourceRef& ref, const std::string& ns,
                       nlohmann::json object) {
  auto created = client.Create(ref, ns, object, {});
  if (created.ok()) return Status::Ok();
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  auto current = client.Get(ref, ns, object["metadata"]["name"].get<std::string>());
  if (!current.ok()) return current.status();
  object["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
  auto updated = client.Update(ref, ns, object, {});
  return updated.ok() ? Status::Ok() : updated.status();
}

nlohmann::json TestClass(const std::string& name, const nlohmann::json& spec,
                         const std::map<std::string, std::string>& annotations) {
  nlohmann::json s = {{"controllerName", adapters::kControllerTest},
                      {"secretEnvForwarding", "Allowed"}};
  if (!spec.is_null()) s.merge_patch(spec);
  nlohmann::json metadata = {{"name", name}};
  if (!annotations.empty()) metadata["annotations"] = annotations;
  return {
      {"apiVersion", api::kApiVersion}, {"kind", "JobClass"}, {"metadata", metadata}, {"spec", s}};
}

}  // namespace

void ControllerHarness::Setup() {
  kubeconfig_ = TestenvVar("KUBECONFIG");
  if (kubeconfig_.empty()) {
    setupError_ = "the test control plane is not running (no KUBECONFIG in $TESTENV_DIR/env.sh)";
    return;
  }
  std::string source = RequiredEnv("AYATORI_SOURCE_DIR");
  if (source.empty()) {
    setupError_ = "AYATORI_SOURCE_DIR is not set; run the tests through ctest";
    return;
  }
  kube::ConfigLoadOptions options;
  options.kubeconfigPath = kubeconfig_;
  auto config = kube::LoadConfig(options);
  if (!config.ok()) {
    setupError_ = "cannot load " + kubeconfig_ + ": " + config.status().ToString();
    return;
  }
  kube::RestClientOptions clientOptions;
  clientOptions.qps = 200;
  clientOptions.burst = 400;
  clientOptions.userAgent = "ayatori-controller-test";
  client_ = kube::RestClient::New(*config, clientOptions);
  controllerClient_ = std::make_unique<WriteCountingKubeClient>(*client_);
  const std::string jobsResource = controller::kJobs.GroupResource();
  client_->SetRequestObserver([this, jobsResource](const kube::RequestRecord& r) {
    if (r.verb != "delete" || r.resource != jobsResource || r.subresource != "") return;
    if (r.httpCode < 200 || r.httpCode >= 300) return;
    std::lock_guard lock(deletesMu_);
    successfulDeletes_[std::string(r.namespace_) + "/" + std::string(r.name)]++;
  });

  auto applied = Kubectl(kubeconfig_, {"apply", "-f", source + "/config/crd/"});
  if (applied.exitCode != 0) {
    setupError_ = "kubectl apply -f config/crd/ failed: " + applied.err;
    return;
  }
  auto established = Kubectl(kubeconfig_, {"wait", "--for", "condition=established",
                                           "--timeout=60s", "-f", source + "/config/crd/"});
  if (established.exitCode != 0) {
    setupError_ = "the CRDs did not become Established: " + established.out + established.err;
    return;
  }
  // The controller's namespace (backend snapshots), as an installation has it: the controller
  // never creates namespaces.
  nlohmann::json controllerNs = {{"apiVersion", "v1"},
                                 {"kind", "Namespace"},
                                 {"metadata", {{"name", controller::kDefaultControllerNamespace}}}};
  if (auto created = client_->Create(controller::kNamespaces, "", controllerNs, {});
      !created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    setupError_ = "cannot create namespace " +
                  std::string(controller::kDefaultControllerNamespace) + ": " +
                  created.status().ToString();
    return;
  }
  if (Status s = ApplyJobClass(kTestJobClass); !s.ok()) {
    setupError_ = "cannot create JobClass test: " + s.ToString();
    return;
  }
}

void ControllerHarness::ResetBackend() {
  backend_->SetUnreachable(false);
  backend_->SetIgnoreCancel(false);
  DisarmCrash();
}

Status ControllerHarness::StartController(const ControllerSettings& settings) {
  StopController();
  settings_ = settings;
  auto inst = std::make_unique<Running>();
  inst->metrics = std::make_unique<obs::Registry>();
  kube::EventRecorderOptions eventOptions;
  eventOptions.reportingController = "execution.ayatori.ddupan.top/controller";
  eventOptions.reportingInstance =
      "controller-test-" + std::to_string(getpid()) + "-" + std::to_string(++instances_);
  eventOptions.log = [](const std::string& line) { obs::Warn(line, {{"component", "events"}}); };
  inst->events =
      std::make_unique<kube::EventRecorder>(*client_, SystemClock::Instance(), eventOptions);
  controller::ControllerOptions options;
  options.workers = settings.workers;
  options.queue.maxDelay = settings.maxBackoff;
  options.reconciler.backlog = settings.backlog;
  options.reconciler.kueue = settings.kueue;
  options.syncTimeout = 30s;
  options.reconciler.crashHook = [this](std::string_view point, const api::Job& job) {
    return ShouldCrash(point, job);
  };
  inst->controller = std::make_unique<controller::JobController>(
      *controllerClient_, registry_, SystemClock::Instance(), *inst->metrics, inst->events.get(),
      options);
  Status s = inst->controller->Start();
  instance_ = std::move(inst);
  return s;
}

void ControllerHarness::StopController() {
  if (!instance_) return;
  instance_->controller->Stop();
  instance_->events->Flush(2s);
  instance_->controller.reset();
  instance_->events.reset();
  instance_.reset();
}

Status ControllerHarness::RestartController() { return StartController(settings_); }

void ControllerHarness::ArmCrash(std::string point, std::function<bool(const api::Job&)> match) {
  std::lock_guard lock(crashMu_);
  crashPoint_ = std::move(point);
  crashMatch_ = std::move(match);
  crashedUid_.clear();
}

void ControllerHarness::ArmCrash(std::string point, const std::string& ns,
                                 const std::string& name) {
  ArmCrash(std::move(point), [ns, name](const api::Job& job) {
    return job.metadata.namespace_ == ns && job.metadata.name == name;
  });
}

void ControllerHarness::DisarmCrash() {
  std::lock_guard lock(crashMu_);
  crashPoint_.clear();
  crashMatch_ = nullptr;
}

bool ControllerHarness::ShouldCrash(std::string_view point, const api::Job& job) {
  std::lock_guard lock(crashMu_);
  if (crashPoint_.empty() || point != crashPoint_ || !crashMatch_ || !crashMatch_(job)) {
    return false;
  }
  crashedUid_ = job.metadata.uid;
  crashPoint_.clear();
  crashMatch_ = nullptr;
  return true;
}

bool ControllerHarness::WaitCrashed(std::chrono::milliseconds timeout) {
  return Eventually([&] { return instance_ && instance_->controller->Crashed(); }, timeout);
}

std::string ControllerHarness::crashedUid() const {
  std::lock_guard lock(crashMu_);
  return crashedUid_;
}

std::string ControllerHarness::CreateNamespace(const std::string& prefix) {
  static std::atomic<int> counter{0};
  std::string name = prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  nlohmann::json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  auto r = client_->Create(controller::kNamespaces, "", ns, {});
  if (!r.ok()) {
    ADD_FAILURE() << "cannot create namespace " << name << ": " << r.status().ToString();
    return "";
  }
  return name;
}

StatusOr<api::Job> ControllerHarness::CreateJob(const nlohmann::json& manifest) {
  auto r = client_->Create(controller::kJobs, manifest["metadata"]["namespace"].get<std::string>(),
                           manifest, {});
  if (!r.ok()) return r.status();
  return api::JobFromJson(*r);
}

StatusOr<nlohmann::json> ControllerHarness::GetJobJson(const std::string& ns,
                                                       const std::string& name) {
  return client_->Get(controller::kJobs, ns, name);
}

StatusOr<api::Job> ControllerHarness::GetJob(const std::string& ns, const std::string& name) {
  auto r = GetJobJson(ns, name);
  if (!r.ok()) return r.status();
  return api::JobFromJson(*r);
}

StatusOr<api::Job> ControllerHarness::PatchJob(const std::string& ns, const std::string& name,
                                               const nlohmann::json& mergePatch) {
  auto r = client_->Patch(controller::kJobs, ns, name, PatchType::kMerge, mergePatch, {});
  if (!r.ok()) return r.status();
  return api::JobFromJson(*r);
}

Status ControllerHarness::TouchJob(const std::string& ns, const std::string& name) {
  static std::atomic<int> touches{0};
  auto r = PatchJob(
      ns, name, {{"metadata", {{"labels", {{"ayatori-test/touch", std::to_string(++touches)}}}}}});
  return r.ok() ? Status::Ok() : r.status();
}

Status ControllerHarness::DeleteJob(const std::string& ns, const std::string& name) {
  return client_->Delete(controller::kJobs, ns, name, {});
}

bool ControllerHarness::WaitForJob(const std::string& ns, const std::string& name,
                                   const std::function<bool(const api::Job&)>& done,
                                   std::chrono::milliseconds timeout, api::Job* last) {
  return Eventually(
      [&] {
        auto job = GetJob(ns, name);
        if (!job.ok()) return false;
        if (last != nullptr) *last = *job;
        return done(*job);
      },
      timeout, kApiPoll);
}

bool ControllerHarness::WaitForJobGone(const std::string& ns, const std::string& name,
                                       std::chrono::milliseconds timeout) {
  return Eventually(
      [&] {
        auto job = GetJobJson(ns, name);
        return !job.ok() && job.status().code() == StatusCode::kNotFound;
      },
      timeout, kApiPoll);
}

Status ControllerHarness::ApplyJobClass(const std::string& name, const nlohmann::json& spec,
                                        const std::map<std::string, std::string>& annotations) {
  return CreateOrReplace(*client_, controller::kJobClasses, "", TestClass(name, spec, annotations));
}

Status ControllerHarness::DeleteJobClass(const std::string& name) {
  Status s = client_->Delete(controller::kJobClasses, "", name, {});
  return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
}

std::vector<std::string> ControllerHarness::DefaultJobClasses() {
  std::vector<std::string> names;
  auto list = client_->List(controller::kJobClasses, "", {});
  if (!list.ok()) {
    ADD_FAILURE() << "cannot list JobClasses: " << list.status().ToString();
    return names;
  }
  for (const auto& item : list->items) {
    auto ptr = nlohmann::json::json_pointer("/metadata/annotations");
    if (!item.contains(ptr)) continue;
    const auto& a = item[ptr];
    auto it = a.find(api::kIsDefaultClassAnnotation);
    if (it != a.end() && it->is_string() && it->get<std::string>() == "true") {
      names.push_back(item["metadata"]["name"].get<std::string>());
    }
  }
  return names;
}

Status ControllerHarness::AnnotateNamespace(const std::string& ns, const std::string& key,
                                            const std::optional<std::string>& value) {
  nlohmann::json v = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  auto r = client_->Patch(controller::kNamespaces, "", ns, PatchType::kMerge,
                          {{"metadata", {{"annotations", {{key, v}}}}}}, {});
  return r.ok() ? Status::Ok() : r.status();
}

Status ControllerHarness::ApplySecret(const std::string& ns, const std::string& name,
                                      const std::map<std::string, std::string>& data,
                                      const std::string& type) {
  nlohmann::json encoded = nlohmann::json::object();
  for (const auto& [k, v] : data) encoded[k] = base::Base64Encode(v);
  return CreateOrReplace(*client_, controller::kSecrets, ns,
                         {{"apiVersion", "v1"},
                          {"kind", "Secret"},
                          {"metadata", {{"name", name}, {"namespace", ns}}},
                          {"type", type},
                          {"data", encoded}});
}

Status ControllerHarness::ApplyConfigMap(const std::string& ns, const std::string& name,
                                         const std::map<std::string, std::string>& data) {
  return CreateOrReplace(*client_, controller::kConfigMaps, ns,
                         {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata", {{"name", name}, {"namespace", ns}}},
                          {"data", data}});
}

int ControllerHarness::SuccessfulJobDeletes(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(deletesMu_);
  auto it = successfulDeletes_.find(ns + "/" + name);
  return it == successfulDeletes_.end() ? 0 : it->second;
}

std::string ControllerHarness::CleanupNamespace(const std::string& ns,
                                                std::chrono::milliseconds timeout) {
  if (!client_ || ns.empty()) return "";
  auto names = [&] {
    std::vector<std::string> out;
    auto list = client_->List(controller::kJobs, ns, {});
    if (list.ok()) {
      for (const auto& item : list->items) {
        out.push_back(item["metadata"]["name"].get<std::string>());
      }
    }
    return out;
  };
  if (names().empty()) return "";
  if (!ControllerRunning() || controller().Crashed()) {
    if (Status s = StartController(settings_); !s.ok()) return "no controller: " + s.ToString();
  }
  for (const auto& name : names()) (void)DeleteJob(ns, name);
  if (Eventually([&] { return names().empty(); }, timeout, kApiPoll)) return "";
  std::string forced;
  for (const auto& name : names()) {
    auto job = GetJob(ns, name);
    forced += (job.ok() ? Describe(*job) : name) + "; ";
    (void)client_->Patch(controller::kJobs, ns, name, PatchType::kMerge,
                         {{"metadata", {{"finalizers", nullptr}}}}, {});
  }
  return "finalizers removed by force: " + forced;
}

}  // namespace ayatori::testing
