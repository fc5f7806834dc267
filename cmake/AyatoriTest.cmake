# ayatori_library(NAME <target> SOURCES ... DEPS ...): one library per folder.
function(ayatori_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SOURCES})
  target_include_directories(${ARG_NAME} PUBLIC ${AYATORI_INCLUDE_DIRS})
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
endfunction()

# ayatori_subfolders(<var>): the subfolders of the current source folder that have a
# CMakeLists.txt, sorted (so the order does not depend on the file system); re-globbed at build
# time, so a new one joins without a manual re-run of cmake. Used where a folder per backend joins
# the build without an edit of a list (src/adapters/, test/adapters/).
function(ayatori_subfolders VAR)
  file(GLOB lists RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/*/CMakeLists.txt)
  list(SORT lists)
  set(folders)
  foreach(list IN LISTS lists)
    get_filename_component(folder ${list} DIRECTORY)
    list(APPEND folders ${folder})
  endforeach()
  set(${VAR} ${folders} PARENT_SCOPE)
endfunction()

# ayatori_test(NAME <name> TIER unit|integration|e2e SOURCES ... DEPS ... [FIXTURES ...])
# One GoogleTest executable registered as one CTest test labelled with its tier, so each tier runs
# alone (`ctest -L unit`). Integration and e2e tests require the fixtures that start the real
# services they talk to (see test/CMakeLists.txt); gtest_discover_tests is not used so that a
# service that is down fails the test instead of hiding it at discovery time.
function(ayatori_test)
  cmake_parse_arguments(ARG "" "NAME;TIER;TIMEOUT" "SOURCES;DEPS;FIXTURES;ENV" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_include_directories(${ARG_NAME} PRIVATE ${AYATORI_INCLUDE_DIRS} ${CMAKE_SOURCE_DIR})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} --gtest_color=no)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS ${ARG_TIER} TIMEOUT ${ARG_TIMEOUT}
                       ENVIRONMENT "${AYATORI_TEST_ENV};${ARG_ENV}")
  if(ARG_FIXTURES)
    set_tests_properties(${ARG_NAME} PROPERTIES FIXTURES_REQUIRED "${ARG_FIXTURES}")
  endif()
  set_property(GLOBAL APPEND PROPERTY AYATORI_TESTS_${ARG_TIER} ${ARG_NAME})
endfunction()

# ayatori_tier_targets(): one target per tier, tests-<tier>, that builds that tier's test
# executables (and, through their add_dependencies, the binaries they run) and nothing else.
# Called once, after every ayatori_test.
function(ayatori_tier_targets)
  foreach(tier unit integration e2e)
    get_property(tests GLOBAL PROPERTY AYATORI_TESTS_${tier})
    add_custom_target(tests-${tier})
    if(tests)
      add_dependencies(tests-${tier} ${tests})
    endif()
  endforeach()
endfunction()
