# bench/analyzer.cmake: bench_analyzer, cudaspy-analyze --json on a
# synthetic run, 10 M CUDA + 10 M host records by default (wall, CPU, peak
# RSS, peak anonymous memory, a memory cgroup's peak).
# Run: build/bench_analyzer [CUDASPY_ANALYZE GEN_RUN WORKDIR [EVENTS] [REPEAT]
#                            [HOST_EVENTS] [CGROUP]]
add_executable(bench_analyzer ${CMAKE_CURRENT_SOURCE_DIR}/bench_analyzer.c)
add_dependencies(bench_analyzer cudaspy-analyze gen_run)

# bench_callstore: the compact call store on a real run (bytes a call, put
# and scan ns a call, every call back whole). Run: build/bench_callstore RUN
add_executable(bench_callstore ${CMAKE_CURRENT_SOURCE_DIR}/bench_callstore.c)
target_include_directories(bench_callstore PRIVATE ${CMAKE_SOURCE_DIR}/analyzer)
target_link_libraries(bench_callstore PRIVATE cs_analysis)
