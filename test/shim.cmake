# test/shim.cmake: tests of libcudaspy.so and the cudaspy launcher
# (interpose/). Clients are the fake driver's (test/fake.cmake) plus a few
# of our own; test_shim_check compares a run file with a client's
# FAKECUDA_EXPECT file. Label notsan: passes under ASan+UBSan (the dlsym
# wrapper is not instrumented), not yet verified under TSan; nosan: the
# test itself behaves differently with a sanitizer runtime loaded.
set(SHIM_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

add_executable(test_shim_check ${SHIM_TEST_DIR}/unit/test_shim_check.c)
target_link_libraries(test_shim_check PRIVATE cs_runfile)

# cli.shim_<mode>_<client>: a fake client under `cudaspy record` and under
# plain LD_PRELOAD, run file checked against the fake's expectation.
function(shim_client_test label client runtime)
  foreach(mode record preload)
    add_test(NAME cli.shim_${mode}_${label}
             COMMAND ${SHIM_TEST_DIR}/cli/shim_client.sh ${CMAKE_BINARY_DIR} ${mode}
                     ${runtime} fake/${client} ${ARGN})
    set_tests_properties(cli.shim_${mode}_${label} PROPERTIES LABELS "cli;notsan" TIMEOUT 90)
  endforeach()
endfunction()
shim_client_test(rt_shared client_rt_shared shared)
shim_client_test(rt_static client_rt_static static_rt)
shim_client_test(rt_ptds client_rt_ptds shared)
# the same with CUDASPY_FOLD=0: a runtime and a driver record a call
foreach(mode record preload)
  add_test(NAME cli.shim_${mode}_rt_shared_nofold
           COMMAND ${SHIM_TEST_DIR}/cli/shim_client.sh ${CMAKE_BINARY_DIR} ${mode} shared
                   fake/client_rt_shared)
  set_tests_properties(cli.shim_${mode}_rt_shared_nofold PROPERTIES LABELS "cli;notsan"
                       TIMEOUT 90 ENVIRONMENT "CUDASPY_FOLD=0")
endforeach()
shim_client_test(dlsym client_dlsym static)
shim_client_test(gpa client_gpa static)
shim_client_test(gpa_pt client_gpa static 4 64 pt)
shim_client_test(direct client_direct static)

# cli.shim_gpu_<mode>_<client>: the same on the simulated GPU with GPU
# activity (the fake CUPTI, docs/gpu.md): every GPU record names the call
# that enqueued it, and every enqueue made while recording has one.
function(shim_gpu_test label client runtime)
  foreach(gpu full sampled)
    add_test(NAME cli.shim_gpu_${gpu}_${label}
             COMMAND ${SHIM_TEST_DIR}/cli/shim_client.sh ${CMAKE_BINARY_DIR} record
                     ${runtime} fake/${client} ${ARGN})
    set_tests_properties(cli.shim_gpu_${gpu}_${label} PROPERTIES LABELS "cli;notsan" TIMEOUT 90
                         ENVIRONMENT "SHIM_GPU=${gpu}")
  endforeach()
endfunction()
shim_gpu_test(rt_shared client_rt_shared shared)
shim_gpu_test(rt_static client_rt_static static_rt)
shim_gpu_test(gpa_pt client_gpa static 4 64 pt)
shim_gpu_test(direct client_direct static)

foreach(case missing held failing version injection reattach refusing kinds)
  add_test(NAME cli.shim_gpu_notice_${case}
           COMMAND ${SHIM_TEST_DIR}/cli/shim_gpu_notice.sh ${CMAKE_BINARY_DIR} ${case})
  set_tests_properties(cli.shim_gpu_notice_${case} PROPERTIES LABELS "cli;notsan" TIMEOUT 120)
endforeach()

# Our own clients, next to the fakes (they find libcuda.so.1 through $ORIGIN).
function(shim_client name src)
  add_executable(${name} ${SHIM_TEST_DIR}/unit/${src})
  fake_output(${name})
  target_link_libraries(${name} PRIVATE fake_expect fake_cuda pthread)
endfunction()
shim_client(test_shim_errno test_shim_errno.c)
shim_client(test_shim_fork test_shim_fork.c)
shim_client(test_shim_kernels test_shim_kernels.c)
shim_client_test(kernels test_shim_kernels static 10000)
shim_gpu_test(kernels test_shim_kernels static 10000)
# many sampled slices in one run: on for 10 ms of every 20 ms
add_test(NAME cli.shim_gpu_slices_kernels
         COMMAND ${SHIM_TEST_DIR}/cli/shim_client.sh ${CMAKE_BINARY_DIR} preload static
                 fake/test_shim_kernels 20000)
set_tests_properties(cli.shim_gpu_slices_kernels PROPERTIES LABELS "cli;notsan" TIMEOUT 90
                     ENVIRONMENT "SHIM_GPU=sampled;CUDASPY_GPU_SAMPLE=10/20")
shim_client_test(direct_errno test_shim_errno static)

add_test(NAME cli.shim_errno
         COMMAND ${SHIM_TEST_DIR}/cli/shim_errno.sh ${CMAKE_BINARY_DIR})
add_test(NAME cli.shim_fork
         COMMAND ${SHIM_TEST_DIR}/cli/shim_fork.sh ${CMAKE_BINARY_DIR} test_shim_fork 64 4 25)
add_test(NAME cli.shim_fork_forker
         COMMAND ${SHIM_TEST_DIR}/cli/shim_fork.sh ${CMAKE_BINARY_DIR} client_forker 64 3 20)
add_test(NAME cli.shim_rtnext
         COMMAND ${SHIM_TEST_DIR}/cli/shim_rtnext.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cli.shim_errno cli.shim_fork cli.shim_fork_forker cli.shim_rtnext
                     PROPERTIES LABELS "cli;notsan" TIMEOUT 120)

# dlsym(RTLD_NEXT) stays relative to its real caller.
add_library(shim_rtld_a SHARED ${SHIM_TEST_DIR}/unit/test_shim_rtld_a.c)
add_library(shim_rtld_wrap SHARED ${SHIM_TEST_DIR}/unit/test_shim_rtld_wrap.c)
target_link_libraries(shim_rtld_wrap PRIVATE ${CMAKE_DL_LIBS})
add_library(shim_rtld_local SHARED ${SHIM_TEST_DIR}/unit/test_shim_rtld_local.c)
add_library(shim_rtld_user SHARED ${SHIM_TEST_DIR}/unit/test_shim_rtld_user.c)
target_link_libraries(shim_rtld_user PRIVATE shim_rtld_local ${CMAKE_DL_LIBS})
add_executable(test_shim_rtld ${SHIM_TEST_DIR}/unit/test_shim_rtld.c)
add_dependencies(test_shim_rtld shim_rtld_user)
set_target_properties(test_shim_rtld PROPERTIES BUILD_RPATH ${CMAKE_BINARY_DIR})
target_link_libraries(test_shim_rtld PRIVATE shim_rtld_wrap shim_rtld_a ${CMAKE_DL_LIBS})
target_link_options(test_shim_rtld PRIVATE -Wl,--no-as-needed)
add_test(NAME cli.shim_rtld_next
         COMMAND ${SHIM_TEST_DIR}/cli/shim_rtld_next.sh ${CMAKE_BINARY_DIR})
add_test(NAME cli.shim_dlsym_tailcall
         COMMAND ${SHIM_TEST_DIR}/cli/shim_dlsym_tailcall.sh ${CMAKE_BINARY_DIR})
# nosan: under ASan plain dlsym(RTLD_DEFAULT) from a local-scope library
# resolves differently even without the shim ("test setup: local scope").
set_tests_properties(cli.shim_rtld_next cli.shim_dlsym_tailcall PROPERTIES LABELS "cli;nosan"
                     TIMEOUT 60)

foreach(case disable exec_child stacks duty duty_tree sched)
  add_test(NAME cli.shim_${case} COMMAND ${SHIM_TEST_DIR}/cli/shim_${case}.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cli.shim_${case} PROPERTIES LABELS "cli;notsan" TIMEOUT 90)
endforeach()
add_test(NAME fault.shim_no_sampler
         COMMAND ${SHIM_TEST_DIR}/cli/shim_no_sampler.sh ${CMAKE_BINARY_DIR})
set_tests_properties(fault.shim_no_sampler PROPERTIES LABELS "fault;notsan" TIMEOUT 60)

# unit.shim_track: the pinned-range table and capture set, compiled in.
add_executable(test_shim_track ${SHIM_TEST_DIR}/unit/test_shim_track.c
                               ${CMAKE_SOURCE_DIR}/interpose/shim_track.c)
target_include_directories(test_shim_track PRIVATE ${SHIM_TEST_DIR} ${CMAKE_SOURCE_DIR}/interpose)
target_link_libraries(test_shim_track PRIVATE cs_core pthread)
add_test(NAME unit.shim_track COMMAND test_shim_track)
set_tests_properties(unit.shim_track PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME fault.shim_collector_dies
         COMMAND ${SHIM_TEST_DIR}/cli/shim_collector_dies.sh ${CMAKE_BINARY_DIR})
set_tests_properties(fault.shim_collector_dies PROPERTIES LABELS "fault;notsan" TIMEOUT 60)

add_executable(test_shim_nodriver ${SHIM_TEST_DIR}/unit/test_shim_nodriver.c)
target_link_libraries(test_shim_nodriver PRIVATE ${CMAKE_DL_LIBS})
add_test(NAME fault.shim_no_driver
         COMMAND ${SHIM_TEST_DIR}/cli/shim_no_driver.sh ${CMAKE_BINARY_DIR})
set_tests_properties(fault.shim_no_driver PROPERTIES LABELS "fault;notsan" TIMEOUT 60)

# cli.analyze_waits: cudaspy-analyze started while the run's collector still
# writes the file waits for it (bounded, one line), then reads it whole; a
# dead collector's run is read at once, degraded (test/cli/analyze_waits.sh)
add_test(NAME cli.analyze_waits
         COMMAND ${SHIM_TEST_DIR}/cli/analyze_waits.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cli.analyze_waits PROPERTIES LABELS cli TIMEOUT 90)
