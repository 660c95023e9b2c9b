# cross_arch.sh: engine and navigation built for arm64 against Debian's own
# arm64 Recast/Detour, run under qemu-aarch64, compared bit for bit with this
# build (about 25 s of CPU; the first run fetches two Debian packages into
# build/cross-arm64). Skipped (77) when the cross tools are missing; not in
# sanitizer builds (it compares Release-like programs).
if(NOT CROWD_SANITIZE)
  add_test(NAME cross_arch_arm64 COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cross_arch.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cross_arch_arm64 PROPERTIES LABELS "cross;nav" TIMEOUT 900 SKIP_RETURN_CODE 77
                       RESOURCE_LOCK cross_arch_arm64)
endif()
