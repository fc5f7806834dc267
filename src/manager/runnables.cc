#include "manager/runnables.h"

#include <chrono>

#include "obs/log.h"

namespace ayatori::manager {

Status LogApiRunnable::Start(const std::stop_token& /*stop*/) {
  if (Status s = server_.Start(); !s.ok()) return s;
  obs::Info("serving the Job log API", {{"address", address_}, {"port", server_.port()}});
  return Status::Ok();
}

// The bound of a flush at shutdown: the Deployment's grace period (30 s by default) has to cover
// the controller's stop before it.
constexpr std::chrono::seconds kEventFlushTimeout{5};

void EventFlushRunnable::Stop() { events_.Flush(kEventFlushTimeout); }

}  // namespace ayatori::manager
