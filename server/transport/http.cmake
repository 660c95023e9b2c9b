# The HTTP side of crowd-server (viewer files, /healthz, /metrics, WebSocket
# upgrade): included by server/CMakeLists.txt, linked into the server library.
add_library(crowd_http STATIC
  ${CMAKE_CURRENT_LIST_DIR}/http.c
  ${CMAKE_CURRENT_LIST_DIR}/ws.c)
target_include_directories(crowd_http PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(crowd_http PUBLIC PkgConfig::LIBUV
  PRIVATE crowd_dep_http_parser wslay OpenSSL::Crypto)
