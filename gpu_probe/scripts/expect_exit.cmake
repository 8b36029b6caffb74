# A kvprobe command-line test: runs a command and checks its exit status and what it printed.
#   cmake -DCOMMAND="prog|arg|arg" -DEXPECT_RC=2 [-DEXPECT_STDERR=regex] [-DEXPECT_STDOUT=regex]
#         [-DONE_LINE_STDERR=ON] [-DSKIP_STDERR=regex] -P expect_exit.cmake
# Arguments are separated by "|" (a CMake list would be split by add_test). SKIP_STDERR: when
# stderr matches it, the test prints KVPROBE_SKIPPED (the test's SKIP_REGULAR_EXPRESSION).
string(REPLACE "|" ";" argv "${COMMAND}")
execute_process(COMMAND ${argv} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEFINED SKIP_STDERR AND err MATCHES "${SKIP_STDERR}")
  message("KVPROBE_SKIPPED: ${err}")
  return()
endif()
set(report "command: ${COMMAND}\nexit ${rc}\n--- stdout\n${out}\n--- stderr\n${err}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit status ${rc}, expected ${EXPECT_RC}\n${report}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}'\n${report}")
endif()
if(DEFINED EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}'\n${report}")
endif()
if(ONE_LINE_STDERR)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "stderr has ${count} lines, expected one\n${report}")
  endif()
endif()
