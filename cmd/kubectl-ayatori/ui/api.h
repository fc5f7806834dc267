// The web view's JSON API (`kubectl ayatori ui`, docs/kubectl-ayatori.md): a fixed list of
// answers, each from the kube client calls the plugin's verbs make, never a proxy of arbitrary
// paths. Rows use `get`'s own derivation (format.h, JobRowCells), details `describe`'s text
// (FormatDescribe: env values are never in it), cancel sends what `cancel` sends
// (commands.h, RequestCancel). An error of the API server is answered with its HTTP code and
// {"error": {"code", "reason", "message"}}; reason "Forbidden" is what the page shows as
// "you may not see this".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/types.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::plugin::ui {

struct ApiAnswer {
  int code = 200;
  nlohmann::json body;
};

// The HTTP code for a Status of the kube client (403 for kForbidden, 404, ...), and the error
// document; `what` names the request in the message.
ApiAnswer ErrorAnswer(const Status& status, const std::string& what);

// {"columns": [...], "items": [{"namespace", "name", "state", "class", "reason", "exit", "age",
// "desired", "started", "adapter", "backend"}]}: the Jobs of `ns` ("" = every namespace),
// sorted by namespace and name.
ApiAnswer JobsAnswer(KubeClient& client, const std::string& ns, api::Time now);

// One Job: {"row": as in JobsAnswer, "why": ExplainState, "describe": FormatDescribe's text with
// its Events, "eventsError": why Events could not be read (or absent)}.
ApiAnswer JobAnswer(KubeClient& client, const std::string& ns, const std::string& name,
                    api::Time now);

// {"items": [{"type", "reason", "from", "message", "count", "last"}]}: the Job's Events.
ApiAnswer EventsAnswer(KubeClient& client, const std::string& ns, const std::string& name);

// {"items": [names]}: namespaces and JobClasses, for the filters.
ApiAnswer NamespacesAnswer(KubeClient& client);
ApiAnswer ClassesAnswer(KubeClient& client);

// What `kubectl ayatori cancel` does: {"cancelled": true} or {"cancelled": false, "state": S}
// when the Job already finished.
ApiAnswer CancelAnswer(KubeClient& client, const std::string& ns, const std::string& name);

// Whether `s` may be a Kubernetes name (a DNS-1123 subdomain: lowercase letters, digits, '-' and
// '.', at most 253): the API refuses other path segments before any request is made.
bool ValidName(const std::string& s);

}  // namespace ayatori::plugin::ui
