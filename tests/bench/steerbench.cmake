# steerbench: SteerSuite's test cases (tests/data/steersuite) with navigation
# on, in quality and reference avoidance (detourcrowd_bench's `steersuite` mode
# runs DetourCrowd on them). The small cases are ctest tests with a ratchet
# (tests/data/steersuite/expected.txt: fewest arrivals and most deep overlaps
# allowed per case and mode); the whole suite is the `steersuite_table` target
# (make steersuite_table: the Markdown table of docs/steersuite.md).
add_library(steerbench_case STATIC ${CMAKE_CURRENT_LIST_DIR}/steerbench_case.c)
target_include_directories(steerbench_case PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(steerbench_case PUBLIC crowd_core m)
target_compile_options(steerbench_case PRIVATE -ffp-contract=off)

add_executable(steerbench ${CMAKE_CURRENT_LIST_DIR}/steerbench.c)
target_link_libraries(steerbench PRIVATE steerbench_case crowd_nav)
target_compile_options(steerbench PRIVATE -ffp-contract=off)

# the reader and the measurements on hand-made set-ups and positions (cmocka)
add_executable(steerbench_test ${CMAKE_CURRENT_LIST_DIR}/steerbench_test.c)
target_link_libraries(steerbench_test PRIVATE steerbench_case crowd_dep_cmocka)
add_test(NAME steersuite_measurements COMMAND steerbench_test)
set_tests_properties(steersuite_measurements PROPERTIES LABELS steersuite TIMEOUT 60)

set(STEERSUITE_DIR ${PROJECT_SOURCE_DIR}/tests/data/steersuite)
# one test per case named in expected.txt (the ones small enough for ctest)
file(STRINGS ${STEERSUITE_DIR}/expected.txt STEERSUITE_EXPECTED REGEX "^[^#]")
set(STEERSUITE_CASES "")
foreach(line ${STEERSUITE_EXPECTED})
  string(REGEX MATCH "^[^ \t]+" case "${line}")
  list(APPEND STEERSUITE_CASES ${case})
endforeach()
list(REMOVE_DUPLICATES STEERSUITE_CASES)
# the cases of more than 20 agents take several seconds each: Release only
# (the `bench` label keeps them out of the ASan run)
set(STEERSUITE_BENCH_CASES 4-way-oncomming-tall urban hallway-two-way bottleneck-evacuation)
foreach(case ${STEERSUITE_CASES})
  add_test(NAME steersuite_${case}
    COMMAND steerbench --expect ${STEERSUITE_DIR}/expected.txt ${STEERSUITE_DIR}/${case}.txt)
  if(case IN_LIST STEERSUITE_BENCH_CASES)
    set_tests_properties(steersuite_${case} PROPERTIES LABELS "steersuite;bench" TIMEOUT 300)
  else()
    set_tests_properties(steersuite_${case} PROPERTIES LABELS steersuite TIMEOUT 120)
  endif()
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${STEERSUITE_DIR}/expected.txt)

# the bench: every case, three modes, one table
add_test(NAME bench_steersuite_small
  COMMAND steerbench --time-limit 60 ${STEERSUITE_DIR}/hallway-four-way.txt)
set_tests_properties(bench_steersuite_small PROPERTIES LABELS bench TIMEOUT 300)
# (detourcrowd.cmake, included before this file, defines detourcrowd_bench when
# librecast-dev is installed)
set(STEERSUITE_TABLE_ARGS --steerbench $<TARGET_FILE:steerbench>)
set(STEERSUITE_TABLE_DEPS steerbench)
if(TARGET detourcrowd_bench)
  list(APPEND STEERSUITE_TABLE_ARGS --detourcrowd-bench $<TARGET_FILE:detourcrowd_bench>)
  list(APPEND STEERSUITE_TABLE_DEPS detourcrowd_bench)
endif()
add_custom_target(steersuite_table
  COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/steersuite/table.py ${STEERSUITE_TABLE_ARGS} --max-time 1000
          ${STEERSUITE_DIR}
  DEPENDS ${STEERSUITE_TABLE_DEPS}
  USES_TERMINAL)
