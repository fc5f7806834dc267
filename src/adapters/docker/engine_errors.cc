#include "adapters/docker/engine_errors.h"

#include "adapters/common/observations.h"

namespace ayatori::adapters::docker {

Observation EngineUnreachable(const Status& st) {
  std::string message = st.message();
  if (message.starts_with(kTransportErrorPrefix)) {
    if (size_t detail = message.find(" ("); detail != std::string::npos) message.resize(detail);
  }
  return Unreachable(std::move(message));
}

Status EngineError(const std::string& what, const HttpResponse& r) {
  return Status(r.status >= 500 ? StatusCode::kServerError : StatusCode::kInternal,
                "docker engine " + what + ": " + EngineErrorMessage(r));
}

}  // namespace ayatori::adapters::docker
