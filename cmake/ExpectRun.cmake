# cmake -DCMD=<arg<|>arg...> -DRC=<code> [-DSTDERR=<regex>] [-DSTDOUT=<regex>] -P ExpectRun.cmake
#
# Runs CMD and checks its exit status (a signal is always a failure), that
# stdout/stderr match the given regexes, and that a failing run printed
# exactly one line to stderr.
if(NOT DEFINED CMD OR NOT DEFINED RC)
  message(FATAL_ERROR "ExpectRun.cmake: CMD and RC are required")
endif()
string(REPLACE "<|>" ";" CMD "${CMD}")
execute_process(COMMAND ${CMD}
                RESULT_VARIABLE rc
                OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
set(show "command: ${CMD}\nexit: ${rc}\n--- stdout ---\n${out}\n--- stderr ---\n${err}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "expected exit status ${RC}\n${show}")
endif()
if(STDERR AND NOT err MATCHES "${STDERR}")
  message(FATAL_ERROR "stderr does not match '${STDERR}'\n${show}")
endif()
if(STDOUT AND NOT out MATCHES "${STDOUT}")
  message(FATAL_ERROR "stdout does not match '${STDOUT}'\n${show}")
endif()
if(NOT RC STREQUAL "0")
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected exactly one line on stderr, got ${n}\n${show}")
  endif()
endif()
message(STATUS "ok: exit ${rc}")
