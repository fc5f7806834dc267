// The pure parts of the Job log API (an aggregated API served by the controller, like
// metrics-server's metrics.k8s.io): its paths, the discovery documents the aggregator reads, the
// log query, Kubernetes Status errors and the SubjectAccessReview that authorizes each request.
//
//   GET /apis                                                         APIGroupList
//   GET /apis/logs.execution.ayatori.ddupan.top                       APIGroup
//   GET /apis/logs.execution.ayatori.ddupan.top/v1alpha1              APIResourceList (jobs/log)
//   GET /apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/NS/jobs/NAME/log
//       ?follow=true&tailLines=N&sinceSeconds=S&timestamps=true
//
// The Job kind's group and version (execution.ayatori.ddupan.top/v1alpha1) belong to the CRD,
// and an APIService cannot take over a group/version that a CRD serves, so the log API has a
// group of its own. RBAC names that group: get on jobs/log in logs.execution.ayatori.ddupan.top
// (kube-apiserver checks it before proxying, and this server checks it again by
// SubjectAccessReview for the user the front proxy names).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/adapter.h"
#include "ayatori/status.h"
#include "logapi/front_proxy.h"

namespace ayatori::logapi {

inline constexpr const char* kGroup = "logs.execution.ayatori.ddupan.top";
inline constexpr const char* kVersion = "v1alpha1";

struct Route {
  enum class Kind { kApiGroupList, kApiGroup, kApiResourceList, kJobLog, kUnknown };
  Kind kind = Kind::kUnknown;
  std::string namespace_;  // kJobLog only
  std::string name;        // kJobLog only
};

// What `path` (without the query) asks for. Namespace and name must be DNS labels/subdomains as
// Kubernetes allows them; anything else is kUnknown (404).
Route ParseRoute(std::string_view path);

nlohmann::json ApiGroupList();
nlohmann::json ApiGroup();
nlohmann::json ApiResourceList();

// The query parameters (already decoded) as log options. kInvalidArgument names the parameter:
// follow/timestamps must be true|false (or 1|0), tailLines an integer >= 0, sinceSeconds an
// integer >= 1. Unknown parameters are ignored (as the apiserver ignores them for pods/log).
StatusOr<LogOptions> ParseLogQuery(const std::multimap<std::string, std::string>& query);

// A metav1.Status failure document: {kind: Status, status: Failure, message, reason, code,
// details}. `details` is the object the request was about, if any.
nlohmann::json StatusDocument(int code, const std::string& reason, const std::string& message,
                              const std::string& name = {});

// What the reader of a log is told when the backend failed the read: a Status of the same code
// saying that the `backend` could not serve the log of `what`, with the failure's category, and
// that the controller's log has the details. Never the adapter's own message: it can name the
// engine's address (a Docker endpoint or unix socket path, an OpenSandbox server URL in a curl
// error such as "Failed to connect to 127.0.0.1 port 2375"), which is the operator's business,
// not a tenant's. Errors that are about the Job itself and name nothing of the backend (kNotFound,
// kGone, kForbidden, kTooManyRequests, and kFailedPrecondition / kInvalidArgument: the backend
// refused the read as asked, e.g. a container that has not started) keep their message.
Status BackendErrorForReader(const Status& adapterError, const std::string& what,
                             const std::string& backend);

// The SubjectAccessReview (authorization.k8s.io/v1) asking whether `user` may get jobs/log of
// the log API group for Job `name` in `ns`.
nlohmann::json LogSubjectAccessReview(const UserInfo& user, const std::string& ns,
                                      const std::string& name);

// The answer in a SubjectAccessReview the apiserver returned: OK when status.allowed is true;
// kForbidden with the message kube-apiserver would give (naming user, resource, group and
// namespace, plus the authorizer's reason) otherwise.
Status ReviewVerdict(const nlohmann::json& review, const UserInfo& user, const std::string& ns,
                     const std::string& name);

}  // namespace ayatori::logapi
