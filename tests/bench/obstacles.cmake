# obstacle_bench: what adding and removing obstacles costs a running world,
# edge grid against RVO2's rebuilt tree. Registered once, small, under `bench`.
add_executable(obstacle_bench ${CMAKE_CURRENT_LIST_DIR}/obstacle_bench.c)
target_link_libraries(obstacle_bench PRIVATE crowd_core m)
add_test(NAME bench_obstacles COMMAND obstacle_bench --agents 500 --polygons 50 --vertices 32 --batch 10 --reps 1)
set_tests_properties(bench_obstacles PROPERTIES LABELS bench TIMEOUT 120)
