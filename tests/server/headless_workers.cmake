# Runs crowd-server --demo --headless-ticks N with 1 and with 4 workers and
# checks both print the same state hash (the determinism contract, end to end).
foreach(workers 1 4)
  execute_process(COMMAND ${SERVER} --demo --demo-agents 400 --headless-ticks 200 --workers ${workers} --log-level warn
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "crowd-server --workers ${workers} exited with ${rc}")
  endif()
  string(REGEX MATCH "ticks 200 agents 400 workers ${workers} state_hash (0x[0-9a-f]+)" found "${out}")
  if(NOT found)
    message(FATAL_ERROR "unexpected output with ${workers} worker(s): ${out}")
  endif()
  set(hash_${workers} ${CMAKE_MATCH_1})
endforeach()
message(STATUS "1 worker: ${hash_1}, 4 workers: ${hash_4}")
if(NOT hash_1 STREQUAL hash_4)
  message(FATAL_ERROR "state hash differs: ${hash_1} (1 worker) vs ${hash_4} (4 workers)")
endif()
