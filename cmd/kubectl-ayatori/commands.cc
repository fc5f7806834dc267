#include "commands.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/json.h"
#include "controller/kinds.h"
#include "controller/version_configmap.h"
#include "format.h"
#include "kube/resource.h"
#include "progress.h"
#include "statemachine/statemachine.h"
#include "version_info.h"

namespace ayatori::plugin {

namespace {

using controller::kJobs;
using statemachine::State;

using controller::kConfigMaps;
const ResourceRef kCoreEvents = kube::CoreEventsResource();
constexpr const char* kFieldManager = "kubectl-ayatori";
// How long one watch request of `wait` may last before it is renewed (the server ends it).
constexpr int64_t kWatchWindowSeconds = 300;

api::Time Now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

std::string JobRef(const std::string& name) { return "job.execution.ayatori.ddupan.top/" + name; }

bool ResourceMissing(const Status& s) {
  // A 404 for the path itself (no CRD), rather than for one object.
  return s.code() == StatusCode::kNotFound &&
         s.message().find("could not find the requested resource") != std::string::npos;
}

int Fail(Io& io, const std::string& message) {
  io.err << "error: " << message << "\n";
  return kExitError;
}

// The Job CRD as the API server has it (or the error reading it: a Job author may not read CRDs).
StatusOr<nlohmann::json> GetJobsCrd(KubeClient& client) {
  return client.Get(kube::CustomResourceDefinitionsResource(), "", kJobsCrdName);
}

enum class CrdPhase { kUnreadable, kAbsent, kNotEstablished, kSettling, kEstablished };

struct CrdView {
  CrdPhase phase = CrdPhase::kUnreadable;
  std::string detail;  // the Established condition's message, the CRD's age, or the read error
};

CrdView ViewCrd(const StatusOr<nlohmann::json>& crd, std::chrono::system_clock::time_point now) {
  if (!crd.ok()) {
    if (crd.status().code() == StatusCode::kNotFound) return {CrdPhase::kAbsent, ""};
    return {CrdPhase::kUnreadable, crd.status().message()};
  }
  std::string established = "Unknown", message;
  const auto conditions = nlohmann::json::json_pointer("/status/conditions");
  if (crd->contains(conditions) && crd->at(conditions).is_array()) {
    for (const auto& c : crd->at(conditions)) {
      if (!c.is_object() || c.value("type", "") != "Established") continue;
      established = c.value("status", "Unknown");
      message = c.value("message", "");
    }
  }
  if (established != "True") {
    return {CrdPhase::kNotEstablished, "its condition Established is " + established +
                                           (message.empty() ? "" : ": " + message)};
  }
  const auto created = nlohmann::json::json_pointer("/metadata/creationTimestamp");
  if (crd->contains(created) && crd->at(created).is_string()) {
    auto t = api::ParseTime(crd->at(created).get<std::string>());
    if (t.ok() && now - *t < kCrdSettleTime) {
      const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - *t).count();
      return {CrdPhase::kSettling, "it was created " + std::to_string(age) + " s ago"};
    }
  }
  return {CrdPhase::kEstablished, ""};
}

// Calls `call` again while it fails because the Job kind is not served yet and its CRD was just
// created (not Established yet, or younger than kCrdSettleTime; a user who may not read CRDs
// relies on the server's own "there can be a delay" 503), for at most kCrdSettleTime: the first
// run right after `kubectl apply` of the install manifest works (issue 33). Any other answer,
// or a CRD that is absent or long Established, is returned at once. Safe for a Create: both
// answers come before anything is stored (a 404 for the path; a refusal by admission).
template <typename Call>
auto ServedKindRetry(KubeClient& client, Io& io, Call call) -> decltype(call()) {
  const Clock& clock = *io.pacing.clock;
  const auto deadline = clock.SteadyNow() + kCrdSettleTime;
  constexpr std::chrono::milliseconds kPoll{250};
  while (true) {
    auto result = call();
    if (result.ok() || !KindNotServed(result.status())) return result;
    const CrdView view = ViewCrd(GetJobsCrd(client), clock.Now());
    const bool settling =
        view.phase == CrdPhase::kNotEstablished || view.phase == CrdPhase::kSettling ||
        (view.phase == CrdPhase::kUnreadable && result.status().code() == StatusCode::kServerError);
    if (!settling || clock.SteadyNow() + kPoll > deadline) return result;
    if (io.pacing.sleep) {
      io.pacing.sleep(kPoll);
    } else {
      std::this_thread::sleep_for(kPoll);
    }
  }
}

// ExplainError, but a kind that is not served is explained with the CRD's state.
std::string Explain(KubeClient& client, Io& io, const Status& status, std::string_view what) {
  if (!KindNotServed(status)) return ExplainError(status, what);
  return ExplainKindNotServed(status, what, GetJobsCrd(client), io.pacing.clock->Now());
}

// GET of one Job, decoded; errors are printed.
std::optional<std::pair<nlohmann::json, api::Job>> GetJob(KubeClient& client, const std::string& ns,
                                                          const std::string& name, Io& io) {
  auto raw = ServedKindRetry(client, io, [&] { return client.Get(kJobs, ns, name); });
  if (!raw.ok()) {
    if (raw.status().code() == StatusCode::kNotFound && !ResourceMissing(raw.status())) {
      Fail(io, "job \"" + name + "\" not found in namespace \"" + ns +
                   "\": list the namespace's Jobs with `kubectl ayatori get -n " + ns +
                   "`, or name another namespace with -n");
    } else {
      Fail(io, Explain(client, io, raw.status(), "get job \"" + name + "\""));
    }
    return std::nullopt;
  }
  auto job = api::JobFromJson(*raw);
  if (!job.ok()) {
    Fail(io, "job \"" + name + "\" cannot be read: " + job.status().message() +
                 " (is the plugin older than the cluster's CRD?)");
    return std::nullopt;
  }
  return std::pair{std::move(*raw), std::move(*job)};
}

// What get shows: the Job named, or the list; and the resourceVersion a watch starts from.
struct Listed {
  std::vector<nlohmann::json> raw;
  std::string resourceVersion;
};

std::optional<Listed> ListJobs(const Invocation& inv, const std::string& ns, KubeClient& client,
                               Io& io) {
  Listed listed;
  if (!inv.name.empty()) {
    auto got = GetJob(client, ns, inv.name, io);
    if (!got) return std::nullopt;
    listed.resourceVersion = got->second.metadata.resourceVersion;
    listed.raw.push_back(std::move(got->first));
    return listed;
  }
  ListOptions options;
  options.labelSelector = inv.selector;
  auto version = ServedKindRetry(client, io, [&] {
    listed.raw.clear();
    return ListAll(client, kJobs, inv.allNamespaces ? "" : ns, options,
                   [&](nlohmann::json&& item) { listed.raw.push_back(std::move(item)); });
  });
  if (!version.ok()) {
    Fail(io, Explain(client, io, version.status(), "list jobs"));
    return std::nullopt;
  }
  listed.resourceVersion = *version;
  return listed;
}

GetOptions TableOptions(const Invocation& inv, const OutputFormat& format) {
  return {format.kind == OutputFormat::Kind::kWide, inv.allNamespaces};
}

// Prints the first answer of get; `options` gets the table's columns, which the rows of get -w
// keep (with the queue's positions left out: they are asked once, and would soon be stale).
int PrintJobs(const Invocation& inv, const std::string& ns, const OutputFormat& format,
              const std::vector<nlohmann::json>& raw, const PathStreamer& streamer,
              GetOptions& options, Io& io) {
  options = TableOptions(inv, format);
  if (!format.Table()) {
    io.out << FormatObjects(format, raw, !inv.name.empty());
    return kExitOk;
  }
  if (raw.empty()) {
    io.err << (inv.allNamespaces ? std::string("No resources found\n")
                                 : "No resources found in " + ns + " namespace.\n");
    return kExitOk;
  }
  std::vector<api::Job> jobs;
  int exit = kExitOk;
  for (const auto& item : raw) {
    auto job = api::JobFromJson(item);
    if (!job.ok()) {
      exit = Fail(io, "a Job cannot be read: " + job.status().message());
      continue;
    }
    jobs.push_back(std::move(*job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const api::Job& a, const api::Job& b) {
    return std::tie(a.metadata.namespace_, a.metadata.name) <
           std::tie(b.metadata.namespace_, b.metadata.name);
  });
  options.queue = std::any_of(jobs.begin(), jobs.end(),
                              [](const api::Job& job) { return !QueueKey(job).empty(); });
  GetOptions first = options;
  if (options.queue) first.positions = AskQueuePositions(jobs, streamer);
  io.out << FormatJobTable(jobs, first, Now());
  return exit;
}

std::string MetadataField(const nlohmann::json& object, const char* field) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  const auto value = meta->find(field);
  return value != meta->end() && value->is_string() ? value->get<std::string>() : "";
}

// get -w after the first print: a row (or the object in the -o format) per change, from a watch
// that starts at the list's resourceVersion and is renewed every kWatchWindowSeconds; after a
// 410 Gone, a fresh list whose changed Jobs are printed, and a watch from its version. Runs
// until io.stop (the binary: until interrupted) or an error.
int WatchJobs(const Invocation& inv, const std::string& ns, KubeClient& client,
              const OutputFormat& format, const GetOptions& columns, const Listed& listed, Io& io) {
  std::map<std::string, std::string> shown;  // uid -> the resourceVersion printed last
  for (const auto& o : listed.raw)
    shown[MetadataField(o, "uid")] = MetadataField(o, "resourceVersion");
  std::string from = listed.resourceVersion;
  auto print = [&](const nlohmann::json& object) {
    std::string& version = shown[MetadataField(object, "uid")];
    if (version == MetadataField(object, "resourceVersion")) return;
    version = MetadataField(object, "resourceVersion");
    if (!format.Table()) {
      io.out << FormatWatchedObject(format, object);
    } else if (auto job = api::JobFromJson(object); job.ok()) {
      io.out << FormatJobRow(*job, columns, Now());
    } else {
      io.err << "error: a Job cannot be read: " << job.status().message() << "\n";
    }
    io.out.flush();
  };
  io.out.flush();
  while (!io.stop.stop_requested()) {
    WatchOptions options;
    options.labelSelector = inv.selector;
    if (!inv.name.empty()) options.fieldSelector = "metadata.name=" + inv.name;
    options.resourceVersion = from;
    options.timeoutSeconds = kWatchWindowSeconds;
    Status watched =
        client.Watch(kJobs, inv.allNamespaces ? "" : ns, options, io.stop, [&](WatchEvent&& event) {
          const std::string version = MetadataField(event.object, "resourceVersion");
          if (!version.empty()) from = version;
          if (event.type != WatchEventType::kBookmark) print(event.object);
          return true;
        });
    if (watched.ok()) continue;
    if (io.stop.stop_requested()) break;
    if (watched.code() != StatusCode::kGone) return Fail(io, ExplainError(watched, "watch jobs"));
    auto relisted = ListJobs(inv, ns, client, io);  // our version is too old: start again
    if (!relisted) return kExitError;
    for (const auto& o : relisted->raw) print(o);
    from = relisted->resourceVersion;
  }
  return kExitOk;
}

int Get(const Invocation& inv, const std::string& ns, KubeClient& client,
        const PathStreamer& streamer, Io& io) {
  auto listed = ListJobs(inv, ns, client, io);
  if (!listed) return kExitError;
  const OutputFormat format = *ParseOutputFormat(inv.output);  // checked by ParseArgs
  GetOptions columns;
  const int exit = PrintJobs(inv, ns, format, listed->raw, streamer, columns, io);
  if (!inv.watch) return exit;
  return WatchJobs(inv, ns, client, format, columns, *listed, io);
}

// What describe says when the visibility API did not answer for the Job's LocalQueue.
std::string VisibilityError(const Status& status) {
  const std::string api = std::string("Kueue's visibility API (") + kKueueVisibilityGroup + "/" +
                          kKueueVisibilityVersion + ")";
  // Kueue's own 404 names the LocalQueue it does not know; the API server's names nothing.
  if (status.code() == StatusCode::kNotFound) {
    return status.message().find("\" not found") != std::string::npos
               ? api + ": " + status.message()
               : api + " is not served by this cluster";
  }
  if (status.code() == StatusCode::kForbidden) return "reading " + api + " was refused (RBAC)";
  if (status.code() == StatusCode::kInvalidArgument) return api + " " + status.message();
  return api + " did not answer: " + status.message();
}

// The pending Workloads of one LocalQueue's answer, by name: their 0-based positionInLocalQueue.
StatusOr<std::map<std::string, int64_t>> ReadPendingWorkloads(const std::string& body) {
  const auto summary = nlohmann::json::parse(body, nullptr, false);
  if (!summary.is_object() || !summary.contains("items") || !summary["items"].is_array()) {
    return Status(StatusCode::kInvalidArgument,
                  "answered something other than a PendingWorkloadsSummary");
  }
  std::map<std::string, int64_t> positions;
  for (const auto& item : summary["items"]) {
    const auto name = nlohmann::json::json_pointer("/metadata/name");
    const auto position = item.find("positionInLocalQueue");
    if (!item.contains(name) || !item.at(name).is_string() || position == item.end() ||
        !position->is_number_integer()) {
      continue;
    }
    positions[item.at(name).get<std::string>()] = position->get<int64_t>();
  }
  return positions;
}

int Describe(const Invocation& inv, const std::string& ns, KubeClient& client,
             const PathStreamer& streamer, Io& io) {
  auto got = GetJob(client, ns, inv.name, io);
  if (!got) return kExitError;
  const api::Job& job = got->second;
  std::vector<EventLine> events;
  ListOptions options;
  options.fieldSelector = "involvedObject.uid=" + job.metadata.uid;
  auto listed = ListAll(client, kCoreEvents, ns, options,
                        [&](nlohmann::json&& e) { events.push_back(EventLineFromJson(e)); });
  DescribeQueue queue;
  if (statemachine::DeriveState(job) == State::kQueued) {
    queue.positions = AskQueuePositions({job}, streamer, &queue.unknownWhy);
  }
  io.out << FormatDescribe(job, std::move(events), Now(), kDescribeEvents, queue);
  if (!listed.ok()) {
    // The Job itself was shown; Events are a courtesy that RBAC may deny.
    io.err << "warning: " << ExplainError(listed.status(), "list events") << "\n";
  }
  return kExitOk;
}

enum class WatchEnd { kDone, kDeleted, kTimeout, kError };

// Follows the Job (GET, then watches from its resourceVersion, renewed every
// kWatchWindowSeconds) until done(job), its deletion, the deadline or an error (printed). `job`
// is the latest copy seen.
WatchEnd WatchJob(KubeClient& client, const std::string& ns, const std::string& name,
                  std::optional<std::chrono::steady_clock::time_point> deadline,
                  const std::function<bool(const api::Job&)>& done, api::Job& job, Io& io) {
  auto got = GetJob(client, ns, name, io);
  if (!got) return WatchEnd::kError;
  job = std::move(got->second);
  const std::string uid = job.metadata.uid;
  // Where the next watch starts: the Job's own resourceVersion at first; after a 410 Gone the
  // resourceVersion of a fresh list (the Job's may be older than what the server still keeps,
  // and watching from it again would only be refused again).
  std::string watchFrom = job.metadata.resourceVersion;
  bool deleted = false;
  while (true) {
    if (done(job)) return WatchEnd::kDone;
    if (deleted) return WatchEnd::kDeleted;
    int64_t window = kWatchWindowSeconds;
    if (deadline) {
      auto left =
          std::chrono::ceil<std::chrono::seconds>(*deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return WatchEnd::kTimeout;
      window = std::min<int64_t>(window, left.count());
    }
    WatchOptions options;
    options.fieldSelector = "metadata.name=" + name;
    options.resourceVersion = watchFrom;
    options.timeoutSeconds = window;
    options.allowWatchBookmarks = false;
    Status watched = client.Watch(kJobs, ns, options, {}, [&](WatchEvent&& event) {
      if (event.type == WatchEventType::kBookmark) return true;
      auto decoded = api::JobFromJson(event.object);
      if (!decoded.ok() || decoded->metadata.uid != uid) return true;  // another Job, same name
      job = std::move(*decoded);
      watchFrom = job.metadata.resourceVersion;
      if (event.type == WatchEventType::kDeleted) {
        deleted = true;
        return false;
      }
      return !done(job);
    });
    if (watched.ok()) continue;
    if (watched.code() != StatusCode::kGone) {
      Fail(io, ExplainError(watched, "watch job \"" + name + "\""));
      return WatchEnd::kError;
    }
    // Our resourceVersion is too old: list the Job again and watch from the list's version.
    ListOptions relist;
    relist.fieldSelector = options.fieldSelector;
    auto listed = client.List(kJobs, ns, relist);
    if (!listed.ok()) {
      Fail(io, ExplainError(listed.status(), "list job \"" + name + "\""));
      return WatchEnd::kError;
    }
    if (listed->items.empty()) return WatchEnd::kDeleted;
    auto decoded = api::JobFromJson(listed->items.front());
    if (!decoded.ok() || decoded->metadata.uid != uid) return WatchEnd::kDeleted;
    job = std::move(*decoded);
    watchFrom = listed->resourceVersion;
  }
}

// Waits until the Job finished (or the timeout); prints the outcome; returns the exit code.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;

Deadline DeadlineAfter(std::optional<std::chrono::seconds> timeout) {
  if (!timeout) return std::nullopt;
  return std::chrono::steady_clock::now() + *timeout;
}

int WaitFor(const std::string& ns, const std::string& name, Deadline deadline, KubeClient& client,
            Io& io) {
  api::Job job;
  Progress progress(io.out, io.terminal, *io.pacing.clock);
  auto finished = [&](const api::Job& j) {
    progress.Observe(j);
    return FinishedExitCode(j).has_value();
  };
  const WatchEnd end = WatchJob(client, ns, name, deadline, finished, job, io);
  progress.Finish();
  switch (end) {
    case WatchEnd::kError:
      return kExitError;
    case WatchEnd::kDeleted:
      io.err << "error: job \"" << name << "\" was deleted before it finished\n";
      return kExitJobDeleted;
    case WatchEnd::kTimeout:
      io.err << "error: timed out waiting for job \"" << name << "\": it is "
             << statemachine::StateName(statemachine::DeriveState(job))
             << "; wait longer with --timeout, or see why with `kubectl ayatori describe " << name
             << " -n " << ns << "`\n";
      return kExitTimeout;
    case WatchEnd::kDone:
      break;
  }
  const int code = *FinishedExitCode(job);
  api::Job undeleted = job;
  undeleted.metadata.deletionTimestamp.reset();
  const State state = statemachine::DeriveState(undeleted);
  std::string detail = StateReason(undeleted, state);
  if (job.status.result && job.status.result->exitCode) {
    detail += ", exit code " + std::to_string(*job.status.result->exitCode);
  }
  (code == kExitOk ? io.out : io.err) << JobRef(name) << " " << statemachine::StateName(state)
                                      << (detail.empty() ? "" : " (" + detail + ")") << "\n";
  return code;
}

api::Job JobFromFlags(const Invocation& inv, const std::string& ns) {
  api::Job job;
  job.metadata.name = inv.name;
  job.metadata.namespace_ = ns;
  job.spec.jobClassName = inv.jobClass;
  job.spec.task.image = inv.image;
  (inv.command ? job.spec.task.command : job.spec.task.args) = inv.words;
  for (const auto& [k, v] : inv.env) job.spec.task.env.push_back({k, v, std::nullopt});
  if (!inv.cpu.empty() || !inv.memory.empty()) {
    api::ResourceRequirements r;
    if (!inv.cpu.empty()) r.limits.cpu = api::Quantity::MustParse(inv.cpu);
    if (!inv.memory.empty()) r.limits.memory = api::Quantity::MustParse(inv.memory);
    job.spec.resources = r;
  }
  job.spec.activeDeadlineSeconds = inv.deadlineSeconds;
  job.spec.ttlSecondsAfterFinished = inv.ttlSeconds;
  return job;
}

int StreamLogs(const std::string& ns, const std::string& name, const LogOptions& options,
               const PathStreamer& streamer, Io& io) {
  const std::string path = LogPath(ns, name, options);
  Status s = streamer(path, {}, [&](std::string_view chunk) {
    io.out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    io.out.flush();
    return true;
  });
  if (s.ok()) return kExitOk;
  // A 404 for the path itself (kube-apiserver serves no such group: "404 page not found");
  // the log API's own 404 names the Job that does not exist (`jobs... "NAME" not found`).
  if (s.code() == StatusCode::kNotFound && s.message().find("\" not found") == std::string::npos) {
    return Fail(io,
                "the Job log API is not installed in this cluster (GET " + path +
                    " answered 404 Not Found): install Ayatori's log API (docs/kubectl-ayatori.md, "
                    "\"Logs\"), or ask your cluster administrator");
  }
  return Fail(io, ExplainError(s, "logs of job \"" + name + "\""));
}

int Run(const Invocation& inv, const std::string& ns, KubeClient& client,
        const PathStreamer& streamer, Io& io) {
  api::Job job = JobFromFlags(inv, ns);
  WriteOptions options;
  options.fieldManager = kFieldManager;
  auto created = ServedKindRetry(
      client, io, [&] { return client.Create(kJobs, ns, api::ToJson(job), options); });
  if (!created.ok()) {
    if (created.status().code() == StatusCode::kAlreadyExists) {
      return Fail(io, "job \"" + inv.name + "\" already exists in namespace \"" + ns +
                          "\": choose another name, or delete it first (kubectl delete ajob " +
                          inv.name + " -n " + ns + ")");
    }
    return Fail(io, Explain(client, io, created.status(), "create job \"" + inv.name + "\""));
  }
  io.out << JobRef(inv.name) << " created\n";
  if (!inv.wait) return kExitOk;
  const Deadline deadline = DeadlineAfter(inv.timeout);  // one --timeout for logs and wait
  if (inv.logs) {
    // Follow the output once the process started (or the Job finished: the log API answers for
    // a finished execution too, so a Job that ends at once is not missed). A missing log API is
    // reported and the Job still waited for: the exit code says how it ended.
    api::Job seen;
    auto started = [](const api::Job& j) {
      return j.status.startTime.has_value() || FinishedExitCode(j).has_value();
    };
    if (WatchJob(client, ns, inv.name, deadline, started, seen, io) == WatchEnd::kDone &&
        seen.status.startTime) {
      (void)StreamLogs(ns, inv.name, {true, std::nullopt, std::nullopt}, streamer, io);
    }
  }
  return WaitFor(ns, inv.name, deadline, client, io);
}

// One Job deleted, as kubectl says it; false (and the error printed) when it failed.
bool DeleteOne(const std::string& ns, const std::string& name, KubeClient& client, Io& io) {
  // As a StatusOr, the shape ServedKindRetry handles.
  auto attempt = ServedKindRetry(client, io, [&]() -> StatusOr<bool> {
    Status s = client.Delete(kJobs, ns, name, {});
    if (!s.ok()) return s;
    return true;
  });
  const Status& deleted = attempt.status();
  if (deleted.ok()) {
    io.out << "job.execution.ayatori.ddupan.top \"" << name << "\" deleted\n";
    return true;
  }
  if (deleted.code() == StatusCode::kNotFound && !ResourceMissing(deleted)) {
    Fail(io, "job \"" + name + "\" not found in namespace \"" + ns +
                 "\": list the namespace's Jobs with `kubectl ayatori get -n " + ns +
                 "`, or name another namespace with -n");
  } else {
    Fail(io, Explain(client, io, deleted, "delete job \"" + name + "\""));
  }
  return false;
}

// delete NAME..., --all or -l: each Job in turn (kubectl goes on after a failure too); exit 1
// when any failed. The controller then stops the execution and releases the Job's finalizer.
int Delete(const Invocation& inv, const std::string& ns, KubeClient& client, Io& io) {
  std::vector<std::string> names = inv.names;
  if (names.empty()) {
    ListOptions options;
    options.labelSelector = inv.selector;
    auto listed = ServedKindRetry(client, io, [&] {
      names.clear();
      return ListAll(client, kJobs, ns, options, [&](nlohmann::json&& item) {
        names.push_back(item.value("/metadata/name"_json_pointer, ""));
      });
    });
    if (!listed.ok()) return Fail(io, Explain(client, io, listed.status(), "list jobs"));
    if (names.empty()) {
      io.err << "No resources found in " << ns << " namespace.\n";
      return kExitOk;
    }
  }
  bool ok = true;
  for (const auto& name : names) ok = DeleteOne(ns, name, client, io) && ok;
  return ok ? kExitOk : kExitError;
}

// The controller's version, from the ConfigMap it writes as it starts
// (src/controller/version_configmap.h); the client's line comes first, whatever happens.
int Version(const Invocation& inv, KubeClient& client, Io& io) {
  io.out << VersionLine("Client", kBuildVersion, kBuildCommit);
  if (inv.clientOnly) return kExitOk;
  const std::string where =
      "ConfigMap " + inv.controllerNamespace + "/" + controller::kVersionConfigMapName;
  auto got = client.Get(kConfigMaps, inv.controllerNamespace, controller::kVersionConfigMapName);
  if (!got.ok()) {
    io.out << VersionLine("Controller", "", "");
    if (got.status().code() == StatusCode::kNotFound) {
      return Fail(io, "the controller's version is not published: the " + where +
                          " does not exist. Is Ayatori installed and its controller started (it "
                          "writes the ConfigMap as it starts)? If it runs in another namespace, "
                          "name it with --controller-namespace");
    }
    return Fail(io, ExplainError(got.status(), "read the controller's version (" + where + ")"));
  }
  const nlohmann::json data = got->value("data", nlohmann::json::object());
  io.out << VersionLine("Controller", data.value(controller::kVersionKey, ""),
                        data.value(controller::kCommitKey, ""));
  return kExitOk;
}

int Cancel(const Invocation& inv, const std::string& ns, KubeClient& client, Io& io) {
  auto got = GetJob(client, ns, inv.name, io);
  if (!got) return kExitError;
  auto cancelled = RequestCancel(client, ns, got->second);
  if (!cancelled.ok())
    return Fail(io, ExplainError(cancelled.status(), "cancel job \"" + inv.name + "\""));
  if (!*cancelled) {
    io.out << JobRef(inv.name) << " already finished ("
           << statemachine::StateName(statemachine::DeriveState(got->second))
           << "): nothing to cancel\n";
    return kExitOk;
  }
  io.out << JobRef(inv.name) << " cancel requested (the Job is Cancelled once the backend "
         << "confirmed the execution stopped; `kubectl ayatori wait " << inv.name
         << "` waits for it)\n";
  return kExitOk;
}

int ConfirmLost(const Invocation& inv, const std::string& ns, KubeClient& client, Io& io) {
  auto got = GetJob(client, ns, inv.name, io);
  if (!got) return kExitError;
  const api::Job& job = got->second;
  const State state = statemachine::DeriveState(job);
  if (state != State::kResultUnknown) {
    return Fail(io, "job \"" + inv.name + "\" is " + statemachine::StateName(state) +
                        ", not ResultUnknown: only a Job whose backend cannot tell whether its "
                        "execution still runs can be confirmed lost");
  }
  if (!inv.yes) {
    io.err << "Job " << ns << "/" << inv.name << " is ResultUnknown: " << ExplainState(job, state)
           << "\n";
    if (job.status.execution) {
      io.err << "Its execution: " << job.status.execution->adapter;
      for (const auto& ref : job.status.execution->references)
        io.err << " " << ref.type << "/" << ref.id;
      io.err << "\n";
    }
    io.err << "Confirming that the execution is lost fails the Job for good (BackendLost); "
              "check on the backend first that it no longer runs.\n"
           << "Confirm that the execution of job " << ns << "/" << inv.name << " is lost? [y/N]: ";
    io.err.flush();
    std::string answer;
    std::getline(io.in, answer);
    if (answer != "y" && answer != "Y" && answer != "yes" && answer != "YES") {
      io.err << "Not confirmed: nothing changed (use --yes to skip the question)\n";
      return kExitError;
    }
  }
  nlohmann::json patch = {
      {"metadata",
       {{"resourceVersion", job.metadata.resourceVersion},  // only the state shown is confirmed
        {"annotations",
         {{api::kConfirmBackendLostAnnotation,
           ConfirmLostAnnotationValue(ResultUnknownEpisode(got->first), inv.reason)}}}}}};
  PatchOptions options;
  options.fieldManager = kFieldManager;
  auto patched = client.Patch(kJobs, ns, inv.name, PatchType::kMerge, patch, options);
  if (!patched.ok()) {
    if (patched.status().code() == StatusCode::kConflict) {
      return Fail(io, "job \"" + inv.name +
                          "\" changed while you confirmed (the backend may "
                          "have answered): look at it again and re-run confirm-lost if it is still "
                          "ResultUnknown");
    }
    if (patched.status().code() == StatusCode::kForbidden ||
        patched.status().code() == StatusCode::kInvalid) {
      return Fail(io, patched.status().message() +
                          "\nAsk a member of ayatori:backend-lost-confirmers to confirm it "
                          "(docs/api.md, \"Admission policy\")");
    }
    return Fail(io, ExplainError(patched.status(), "confirm job \"" + inv.name + "\" lost"));
  }
  io.out << JobRef(inv.name) << " confirmed lost: the controller fails it with BackendLost\n";
  return kExitOk;
}

}  // namespace

std::string LogPath(std::string_view ns, std::string_view name, const LogOptions& options) {
  ResourceRef ref{kLogApiGroup, kLogApiVersion, "jobs", true};
  return kube::ResourcePath(ref, ns, name, "log") +
         kube::QueryString(
             {{"follow", options.follow ? "true" : ""},
              {"tailLines", options.tailLines ? std::to_string(*options.tailLines) : ""},
              {"sinceSeconds", options.sinceSeconds ? std::to_string(*options.sinceSeconds) : ""}});
}

std::string PendingWorkloadsPath(std::string_view ns, std::string_view queue) {
  ResourceRef ref{kKueueVisibilityGroup, kKueueVisibilityVersion, "localqueues", true};
  return kube::ResourcePath(ref, ns, queue, "pendingworkloads");
}

QueuePositions AskQueuePositions(const std::vector<api::Job>& jobs, const PathStreamer& streamer,
                                 std::string* why) {
  QueuePositions positions;
  std::set<std::string> asked;
  for (const auto& job : jobs) {
    const std::string key = QueueKey(job);
    if (key.empty() || statemachine::DeriveState(job) != State::kQueued) continue;
    if (!asked.insert(key).second) continue;
    std::string body;
    bool tooLarge = false;
    Status answered =
        streamer(PendingWorkloadsPath(job.metadata.namespace_, statemachine::QueueName(job)), {},
                 [&](std::string_view chunk) {
                   tooLarge = body.size() + chunk.size() > kMaxPendingWorkloadsBytes;
                   if (!tooLarge) body.append(chunk);
                   return !tooLarge;
                 });
    if (tooLarge) {  // whatever the stream said once the reader stopped it
      answered =
          Status(StatusCode::kInvalidArgument,
                 "answered more than " + std::to_string(kMaxPendingWorkloadsBytes) + " bytes");
    }
    auto pending = answered.ok() ? ReadPendingWorkloads(body)
                                 : StatusOr<std::map<std::string, int64_t>>(answered);
    if (pending.ok()) {
      positions[key] = std::move(*pending);
    } else if (why != nullptr && why->empty()) {
      *why = VisibilityError(pending.status());
    }
  }
  return positions;
}

StatusOr<bool> RequestCancel(KubeClient& client, const std::string& ns, const api::Job& job) {
  if (statemachine::IsTerminal(statemachine::DeriveState(job))) return false;
  PatchOptions options;
  options.fieldManager = kFieldManager;
  auto patched = client.Patch(kJobs, ns, job.metadata.name, PatchType::kMerge,
                              {{"spec", {{"desiredState", "Cancelled"}}}}, options);
  if (!patched.ok()) return patched.status();
  return true;
}

std::string ConfirmLostAnnotationValue(int64_t episode, const std::string& reason) {
  return std::to_string(episode) + ":" +
         (reason.empty() ? std::string("confirmed with kubectl ayatori confirm-lost") : reason);
}

int64_t ResultUnknownEpisode(const nlohmann::json& job) {
  const auto ptr = nlohmann::json::json_pointer("/status/resultUnknownEpisode");
  return job.contains(ptr) && job.at(ptr).is_number_integer() ? job.at(ptr).get<int64_t>() : 0;
}

std::optional<int> FinishedExitCode(const api::Job& job) {
  api::Job undeleted = job;
  undeleted.metadata.deletionTimestamp.reset();  // a deleted Job keeps the outcome it reached
  switch (statemachine::DeriveState(undeleted)) {
    case State::kSucceeded:
      return kExitOk;
    case State::kFailed:
      return kExitJobFailed;
    case State::kCancelled:
      return kExitJobCancelled;
    default:
      return std::nullopt;
  }
}

std::string ExplainError(const Status& status, std::string_view what) {
  const std::string prefix = std::string(what) + ": ";
  switch (status.code()) {
    case StatusCode::kUnavailable:
      return prefix + status.message() +
             "\nIs the cluster running, and is the server of your kubeconfig right? "
             "(kubectl config view --minify)";
    case StatusCode::kUnauthorized:
      return prefix + status.message() +
             "\nThe API server refused your credentials: check the user of your kubeconfig "
             "(kubectl config view --minify)";
    case StatusCode::kForbidden:
      return prefix + status.message() +
             "\nAsk your cluster administrator for access (RBAC) to "
             "jobs.execution.ayatori.ddupan.top";
    case StatusCode::kNotFound:
      if (ResourceMissing(status)) {
        return prefix + status.message() +
               "\nThe API server does not serve Ayatori Jobs: is the CRD " + kJobsCrdName +
               " installed and Established? Check with `kubectl get crd " + kJobsCrdName +
               "`; install it with the release's install manifest (docs/install.md) or "
               "kubectl apply -k config/crd";
      }
      return prefix + status.message();
    default:
      return prefix + status.message();
  }
}

bool KindNotServed(const Status& status) {
  if (ResourceMissing(status)) return true;
  // kube-apiserver's MutatingAdmissionPolicy plugin, before it has the new kind's schema:
  // "Resource kind execution.ayatori.ddupan.top/v1alpha1, Kind=Job not found. There can be a
  // delay between when CustomResourceDefinitions are created and when they are available."
  return status.code() == StatusCode::kServerError &&
         status.message().find("Resource kind ") != std::string::npos &&
         status.message().find(" not found") != std::string::npos;
}

std::string ExplainKindNotServed(const Status& status, std::string_view what,
                                 const StatusOr<nlohmann::json>& crd,
                                 std::chrono::system_clock::time_point now) {
  const std::string crdName = kJobsCrdName;
  const std::string check = "`kubectl get crd " + crdName + "`";
  const std::string wait =
      "`kubectl wait --for condition=established --timeout=60s crd/" + crdName + "`";
  std::string text =
      std::string(what) + ": the API server does not serve Ayatori Jobs (" + crdName + ")";
  const CrdView view = ViewCrd(crd, now);
  switch (view.phase) {
    case CrdPhase::kAbsent:
      return text + ": the CRD " + crdName +
             " is not installed in this cluster. Install Ayatori (docs/install.md: kubectl "
             "apply -f dist/install.yaml, or kubectl apply -k config/crd); " +
             check + " shows it once it is there";
    case CrdPhase::kNotEstablished:
      return text + " yet: the CRD " + crdName + " exists but is not Established (" + view.detail +
             "). Wait for it with " + wait + ", or see why with `kubectl get crd " + crdName +
             " -o yaml`";
    case CrdPhase::kSettling:
      return text + " yet: the CRD " + crdName + " is Established but new (" + view.detail +
             "; the API server answered: " + status.message() +
             "). Run the command again in a few seconds";
    case CrdPhase::kEstablished:
      return text + ", although the CRD " + crdName +
             " is Established (the API server answered: " + status.message() + "). Check with " +
             check + " and `kubectl api-resources --api-group=execution.ayatori.ddupan.top`";
    case CrdPhase::kUnreadable:
      break;
  }
  return text + " (the API server answered: " + status.message() +
         "). Is Ayatori installed, and its CRD Established? Check with " + check + " and " + wait +
         ", or ask your cluster administrator (reading CRDs was refused: " + view.detail + ")";
}

std::vector<std::string> JobNames(KubeClient& client, const std::string& ns) {
  std::vector<std::string> names;
  auto listed = ListAll(client, kJobs, ns, {}, [&](nlohmann::json&& item) {
    names.push_back(item.value("/metadata/name"_json_pointer, ""));
  });
  if (!listed.ok()) return {};
  std::sort(names.begin(), names.end());
  return names;
}

int Execute(const Invocation& inv, const std::string& ns, KubeClient& client,
            const PathStreamer& streamer, Io io) {
  switch (inv.verb) {
    case Verb::kGet:
      return Get(inv, ns, client, streamer, io);
    case Verb::kDescribe:
      return Describe(inv, ns, client, streamer, io);
    case Verb::kRun:
      return Run(inv, ns, client, streamer, io);
    case Verb::kCancel:
      return Cancel(inv, ns, client, io);
    case Verb::kDelete:
      return Delete(inv, ns, client, io);
    case Verb::kVersion:
      return Version(inv, client, io);
    case Verb::kCompletion:
    case Verb::kComplete:
    case Verb::kUi:
      break;  // main() answers them (ui: with its server, ui/server.h)
    case Verb::kWait:
      return WaitFor(ns, inv.name, DeadlineAfter(inv.timeout), client, io);
    case Verb::kConfirmLost:
      return ConfirmLost(inv, ns, client, io);
    case Verb::kLogs: {
      if (!GetJob(client, ns, inv.name, io)) return kExitError;  // a missing Job says so first
      return StreamLogs(ns, inv.name, {inv.follow, inv.tailLines, inv.sinceSeconds}, streamer, io);
    }
  }
  return kExitUsage;
}

}  // namespace ayatori::plugin
