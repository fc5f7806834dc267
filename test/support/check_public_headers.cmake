# The public headers (include/ayatori/) include only each other and system or third-party headers,
# never a library's header under src/: a user of the interfaces needs include/ alone.
#   cmake -DSOURCE_DIR=<repository> -P <this file>
file(GLOB_RECURSE headers "${SOURCE_DIR}/include/*.h")
if(NOT headers)
  message(FATAL_ERROR "no headers under ${SOURCE_DIR}/include: the check would prove nothing")
endif()
foreach(header IN LISTS headers)
  file(STRINGS "${header}" includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]*)\".*" "\\1" path "${line}")
    if(NOT path MATCHES "^ayatori/")
      message(FATAL_ERROR "${header} includes \"${path}\": public headers include only "
                          "ayatori/... and system headers")
    endif()
  endforeach()
endforeach()
list(LENGTH headers n)
message(STATUS "${n} public headers include nothing from src/")
