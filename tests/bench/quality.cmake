# quality_bench: the quality avoidance mode beside the reference mode (RVO2 bit
# for bit) on issue 11's scenarios, in one run. Registered once, small, under
# the `bench` label.
add_executable(quality_bench ${CMAKE_CURRENT_LIST_DIR}/quality_bench.c)
target_include_directories(quality_bench PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(quality_bench PRIVATE crowd_scenario m)
target_compile_definitions(quality_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
add_test(NAME bench_quality_circles COMMAND quality_bench circles 5 8)
set_tests_properties(bench_quality_circles PROPERTIES LABELS bench TIMEOUT 120)
