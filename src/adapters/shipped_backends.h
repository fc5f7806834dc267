// The backends the controller ships, in one list (shipped_backends.cc): the controller binary
// registers them from it (cmd/ayatori-controller/main.cc), the manifests that name backends are
// generated from their descriptors (`make generate`, src/adapters/manifests.h) and the tests check
// against the same list. Adding a backend is its folder and one entry in that list
// (docs/development.md "Adding a backend").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/registry.h"
#include "ayatori/status.h"

namespace ayatori::kube {
class RestClient;
}  // namespace ayatori::kube

namespace ayatori::adapters {

// What the controller binary gives the backends it ships: its API client and its flags.
struct BackendSettings {
  // The controller's API client; it must outlive the adapters. Needed by RegisterShippedBackends
  // only (the descriptors do not use it).
  kube::RestClient* client = nullptr;
  std::string controllerNamespace;           // --namespace
  std::vector<std::string> watchNamespaces;  // --watch-namespaces; empty: every namespace
  std::string dockerEndpoint;                // --docker-endpoint; empty: each parameters' own
  // A line worth an operator's attention from the adapter named `adapter`; nullptr: each
  // adapter's default (stderr).
  std::function<void(const std::string& adapter, const std::string& line)> warn;
};

// The descriptor of every shipped backend, in registration order. With default settings they are
// the descriptors as the manifests name them (no --docker-endpoint override).
std::vector<AdapterDescriptor> ShippedDescriptors(const BackendSettings& settings = {});

// Registers every shipped backend, its descriptor and its adapter built from `settings`.
// kInvalidArgument without settings.client; else the first error of AdapterRegistry::Register.
Status RegisterShippedBackends(const BackendSettings& settings, AdapterRegistry& registry);

}  // namespace ayatori::adapters
