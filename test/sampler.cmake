# test/sampler.cmake: host sampler tests (unit.host*, unit.sched*). They
# trace real process trees with real perf events through an in-memory
# collector (test/sampler/fake_collector.c); tier A needs root.
add_library(cs_test_sampler STATIC
  ${CMAKE_CURRENT_LIST_DIR}/sampler/fake_collector.c
  ${CMAKE_CURRENT_LIST_DIR}/sampler/workload.c
  ${CMAKE_CURRENT_LIST_DIR}/sampler/harness.c)
target_include_directories(cs_test_sampler PUBLIC ${CMAKE_SOURCE_DIR}/sampler)
find_package(Threads REQUIRED)

foreach(t host host_tiers)
  add_executable(test_${t} ${CMAKE_CURRENT_LIST_DIR}/unit/test_${t}.c)
  target_link_libraries(test_${t} cs_test_sampler cs_host cs_test_sampler Threads::Threads m)
  add_test(NAME unit.${t} COMMAND test_${t})
  set_tests_properties(unit.${t} PROPERTIES LABELS "unit;slow" TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
