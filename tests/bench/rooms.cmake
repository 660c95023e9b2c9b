# rooms_bench: many worlds in one server (tests/bench/rooms_bench.py).
# Registered here tiny (4 worlds, 8 connections, a world of 500 agents) so it
# keeps working; the full run (200 worlds x 250 agents, 1,000 connections, a
# world of 50,000) is by hand, see docs/benchmarks.md.
if(TARGET crowd-server AND TARGET crowd-load AND TARGET crowdctl)
  find_program(CROWD_PYTHON3 python3 REQUIRED)
  add_test(NAME bench_rooms
           COMMAND ${CROWD_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/rooms_bench.py --small
                   --server $<TARGET_FILE:crowd-server> --crowdctl $<TARGET_FILE:crowdctl>
                   --load $<TARGET_FILE:crowd-load> --work ${CMAKE_CURRENT_BINARY_DIR}/rooms_small)
  set_tests_properties(bench_rooms PROPERTIES LABELS "bench" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
