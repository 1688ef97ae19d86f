# Runs the kiln command once and checks what it did:
#   cmake -DKILN=<path> [-DEMULATOR=<runner>] -DEXPECT_RC=<n> [-DSTDERR_REGEX=<re>]
#         [-DSTDOUT_REGEX=<re>] [-DSTDOUT_JSON=1] -P expect.cmake -- <kiln arguments...>
# A test needs both the status and the message: a wrong command line must exit 2 *and* say
# what was wrong, and JSON must parse (checked with CMake's own parser, so no Python is
# needed and it works under a cross build too).

set(args "")
set(after_dashdash OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 0 ${last})
  if(after_dashdash)
    list(APPEND args "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_dashdash ON)
  endif()
endforeach()

execute_process(COMMAND ${EMULATOR} ${KILN} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(JOIN " " shown ${args})

if(NOT rc STREQUAL EXPECT_RC)
  message(FATAL_ERROR "kiln ${shown}: exit status ${rc}, expected ${EXPECT_RC}\n"
                      "stdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "kiln ${shown}: stderr does not match '${STDERR_REGEX}':\n${err}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "kiln ${shown}: stdout does not match '${STDOUT_REGEX}':\n${out}")
endif()
if(STDOUT_JSON)
  string(JSON kind ERROR_VARIABLE json_error TYPE "${out}")
  if(json_error OR NOT kind STREQUAL "OBJECT")
    message(FATAL_ERROR "kiln ${shown}: stdout is not a JSON object (${json_error}):\n${out}")
  endif()
endif()
message(STATUS "kiln ${shown}: exit ${rc} as expected")
