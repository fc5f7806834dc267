// ayatori-controller-test: the controller's main with the in-process test backend registered
// (controllerName execution.ayatori.ddupan.top/test), for the tests and benchmarks that run the
// binary (cmd/ayatori-controller/extra_backends.h).
#include <memory>

#include "adapters/testing/in_process_adapter.h"
#include "extra_backends.h"

namespace ayatori {

Status RegisterExtraBackends(adapters::AdapterRegistry& registry) {
  return registry.Register(adapters::TestDescriptor(),
                           std::make_shared<adapters::InProcessTestAdapter>());
}

}  // namespace ayatori
