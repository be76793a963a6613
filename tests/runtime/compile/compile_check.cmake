# Compiles one file and checks the outcome (driven by tests/runtime/CMakeLists.txt).
#   MODE     pass: the compiler must succeed; fail: it must fail with "hushtrace:" in its output
#   COMPILER the C++ compiler
#   SOURCE   the file to compile
#   INCLUDE  the public include directory
#   FLAGS    compiler flags separated by '|'
string(REPLACE "|" ";" flags "${FLAGS}")
execute_process(
  COMMAND ${COMPILER} ${flags} -I${INCLUDE} ${SOURCE}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(MODE STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected ${SOURCE} to compile with ${COMPILER} ${flags}, but it failed (${rc}):\n${out}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "expected no diagnostics from ${COMPILER} ${flags} ${SOURCE}, got:\n${out}")
  endif()
  message(STATUS "compiled cleanly: ${SOURCE}")
elseif(MODE STREQUAL "fail")
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected ${SOURCE} NOT to compile with ${COMPILER}, but it compiled:\n${out}")
  endif()
  string(FIND "${out}" "hushtrace:" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${SOURCE} failed to compile, but without a \"hushtrace:\" diagnostic:\n${out}")
  endif()
  message(STATUS "refused as expected with a hushtrace: diagnostic: ${SOURCE}")
else()
  message(FATAL_ERROR "MODE must be pass or fail")
endif()
