# MCP server benchmark (issue 7): startup and per-tool latency of
# `cudaspy-analyze mcp` on a 10 M + 10 M event synthetic run.
# Run: bench_mcp $<cudaspy-analyze> $<gen_run> WORKDIR [EVENTS] [REPEAT] [HOST_EVENTS]
add_executable(bench_mcp ${CMAKE_CURRENT_SOURCE_DIR}/bench_mcp.c)
target_include_directories(bench_mcp PRIVATE ${CMAKE_SOURCE_DIR}/test ${CS_JANSSON_INC})
target_link_libraries(bench_mcp PRIVATE ${CS_JANSSON_LIB})
