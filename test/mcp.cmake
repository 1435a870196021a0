# MCP server tests (issue 7): protocol-level tests driving
# `cudaspy-analyze mcp` over pipes (test/mcp/test_mcp_proto.c), and an
# end-to-end test with the real MCP SDK client from npm (test/mcp/e2e.mjs),
# installed by the test into the build dir and reused on later runs.
add_executable(test_mcp_index ${CMAKE_CURRENT_SOURCE_DIR}/mcp/test_mcp_index.c
               ${CMAKE_SOURCE_DIR}/analyzer/mcp/mcp_index.c)
target_include_directories(test_mcp_index PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_mcp_index PRIVATE cs_analysis)
add_test(NAME unit.mcp_index COMMAND test_mcp_index)
set_tests_properties(unit.mcp_index PROPERTIES LABELS unit)

add_executable(mcp_gen ${CMAKE_CURRENT_SOURCE_DIR}/mcp/mcp_gen.c)
target_link_libraries(mcp_gen PRIVATE cs_runfile cs_core)

add_executable(test_mcp_proto ${CMAKE_CURRENT_SOURCE_DIR}/mcp/test_mcp_proto.c)
target_include_directories(test_mcp_proto PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CS_JANSSON_INC})
target_link_libraries(test_mcp_proto PRIVATE cs_core ${CS_JANSSON_LIB})

set(CS_MCP_DIR ${CMAKE_CURRENT_BINARY_DIR}/mcp)
add_test(NAME cli.mcp_proto
         COMMAND sh -c "mkdir -p '${CS_MCP_DIR}' && \
'$<TARGET_FILE:gen_run>' clean '${CS_MCP_DIR}/proto.lmdb' --steps 50 && \
'$<TARGET_FILE:mcp_gen>' '${CS_MCP_DIR}/nasty.lmdb' && \
'$<TARGET_FILE:test_mcp_proto>' '$<TARGET_FILE:cudaspy-analyze>' \
'${CS_MCP_DIR}/proto.lmdb' '${CS_MCP_DIR}/nasty.lmdb'")
set_tests_properties(cli.mcp_proto PROPERTIES LABELS unit TIMEOUT 120)

# Needs node and npm (scripts/install-deps.sh); skipped (77) without them or
# without registry access on the first run.
add_test(NAME cli.mcp_e2e
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mcp/e2e.sh $<TARGET_FILE:cudaspy-analyze>
                 $<TARGET_FILE:gen_run> ${CMAKE_BINARY_DIR}/mcp-client ${CS_MCP_DIR}/e2e)
set_tests_properties(cli.mcp_e2e PROPERTIES LABELS slow TIMEOUT 300 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK mcp_client_npm)

# The same on recorded runs (launcher + shim + sampler on the fake driver).
if(TARGET cudaspy_launcher AND TARGET client_rt_shared)
  add_test(NAME cli.mcp_e2e_real
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mcp/e2e.sh $<TARGET_FILE:cudaspy-analyze>
                   $<TARGET_FILE:gen_run> ${CMAKE_BINARY_DIR}/mcp-client ${CS_MCP_DIR}/e2e_real
                   $<TARGET_FILE:cudaspy_launcher> $<TARGET_FILE:client_rt_shared>)
  set_tests_properties(cli.mcp_e2e_real PROPERTIES LABELS slow TIMEOUT 300 SKIP_RETURN_CODE 77
                       RESOURCE_LOCK mcp_client_npm)
endif()

# cli.mcp_keep: the analysis kept beside a run is reused, passed over when
# stale or corrupt, and kept in the cache folder when the run's folder is
# read-only (test/cli/mcp_keep.sh).
add_test(NAME cli.mcp_keep
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/mcp_keep.sh $<TARGET_FILE:cudaspy-analyze>
                 $<TARGET_FILE:gen_run> ${CS_MCP_DIR}/keep)
set_tests_properties(cli.mcp_keep PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
