# bench/shim.cmake: bench_shim, the shim's added ns per intercepted call on
# the fake driver (zero latency), recording vs disabled vs no preload.
# Run: build/bench_shim [ROUNDS] [BATCHES] [CALLS_PER_BATCH] [EVICT_KB]
if(TARGET cudaspy AND TARGET fake_cuda AND TARGET fake_cudart)
  add_executable(bench_shim ${CMAKE_CURRENT_SOURCE_DIR}/bench_shim.c)
  target_include_directories(bench_shim PRIVATE ${CMAKE_SOURCE_DIR}/test/fake ${CS_CUDA_INC})
  target_link_libraries(bench_shim PRIVATE fake_cuda fake_cudart cs_runfile)
  set_target_properties(bench_shim PROPERTIES BUILD_RPATH ${CMAKE_BINARY_DIR}/fake)
  target_compile_definitions(bench_shim PRIVATE BENCH_SRC_DIR="${CMAKE_SOURCE_DIR}")
  add_dependencies(bench_shim cudaspy cudaspy_launcher cudaspy-sampler)
endif()

# bench_clock: ns per rdtsc and per clock_gettime on this host (the floor of
# each record: two clock reads). Run: build/bench_clock [ROUNDS] [READS]
add_executable(bench_clock ${CMAKE_CURRENT_SOURCE_DIR}/bench_clock.c)
