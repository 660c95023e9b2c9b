# retarget_bench: the load bench's command->visible in simulated time (engine +
# navigation, crowd-load's probes), the same on a busy machine as on a quiet one.
add_executable(retarget_bench ${CMAKE_CURRENT_LIST_DIR}/retarget_bench.c)
target_link_libraries(retarget_bench PRIVATE crowd_scenario_nav m)
target_compile_definitions(retarget_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
# The bar itself, small: 1,000 agents, 10 "connections", 10 simulated seconds;
# p99 <= 500 ms of simulated time and at most 1 % never seen (before navigation
# steered by waypoints and the right of way lasted 1 s: p99 1.5-2 s).
add_test(NAME retarget_visible COMMAND retarget_bench --agents 1000 --clients 10 --seconds 10 --max-p99-ms 500)
set_tests_properties(retarget_visible PROPERTIES LABELS nav TIMEOUT 300)
