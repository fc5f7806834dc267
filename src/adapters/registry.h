// Adapters register under the JobClass controllerName they serve
// (execution.ayatori.ddupan.top/docker, .../kubernetes, .../opensandbox).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ayatori/adapter.h"

namespace ayatori::adapters {

class AdapterRegistry {
 public:
  void Register(std::string controllerName, std::shared_ptr<Adapter> adapter);
  // nullptr when no adapter serves that controllerName.
  std::shared_ptr<Adapter> Find(const std::string& controllerName) const;
  const std::map<std::string, std::shared_ptr<Adapter>>& All() const { return adapters_; }

 private:
  std::map<std::string, std::shared_ptr<Adapter>> adapters_;
};

}  // namespace ayatori::adapters
