# state_hash_bench: the state hash against its FNV-1a predecessor on one
# world, one thread. Registered tiny.
add_executable(state_hash_bench ${CMAKE_CURRENT_LIST_DIR}/state_hash_bench.c)
target_link_libraries(state_hash_bench PRIVATE crowd_core)
add_test(NAME bench_state_hash COMMAND state_hash_bench 5000 5 300)
set_tests_properties(bench_state_hash PROPERTIES LABELS bench TIMEOUT 60)
