// kube-apiserver's audit log of the test control plane (hack/testenv/testenv.sh writes it to
// $TESTENV_AUDIT_LOG with a policy recording every request's metadata and response code): what a
// user's requests were and which were denied, for the RBAC audits of the install tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ayatori::install_e2e {

// One audit record of a request.
struct Request {
  std::string verb, group, resource, ns, name;  // resource includes "/subresource"
  int code = 0;
  std::string message;  // of the response status (why a request was denied)
  std::string Summary() const;
};

// The audit log's size now, to read only what comes after.
size_t AuditOffset();
// The completed requests of `user` recorded after `offset` (a watch counts when its response
// starts and again when it ends).
std::vector<Request> RequestsOf(const std::string& user, size_t offset);
// The requests of `requests` that RBAC refused (403).
std::vector<Request> Denied(const std::vector<Request>& requests);
// Up to `max` requests, one per line, for a failure message.
std::string Summaries(const std::vector<Request>& requests, size_t max = 20);

}  // namespace ayatori::install_e2e
