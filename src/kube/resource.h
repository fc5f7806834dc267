// Resource addressing: ResourceRef + namespace + name -> URL path, query strings, cache keys, and
// the ResourceRefs of the built-in kinds this project talks to.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::kube {

// /api/v1/namespaces/{ns}/{resource}/{name}/{subresource} or /apis/{group}/{version}/...; the
// namespace segment is left out for cluster-scoped resources and when `ns` is empty (all
// namespaces); name and subresource are optional. Segments are percent-encoded.
std::string ResourcePath(const ResourceRef& ref, std::string_view ns, std::string_view name = {},
                         std::string_view subresource = {});

// Builds "?a=1&b=2" from the non-empty values (empty string when all are empty).
std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params);

// The cache and workqueue key of an object: "namespace/name", or "name" when cluster-scoped.
std::string ObjectKey(std::string_view ns, std::string_view name);
// The inverse of ObjectKey: {"", name} for a key without '/'.
std::pair<std::string, std::string> SplitObjectKey(std::string_view key);

// Whether `ns` can be a namespace's name: an RFC 1123 label (1 to 63 lowercase letters, digits and
// '-', starting and ending with a letter or digit). The error quotes `ns` and says what is wrong.
Status ValidateNamespaceName(std::string_view ns);
// A comma-separated list of namespaces, as in --watch-namespaces=team-a,team-b: "" is none (the
// caller's "all namespaces"); spaces around names are ignored; every name must be valid and named
// once (the error names the offending entry).
StatusOr<std::vector<std::string>> ParseNamespaceList(std::string_view list);

// Built-in kinds.
ResourceRef ConfigMapsResource();
ResourceRef SecretsResource();
ResourceRef NamespacesResource();
ResourceRef LeasesResource();                     // coordination.k8s.io/v1
ResourceRef EventsResource();                     // events.k8s.io/v1
ResourceRef CustomResourceDefinitionsResource();  // apiextensions.k8s.io/v1
ResourceRef BatchJobsResource();                  // batch/v1 jobs
ResourceRef PodsResource();                       // v1 pods
ResourceRef CoreEventsResource();                 // v1 events (what kubectl describe shows)
ResourceRef SubjectAccessReviewsResource();       // authorization.k8s.io/v1, cluster-scoped

}  // namespace ayatori::kube
