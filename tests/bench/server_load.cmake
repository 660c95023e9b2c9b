# server_load: the server under load (tests/bench/server_load.py). Registered
# here tiny (1,000 agents, 10 clients, 50 idle connections, a few seconds) so
# it keeps working; the full run is by hand, see docs/load-testing.md.
if(TARGET crowd-server AND TARGET crowd-load)
  find_program(CROWD_PYTHON3 python3 REQUIRED)
  add_test(NAME bench_server_load
           COMMAND ${CROWD_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/server_load.py --small
                   --server $<TARGET_FILE:crowd-server> --load $<TARGET_FILE:crowd-load>
                   --work ${CMAKE_CURRENT_BINARY_DIR}/server_load_small)
  set_tests_properties(bench_server_load PROPERTIES LABELS "bench" TIMEOUT 180)
  # the city scenario, tiny (300 agents on trips for 20 s): fails unless trips finish
  add_test(NAME bench_server_load_city
           COMMAND ${CROWD_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/server_load.py --small --scenarios city
                   --server $<TARGET_FILE:crowd-server> --load $<TARGET_FILE:crowd-load>
                   --work ${CMAKE_CURRENT_BINARY_DIR}/server_load_city_small)
  set_tests_properties(bench_server_load_city PROPERTIES LABELS "bench" TIMEOUT 180)
endif()
