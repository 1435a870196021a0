# bench/sampler.cmake: bench_sampler, the host sampler's CPU per context
# switch rate and the highest switch rate with 0 lost records (tier A,
# root). Run: build/bench_sampler [SECONDS] [RING_PAGES]
if(TARGET cs_host)
  add_executable(bench_sampler ${CMAKE_CURRENT_SOURCE_DIR}/bench_sampler.c)
  target_compile_definitions(bench_sampler PRIVATE CS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_link_libraries(bench_sampler PRIVATE cs_host)
endif()
