# bench/store.cmake: bench_store, ring -> collector -> LMDB throughput end to
# end (real cudaspy-sampler and producer processes), store-only commit rate
# and full-scan read rate. Run: build/bench_store [RECORDS] [DIR]
add_executable(bench_store ${CMAKE_CURRENT_SOURCE_DIR}/bench_store.c)
target_link_libraries(bench_store PRIVATE cs_runfile)
add_dependencies(bench_store cudaspy-sampler cs_producer)
