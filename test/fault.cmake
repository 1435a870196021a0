# test/fault.cmake: fault injection (fault.*) and security (cli.security_*)
# tests of issue 9: the traced program never pays for our bugs, bad input
# never crashes us. Scripts in test/fault/; docs/reliability.md lists them
# with the figures they produced. Random ones print their seed and take
# CS_TEST_SEED.
set(FAULT_DIR ${CMAKE_CURRENT_LIST_DIR}/fault)

# The traced program (next to the fake libcuda.so.1) and the run-file checker.
add_executable(fault_client ${FAULT_DIR}/fault_client.c)
fake_output(fault_client)
target_include_directories(fault_client PRIVATE ${FAULT_DIR})
target_link_libraries(fault_client PRIVATE fake_expect fake_cuda pthread)
add_executable(fault_check ${FAULT_DIR}/fault_check.c)
target_link_libraries(fault_check PRIVATE cs_runfile)

# fault_test(name script timeout [args...])
function(fault_test name script timeout)
  add_test(NAME fault.${name} COMMAND ${FAULT_DIR}/${script} ${CMAKE_BINARY_DIR} ${ARGN})
  set_tests_properties(fault.${name} PROPERTIES LABELS fault TIMEOUT ${timeout}
                       SKIP_RETURN_CODE 77)
endfunction()

# 50 kills in two halves (each well under a minute), seeds apart; 2 x 5
# under the sanitizers (each round is several times slower there).
if(CS_SANITIZE)
  set(FAULT_KILLS 5)
else()
  set(FAULT_KILLS 25)
endif()
fault_test(kill_program_a kill_program.sh 120 ${FAULT_KILLS})
fault_test(kill_program_b kill_program.sh 120 ${FAULT_KILLS} 50000)
fault_test(kill_sampler kill_sampler.sh 120 5)
fault_test(signal_sampler signal_sampler.sh 120)
fault_test(disk_full disk_full.sh 120)
fault_test(map_full map_full.sh 120)
fault_test(unwritable_dir unwritable_dir.sh 60)
fault_test(fork_during_call fork_during_call.sh 60)
fault_test(threads_1000 threads_1000.sh 120)
# 64 forked workers x 8 threads: test/cli/shim_fork.sh (cli.shim_fork runs 64 x 4).
# notsan, as cli.shim_fork: CUPTI's thread (the fake's, as the real one's)
# makes the parent multi-threaded by the fork, and TSan cannot start the
# children's threads after such a fork.
add_test(NAME fault.fork_64x8
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/shim_fork.sh ${CMAKE_BINARY_DIR} 64 8 10)
set_tests_properties(fault.fork_64x8 PROPERTIES LABELS "fault;notsan" TIMEOUT 180)
fault_test(env_values env_values.sh 180)
fault_test(run_file_mode run_file_mode.sh 60)
fault_test(attach_other_user attach_other_user.sh 60)
# No shell-outs in product code: a grep over the sources.
add_test(NAME fault.no_shell_outs COMMAND ${FAULT_DIR}/no_shell_outs.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(fault.no_shell_outs PROPERTIES LABELS fault TIMEOUT 30)
# Regression tests for bugs the fuzzers found (docs/reliability.md).
add_test(NAME cli.big_numbers COMMAND ${FAULT_DIR}/cli_big_numbers.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cli.big_numbers PROPERTIES LABELS "cli;fault" TIMEOUT 30)
