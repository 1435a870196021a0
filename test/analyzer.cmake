# Analyzer tests (issue 5): exact statistics, the run-file error paths of
# cudaspy-analyze, and planted causes in synthetic runs written through the
# real writer (test/analyzer/gen_run.c).
add_executable(gen_run ${CMAKE_CURRENT_SOURCE_DIR}/analyzer/gen_run.c)
target_link_libraries(gen_run PRIVATE cs_runfile cs_core)

add_executable(test_stats ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_stats.c)
target_include_directories(test_stats PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_stats PRIVATE cs_analysis)
add_test(NAME unit.stats COMMAND test_stats)
set_tests_properties(unit.stats PROPERTIES LABELS unit)
