// How the adapter and its image puller report an engine that failed them: what the Job may see
// of a transport error, and an engine answer that is neither success nor a definite "no".
#pragma once

#include <string>

#include "adapters/adapter.h"
#include "adapters/docker/engine.h"
#include "ayatori/status.h"

namespace ayatori::adapters::docker {

// Unknown/BackendUnreachable for `st`. A transport error quotes libcurl's detail, which names the
// engine's address; the Job API never shows endpoints (docs/api.md), so only the kind of failure
// goes into the observation.
Observation EngineUnreachable(const Status& st);

// An engine answer that is neither success nor a definite "no" to `what` ("inspect container"):
// kServerError for a 5xx, kInternal for anything else unexpected; the message quotes the
// engine's.
Status EngineError(const std::string& what, const HttpResponse& r);

}  // namespace ayatori::adapters::docker
