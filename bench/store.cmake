# bench/store.cmake: bench_store, ring -> collector -> LMDB throughput end to
# end (real cudaspy-sampler and producer processes), store-only commit rate
# and full-scan read rate. Run: build/bench_store [RECORDS] [DIR]
add_executable(bench_store ${CMAKE_CURRENT_SOURCE_DIR}/bench_store.c)
target_link_libraries(bench_store PRIVATE cs_runfile)
add_dependencies(bench_store cudaspy-sampler cs_producer)
# cs_run_bytes: bytes on disk per CUDA record of given run files (LMDB read
# directly, any format version); bench/bytes.sh records the workloads it
# measures. Not a bench_* program: it needs run files.
add_executable(cs_run_bytes ${CMAKE_CURRENT_SOURCE_DIR}/run_bytes.c)
target_include_directories(cs_run_bytes PRIVATE ${CS_LMDB_INC})
target_link_libraries(cs_run_bytes PRIVATE ${CS_LMDB_LIB})
