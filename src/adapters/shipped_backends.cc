#include "adapters/shipped_backends.h"

#include <memory>
#include <stop_token>
#include <string_view>

#include "adapters/docker/descriptor.h"
#include "adapters/docker/docker_adapter.h"
#include "adapters/kubernetes/descriptor.h"
#include "adapters/kubernetes/kubernetes_adapter.h"
#include "adapters/opensandbox/descriptor.h"
#include "adapters/opensandbox/opensandbox_adapter.h"
#include "kube/rest_client.h"

namespace ayatori::adapters {

namespace {

// A shipped backend: its descriptor, and its adapter as the controller builds it.
struct ShippedBackend {
  AdapterDescriptor (*descriptor)(const BackendSettings&);
  std::shared_ptr<Adapter> (*adapter)(const BackendSettings&);
};

// The adapter's warnings as `settings` asks; nullptr: the adapter's own default (stderr).
std::function<void(const std::string&)> WarnAs(const BackendSettings& settings,
                                               const std::string& adapter) {
  if (!settings.warn) return nullptr;
  return [warn = settings.warn, adapter](const std::string& line) { warn(adapter, line); };
}

std::shared_ptr<Adapter> NewDockerAdapter(const BackendSettings& s) {
  docker::DockerAdapterOptions options;
  if (!s.dockerEndpoint.empty()) options.defaultEndpoint = s.dockerEndpoint;
  options.tlsSource = docker::SecretTlsSource(*s.client);
  options.secretNamespace = s.controllerNamespace;
  return std::make_shared<docker::DockerAdapter>(options);
}

std::shared_ptr<Adapter> NewKubernetesAdapter(const BackendSettings& s) {
  kubernetes::KubernetesAdapterOptions options;
  options.log = WarnAs(s, "kubernetes");
  options.namespaces = s.watchNamespaces;
  options.streamPath = [client = s.client](std::string_view path, const std::stop_token& stop,
                                           const std::function<bool(std::string_view)>& onData) {
    return client->StreamPath(path, stop, onData);
  };
  return std::make_shared<kubernetes::KubernetesAdapter>(*s.client, options);
}

// One entry per shipped backend, in registration order.
constexpr ShippedBackend kShippedBackends[] = {
    {[](const BackendSettings& s) { return docker::Descriptor(s.dockerEndpoint); },
     NewDockerAdapter},
    {[](const BackendSettings&) { return kubernetes::Descriptor(); }, NewKubernetesAdapter},
    {[](const BackendSettings&) { return opensandbox::Descriptor(); },
     [](const BackendSettings& s) -> std::shared_ptr<Adapter> {
       return opensandbox::NewOpenSandboxAdapter(*s.client, s.controllerNamespace);
     }},
};

}  // namespace

std::vector<AdapterDescriptor> ShippedDescriptors(const BackendSettings& settings) {
  std::vector<AdapterDescriptor> out;
  for (const ShippedBackend& b : kShippedBackends) out.push_back(b.descriptor(settings));
  return out;
}

Status RegisterShippedBackends(const BackendSettings& settings, AdapterRegistry& registry) {
  if (settings.client == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "the shipped backends need the controller's API client (BackendSettings.client)");
  }
  for (const ShippedBackend& b : kShippedBackends) {
    if (Status s = registry.Register(b.descriptor(settings), b.adapter(settings)); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace ayatori::adapters
