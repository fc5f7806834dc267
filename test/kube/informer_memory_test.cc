// Bytes the informer cache spends per cached object, measured with mallinfo2 before and after
// listing 10,000 objects through an informer:
//  - the cache's own bookkeeping (key, resourceVersion, hash node, shared_ptr control block),
//    with a tiny decoded struct;
//  - a finished Job of typical size decoded into api::Job (src/api/types.h), next to the same
//    objects kept as nlohmann::json documents (managedFields stripped), the naive alternative.
// The numbers are printed for the report; the design target is <= 3 KiB per Job.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <map>

#include "api/types.h"
#include "kube/informer.h"
#include "kube/resource.h"
#include "kube/testing/fake_kube_client.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;

constexpr int kJobs = 10000;
const ResourceRef kJobsResource{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};

std::string Uid(int i, int salt) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-8%03x-%012x", i * 7919 + salt, salt, i % 4096,
                (i * 31) % 4096, i * 104729 + salt);
  return buf;
}

nlohmann::json TypicalJob(int i) {
  const std::string name = "build-7f9c2-" + std::to_string(100000 + i);
  const nlohmann::json resources = {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                                    {"limits", {{"cpu", "1"}, {"memory", "512Mi"}}}};
  auto cond = [](const char* type, const char* reason, const std::string& message) {
    return nlohmann::json{{"type", type},
                          {"status", "True"},
                          {"reason", reason},
                          {"message", message},
                          {"observedGeneration", 1},
                          {"lastTransitionTime", "2026-01-01T00:00:05Z"}};
  };
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", name},
            {"generateName", "build-7f9c2-"},
            {"namespace", "team-a"},
            {"uid", Uid(i, 1)},
            {"generation", 1},
            {"creationTimestamp", "2026-01-01T00:00:00Z"},
            {"labels", {{"app.kubernetes.io/name", "builder"}, {"team", "a"}}},
            {"finalizers", {"execution.ayatori.ddupan.top/job-cleanup"}},
            {"managedFields",
             nlohmann::json::array({{{"manager", "kubectl"}, {"operation", "Update"}}})}}},
          {"spec",
           {{"jobClassName", "default"},
            {"task",
             {{"image", "registry.example.com/team-a/builder:1.24.3"},
              {"command", {"/bin/sh", "-c"}},
              {"args", {"make test && make publish TARGET=staging"}},
              {"workingDir", "/workspace"},
              {"env",
               {{{"name", "TARGET"}, {"value", "staging"}},
                {{"name", "TOKEN"},
                 {"valueFrom", {{"secretKeyRef", {{"name", "build-token"}, {"key", "token"}}}}}},
                {{"name", "CONFIG"},
                 {"valueFrom",
                  {{"configMapKeyRef", {{"name", "build-config"}, {"key", "value"}}}}}}}}}},
            {"resources", resources},
            {"activeDeadlineSeconds", 600},
            {"ttlSecondsAfterFinished", 3600},
            {"desiredState", "Running"}}},
          {"status",
           {{"observedGeneration", 1},
            {"conditions",
             {cond("Accepted", "Valid", "The Job is valid"),
              cond("Scheduled", "BackendCreated", "Created batch/v1 Job " + name),
              cond("Succeeded", "Completed", "The main process exited with code 0")}},
            {"resolvedJobClass",
             {{"name", "default"},
              {"uid", Uid(1, 2)},
              {"controllerName", "execution.ayatori.ddupan.top/kubernetes"},
              {"parametersRef",
               {{"group", "execution.ayatori.ddupan.top"},
                {"kind", "KubernetesExecutionParameters"},
                {"name", "default"},
                {"uid", Uid(1, 3)}}}}},
            {"effectiveResources", resources},
            {"execution",
             {{"adapter", "kubernetes"}, {"references", {{{"type", "Job"}, {"id", Uid(i, 4)}}}}}},
            {"startTime", "2026-01-01T00:00:01Z"},
            {"completionTime", "2026-01-01T00:00:09Z"},
            {"result", {{"exitCode", 0}, {"reason", "Completed"}}}}}};
}

std::string S(const nlohmann::json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<std::string> Strings(const nlohmann::json& j, const char* k) {
  std::vector<std::string> out;
  auto it = j.find(k);
  if (it == j.end()) return out;
  for (const auto& v : *it) out.push_back(v.get<std::string>());
  return out;
}

api::ResourceRequirements Resources(const nlohmann::json&) {
  // Quantities are kept as in api/quantity.h (exact value + the text, short enough for SSO).
  api::ResourceRequirements r;
  r.requests.cpu = api::Quantity();
  r.requests.memory = api::Quantity();
  r.limits.cpu = api::Quantity();
  r.limits.memory = api::Quantity();
  return r;
}

// A field-by-field decoder of the shape the api helper's decoder produces.
std::shared_ptr<const api::Job> DecodeJob(const nlohmann::json& j) {
  auto job = std::make_shared<api::Job>();
  const auto& md = j["metadata"];
  job->metadata.name = S(md, "name");
  job->metadata.generateName = S(md, "generateName");
  job->metadata.namespace_ = S(md, "namespace");
  job->metadata.uid = S(md, "uid");
  job->metadata.resourceVersion = S(md, "resourceVersion");
  job->metadata.generation = md.value("generation", int64_t{0});
  job->metadata.creationTimestamp = api::Time(std::chrono::seconds(1767225600));
  for (auto& [k, v] : md["labels"].items()) job->metadata.labels[k] = v.get<std::string>();
  job->metadata.finalizers = Strings(md, "finalizers");
  const auto& spec = j["spec"];
  job->spec.jobClassName = S(spec, "jobClassName");
  const auto& task = spec["task"];
  job->spec.task.image = S(task, "image");
  job->spec.task.command = Strings(task, "command");
  job->spec.task.args = Strings(task, "args");
  job->spec.task.workingDir = S(task, "workingDir");
  for (const auto& e : task["env"]) {
    api::EnvVar v;
    v.name = S(e, "name");
    if (e.contains("value")) v.value = S(e, "value");
    if (e.contains("valueFrom")) {
      api::EnvVarSource src;
      const auto& vf = e["valueFrom"];
      for (const char* kind : {"secretKeyRef", "configMapKeyRef"}) {
        if (!vf.contains(kind)) continue;
        api::KeySelector sel{S(vf[kind], "name"), S(vf[kind], "key"), false};
        (std::string(kind) == "secretKeyRef" ? src.secretKeyRef : src.configMapKeyRef) = sel;
      }
      v.valueFrom = src;
    }
    job->spec.task.env.push_back(std::move(v));
  }
  job->spec.resources = Resources(spec["resources"]);
  job->spec.activeDeadlineSeconds = spec.value("activeDeadlineSeconds", int64_t{0});
  job->spec.ttlSecondsAfterFinished = spec.value("ttlSecondsAfterFinished", 0);
  const auto& st = j["status"];
  job->status.observedGeneration = st.value("observedGeneration", int64_t{0});
  for (const auto& c : st["conditions"]) {
    api::Condition cond;
    cond.type = S(c, "type");
    cond.status = api::ConditionStatus::kTrue;
    cond.reason = S(c, "reason");
    cond.message = S(c, "message");
    cond.observedGeneration = c.value("observedGeneration", int64_t{0});
    job->status.conditions.push_back(std::move(cond));
  }
  const auto& rjc = st["resolvedJobClass"];
  api::ResolvedJobClass r{S(rjc, "name"), S(rjc, "uid"), S(rjc, "controllerName"), std::nullopt,
                          std::nullopt};
  const auto& pr = rjc["parametersRef"];
  r.parametersRef = api::ParametersRef{S(pr, "group"), S(pr, "kind"), S(pr, "name"), S(pr, "uid")};
  job->status.resolvedJobClass = std::move(r);
  job->status.effectiveResources = Resources(st["effectiveResources"]);
  api::ExecutionStatus ex;
  ex.adapter = S(st["execution"], "adapter");
  for (const auto& ref : st["execution"]["references"]) {
    ex.references.push_back({S(ref, "type"), S(ref, "id")});
  }
  job->status.execution = std::move(ex);
  job->status.startTime = api::Time(std::chrono::seconds(1767225601));
  job->status.completionTime = api::Time(std::chrono::seconds(1767225609));
  job->status.result = api::JobResult{st["result"].value("exitCode", 0), S(st["result"], "reason")};
  return job;
}

size_t HeapInUse() { return mallinfo2().uordblks; }

struct Tiny {
  int64_t value = 0;
};

TEST(InformerMemoryTest, CacheBookkeepingPerObjectIsSmall) {
  testing::FakeKubeClient fake;
  for (int i = 0; i < kJobs; ++i) {
    nlohmann::json obj = {{"metadata", {{"name", "build-7f9c2-" + std::to_string(100000 + i)}}}};
    ASSERT_TRUE(fake.Create(kJobsResource, "team-a", obj, {}).ok());
  }
  fake.Compact();
  size_t before = HeapInUse();
  Informer<Tiny> informer(fake, kJobsResource, {},
                          [](const nlohmann::json&) { return std::make_shared<const Tiny>(); });
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(60s));
  informer.Stop();
  ASSERT_EQ(informer.Size(), static_cast<size_t>(kJobs));
  double perObject = static_cast<double>(HeapInUse() - before) / kJobs;
  std::printf("informer cache bookkeeping: %.0f bytes per object (key \"team-a/%s\")\n", perObject,
              "build-7f9c2-100000");
  EXPECT_LE(perObject, 256.0);
}

TEST(InformerMemoryTest, CachedJobStructCostsAFractionOfItsJson) {
  testing::FakeKubeClient fake;
  fake.DisableStatusSubresource(kJobsResource);  // create the Jobs finished, status included
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(fake.Create(kJobsResource, "team-a", TypicalJob(i), {}).ok());
  }
  fake.Compact();  // drop the fake's watch history: it is not part of the measurement
  size_t before = HeapInUse();
  double perJob = 0;
  {
    InformerOptions o;
    o.pageSize = 500;
    auto informer = std::make_unique<Informer<api::Job>>(fake, kJobsResource, o, DecodeJob);
    informer->Start();
    ASSERT_TRUE(informer->WaitForSync(60s));
    ASSERT_EQ(informer->Size(), static_cast<size_t>(kJobs));
    informer->Stop();  // the watch thread's buffers are not cache
    size_t after = HeapInUse();
    perJob = static_cast<double>(after - before) / kJobs;
    auto sample = informer->Get("team-a/build-7f9c2-100000");
    ASSERT_NE(sample, nullptr);
    EXPECT_EQ(sample->status.conditions.size(), 3u);
    EXPECT_EQ(sample->spec.task.env.size(), 3u);
  }
  // Baseline: the same objects as JSON documents (what a naive cache would keep).
  size_t jsonBefore = HeapInUse();
  double perJson = 0;
  {
    std::map<std::string, nlohmann::json> docs;
    ListOptions lo;
    lo.limit = 500;
    auto rv = ListAll(fake, kJobsResource, "", lo, [&](nlohmann::json&& item) {
      item["metadata"].erase("managedFields");
      std::string key = "team-a/" + item["metadata"]["name"].get<std::string>();
      docs.emplace(std::move(key), std::move(item));
    });
    ASSERT_TRUE(rv.ok());
    perJson = static_cast<double>(HeapInUse() - jsonBefore) / kJobs;
  }
  std::printf(
      "informer cache: %.0f bytes per cached Job (api::Job struct, sizeof %zu); "
      "as nlohmann::json: %.0f bytes per Job\n",
      perJob, sizeof(api::Job), perJson);
  ::testing::Test::RecordProperty("bytes_per_cached_job", static_cast<int>(perJob));
  // api::Job's layout is the api package's; this guards the ratio the informer design gives.
  EXPECT_LT(perJob * 3, perJson);
}

}  // namespace
}  // namespace ayatori::kube
