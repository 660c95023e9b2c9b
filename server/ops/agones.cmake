# The Agones SDK client: included by server/CMakeLists.txt, linked into the
# server library (whose agones_server.c is the extension driving it).
add_library(crowd_agones STATIC ${CMAKE_CURRENT_LIST_DIR}/agones.c ${CMAKE_CURRENT_LIST_DIR}/agones_json.c)
crowd_server_api(crowd_agones ${CMAKE_CURRENT_LIST_DIR}/agones.h)
target_include_directories(crowd_agones PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(crowd_agones PUBLIC PkgConfig::LIBUV PRIVATE crowd_dep_http_parser)
