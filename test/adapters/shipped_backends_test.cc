// The list of shipped backends (src/adapters/shipped_backends.h): what the controller binary
// registers and what the manifests are generated from.
#include "adapters/shipped_backends.h"

#include <gtest/gtest.h>

#include "adapters/docker/descriptor.h"
#include "kube/config.h"
#include "kube/rest_client.h"

namespace ayatori::adapters {
namespace {

std::vector<std::string> ControllerNames(const std::vector<AdapterDescriptor>& descriptors) {
  std::vector<std::string> names;
  names.reserve(descriptors.size());
  for (const auto& d : descriptors) names.push_back(d.controllerName);
  return names;
}

TEST(ShippedBackendsTest, RegistersEveryShippedDescriptorInItsOrder) {
  // Building the adapters sends no request: an address nothing listens on is enough.
  kube::RestConfig config;
  config.server = "https://127.0.0.1:1";
  auto client = kube::RestClient::New(config, {});
  BackendSettings settings;
  settings.client = client.get();
  settings.controllerNamespace = "ayatori-system";
  AdapterRegistry registry;
  ASSERT_TRUE(RegisterShippedBackends(settings, registry).ok());

  std::vector<AdapterDescriptor> registered;
  for (const auto& r : registry.All()) {
    EXPECT_NE(r.adapter, nullptr) << r.descriptor.controllerName;
    registered.push_back(r.descriptor);
  }
  EXPECT_EQ(ControllerNames(registered), ControllerNames(ShippedDescriptors()));
  EXPECT_EQ(ControllerNames(registered),
            (std::vector<std::string>{"execution.ayatori.ddupan.top/docker",
                                      "execution.ayatori.ddupan.top/kubernetes",
                                      "execution.ayatori.ddupan.top/opensandbox"}));
}

TEST(ShippedBackendsTest, TheDockerEndpointFlagOverridesEveryDockerClassesEndpoint) {
  BackendSettings settings;
  settings.dockerEndpoint = "tcp://127.0.0.1:2375";
  for (const auto& d : ShippedDescriptors(settings)) {
    if (d.controllerName != docker::kControllerName) {
      EXPECT_TRUE(d.specOverrides.empty()) << d.controllerName;
      continue;
    }
    EXPECT_EQ(d.specOverrides,
              (std::map<std::string, std::string>{{"endpoint", "tcp://127.0.0.1:2375"}}));
  }
  for (const auto& d : ShippedDescriptors()) EXPECT_TRUE(d.specOverrides.empty());
}

TEST(ShippedBackendsTest, RefusesToRegisterWithoutTheApiClient) {
  AdapterRegistry registry;
  Status s = RegisterShippedBackends({}, registry);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("API client"), std::string::npos) << s.message();
  EXPECT_TRUE(registry.All().empty());
}

}  // namespace
}  // namespace ayatori::adapters
