# The ctest entries of toysim_tests are exactly Catch2's test cases: as many entries as
# `toysim_tests --list-test-names-only` prints names, and no name with a ';' (ctest would
# split it into two entries that run nothing). Run by ctest (tests/CMakeLists.txt).
execute_process(COMMAND ${TEST_EXECUTABLE} --list-test-names-only
                OUTPUT_VARIABLE names RESULT_VARIABLE listed)
if(listed LESS 0 OR names STREQUAL "")
  message(FATAL_ERROR "${TEST_EXECUTABLE} --list-test-names-only failed (${listed})")
endif()
string(FIND "${names}" ";" semicolon)
if(NOT semicolon EQUAL -1)
  string(REGEX MATCHALL "[^\n]*;[^\n]*" bad "${names}")
  message(FATAL_ERROR "Catch2 test names must not contain ';' (ctest splits them): ${bad}")
endif()
string(REGEX REPLACE "[^\n]" "" newlines "${names}")
string(LENGTH "${newlines}" catch_count)

execute_process(COMMAND ${CTEST_COMMAND} --test-dir ${BUILD_DIR} --show-only=json-v1
                OUTPUT_VARIABLE json RESULT_VARIABLE shown)
if(NOT shown EQUAL 0)
  message(FATAL_ERROR "ctest --show-only=json-v1 failed (${shown})")
endif()
string(JSON total LENGTH "${json}" tests)
get_filename_component(exe_name ${TEST_EXECUTABLE} NAME)
set(ctest_count 0)
if(total GREATER 0)
  math(EXPR last "${total} - 1")
  foreach(i RANGE ${last})
    string(JSON command ERROR_VARIABLE no_command GET "${json}" tests ${i} command 0)
    if(NOT no_command AND command MATCHES "/${exe_name}$")
      math(EXPR ctest_count "${ctest_count} + 1")
    endif()
  endforeach()
endif()

if(NOT ctest_count EQUAL catch_count)
  message(FATAL_ERROR "ctest has ${ctest_count} entries for ${exe_name} but Catch2 lists ${catch_count} test cases")
endif()
message(STATUS "ctest runs ${ctest_count} entries for ${exe_name}, one per Catch2 test case")
