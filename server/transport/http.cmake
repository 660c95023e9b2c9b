# The HTTP side of crowd-server (viewer files, /healthz, /metrics, WebSocket
# upgrade): included by server/CMakeLists.txt, linked into the server library.
# A connection's output queue (outq.c), shared by TCP (tcp.c) and HTTP/WebSocket:
# private to transport/, so it exposes no header.
add_library(crowd_outq STATIC ${CMAKE_CURRENT_LIST_DIR}/outq.c)
target_include_directories(crowd_outq PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(crowd_outq PUBLIC PkgConfig::LIBUV)

add_library(crowd_http STATIC
  ${CMAKE_CURRENT_LIST_DIR}/http.c
  ${CMAKE_CURRENT_LIST_DIR}/ws.c)
crowd_server_api(crowd_http ${CMAKE_CURRENT_LIST_DIR}/http.h ${CMAKE_CURRENT_LIST_DIR}/ws.h)
target_include_directories(crowd_http PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(crowd_http PUBLIC PkgConfig::LIBUV crowd_outq
  PRIVATE crowd_dep_http_parser wslay OpenSSL::Crypto)
