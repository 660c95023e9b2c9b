# The Agones SDK client: included by server/CMakeLists.txt, linked into the
# server library (whose agones_server.c is the extension driving it).
add_library(crowd_agones STATIC ${CMAKE_CURRENT_LIST_DIR}/agones.c ${CMAKE_CURRENT_LIST_DIR}/agones_json.c)
target_include_directories(crowd_agones PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(crowd_agones PUBLIC PkgConfig::LIBUV PRIVATE crowd_dep_http_parser)
