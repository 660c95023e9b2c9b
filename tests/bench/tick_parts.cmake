# tick_parts_bench: the server's table (+ state hash) and area snapshots after a
# step, min/median wall ms, and hashes of the bytes sent (must not change).
add_executable(tick_parts_bench ${CMAKE_CURRENT_LIST_DIR}/tick_parts_bench.c)
target_link_libraries(tick_parts_bench PRIVATE crowd_server_lib)
add_test(NAME bench_tick_parts COMMAND tick_parts_bench 2000 20 4 2)
set_tests_properties(bench_tick_parts PROPERTIES LABELS bench TIMEOUT 60)
add_test(NAME bench_tick_parts_overlap COMMAND tick_parts_bench 2000 20 4 2 overlap)
set_tests_properties(bench_tick_parts_overlap PROPERTIES LABELS bench TIMEOUT 60)
