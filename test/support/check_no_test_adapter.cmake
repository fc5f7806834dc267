# The product binary carries no code of the in-process test backend (src/adapters/testing/), and
# the tests' build of the same main does: the second half proves the markers would be found.
#   cmake -DPRODUCT=<ayatori-controller> -DTEST_BUILD=<ayatori-controller-test> -P <this file>
# The markers are strings only that backend's code holds: an env var name it reads and its class
# name as RTTI spells it (present in a stripped binary too).
set(markers "AYATORI_TEST_REJECT" "InProcessTestAdapter")
foreach(marker IN LISTS markers)
  file(STRINGS "${PRODUCT}" hits REGEX "${marker}")
  if(hits)
    message(FATAL_ERROR "${PRODUCT} contains \"${marker}\": the in-process test backend is "
                        "linked into the product binary")
  endif()
  file(STRINGS "${TEST_BUILD}" hits REGEX "${marker}")
  if(NOT hits)
    message(FATAL_ERROR "${TEST_BUILD} lacks \"${marker}\": the check cannot see the test "
                        "backend, so it proves nothing about ${PRODUCT}")
  endif()
endforeach()
message(STATUS "${PRODUCT}: no test backend (${markers} found in ${TEST_BUILD} only)")
