# Storage and collector tests (sampler/runfile.c, sampler/collector.c,
# interpose/shim_ring.c): real files, real cudaspy-sampler processes.
add_executable(test_runfile ${CMAKE_CURRENT_LIST_DIR}/unit/test_runfile.c)
target_include_directories(test_runfile PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_runfile PRIVATE cs_runfile)
add_test(NAME unit.runfile COMMAND test_runfile)
set_tests_properties(unit.runfile PROPERTIES LABELS unit TIMEOUT 120)
