// The backends a build of main.cc registers besides the shipped ones. ayatori-controller links
// no_extra_backends.cc (none); ayatori-controller-test, the tests' build of the same main, links
// test/support/controller_test_backends.cc (the in-process test backend of
// src/adapters/testing/), so that backend's code is not in the production binary.
#pragma once

#include "adapters/registry.h"
#include "ayatori/status.h"

namespace ayatori {

Status RegisterExtraBackends(adapters::AdapterRegistry& registry);

}  // namespace ayatori
