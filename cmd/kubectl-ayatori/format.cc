#include "format.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "api/json.h"
#include "kube/time_format.h"

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
    case State::kScheduling:
      return "the class is resolved, no execution exists yet (" +
             condition(api::kConditionScheduled) + ")";
    case State::kResolving:
      return "the class, references or policy are not resolved yet (" +
             condition(api::kConditionAccepted) + ")";
  }
  return "";
}

std::string FormatJobTable(const std::vector<api::Job>& jobs, const GetOptions& options,
                           api::Time now) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  if (options.withNamespace) header.emplace_back("NAMESPACE");
  for (const char* h : {"NAME", "STATE", "CLASS", "REASON", "EXIT", "AGE"}) header.emplace_back(h);
  if (options.wide) {
    for (const char* h : {"DESIRED", "STARTED", "ADAPTER", "BACKEND"}) header.emplace_back(h);
  }
  rows.push_back(std::move(header));
  for (const auto& job : jobs) {
    const State state = statemachine::DeriveState(job);
    std::vector<std::string> row;
    if (options.withNamespace) row.push_back(job.metadata.namespace_);
    row.push_back(job.metadata.name);
    row.emplace_back(statemachine::StateName(state));
    row.push_back(job.status.resolvedJobClass ? job.status.resolvedJobClass->name
                                              : Or(job.spec.jobClassName, "<default>"));
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
    rows.push_back(std::move(row));
  }
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
    if (auto parsed = kube::ParseTime(t)) {
      line.last = std::chrono::floor<std::chrono::seconds>(*parsed);
      break;
    }
  }
  if (!line.last) {
    auto meta = e.value("metadata", nlohmann::json::object());
    if (meta.contains("creationTimestamp") && meta["creationTimestamp"].is_string()) {
      if (auto parsed = kube::ParseTime(meta["creationTimestamp"].get<std::string>())) {
        line.last = std::chrono::floor<std::chrono::seconds>(*parsed);
      }
    }
  }
  return line;
}

std::string FormatDescribe(const api::Job& job, std::vector<EventLine> events, api::Time now,
                           size_t maxEvents) {
  const State state = statemachine::DeriveState(job);
  std::vector<std::vector<std::string>> kv;  // two columns: "Key:" value
  auto add = [&](std::string key, std::string value) {
    kv.push_back({std::move(key), std::move(value)});
  };
  auto timeText = [&](std::optional<api::Time> t) {
    return t ? api::FormatTime(*t) + " (" + FormatAge(now - *t) + " ago)" : std::string("<none>");
  };
  add("Name:", job.metadata.name);
  add("Namespace:", job.metadata.namespace_);
  add("UID:", Or(job.metadata.uid, "<none>"));
  add("Created:", timeText(job.metadata.creationTimestamp));
  std::string labels, annotations;
  for (const auto& [k, v] : job.metadata.labels)
    labels += (labels.empty() ? "" : ", ") + k + "=" + v;
  for (const auto& [k, v] : job.metadata.annotations) {
    annotations += (annotations.empty() ? "" : ", ") + k + "=" + v;
  }
  add("Labels:", Or(labels, "<none>"));
  add("Annotations:", Or(annotations, "<none>"));
  add("State:", statemachine::StateName(state));
  add("  Why:", ExplainState(job, state));
  add("Desired State:", api::ToString(job.spec.desiredState));
  add("Job Class:", Or(job.spec.jobClassName, "<default>"));
  if (job.status.resolvedJobClass) {
    const auto& rc = *job.status.resolvedJobClass;
    add("Resolved Class:", rc.name);
    add("  Controller:", Or(rc.controllerName, "<none>"));
    if (rc.parametersRef) {
      add("  Parameters:", rc.parametersRef->kind + "/" + rc.parametersRef->name);
    }
  } else {
    add("Resolved Class:", "<not resolved yet>");
  }
  add("Image:", job.spec.task.image);
  add("Command:", JoinArgv(job.spec.task.command));
  add("Args:", JoinArgv(job.spec.task.args));
  if (!job.spec.task.workingDir.empty()) add("Working Dir:", job.spec.task.workingDir);
  std::string env;
  for (const auto& e : job.spec.task.env) {
    // Only where a value comes from: a literal may be a credential someone pasted.
    std::string source = "literal";
    if (e.valueFrom && e.valueFrom->secretKeyRef) {
      source = "secret " + e.valueFrom->secretKeyRef->name + "/" + e.valueFrom->secretKeyRef->key;
    } else if (e.valueFrom && e.valueFrom->configMapKeyRef) {
      source = "configmap " + e.valueFrom->configMapKeyRef->name + "/" +
               e.valueFrom->configMapKeyRef->key;
    }
    env += (env.empty() ? "" : ", ") + e.name + " (" + source + ")";
  }
  add("Env:", Or(env, "<none>"));
  if (job.spec.resources) {
    add("Requested Resources:", "requests " + ResourceListText(job.spec.resources->requests) +
                                    "; limits " + ResourceListText(job.spec.resources->limits));
  } else {
    add("Requested Resources:", "<class defaults>");
  }
  if (job.status.effectiveResources) {
    add("Effective Resources:", "");
    add("  Requests:", ResourceListText(job.status.effectiveResources->requests));
    add("  Limits:", ResourceListText(job.status.effectiveResources->limits));
  } else {
    add("Effective Resources:", "<not resolved yet>");
  }
  add("Active Deadline:", job.spec.activeDeadlineSeconds
                              ? std::to_string(*job.spec.activeDeadlineSeconds) + "s"
                              : std::string("<none>"));
  if (auto at = statemachine::DeadlineAt(job)) add("  Expires:", api::FormatTime(*at));
  add("TTL After Finished:", job.spec.ttlSecondsAfterFinished
                                 ? std::to_string(*job.spec.ttlSecondsAfterFinished) + "s"
                                 : std::string("<none>"));
  if (job.status.execution) {
    add("Execution:", "");
    add("  Adapter:", Or(job.status.execution->adapter, "<none>"));
    if (job.status.execution->references.empty()) add("  References:", "<none>");
    for (size_t i = 0; i < job.status.execution->references.size(); ++i) {
      const auto& ref = job.status.execution->references[i];
      add(i == 0 ? "  References:" : "", ref.type + "/" + ref.id);
    }
  } else {
    add("Execution:", "<none>");
  }
  add("Started:", timeText(job.status.startTime));
  add("Completed:", timeText(job.status.completionTime));
  if (job.status.result) {
    add("Result:", "reason " + Or(job.status.result->reason, "<none>") + ", exit code " +
                       (job.status.result->exitCode ? std::to_string(*job.status.result->exitCode)
                                                    : std::string("<unknown>")));
  } else {
    add("Result:", "<none>");
  }
  std::string out = RenderTable(kv);

  out += "Conditions:\n";
  if (job.status.conditions.empty()) {
    out += "  <none>\n";
  } else {
    std::vector<std::vector<std::string>> rows = {{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}};
    for (const auto& c : job.status.conditions) {
      rows.push_back({c.type, api::ToString(c.status), Or(c.reason, "<none>"),
                      FormatAge(now - c.lastTransitionTime), c.message});
    }
    std::istringstream table(RenderTable(rows));
    for (std::string line; std::getline(table, line);) out += "  " + line + "\n";
  }

  out += "Events:";
  if (events.empty()) return out + " <none>\n";
  out += "\n";
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
  std::istringstream table(RenderTable(rows));
  for (std::string line; std::getline(table, line);) out += "  " + line + "\n";
  return out;
}

}  // namespace ayatori::plugin
