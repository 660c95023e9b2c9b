# grid_scan_bench: the neighbour grid scan's SSE2 and AVX2 builds side by side
# (agent_neighbors.c). Registered once, small, under the `bench` label.
add_executable(grid_scan_bench ${CMAKE_CURRENT_LIST_DIR}/grid_scan_bench.c)
target_link_libraries(grid_scan_bench PRIVATE crowd_scenario)
target_compile_definitions(grid_scan_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
add_test(NAME bench_grid_scan COMMAND grid_scan_bench random 1000 --steps 5 --rounds 3)
set_tests_properties(bench_grid_scan PROPERTIES LABELS bench TIMEOUT 120)
