# nav_bench: navigation's figures (build, rebuild, paths/s, step cost against
# straight steering). Registered once, small, under the `bench` label.
add_executable(nav_bench ${CMAKE_CURRENT_LIST_DIR}/nav_bench.c)
target_link_libraries(nav_bench PRIVATE crowd_scenario_nav)
target_compile_definitions(nav_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
add_test(NAME bench_nav_small COMMAND nav_bench --no-build --agents 1000 --steps 3)
set_tests_properties(bench_nav_small PROPERTIES LABELS bench TIMEOUT 300)

# nav_crowd_bench: the navigation update for server_load.py's crowd (median
# wall and CPU per update, and a hash of states and events that must not change).
add_executable(nav_crowd_bench ${CMAKE_CURRENT_LIST_DIR}/nav_crowd_bench.c)
target_link_libraries(nav_crowd_bench PRIVATE crowd_scenario_nav)
target_compile_definitions(nav_crowd_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
add_test(NAME bench_nav_crowd_small COMMAND nav_crowd_bench 1000 5 2 20)
set_tests_properties(bench_nav_crowd_small PROPERTIES LABELS bench TIMEOUT 120)
