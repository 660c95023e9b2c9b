# nav_bench: navigation's figures (build, rebuild, paths/s, step cost against
# straight steering). Registered once, small, under the `bench` label.
add_executable(nav_bench ${CMAKE_CURRENT_LIST_DIR}/nav_bench.c)
target_link_libraries(nav_bench PRIVATE crowd_scenario_nav)
target_compile_definitions(nav_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
add_test(NAME bench_nav_small COMMAND nav_bench --no-build --agents 1000 --steps 3)
set_tests_properties(bench_nav_small PROPERTIES LABELS bench TIMEOUT 300)
