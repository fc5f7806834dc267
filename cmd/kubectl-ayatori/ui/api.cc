#include "api.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "api/json.h"
#include "commands.h"
#include "controller/kinds.h"
#include "format.h"
#include "kube/api_error.h"
#include "kube/resource.h"
#include "statemachine/statemachine.h"

namespace ayatori::plugin::ui {

namespace {

using nlohmann::json;

// Every column of `get -A -o wide`, as JSON keys.
const GetOptions kAllColumns{true, true};

json RowJson(const api::Job& job, api::Time now) {
  const std::vector<std::string> header = JobTableHeader(kAllColumns);
  const std::vector<std::string> cells = JobRowCells(job, kAllColumns, now);
  json row = json::object();
  for (size_t i = 0; i < header.size() && i < cells.size(); ++i) {
    std::string key = header[i];
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    row[key] = cells[i];
  }
  return row;
}

int HttpCode(StatusCode code) {
  const int http = kube::HttpErrorFor(code).code;
  // The API server's own failure (or an unexpected answer) is passed on as a gateway error.
  return http == 500 ? 502 : http;
}

ApiAnswer Ok(json body) { return {200, std::move(body)}; }

ApiAnswer NamesAnswer(KubeClient& client, const ResourceRef& ref, const std::string& what) {
  std::vector<std::string> names;
  auto listed = ListAll(client, ref, "", {}, [&](json&& item) {
    names.push_back(item.value("/metadata/name"_json_pointer, ""));
  });
  if (!listed.ok()) return ErrorAnswer(listed.status(), what);
  std::sort(names.begin(), names.end());
  return Ok({{"items", names}});
}

}  // namespace

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

ApiAnswer ErrorAnswer(const Status& status, const std::string& what) {
  const int code = HttpCode(status.code());
  std::string message = what + ": " + status.message();
  if (status.code() == StatusCode::kForbidden) {
    message +=
        " (your kubeconfig's user may not do this: ask your cluster administrator for "
        "access)";
  }
  return {code,
          {{"error",
            {{"code", code}, {"reason", StatusCodeName(status.code())}, {"message", message}}}}};
}

namespace {

// The Job `name`, or nothing with `error` the answer that says why (JobAnswer and CancelAnswer).
std::optional<api::Job> ReadJob(KubeClient& client, const std::string& ns, const std::string& name,
                                ApiAnswer& error) {
  auto raw = client.Get(controller::kJobs, ns, name);
  if (!raw.ok()) {
    error = ErrorAnswer(raw.status(), "get job \"" + name + "\"");
    return std::nullopt;
  }
  auto job = api::JobFromJson(*raw);
  if (!job.ok()) {
    error =
        ErrorAnswer({StatusCode::kInternal, job.status().message()}, "read job \"" + name + "\"");
    return std::nullopt;
  }
  return *std::move(job);
}

}  // namespace

ApiAnswer JobsAnswer(KubeClient& client, const std::string& ns, api::Time now) {
  std::vector<api::Job> jobs;
  std::vector<std::string> unreadable;
  auto listed = ListAll(client, controller::kJobs, ns, {}, [&](json&& item) {
    auto job = api::JobFromJson(item);
    if (job.ok()) {
      jobs.push_back(std::move(*job));
    } else {
      unreadable.push_back(item.value("/metadata/name"_json_pointer, "") + ": " +
                           job.status().message());
    }
  });
  if (!listed.ok()) return ErrorAnswer(listed.status(), "list jobs");
  std::sort(jobs.begin(), jobs.end(), [](const api::Job& a, const api::Job& b) {
    return std::tie(a.metadata.namespace_, a.metadata.name) <
           std::tie(b.metadata.namespace_, b.metadata.name);
  });
  json items = json::array();
  for (const auto& job : jobs) items.push_back(RowJson(job, now));
  return Ok({{"items", items}, {"unreadable", unreadable}});
}

ApiAnswer JobAnswer(KubeClient& client, const std::string& ns, const std::string& name,
                    api::Time now) {
  ApiAnswer error;
  auto job = ReadJob(client, ns, name, error);
  if (!job) return error;
  std::vector<EventLine> events;
  ListOptions options;
  options.fieldSelector = "involvedObject.uid=" + job->metadata.uid;
  auto listed = ListAll(client, kube::CoreEventsResource(), ns, options,
                        [&](json&& e) { events.push_back(EventLineFromJson(e)); });
  const statemachine::State state = statemachine::DeriveState(*job);
  json body = {{"row", RowJson(*job, now)},
               {"why", ExplainState(*job, state)},
               {"finished", statemachine::IsTerminal(state)},
               {"describe", FormatDescribe(*job, std::move(events), now)}};
  // The Job itself is shown; Events are a courtesy that RBAC may deny (as describe says).
  if (!listed.ok()) body["eventsError"] = ErrorAnswer(listed.status(), "list events").body["error"];
  return Ok(std::move(body));
}

ApiAnswer EventsAnswer(KubeClient& client, const std::string& ns, const std::string& name) {
  auto raw = client.Get(controller::kJobs, ns, name);
  if (!raw.ok()) return ErrorAnswer(raw.status(), "get job \"" + name + "\"");
  ListOptions options;
  options.fieldSelector =
      "involvedObject.uid=" + raw->value("/metadata/uid"_json_pointer, std::string());
  json items = json::array();
  auto listed = ListAll(client, kube::CoreEventsResource(), ns, options, [&](json&& e) {
    const EventLine line = EventLineFromJson(e);
    items.push_back({{"type", line.type},
                     {"reason", line.reason},
                     {"from", line.from},
                     {"message", line.message},
                     {"count", line.count},
                     {"last", line.last ? api::FormatTime(*line.last) : ""}});
  });
  if (!listed.ok()) return ErrorAnswer(listed.status(), "list events");
  return Ok({{"items", items}});
}

ApiAnswer NamespacesAnswer(KubeClient& client) {
  return NamesAnswer(client, controller::kNamespaces, "list namespaces");
}

ApiAnswer ClassesAnswer(KubeClient& client) {
  return NamesAnswer(client, controller::kJobClasses, "list jobclasses");
}

ApiAnswer CancelAnswer(KubeClient& client, const std::string& ns, const std::string& name) {
  ApiAnswer error;
  auto job = ReadJob(client, ns, name, error);
  if (!job) return error;
  auto cancelled = RequestCancel(client, ns, *job);
  if (!cancelled.ok()) return ErrorAnswer(cancelled.status(), "cancel job \"" + name + "\"");
  if (!*cancelled) {
    return Ok({{"cancelled", false},
               {"state", statemachine::StateName(statemachine::DeriveState(*job))}});
  }
  return Ok({{"cancelled", true}});
}

}  // namespace ayatori::plugin::ui
