# city_trips_bench: the load bench's city scenario in one process (the
# server's sim and crowd-load's trips, no sockets): what the crowd does,
# the same on a busy machine as on a quiet one. Registered small (300 agents,
# 30 simulated seconds) so it keeps working; figures in docs/benchmarks.md.
add_executable(city_trips_bench ${CMAKE_CURRENT_LIST_DIR}/city_trips_bench.c
                                ${PROJECT_SOURCE_DIR}/clients/load/load_trips.c)
target_include_directories(city_trips_bench PRIVATE ${PROJECT_SOURCE_DIR}/server/sim ${PROJECT_SOURCE_DIR}/server/ops
                                                    ${PROJECT_SOURCE_DIR}/clients/load)
target_link_libraries(city_trips_bench PRIVATE crowd_server_sim m)
add_test(NAME bench_city_trips COMMAND city_trips_bench --agents 300 --seconds 30 --warm-up 5)
set_tests_properties(bench_city_trips PROPERTIES LABELS bench TIMEOUT 300)
