// Ayatori queued through a real Kueue v0.17.0 (fixture "kueue"), end to end on Docker: Jobs
// labelled with a LocalQueue are created with kubectl, the ayatori-controller binary runs with
// --kueue and the "dockerd" fixture's engine, and Kueue's ClusterQueue holds room for one task
// at a time (pods: 1). What is checked is what a user sees: the Jobs' Admitted and Succeeded
// conditions, their Workloads, and the containers on the engine with their start and end times.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/types.h"
#include "test/e2e/controller_e2e.h"
#include "test/e2e/kueue_objects.h"
#include "test/support/process.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {
namespace {

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kClass = "e2e-docker-kueue";
constexpr const char* kQueueLabel = "kueue.x-k8s.io/queue-name";
constexpr const char* kHostLabel = "ayatori.ddupan.top/host";

class DockerKueueE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    host_ = FixtureDockerHost();
    ASSERT_TRUE(InstallCrds());
    ASSERT_TRUE(ApplyDockerClass(kClass, {{"endpoint", host_},
                                          {"pullPolicy", "IfNotPresent"},
                                          {"networkMode", "none"},
                                          {"stopGracePeriodSeconds", 1}}));
    ASSERT_NO_FATAL_FAILURE(
        StartControllerAndNamespace("e2e-kueue", {"--docker-endpoint=" + host_, "--kueue"}));
    queue_ = ns_;  // the ClusterQueue is cluster-scoped: named after the test's namespace
  }

  void TearDown() override {
    ControllerTest::TearDown();  // the Jobs go first: their Workloads hold the queue's quota
    Kubectl({"delete", "clusterqueue", queue_, "--ignore-not-found", "--wait=false"});
    for (const auto& flavor : flavors_) {
      Kubectl({"delete", "resourceflavor", flavor, "--ignore-not-found", "--wait=false"});
    }
    for (const auto& name : priorityClasses_) {
      Kubectl({"delete", "workloadpriorityclass", name, "--ignore-not-found", "--wait=false"});
    }
  }

  // A WorkloadPriorityClass of this test (cluster-scoped: its name carries the namespace's).
  std::string CreatePriorityClass(const std::string& suffix, int value) {
    std::string name = ns_ + "-" + suffix;
    EXPECT_TRUE(Apply({{"apiVersion", kKueueApiVersion},
                       {"kind", "WorkloadPriorityClass"},
                       {"metadata", {{"name", name}}},
                       {"value", value}}));
    priorityClasses_.push_back(name);
    return name;
  }

  // A flavor per host named in `hosts` (nodeLabels ayatori.ddupan.top/host=<host>; the flavor
  // is named "<queue>-<host>"), a ClusterQueue with room for `pods` tasks on each, and a
  // LocalQueue of the test's namespace pointing at it; waits until the ClusterQueue is Active.
  void CreateQueues(int pods, const json& preemption = json::object(),
                    const std::vector<std::string>& hosts = {"engine"}) {
    json flavors = json::array();
    for (const std::string& host : hosts) {
      const std::string flavor = queue_ + "-" + host;
      ASSERT_TRUE(Apply(KueueResourceFlavor(flavor, {{kHostLabel, host}})));
      flavors_.push_back(flavor);
      flavors.push_back(KueueFlavorQuotas(flavor, pods));
    }
    ASSERT_TRUE(Apply(KueueClusterQueue(queue_, flavors, preemption)));
    ASSERT_TRUE(Apply(KueueLocalQueue(queue_, ns_, queue_)));
    ASSERT_TRUE(testing::Eventually(
        [&] {
          auto cq = Get("clusterqueue", "", queue_);
          return cq && ConditionSummary(*cq, "Active").rfind("True", 0) == 0;
        },
        60s))
        << "ClusterQueue " << queue_ << " did not become Active";
  }

  // A queued Job running `script` in busybox; returns its uid.
  std::string CreateQueuedJob(const std::string& name, const std::string& script,
                              const std::string& priorityClass = "") {
    json manifest = JobManifest(ns_, name, kClass,
                                {{"image", kBusybox}, {"command", {"/bin/sh", "-c", script}}});
    manifest["metadata"]["labels"] = {{kQueueLabel, queue_}};
    if (!priorityClass.empty()) {
      manifest["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priorityClass;
    }
    auto created = Create(manifest);
    return created ? created->value("/metadata/uid"_json_pointer, "") : "";
  }

  std::optional<json> WorkloadOf(const std::string& uid) {
    return Get("workloads.kueue.x-k8s.io", ns_, "ajob-" + uid);
  }

  // When the Job's one container started and ended, in the engine's nanosecond RFC 3339 times.
  std::pair<std::string, std::string> ContainerSpan(const std::string& uid) {
    auto ids = ContainersOf(host_, uid);
    EXPECT_EQ(ids.size(), 1u) << "containers of Job " << uid;
    if (ids.empty()) return {};
    auto c = InspectContainer(host_, ids[0]);
    if (!c) return {};
    return {c->value("/State/StartedAt"_json_pointer, ""),
            c->value("/State/FinishedAt"_json_pointer, "")};
  }

  std::string host_;
  std::string queue_;
  std::vector<std::string> priorityClasses_;
  std::vector<std::string> flavors_;
};

// Quota for one task: three Jobs created together all succeed, each after Kueue admitted it, and
// never two containers at once (each starts after the one before it ended).
TEST_F(DockerKueueE2ETest, AQuotaOfOneRunsThreeJobsOneAtATime) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(1));
  std::vector<std::string> names = {"first", "second", "third"}, uids;
  for (const auto& name : names) uids.push_back(CreateQueuedJob(name, "sleep 2; echo done"));
  // While the first runs, the others wait in the queue with Kueue's words.
  json waiting = WaitForJob(
      ns_, "third",
      [](const json& j) { return ConditionSummary(j, "Admitted").rfind("False/", 0) == 0; }, 60s,
      "Admitted=False while another Job holds the quota");
  EXPECT_FALSE(waiting.contains("/status/startTime"_json_pointer)) << Describe(waiting);

  std::vector<std::pair<std::string, std::string>> spans;
  for (size_t i = 0; i < names.size(); ++i) {
    json job = WaitForFinished(ns_, names[i], 180s);
    EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
    EXPECT_EQ(ConditionSummary(job, "Admitted"), "True/Admitted") << Describe(job);
    auto workload = WorkloadOf(uids[i]);
    ASSERT_TRUE(workload) << "no Workload for " << names[i];
    EXPECT_EQ(ConditionSummary(*workload, "Finished"), "True/Succeeded") << workload->dump();
    EXPECT_EQ(ConditionSummary(*workload, "PodsReady"), "True/Started") << workload->dump();
    spans.push_back(ContainerSpan(uids[i]));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    // RFC 3339 with nanoseconds in UTC from one engine: text order is time order.
    EXPECT_GE(spans[i].first, spans[i - 1].second)
        << "a container started at " << spans[i].first << " while another ran until "
        << spans[i - 1].second;
  }
}

// Cancelled while it waits: the Job ends Cancelled without a container, and its Workload is
// Finished so that the quota it waited for is not held.
TEST_F(DockerKueueE2ETest, ACancelWhileQueuedEndsTheJobWithoutAContainer) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(1));
  CreateQueuedJob("holder", "sleep 30");
  WaitForJob(
      ns_, "holder", [](const json& j) { return j.contains("/status/startTime"_json_pointer); },
      60s, "the holder started");
  const std::string uid = CreateQueuedJob("waiter", "echo never");
  WaitForJob(
      ns_, "waiter",
      [](const json& j) { return ConditionSummary(j, "Admitted").rfind("False/", 0) == 0; }, 60s,
      "Admitted=False behind the holder");
  ASSERT_TRUE(testing::Eventually([&] { return WorkloadOf(uid).has_value(); }, 30s));
  PatchJob("waiter", {{"spec", {{"desiredState", "Cancelled"}}}});
  json job = WaitForFinished(ns_, "waiter", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_TRUE(ContainersOf(host_, uid).empty()) << "a cancelled queued Job got a container";
  ASSERT_TRUE(testing::Eventually(
      [&] {
        auto w = WorkloadOf(uid);
        return !w || ConditionSummary(*w, "Finished").rfind("True", 0) == 0;
      },
      30s))
      << "the cancelled Job's Workload was not Finished";
  PatchJob("holder", {{"spec", {{"desiredState", "Cancelled"}}}});
  WaitForFinished(ns_, "holder", 60s);
}

// Kueue preempts a running low-priority Job for a high one: the low one's task is stopped and the
// Job ends Preempted, never run again (one container, ever); the high one then runs.
TEST_F(DockerKueueE2ETest, APreemptedJobEndsPreemptedAndNeverRunsAgain) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(1, {{"withinClusterQueue", "LowerPriority"}}));
  const std::string low = CreatePriorityClass("low", 10), high = CreatePriorityClass("high", 1000);
  const std::string lowUid = CreateQueuedJob("low", "sleep 300", low);
  WaitForJob(
      ns_, "low", [](const json& j) { return j.contains("/status/startTime"_json_pointer); }, 60s,
      "the low-priority Job started");
  const std::string highUid = CreateQueuedJob("high", "echo high", high);

  json lowJob = WaitForFinished(ns_, "low", 120s);
  EXPECT_EQ(ConditionSummary(lowJob, "Succeeded"), "False/Preempted") << Describe(lowJob);
  EXPECT_EQ(ConditionSummary(lowJob, "Evicted"), "True/Preempted") << Describe(lowJob);
  EXPECT_EQ(ConditionSummary(lowJob, "Admitted"), "True/Admitted") << Describe(lowJob);
  json highJob = WaitForFinished(ns_, "high", 120s);
  EXPECT_EQ(ConditionSummary(highJob, "Succeeded"), "True/Completed") << Describe(highJob);

  // Whatever Kueue does with the preempted Workload, the low Job's task never starts again.
  auto lowWorkload = WorkloadOf(lowUid);
  ASSERT_TRUE(lowWorkload);
  EXPECT_EQ(ConditionSummary(*lowWorkload, "Finished"), "True/Failed") << lowWorkload->dump();
  EXPECT_EQ(ContainersOf(host_, lowUid).size(), 1u) << "the preempted Job ran again";
  EXPECT_EQ(ContainersOf(host_, highUid).size(), 1u);
}

// A class that requires queueing: a Job without a queue waits (Accepted=False/QueueRequired)
// until it is labelled; with a class default LocalQueue an unlabelled Job is queued there.
TEST_F(DockerKueueE2ETest, AClassCanRequireQueueingAndNameADefaultQueue) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(1));
  const json params = {
      {"endpoint", host_}, {"pullPolicy", "IfNotPresent"}, {"networkMode", "none"}};
  const std::string required = "e2e-docker-kueue-required", byDefault = "e2e-docker-kueue-default";
  ASSERT_TRUE(ApplyDockerClass(required, params, {{"queueing", {{"required", true}}}}));
  ASSERT_TRUE(ApplyDockerClass(
      byDefault, params, {{"queueing", {{"required", true}, {"defaultLocalQueue", queue_}}}}));

  ASSERT_TRUE(Create(JobManifest(ns_, "unlabelled", required,
                                 {{"image", kBusybox}, {"command", {"/bin/sh", "-c", "true"}}})));
  json waiting = WaitForJob(
      ns_, "unlabelled",
      [](const json& j) { return ConditionSummary(j, "Accepted") == "False/QueueRequired"; }, 60s,
      "Accepted=False/QueueRequired");
  EXPECT_FALSE(waiting.contains("/status/startTime"_json_pointer)) << Describe(waiting);
  Kubectl(
      {"label", "-n", ns_, kJobResource, "unlabelled", std::string(kQueueLabel) + "=" + queue_});
  json labelled = WaitForFinished(ns_, "unlabelled", 120s);
  EXPECT_EQ(ConditionSummary(labelled, "Admitted"), "True/Admitted") << Describe(labelled);
  EXPECT_EQ(ConditionSummary(labelled, "Succeeded"), "True/Completed") << Describe(labelled);

  auto created = Create(JobManifest(ns_, "defaulted", byDefault,
                                    {{"image", kBusybox}, {"command", {"/bin/sh", "-c", "true"}}}));
  ASSERT_TRUE(created);
  json defaulted = WaitForFinished(ns_, "defaulted", 120s);
  EXPECT_EQ(ConditionSummary(defaulted, "Admitted"), "True/Admitted") << Describe(defaulted);
  auto workload = WorkloadOf(created->value("/metadata/uid"_json_pointer, ""));
  ASSERT_TRUE(workload);
  EXPECT_EQ(workload->value("/spec/queueName"_json_pointer, ""), queue_);
}

// A flavor per host: the class's parameters name theirs (spec.queueing.nodeSelector), so Kueue
// admits the Job on that flavor's quota although the first flavor has room too.
TEST_F(DockerKueueE2ETest, TheParametersPickTheFlavorOfTheirHost) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(1, json::object(), {"first", "second"}));
  const std::string cls = "e2e-docker-kueue-second";
  ASSERT_TRUE(ApplyDockerClass(cls, {{"endpoint", host_},
                                     {"pullPolicy", "IfNotPresent"},
                                     {"networkMode", "none"},
                                     {"queueing", {{"nodeSelector", {{kHostLabel, "second"}}}}}}));
  json manifest = JobManifest(ns_, "pinned", cls,
                              {{"image", kBusybox}, {"command", {"/bin/sh", "-c", "true"}}});
  manifest["metadata"]["labels"] = {{kQueueLabel, queue_}};
  auto created = Create(manifest);
  ASSERT_TRUE(created);
  json job = WaitForFinished(ns_, "pinned", 120s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  auto workload = WorkloadOf(created->value("/metadata/uid"_json_pointer, ""));
  ASSERT_TRUE(workload);
  EXPECT_EQ(workload->value("/spec/podSets/0/template/spec/nodeSelector"_json_pointer, json()),
            json({{kHostLabel, "second"}}))
      << workload->dump();
  EXPECT_EQ(workload->value("/status/admission/podSetAssignments/0/flavors/pods"_json_pointer, ""),
            queue_ + "-second")
      << workload->dump();
}

// hack/testenv/testenv.sh COMMAND on the fixture's control plane (kueue-kill, kueue-start).
testing::ProcessResult Testenv(const std::string& command) {
  return testing::RunProcess(
      {testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/hack/testenv/testenv.sh", command});
}

json WaitForStart(const std::string& ns, const std::string& name) {
  return WaitForJob(
      ns, name, [](const json& j) { return j.contains("/status/startTime"_json_pointer); }, 60s,
      name + " started");
}

// Kueue crashes while one Job runs and another is created: the running Job's result is recorded
// all the same (only its Workload's Finished waits for Kueue, retried with backoff), and once
// Kueue is back the other is queued, admitted and run. Then the controller is killed while a
// Job waits in the queue, and started again: that Job runs, once.
TEST_F(DockerKueueE2ETest, KueueAndControllerRestartsLoseNothingAndRunNothingTwice) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(1));
  const std::string firstUid = CreateQueuedJob("first", "sleep 3");
  WaitForStart(ns_, "first");
  auto killed = Testenv("kueue-kill");
  ASSERT_EQ(killed.exitCode, 0) << killed.err;
  const std::string secondUid = CreateQueuedJob("second", "true");
  json first = WaitForFinished(ns_, "first", 60s);
  EXPECT_EQ(ConditionSummary(first, "Succeeded"), "True/Completed") << Describe(first);
  auto second = Get(kJobResource, ns_, "second");
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->contains("/status/startTime"_json_pointer)) << Describe(*second);
  auto started = Testenv("kueue-start");
  ASSERT_EQ(started.exitCode, 0) << started.err;
  json done = WaitForFinished(ns_, "second", 120s);
  EXPECT_EQ(ConditionSummary(done, "Admitted"), "True/Admitted") << Describe(done);
  EXPECT_EQ(ConditionSummary(done, "Succeeded"), "True/Completed") << Describe(done);
  EXPECT_TRUE(testing::Eventually(
      [&] {
        auto w = WorkloadOf(firstUid);
        return w && ConditionSummary(*w, "Finished") == "True/Succeeded";
      },
      60s))
      << "the first Job's Workload was not Finished once Kueue was back";

  CreateQueuedJob("holder", "sleep 3");
  WaitForStart(ns_, "holder");
  const std::string waiterUid = CreateQueuedJob("waiter", "true");
  WaitForJob(
      ns_, "waiter",
      [](const json& j) { return ConditionSummary(j, "Admitted").rfind("False/", 0) == 0; }, 60s,
      "the waiter queued");
  controller_.Kill();
  RestartController();
  json waiter = WaitForFinished(ns_, "waiter", 120s);
  EXPECT_EQ(ConditionSummary(waiter, "Succeeded"), "True/Completed") << Describe(waiter);
  for (const std::string& uid : {firstUid, secondUid, waiterUid}) {
    EXPECT_EQ(ContainersOf(host_, uid).size(), 1u) << "containers of Job " << uid;
  }
}

// A stopped ClusterQueue (stopPolicy Hold) admits nothing: the Job waits with Kueue's words
// until its class's start timeout ends it StartTimeout, with no container and its Workload
// Finished; started again (stopPolicy None), the queue runs the next Job.
TEST_F(DockerKueueE2ETest, AStoppedClusterQueueHoldsAJobUntilItsStartTimeout) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(1));
  auto stop = [&](const char* policy) {
    auto r = Kubectl({"patch", "clusterqueue", queue_, "--type=merge", "-p",
                      json({{"spec", {{"stopPolicy", policy}}}}).dump()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  };
  ASSERT_NO_FATAL_FAILURE(stop("Hold"));
  const std::string cls = "e2e-docker-kueue-timeout";
  ASSERT_TRUE(ApplyDockerClass(
      cls, {{"endpoint", host_}, {"pullPolicy", "IfNotPresent"}, {"networkMode", "none"}},
      {{"startTimeoutSeconds", 5}}));
  json manifest =
      JobManifest(ns_, "held", cls, {{"image", kBusybox}, {"command", {"/bin/sh", "-c", "true"}}});
  manifest["metadata"]["labels"] = {{kQueueLabel, queue_}};
  auto created = Create(manifest);
  ASSERT_TRUE(created);
  const std::string uid = created->value("/metadata/uid"_json_pointer, "");
  json held = WaitForFinished(ns_, "held", 90s);
  EXPECT_EQ(ConditionSummary(held, "Succeeded"), "False/StartTimeout") << Describe(held);
  EXPECT_NE(ConditionSummary(held, "Admitted"), "True/Admitted") << Describe(held);
  EXPECT_TRUE(ContainersOf(host_, uid).empty()) << "a Job that never left the queue ran";
  EXPECT_TRUE(testing::Eventually(
      [&] {
        auto w = WorkloadOf(uid);
        return !w || ConditionSummary(*w, "Finished") == "True/Failed";
      },
      30s))
      << "the timed-out Job's Workload was not Finished";

  ASSERT_NO_FATAL_FAILURE(stop("None"));
  CreateQueuedJob("after", "true");
  json after = WaitForFinished(ns_, "after", 120s);
  EXPECT_EQ(ConditionSummary(after, "Succeeded"), "True/Completed") << Describe(after);
}

// How many containers of the engine ran at once at most, from their start and end times
// (RFC 3339 with nanoseconds, UTC, from one engine: text order is time order; an end at the very
// time of another's start counts as before it).
int PeakConcurrency(const std::vector<std::pair<std::string, std::string>>& spans) {
  std::vector<std::pair<std::string, int>> events;
  for (const auto& [start, end] : spans) {
    events.emplace_back(start, +1);
    events.emplace_back(end, -1);
  }
  std::sort(events.begin(), events.end());  // at equal times -1 sorts before +1
  int running = 0, peak = 0;
  for (const auto& e : events) peak = std::max(peak, running += e.second);
  return peak;
}

// 200 Jobs created at once with room for 20 on the engine (pods: 20): every one succeeds, with
// exactly one container each, and at no moment did more than 20 of them run.
TEST_F(DockerKueueE2ETest, TwoHundredJobsWithRoomForTwentyNeverRunMoreThanTwentyAtOnce) {
  ASSERT_NO_FATAL_FAILURE(CreateQueues(20));
  constexpr int kJobs = 200;
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (int i = 0; i < kJobs; ++i) {
    json manifest = JobManifest(ns_, "burst-" + std::to_string(i), kClass,
                                {{"image", kBusybox}, {"command", {"/bin/sh", "-c", "sleep 1"}}});
    manifest["metadata"]["labels"] = {{kQueueLabel, queue_}};
    list["items"].push_back(std::move(manifest));
  }
  ASSERT_TRUE(Apply(list));
  int succeeded = 0;
  const bool allDone = testing::Eventually(
      [&] {
        auto r = Kubectl({"get", kJobResource, "-n", ns_, "-o", "json"});
        json jobs = json::parse(r.out, nullptr, false);
        if (!jobs.is_object()) return false;
        int done = 0;
        succeeded = 0;
        for (const json& j : jobs.value("items", json::array())) {
          const std::string s = ConditionSummary(j, "Succeeded");
          done += s.rfind("True", 0) == 0 || s.rfind("False", 0) == 0;
          succeeded += s == "True/Completed";
        }
        return done == kJobs;
      },
      600s, 1s);
  ASSERT_TRUE(allDone) << succeeded << " of " << kJobs << " Jobs succeeded before the deadline";
  EXPECT_EQ(succeeded, kJobs);

  auto ps = Docker(host_, {"ps", "-aq", "--no-trunc", "--filter",
                           std::string("label=") + api::kJobNamespaceLabel + "=" + ns_});
  ASSERT_EQ(ps.exitCode, 0) << ps.err;
  std::vector<std::string> args = {"inspect"};
  std::istringstream in(ps.out);
  for (std::string id; std::getline(in, id);) {
    if (!id.empty()) args.push_back(id);
  }
  ASSERT_EQ(args.size(), kJobs + 1u) << "containers of the test's Jobs";
  auto inspected = Docker(host_, args);
  ASSERT_EQ(inspected.exitCode, 0) << inspected.err;
  json containers = json::parse(inspected.out, nullptr, false);
  ASSERT_TRUE(containers.is_array());
  std::set<std::string> uids;
  std::vector<std::pair<std::string, std::string>> spans;
  for (const json& c : containers) {
    uids.insert(c.value("/Config/Labels"_json_pointer, json::object()).value(kJobUidLabel, ""));
    spans.emplace_back(c.value("/State/StartedAt"_json_pointer, ""),
                       c.value("/State/FinishedAt"_json_pointer, ""));
  }
  EXPECT_EQ(uids.size(), static_cast<size_t>(kJobs)) << "a Job ran twice, or none ran";
  const int peak = PeakConcurrency(spans);
  EXPECT_LE(peak, 20) << "containers running at once";
  EXPECT_GE(peak, 2) << "the quota of 20 was not used: nothing ran side by side";
}

}  // namespace
}  // namespace ayatori::e2e
