#include "extra_backends.h"

namespace ayatori {

Status RegisterExtraBackends(adapters::AdapterRegistry& /*registry*/) { return Status::Ok(); }

}  // namespace ayatori
