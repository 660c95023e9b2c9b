# orca_bench: the engine on RVO2's scenarios (random N from tests/data/ref,
# circle N built). Registered once, tiny, under the `bench` label.
add_executable(orca_bench ${CMAKE_CURRENT_LIST_DIR}/orca_bench.c)
target_link_libraries(orca_bench PRIVATE crowd_scenario crowd_scenario_nav)
target_compile_definitions(orca_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
add_test(NAME bench_orca_random1000 COMMAND orca_bench random 1000 --steps 5 --workers 2)
set_tests_properties(bench_orca_random1000 PROPERTIES LABELS bench TIMEOUT 120)
add_test(NAME bench_orca_maze COMMAND orca_bench maze 200 --steps 5)
set_tests_properties(bench_orca_maze PROPERTIES LABELS bench TIMEOUT 120)

# pile_bench: one connection's worst case under --neighbor-budget (fairness).
add_executable(pile_bench ${CMAKE_CURRENT_LIST_DIR}/pile_bench.c)
target_link_libraries(pile_bench PRIVATE crowd_core)
add_test(NAME bench_pile COMMAND pile_bench 1000 64 --steps 2)
set_tests_properties(bench_pile PROPERTIES LABELS bench TIMEOUT 120)

# polygon_bench: the cost of the obstacle validity check (orca_polygon_check).
add_executable(polygon_bench ${CMAKE_CURRENT_LIST_DIR}/polygon_bench.c)
target_link_libraries(polygon_bench PRIVATE crowd_core m)
add_test(NAME bench_polygon COMMAND polygon_bench 256 10)
set_tests_properties(bench_polygon PROPERTIES LABELS bench TIMEOUT 60)
