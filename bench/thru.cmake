# bench/thru.cmake: bench_thru, the collector's sustained throughput: N
# cs_producer processes at R records/s each for S seconds through the real
# cudaspy-sampler into a run file on disk, every record checked once.
# Run: build/bench_thru -p 2 -r 400000 -s 10 -n 3 [-x]
add_executable(bench_thru ${CMAKE_CURRENT_SOURCE_DIR}/bench_thru.c)
target_link_libraries(bench_thru PRIVATE cs_runfile)
add_dependencies(bench_thru cudaspy-sampler cs_producer)
