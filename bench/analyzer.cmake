# bench/analyzer.cmake: bench_analyzer, cudaspy-analyze --json on a
# 10 M CUDA + 10 M host record synthetic run (wall, CPU, peak RSS).
# Run: build/bench_analyzer [CUDASPY_ANALYZE GEN_RUN WORKDIR [EVENTS] [REPEAT]]
add_executable(bench_analyzer ${CMAKE_CURRENT_SOURCE_DIR}/bench_analyzer.c)
add_dependencies(bench_analyzer cudaspy-analyze gen_run)
