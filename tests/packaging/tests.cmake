# The wheels as a user gets them (run.sh): three wheel builds of their own, outside this build
# folder, so one long entry. Skipped (77) where a tool it needs is missing; a failure then
# under KILN_TEST_STRICT=1. A Windows build runs no shell, so it has no such entry.
if(NOT WIN32 AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME packaging COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run.sh)
  set_tests_properties(packaging PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 2400
    LABELS "packaging")
endif()
