#include "adapters/registry.h"

namespace ayatori::adapters {

void AdapterRegistry::Register(std::string controllerName, std::shared_ptr<Adapter> adapter) {
  adapters_[std::move(controllerName)] = std::move(adapter);
}

std::shared_ptr<Adapter> AdapterRegistry::Find(const std::string& controllerName) const {
  auto it = adapters_.find(controllerName);
  return it == adapters_.end() ? nullptr : it->second;
}

}  // namespace ayatori::adapters
