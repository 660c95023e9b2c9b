# detourcrowd_bench: issue 11's second peer, DetourCrowd (Debian's
# librecast-dev) on the same circles, crossings and random crowd as
# quality_bench. A thin C++ driver over the C++ library; built only when the
# library is installed (deploy/debian-packages.txt lists it).
find_path(DETOUR_INCLUDE_DIR DetourCrowd.h PATH_SUFFIXES recastnavigation)
find_library(DETOUR_CROWD_LIB DetourCrowd)
find_library(DETOUR_LIB Detour)
find_library(DETOUR_RECAST_LIB Recast)
if(DETOUR_INCLUDE_DIR AND DETOUR_CROWD_LIB AND DETOUR_LIB AND DETOUR_RECAST_LIB)
  enable_language(CXX)
  add_executable(detourcrowd_bench ${CMAKE_CURRENT_LIST_DIR}/detourcrowd_bench.cpp)
  set_target_properties(detourcrowd_bench PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_include_directories(detourcrowd_bench PRIVATE ${DETOUR_INCLUDE_DIR} ${CMAKE_CURRENT_LIST_DIR})
  # steerbench_case (steerbench.cmake): the SteerSuite cases and their measurements
target_link_libraries(detourcrowd_bench PRIVATE crowd_scenario steerbench_case ${DETOUR_CROWD_LIB} ${DETOUR_LIB}
  ${DETOUR_RECAST_LIB})
  target_compile_definitions(detourcrowd_bench PRIVATE CROWD_REF_DIR="${PROJECT_SOURCE_DIR}/tests/data/ref")
  add_test(NAME bench_detourcrowd_circles COMMAND detourcrowd_bench circles 5 8)
  set_tests_properties(bench_detourcrowd_circles PROPERTIES LABELS bench TIMEOUT 120)
  add_test(NAME bench_detourcrowd_steersuite
    COMMAND detourcrowd_bench steersuite ${PROJECT_SOURCE_DIR}/tests/data/steersuite/doorway-two-way.txt)
  set_tests_properties(bench_detourcrowd_steersuite PROPERTIES LABELS bench TIMEOUT 120)
else()
  message(STATUS "DetourCrowd (librecast-dev) not found: detourcrowd_bench is not built")
endif()
