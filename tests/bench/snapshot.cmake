# snapshot_bench: the snapshot encoder on server-like windows; prints ns per
# agent and a hash of the bytes (two encoders must agree). Registered tiny.
add_executable(snapshot_bench ${CMAKE_CURRENT_LIST_DIR}/snapshot_bench.c)
target_link_libraries(snapshot_bench PRIVATE crowd_wire)
add_test(NAME bench_snapshot_encode COMMAND snapshot_bench 300 20)
set_tests_properties(bench_snapshot_encode PROPERTIES LABELS bench TIMEOUT 60)
