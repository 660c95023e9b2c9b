# The Agones SDK client and crowd-server's Agones extension: included by
# server/CMakeLists.txt, linked into the server library.
add_library(crowd_agones STATIC ${CMAKE_CURRENT_LIST_DIR}/agones.c ${CMAKE_CURRENT_LIST_DIR}/agones_json.c)
target_include_directories(crowd_agones PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(crowd_agones PUBLIC PkgConfig::LIBUV PRIVATE crowd_dep_http_parser)

# The extension needs the server's headers, so it is part of the server library.
if(TARGET crowd_server_lib)
  target_sources(crowd_server_lib PRIVATE ${CMAKE_CURRENT_LIST_DIR}/agones_server.c)
  target_link_libraries(crowd_server_lib PUBLIC crowd_agones)
endif()
