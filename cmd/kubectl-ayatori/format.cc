#include "format.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "api/json.h"
#include "kueue/workload.h"

namespace ayatori::plugin {

namespace {

using statemachine::State;

std::string Or(const std::string& s, const char* fallback) { return s.empty() ? fallback : s; }

std::string AgeSince(std::optional<api::Time> t, api::Time now) {
  if (!t) return "<unknown>";
  return FormatAge(now - *t);
}

std::string ResourceListText(const api::ResourceList& list) {
  std::string out;
  if (list.cpu) out = "cpu=" + list.cpu->str();
  if (list.memory) out += (out.empty() ? "" : ", ") + std::string("memory=") + list.memory->str();
  return out.empty() ? "<none>" : out;
}

std::string JoinArgv(const std::vector<std::string>& argv) {
  if (argv.empty()) return "<none>";
  // JSON quoting keeps arguments with blanks readable and unambiguous.
  return nlohmann::json(argv).dump();
}

// YAML 1.1 and 1.2 read these plain scalars as something other than a string.
bool YamlWouldMisread(const std::string& s) {
  static const std::regex kNonString(
      R"(^(|~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N)$|^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$|^0x[0-9a-fA-F_]+$|^0o?[0-7_]+$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$|^[0-9]+(:[0-5]?[0-9])+(\.[0-9_]*)?$)");
  return std::regex_match(s, kNonString);
}

void EmitYaml(YAML::Emitter& out, const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key;
        if (YamlWouldMisread(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        EmitYaml(out, v);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& v : j) EmitYaml(out, v);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      if (YamlWouldMisread(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case nlohmann::json::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      break;
    case nlohmann::json::value_t::null:
      out << YAML::Null;
      break;
    default:  // numbers: JSON's text is valid YAML
      out << j.dump();
      break;
  }
}

}  // namespace

std::string FormatAge(std::chrono::seconds age) {
  // "<a><unit>" or "<a><unit><b><subunit>" (the second part left out when it is 0).
  auto two = [](int64_t a, const char* unit, int64_t b, const char* subunit) {
    std::string out = std::to_string(a) + unit;
    return b == 0 ? out : out + std::to_string(b) + subunit;
  };
  constexpr int64_t kHoursPerYear = int64_t{24} * 365;
  const int64_t s = age.count();
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 120) return std::to_string(s) + "s";
  const int64_t m = s / 60;
  if (m < 10) return two(m, "m", s % 60, "s");
  if (m < 180) return std::to_string(m) + "m";
  const int64_t h = m / 60;
  if (h < 8) return two(h, "h", m % 60, "m");
  if (h < 48) return std::to_string(h) + "h";
  const int64_t d = h / 24;
  if (h < int64_t{24} * 8) return two(d, "d", h % 24, "h");
  if (h < kHoursPerYear * 2) return std::to_string(d) + "d";
  const int64_t y = d / 365;
  if (h < kHoursPerYear * 8) return two(y, "y", d % 365, "d");
  return std::to_string(y) + "y";
}

std::string RenderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(std::max<size_t>(widths[i] + 3, 6) - row[i].size(), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string StateReason(const api::Job& job, State state) {
  const auto* accepted = api::FindCondition(job.status.conditions, api::kConditionAccepted);
  const auto* succeeded = api::FindCondition(job.status.conditions, api::kConditionSucceeded);
  if (state == State::kResolving && accepted != nullptr) return accepted->reason;
  const auto* admitted =
      api::FindCondition(job.status.conditions, statemachine::kConditionAdmitted);
  if (state == State::kQueued && admitted != nullptr) return admitted->reason;
  if (succeeded != nullptr) return succeeded->reason;
  return accepted != nullptr ? accepted->reason : "";
}

std::string ExplainState(const api::Job& job, State state) {
  auto condition = [&](const char* type) -> std::string {
    const auto* c = api::FindCondition(job.status.conditions, type);
    if (c == nullptr) return std::string(type) + " not set yet";
    std::string s = std::string(type) + "=" + api::ToString(c->status) + "/" + c->reason;
    return c->message.empty() ? s : s + ": " + c->message;
  };
  switch (state) {
    case State::kDeleting:
      return "metadata.deletionTimestamp is set: the controller stops and removes the execution, "
             "then the Job goes";
    case State::kSucceeded:
    case State::kFailed:
    case State::kCancelled:
    case State::kResultUnknown:
      return condition(api::kConditionSucceeded);
    case State::kCancelling:
      return "spec.desiredState is Cancelled: waiting for the backend to confirm the execution "
             "stopped (" +
             condition(api::kConditionSucceeded) + ")";
    case State::kRunning:
      return "the backend confirmed the process started (" + condition(api::kConditionSucceeded) +
             ")";
    case State::kStarting:
      return "an execution exists on the backend, its process has not started yet (" +
             condition(api::kConditionScheduled) + ")";
    case State::kQueued:
      return "waiting for Kueue to admit the Job's Workload, nothing runs before (" +
             condition(statemachine::kConditionAdmitted) + ")";
    case State::kScheduling:
      return "the class is resolved, no execution exists yet (" +
             condition(api::kConditionScheduled) + ")";
    case State::kResolving:
      return "the class, references or policy are not resolved yet (" +
             condition(api::kConditionAccepted) + ")";
  }
  return "";
}

std::string QueueKey(const api::Job& job) {
  const std::string queue = statemachine::QueueName(job);
  return queue.empty() ? "" : job.metadata.namespace_ + "/" + queue;
}

std::optional<int64_t> QueuePosition(const api::Job& job, const QueuePositions& positions) {
  if (statemachine::DeriveState(job) != State::kQueued) return std::nullopt;
  const auto queue = positions.find(QueueKey(job));
  if (queue == positions.end()) return std::nullopt;
  const auto pending = queue->second.find(kueue::WorkloadName(job.metadata.uid));
  if (pending == queue->second.end()) return std::nullopt;
  return pending->second + 1;
}

std::string QueueText(const api::Job& job, const QueuePositions& positions,
                      const std::string& unknownWhy) {
  const std::string queue = statemachine::QueueName(job);
  const auto* admitted =
      api::FindCondition(job.status.conditions, statemachine::kConditionAdmitted);
  if (admitted != nullptr && admitted->status == api::ConditionStatus::kTrue) {
    return "admitted by LocalQueue " + queue;
  }
  if (statemachine::DeriveState(job) != State::kQueued) return "LocalQueue " + queue;
  if (auto position = QueuePosition(job, positions)) {
    return "position " + std::to_string(*position) + " in LocalQueue " + queue;
  }
  return "waiting in LocalQueue " + queue + ", position unknown" +
         (unknownWhy.empty() ? "" : ": " + unknownWhy);
}

std::vector<std::string> JobTableHeader(const GetOptions& options) {
  std::vector<std::string> header;
  if (options.withNamespace) header.emplace_back("NAMESPACE");
  for (const char* h : {"NAME", "STATE", "CLASS"}) header.emplace_back(h);
  if (options.queue) {
    for (const char* h : {"QUEUE", "POSITION"}) header.emplace_back(h);
  }
  for (const char* h : {"REASON", "EXIT", "AGE"}) header.emplace_back(h);
  if (options.wide) {
    for (const char* h : {"DESIRED", "STARTED", "ADAPTER", "BACKEND"}) header.emplace_back(h);
  }
  return header;
}

std::vector<std::string> JobRowCells(const api::Job& job, const GetOptions& options,
                                     api::Time now) {
  const State state = statemachine::DeriveState(job);
  std::vector<std::string> row;
  if (options.withNamespace) row.push_back(job.metadata.namespace_);
  row.push_back(job.metadata.name);
  row.emplace_back(statemachine::StateName(state));
  row.push_back(job.status.resolvedJobClass ? job.status.resolvedJobClass->name
                                            : Or(job.spec.jobClassName, "<default>"));
  if (options.queue) {
    row.push_back(Or(statemachine::QueueName(job), "<none>"));
    const auto position = QueuePosition(job, options.positions);
    row.push_back(position ? std::to_string(*position) : "<none>");
  }
  row.push_back(Or(StateReason(job, state), "<none>"));
  row.push_back(job.status.result && job.status.result->exitCode
                    ? std::to_string(*job.status.result->exitCode)
                    : "<none>");
  row.push_back(AgeSince(job.metadata.creationTimestamp, now));
  if (options.wide) {
    row.push_back(api::ToString(job.spec.desiredState));
    row.push_back(job.status.startTime ? FormatAge(now - *job.status.startTime) : "<none>");
    std::string adapter, kinds;
    if (job.status.execution) {
      adapter = job.status.execution->adapter;
      for (const auto& ref : job.status.execution->references) {
        kinds += (kinds.empty() ? "" : ",") + ref.type;
      }
    }
    row.push_back(Or(adapter, "<none>"));
    row.push_back(Or(kinds, "<none>"));
  }
  return row;
}

std::string FormatJobTable(const std::vector<api::Job>& jobs, const GetOptions& options,
                           api::Time now) {
  std::vector<std::vector<std::string>> rows = {JobTableHeader(options)};
  for (const auto& job : jobs) rows.push_back(JobRowCells(job, options, now));
  return RenderTable(rows);
}

nlohmann::json OutputDocument(const std::vector<nlohmann::json>& objects, bool single) {
  auto clean = [](nlohmann::json o) {
    if (o.contains("metadata") && o["metadata"].is_object()) o["metadata"].erase("managedFields");
    return o;
  };
  if (single && objects.size() == 1) return clean(objects.front());
  nlohmann::json list = {{"apiVersion", "v1"},
                         {"kind", "List"},
                         {"items", nlohmann::json::array()},
                         {"metadata", {{"resourceVersion", ""}}}};
  for (const auto& o : objects) list["items"].push_back(clean(o));
  return list;
}

std::string ToJsonText(const nlohmann::json& doc) { return doc.dump(4) + "\n"; }

std::string ToYamlText(const nlohmann::json& doc) {
  YAML::Emitter out;
  EmitYaml(out, doc);
  return std::string(out.c_str()) + "\n";
}

StatusOr<OutputFormat> ParseOutputFormat(std::string_view text) {
  using Kind = OutputFormat::Kind;
  OutputFormat format;
  if (text.empty()) return format;
  static const std::vector<std::pair<std::string_view, Kind>> kNamed = {
      {"wide", Kind::kWide}, {"json", Kind::kJson}, {"yaml", Kind::kYaml}, {"name", Kind::kName}};
  for (const auto& [name, kind] : kNamed) {
    if (text == name) {
      format.kind = kind;
      return format;
    }
  }
  if (text.starts_with("jsonpath=")) {
    auto parsed = JsonPathTemplate::Parse(text.substr(9));
    if (!parsed.ok()) return parsed.status();
    format.kind = Kind::kJsonPath;
    format.jsonPath = std::move(*parsed);
  } else {
    return Status(StatusCode::kInvalidArgument,
                  "--output \"" + std::string(text) +
                      "\" is not supported: use one of json, yaml, name, wide, jsonpath=TEMPLATE");
  }
  return format;
}

std::string FormatObjects(const OutputFormat& format, const std::vector<nlohmann::json>& objects,
                          bool single) {
  switch (format.kind) {
    case OutputFormat::Kind::kJson:
      return ToJsonText(OutputDocument(objects, single));
    case OutputFormat::Kind::kYaml:
      return ToYamlText(OutputDocument(objects, single));
    case OutputFormat::Kind::kJsonPath:
      return format.jsonPath->Execute(OutputDocument(objects, single));
    case OutputFormat::Kind::kName: {
      std::string out;
      for (const auto& o : objects) {
        const auto name = nlohmann::json::json_pointer("/metadata/name");
        if (o.contains(name) && o.at(name).is_string()) {
          out += "job.execution.ayatori.ddupan.top/" + o.at(name).get<std::string>() + "\n";
        }
      }
      return out;
    }
    case OutputFormat::Kind::kTable:
    case OutputFormat::Kind::kWide:
      break;
  }
  return "";
}

std::string FormatJobRow(const api::Job& job, const GetOptions& options, api::Time now) {
  std::string table = FormatJobTable({job}, options, now);
  return table.substr(table.find('\n') + 1);
}

std::string FormatWatchedObject(const OutputFormat& format, const nlohmann::json& object) {
  std::string text = FormatObjects(format, {object}, true);
  return format.kind == OutputFormat::Kind::kYaml ? "---\n" + text : text;
}

std::string VersionLine(const std::string& who, const std::string& version,
                        const std::string& commit) {
  std::string line = who + " Version: " + (version.empty() ? "unknown" : version);
  if (!commit.empty() && commit != "unknown") line += " (commit " + commit + ")";
  return line + "\n";
}

EventLine EventLineFromJson(const nlohmann::json& e) {
  auto str = [&](const char* a, const char* b = nullptr) -> std::string {
    const nlohmann::json* v = e.contains(a) ? &e[a] : nullptr;
    if (v != nullptr && b != nullptr) v = v->is_object() && v->contains(b) ? &(*v)[b] : nullptr;
    return v != nullptr && v->is_string() ? v->get<std::string>() : "";
  };
  EventLine line;
  line.type = str("type");
  line.reason = str("reason");
  line.message = str("message");
  if (line.message.empty()) line.message = str("note");
  line.from = str("reportingComponent");
  if (line.from.empty()) line.from = str("source", "component");
  if (e.contains("count") && e["count"].is_number_integer()) line.count = e["count"].get<int64_t>();
  if (e.contains("series") && e["series"].is_object() && e["series"].contains("count") &&
      e["series"]["count"].is_number_integer()) {
    line.count = std::max(line.count, e["series"]["count"].get<int64_t>());
  }
  for (const std::string& t : {str("lastTimestamp"), str("series", "lastObservedTime"),
                               str("eventTime"), str("firstTimestamp")}) {
    if (t.empty()) continue;
    if (auto parsed = api::ParseTime(t); parsed.ok()) {
      line.last = *parsed;
      break;
    }
  }
  if (!line.last) {
    auto meta = e.value("metadata", nlohmann::json::object());
    if (meta.contains("creationTimestamp") && meta["creationTimestamp"].is_string()) {
      if (auto parsed = api::ParseTime(meta["creationTimestamp"].get<std::string>()); parsed.ok()) {
        line.last = *parsed;
      }
    }
  }
  return line;
}

namespace {

// describe's key/value part: two columns, "Key:" and its value (an indented key continues the
// row above).
struct DescribeRows {
  std::vector<std::vector<std::string>> kv;
  void Add(std::string key, std::string value) { kv.push_back({std::move(key), std::move(value)}); }
};

std::string TimeText(std::optional<api::Time> t, api::Time now) {
  return t ? api::FormatTime(*t) + " (" + FormatAge(now - *t) + " ago)" : std::string("<none>");
}

void AddMetadataRows(const api::Job& job, api::Time now, DescribeRows& rows) {
  rows.Add("Name:", job.metadata.name);
  rows.Add("Namespace:", job.metadata.namespace_);
  rows.Add("UID:", Or(job.metadata.uid, "<none>"));
  rows.Add("Created:", TimeText(job.metadata.creationTimestamp, now));
  std::string labels, annotations;
  for (const auto& [k, v] : job.metadata.labels)
    labels += (labels.empty() ? "" : ", ") + k + "=" + v;
  for (const auto& [k, v] : job.metadata.annotations) {
    annotations += (annotations.empty() ? "" : ", ") + k + "=" + v;
  }
  rows.Add("Labels:", Or(labels, "<none>"));
  rows.Add("Annotations:", Or(annotations, "<none>"));
}

// The derived state and why, the LocalQueue, what was asked for, and the class the Job resolved to.
void AddStateAndClassRows(const api::Job& job, State state, const DescribeQueue& queue,
                          DescribeRows& rows) {
  rows.Add("State:", statemachine::StateName(state));
  rows.Add("  Why:", ExplainState(job, state));
  if (!statemachine::QueueName(job).empty()) {
    rows.Add("Queue:", QueueText(job, queue.positions, queue.unknownWhy));
  }
  rows.Add("Desired State:", api::ToString(job.spec.desiredState));
  rows.Add("Job Class:", Or(job.spec.jobClassName, "<default>"));
  if (!job.status.resolvedJobClass) {
    rows.Add("Resolved Class:", "<not resolved yet>");
    return;
  }
  const auto& rc = *job.status.resolvedJobClass;
  rows.Add("Resolved Class:", rc.name);
  rows.Add("  Controller:", Or(rc.controllerName, "<none>"));
  if (rc.parametersRef) {
    rows.Add("  Parameters:", rc.parametersRef->kind + "/" + rc.parametersRef->name);
  }
}

// The environment's names and where each value comes from, never a value: a literal may be a
// credential someone pasted.
std::string EnvSources(const api::TaskSpec& task) {
  std::string env;
  for (const auto& e : task.env) {
    std::string source = "literal";
    if (e.valueFrom && e.valueFrom->secretKeyRef) {
      source = "secret " + e.valueFrom->secretKeyRef->name + "/" + e.valueFrom->secretKeyRef->key;
    } else if (e.valueFrom && e.valueFrom->configMapKeyRef) {
      source = "configmap " + e.valueFrom->configMapKeyRef->name + "/" +
               e.valueFrom->configMapKeyRef->key;
    }
    env += (env.empty() ? "" : ", ") + e.name + " (" + source + ")";
  }
  return env;
}

void AddTaskRows(const api::Job& job, DescribeRows& rows) {
  rows.Add("Image:", job.spec.task.image);
  rows.Add("Command:", JoinArgv(job.spec.task.command));
  rows.Add("Args:", JoinArgv(job.spec.task.args));
  if (!job.spec.task.workingDir.empty()) rows.Add("Working Dir:", job.spec.task.workingDir);
  rows.Add("Env:", Or(EnvSources(job.spec.task), "<none>"));
}

// Resources asked for and granted, the deadline and the TTL.
void AddLimitRows(const api::Job& job, DescribeRows& rows) {
  if (job.spec.resources) {
    rows.Add("Requested Resources:", "requests " + ResourceListText(job.spec.resources->requests) +
                                         "; limits " +
                                         ResourceListText(job.spec.resources->limits));
  } else {
    rows.Add("Requested Resources:", "<class defaults>");
  }
  if (job.status.effectiveResources) {
    rows.Add("Effective Resources:", "");
    rows.Add("  Requests:", ResourceListText(job.status.effectiveResources->requests));
    rows.Add("  Limits:", ResourceListText(job.status.effectiveResources->limits));
  } else {
    rows.Add("Effective Resources:", "<not resolved yet>");
  }
  rows.Add("Active Deadline:", job.spec.activeDeadlineSeconds
                                   ? std::to_string(*job.spec.activeDeadlineSeconds) + "s"
                                   : std::string("<none>"));
  if (auto at = statemachine::DeadlineAt(job)) rows.Add("  Expires:", api::FormatTime(*at));
  rows.Add("TTL After Finished:", job.spec.ttlSecondsAfterFinished
                                      ? std::to_string(*job.spec.ttlSecondsAfterFinished) + "s"
                                      : std::string("<none>"));
}

// Where the Job runs (adapter, backend references), when, and how it ended.
void AddExecutionRows(const api::Job& job, api::Time now, DescribeRows& rows) {
  if (job.status.execution) {
    rows.Add("Execution:", "");
    rows.Add("  Adapter:", Or(job.status.execution->adapter, "<none>"));
    if (job.status.execution->references.empty()) rows.Add("  References:", "<none>");
    for (size_t i = 0; i < job.status.execution->references.size(); ++i) {
      const auto& ref = job.status.execution->references[i];
      rows.Add(i == 0 ? "  References:" : "", ref.type + "/" + ref.id);
    }
  } else {
    rows.Add("Execution:", "<none>");
  }
  rows.Add("Started:", TimeText(job.status.startTime, now));
  rows.Add("Completed:", TimeText(job.status.completionTime, now));
  if (job.status.result) {
    rows.Add("Result:",
             "reason " + Or(job.status.result->reason, "<none>") + ", exit code " +
                 (job.status.result->exitCode ? std::to_string(*job.status.result->exitCode)
                                              : std::string("<unknown>")));
  } else {
    rows.Add("Result:", "<none>");
  }
}

// A table indented by two spaces, under a section title.
std::string IndentedTable(const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  std::istringstream table(RenderTable(rows));
  for (std::string line; std::getline(table, line);) out += "  " + line + "\n";
  return out;
}

std::string ConditionsSection(const api::Job& job, api::Time now) {
  if (job.status.conditions.empty()) return "Conditions:\n  <none>\n";
  std::vector<std::vector<std::string>> rows = {{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}};
  for (const auto& c : job.status.conditions) {
    rows.push_back({c.type, api::ToString(c.status), Or(c.reason, "<none>"),
                    FormatAge(now - c.lastTransitionTime), c.message});
  }
  return "Conditions:\n" + IndentedTable(rows);
}

// The last `maxEvents` Events, oldest first.
std::string EventsSection(std::vector<EventLine> events, api::Time now, size_t maxEvents) {
  if (events.empty()) return "Events: <none>\n";
  std::stable_sort(events.begin(), events.end(), [](const EventLine& a, const EventLine& b) {
    return a.last.value_or(api::Time{}) < b.last.value_or(api::Time{});
  });
  if (events.size() > maxEvents) {
    events.erase(events.begin(), events.end() - static_cast<std::ptrdiff_t>(maxEvents));
  }
  std::vector<std::vector<std::string>> rows = {{"TYPE", "REASON", "AGE", "FROM", "MESSAGE"}};
  for (const auto& e : events) {
    std::string age = AgeSince(e.last, now);
    if (e.count > 1) age += " (x" + std::to_string(e.count) + ")";
    rows.push_back({e.type, e.reason, age, Or(e.from, "<unknown>"), e.message});
  }
  return "Events:\n" + IndentedTable(rows);
}

}  // namespace

std::string FormatDescribe(const api::Job& job, std::vector<EventLine> events, api::Time now,
                           size_t maxEvents, const DescribeQueue& queue) {
  const State state = statemachine::DeriveState(job);
  DescribeRows rows;
  AddMetadataRows(job, now, rows);
  AddStateAndClassRows(job, state, queue, rows);
  AddTaskRows(job, rows);
  AddLimitRows(job, rows);
  AddExecutionRows(job, now, rows);
  return RenderTable(rows.kv) + ConditionsSection(job, now) +
         EventsSection(std::move(events), now, maxEvents);
}

}  // namespace ayatori::plugin
