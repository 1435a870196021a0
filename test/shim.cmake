# test/shim.cmake: tests of libcudaspy.so and the cudaspy launcher
# (interpose/). Clients are the fake driver's (test/fake.cmake) plus a few
# of our own; test_shim_check compares a run file with a client's
# FAKECUDA_EXPECT file.
set(SHIM_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

add_executable(test_shim_check ${SHIM_TEST_DIR}/unit/test_shim_check.c)
target_link_libraries(test_shim_check PRIVATE cs_runfile)

# cli.shim_<mode>_<client>: a fake client under `cudaspy record` and under
# plain LD_PRELOAD, run file checked against the fake's expectation.
function(shim_client_test client runtime)
  foreach(mode record preload)
    add_test(NAME cli.shim_${mode}_${client}
             COMMAND ${SHIM_TEST_DIR}/cli/shim_client.sh ${CMAKE_BINARY_DIR} ${mode}
                     ${runtime} fake/${client} ${ARGN})
    set_tests_properties(cli.shim_${mode}_${client} PROPERTIES LABELS cli TIMEOUT 90)
  endforeach()
endfunction()
shim_client_test(client_rt_shared shared)
shim_client_test(client_rt_static static)
shim_client_test(client_rt_ptds shared)
