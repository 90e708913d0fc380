# Runs one libFuzzer target for a bounded time over a fresh copy of its seed
# corpus, so the committed corpus is never modified.
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... [-DSECONDS=20] [-DDICT=...] -P run_fuzz.cmake
foreach(var FUZZER CORPUS WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzz.cmake needs -D${var}=...")
  endif()
endforeach()
if(NOT DEFINED SECONDS)
  set(SECONDS 20)
endif()

set(dict_arg)
if(DEFINED DICT AND NOT DICT STREQUAL "")
  set(dict_arg -dict=${DICT})
endif()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
file(GLOB seeds ${CORPUS}/*)
if(NOT seeds)
  message(FATAL_ERROR "empty seed corpus ${CORPUS}")
endif()
file(COPY ${seeds} DESTINATION ${WORK}/corpus)

execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=5 -rss_limit_mb=1024 -max_len=4096
          -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/ ${dict_arg} ${WORK}/corpus
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); crashing inputs are in ${WORK}/artifacts")
endif()
