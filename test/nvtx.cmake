# test/nvtx.cmake: NVTX ranges through the shim's NVTX injection
# (interpose/shim_nvtx.c, docs/shim.md "NVTX"). client_nvtx is compiled
# against the toolkit's real nvtx3 headers, as a CUDA program is;
# test_nvtx_check reads its run file. They run under ASan+UBSan and TSan
# too (the stacks, the start/end table and the string table are shared by
# the client's threads).
if(NOT EXISTS ${CS_CUDA_INC}/nvtx3/nvToolsExt.h OR NOT TARGET cudaspy)
  message(STATUS "test: no nvtx3 headers or no shim; NVTX tests left out")
  return()
endif()

add_executable(client_nvtx ${CMAKE_CURRENT_LIST_DIR}/fake/client_nvtx.c)
fake_output(client_nvtx)
target_link_libraries(client_nvtx PRIVATE pthread ${CMAKE_DL_LIBS})

# A loop that bounds its own capture ranges (NVTX steps, cudaProfilerStart).
fake_client(capture_workload capture_workload.c)
target_include_directories(capture_workload PRIVATE ${CS_CUDA_INC})
target_link_libraries(capture_workload PRIVATE fake_cudart ${CMAKE_DL_LIBS})
add_dependencies(capture_workload fake_cuda)

add_executable(test_nvtx_check ${CMAKE_CURRENT_LIST_DIR}/unit/test_nvtx_check.c)
target_link_libraries(test_nvtx_check PRIVATE cs_runfile)

# The same run as the analyzer's model sees it.
add_executable(test_nvtx_model ${CMAKE_CURRENT_LIST_DIR}/unit/test_nvtx_model.c)
target_link_libraries(test_nvtx_model PRIVATE cs_analysis)

# cli.shim_nvtx_<mode>: 4 worker threads of 50 steps each, a fork child.
foreach(mode record preload disable)
  add_test(NAME cli.shim_nvtx_${mode}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/shim_nvtx.sh ${CMAKE_BINARY_DIR} ${mode} 4 50)
  set_tests_properties(cli.shim_nvtx_${mode} PROPERTIES LABELS "cli" TIMEOUT 120)
endforeach()

# cli.capture_program: capture ranges the program bounds (issue 33): steps
# (NVTX), cudaProfilerApi and nvtx:NAME:N record exactly the launches and
# steps they name (capture_program.sh)
add_test(NAME cli.capture_program
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/capture_program.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cli.capture_program PROPERTIES LABELS "cli" TIMEOUT 120)

# cli.flight_keep: the flight recorder's trigger (issue 33): record
# --max-size 2M --keep-on 'step_p99>4x' keeps the window of a long run's
# slow steps that the tail alone loses, under the cap (store/flight_keep.sh;
# timing: the trigger's watcher samples the run every 0.5 s)
add_test(NAME cli.flight_keep
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/store/flight_keep.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cli.flight_keep PROPERTIES LABELS "cli;timing" TIMEOUT 120)
