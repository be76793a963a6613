# Builds (when COMPILER is set) and runs the inline/template tracepoint program with a session
# from the environment, then checks every expected event in the trace (read by hush_bt_dump).
#   COMPILER, OPT, INCLUDE, SRC, LIB  build inline_tp_{a,b,main}.cc by hand against LIB
#   EXE                               or run this already built program
#   DUMP                              hush_bt_dump
#   WORK                              scratch directory (recreated)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
if(COMPILER)
  set(EXE "${WORK}/inline_tp")
  execute_process(
    COMMAND ${COMPILER} -std=c++20 ${OPT} -Wall -Wextra -Werror -I${INCLUDE}
            ${SRC}/inline_tp_a.cc ${SRC}/inline_tp_b.cc ${SRC}/inline_tp_main.cc
            ${LIB} -lpthread -ldl -o ${EXE}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the two-TU program with ${COMPILER} ${OPT} failed:\n${out}")
  endif()
endif()
# Leaks are not this test's subject (ProcessTest.TracedProgramExitsCleanlyUnderLeakSanitizer).
set(asan_options "detect_leaks=0")
if(DEFINED ENV{ASAN_OPTIONS} AND NOT "$ENV{ASAN_OPTIONS}" STREQUAL "")
  set(asan_options "$ENV{ASAN_OPTIONS}:detect_leaks=0")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=HUSHTRACE_MODE --unset=HUSHTRACE_BUFFER_SIZE
          ASAN_OPTIONS=${asan_options} HUSHTRACE_EVENTS=inl:* HUSHTRACE_OUTPUT=${WORK}/trace ${EXE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "inline_tp: done")
  message(FATAL_ERROR "the program failed (${rc}):\n${out}\n${err}")
endif()
if(NOT err STREQUAL "")
  message(FATAL_ERROR "unexpected stderr from the traced program:\n${err}")
endif()
execute_process(COMMAND ${DUMP} ${WORK}/trace RESULT_VARIABLE rc OUTPUT_VARIABLE dump ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "reading the trace failed (${rc}):\n${err}")
endif()

set(failures "")
function(expect_count regex expected)
  string(REGEX MATCHALL "${regex}" hits "${dump}")
  list(LENGTH hits n)
  if(NOT n EQUAL expected)
    set(failures "${failures}\n  '${regex}': ${n} events, expected ${expected}" PARENT_SCOPE)
  endif()
endfunction()
set(T "\t")
expect_count("${T}inl:inline_fn${T}" 6)
expect_count("${T}inl:inline_fn${T}event${T}from=i:1\n" 3)
expect_count("${T}inl:inline_fn${T}event${T}from=i:2\n" 3)
expect_count("${T}inl:inline_instant${T}instant\n" 6)
expect_count("${T}inl:templ${T}" 12)
expect_count("${T}inl:templ${T}event${T}value=i:10${T}size=u:4\n" 3)
expect_count("${T}inl:templ${T}event${T}value=i:2${T}size=u:8\n" 3)
expect_count("${T}inl:templ${T}event${T}value=i:20${T}size=u:4\n" 3)
expect_count("${T}inl:templ${T}event${T}value=i:3${T}size=u:2\n" 3)
expect_count("${T}inl:templ_counter${T}counter${T}value=d:" 12)
expect_count("${T}inl:templ_span${T}span${T}phase=e:0\n" 12)
expect_count("${T}inl:templ_span${T}span${T}phase=e:1\n" 12)
expect_count("\nD${T}" 0)
if(failures)
  message(FATAL_ERROR "wrong events in the trace:${failures}\n--- dump ---\n${dump}")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "all inline/template tracepoint sites emitted")
