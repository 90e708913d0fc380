# Runs one libFuzzer target for a bounded time over a fresh copy of its seed
# corpus, so the committed corpus is never modified.
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... [-DSECONDS=20] [-DDICT=...] [-DMAX_LEN=4096]
#         [-DRSS_MB=1024]
#         [-DSEEDS_CMD=...] [-DFUZZ_ARGS=...] -P run_fuzz.cmake
# SEEDS_CMD (a ;-list): a command that writes the seed corpus into CORPUS
# first (corpora generated at test time rather than committed).
foreach(var FUZZER CORPUS WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzz.cmake needs -D${var}=...")
  endif()
endforeach()
if(NOT DEFINED SECONDS)
  set(SECONDS 20)
endif()
if(NOT DEFINED MAX_LEN)
  set(MAX_LEN 4096)
endif()
if(NOT DEFINED RSS_MB)
  set(RSS_MB 1024)
endif()
if(DEFINED SEEDS_CMD AND NOT SEEDS_CMD STREQUAL "")
  execute_process(COMMAND ${SEEDS_CMD} ${CORPUS} RESULT_VARIABLE seeds_rc)
  if(NOT seeds_rc EQUAL 0)
    message(FATAL_ERROR "making the seed corpus failed (exit ${seeds_rc}): ${SEEDS_CMD}")
  endif()
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
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=5 -rss_limit_mb=${RSS_MB} -max_len=${MAX_LEN} ${FUZZ_ARGS}
          -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/ ${dict_arg} ${WORK}/corpus
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); crashing inputs are in ${WORK}/artifacts")
endif()
