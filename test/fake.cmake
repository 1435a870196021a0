# test/fake.cmake: the fake CUDA driver (libcuda.so.1), the fake runtime
# (libcudart.so.13 and libcudart_static_fake.a), the test clients and the
# demo workload, all under ${CMAKE_BINARY_DIR}/fake/, plus the unit.fake_*
# tests of the fakes themselves. Clients find the fakes through $ORIGIN.
set(FAKE_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fake)
set(FAKE_OUT ${CMAKE_BINARY_DIR}/fake)

# Every export must stay a distinct function body so dladdr names it.
set(FAKE_NO_ICF "")
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(FAKE_NO_ICF -fno-ipa-icf)
endif()

function(fake_output tgt)
  set_target_properties(${tgt} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${FAKE_OUT}
    LIBRARY_OUTPUT_DIRECTORY ${FAKE_OUT}
    ARCHIVE_OUTPUT_DIRECTORY ${FAKE_OUT}
    BUILD_RPATH "\$ORIGIN"
    BUILD_RPATH_USE_ORIGIN ON)
  target_include_directories(${tgt} PRIVATE ${FAKE_SRC} ${CS_CUDA_INC})
endfunction()

add_library(fake_cuda SHARED
  ${FAKE_SRC}/fake_core.c ${FAKE_SRC}/fake_mem.c ${FAKE_SRC}/fake_stream.c
  ${FAKE_SRC}/fake_queue.c ${FAKE_SRC}/fake_launch.c ${FAKE_SRC}/fake_procaddr.c)
fake_output(fake_cuda)
set_target_properties(fake_cuda PROPERTIES OUTPUT_NAME cuda SOVERSION 1
  C_VISIBILITY_PRESET hidden)
target_compile_options(fake_cuda PRIVATE ${FAKE_NO_ICF})
target_link_libraries(fake_cuda PRIVATE pthread)
# The table's pointers must be the driver's own functions even when a
# preloaded library exports the same names, as in the real driver.
target_link_options(fake_cuda PRIVATE -Wl,-Bsymbolic-functions)


target_link_libraries(fake_cuda PRIVATE ${CMAKE_DL_LIBS})

# The fake CUPTI (libcupti.so.13): the activity API the shim uses, fed by
# the fake driver's timeline. Beside the fake driver and runtime, where the
# shim looks for the program's own CUPTI.
add_library(fake_cupti SHARED ${FAKE_SRC}/fake_cupti.c)
fake_output(fake_cupti)
set_target_properties(fake_cupti PROPERTIES OUTPUT_NAME cupti SOVERSION 13
  C_VISIBILITY_PRESET hidden)
target_link_libraries(fake_cupti PRIVATE ${CMAKE_DL_LIBS} pthread)
add_dependencies(fake_cuda fake_cupti)

# The fake runtime: shared (as the real libcudart.so.13) and static.
add_library(fake_cudart SHARED ${FAKE_SRC}/fake_runtime.c)
fake_output(fake_cudart)
set_target_properties(fake_cudart PROPERTIES OUTPUT_NAME cudart SOVERSION 13
  C_VISIBILITY_PRESET hidden)
target_compile_options(fake_cudart PRIVATE ${FAKE_NO_ICF})
target_link_libraries(fake_cudart PRIVATE ${CMAKE_DL_LIBS} pthread)
target_link_options(fake_cudart PRIVATE -Wl,--version-script=${FAKE_SRC}/fake_runtime.map
  -Wl,-Bsymbolic-functions)
set_target_properties(fake_cudart PROPERTIES LINK_DEPENDS ${FAKE_SRC}/fake_runtime.map)

add_library(fake_cudart_static STATIC ${FAKE_SRC}/fake_runtime.c)
fake_output(fake_cudart_static)
set_target_properties(fake_cudart_static PROPERTIES OUTPUT_NAME cudart_static_fake
  C_VISIBILITY_PRESET hidden)
target_compile_definitions(fake_cudart_static PRIVATE FAKERT_STATIC)
target_compile_options(fake_cudart_static PRIVATE ${FAKE_NO_ICF})

add_library(fake_expect STATIC ${FAKE_SRC}/fake_expect.c)
fake_output(fake_expect)
target_link_libraries(fake_expect PUBLIC ${CMAKE_DL_LIBS})

# fake_client(name source [defs...]): a client executable under fake/.
function(fake_client name src)
  add_executable(${name} ${FAKE_SRC}/${src})
  fake_output(${name})
  target_compile_definitions(${name} PRIVATE CLIENT_NAME="${name}" ${ARGN})
  target_link_libraries(${name} PRIVATE fake_expect pthread)
endfunction()

fake_client(client_rt_shared client_rt.c)
target_link_libraries(client_rt_shared PRIVATE fake_cudart)
fake_client(client_rt_ptds client_rt.c CUDA_API_PER_THREAD_DEFAULT_STREAM)
target_link_libraries(client_rt_ptds PRIVATE fake_cudart)
fake_client(client_rt_static client_rt.c)
target_link_libraries(client_rt_static PRIVATE fake_cudart_static ${CMAKE_DL_LIBS})
# The driver is dlopen'ed by the runtime, as the real one is: build it first.
add_dependencies(client_rt_shared fake_cuda)
add_dependencies(client_rt_ptds fake_cuda)
add_dependencies(client_rt_static fake_cuda)

# fake_test(stem source): unit.<stem>, a check.h test program under fake/.
function(fake_test stem src)
  add_executable(test_${stem} ${FAKE_SRC}/${src})
  fake_output(test_${stem})
  target_include_directories(test_${stem} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_${stem} PRIVATE ${CMAKE_DL_LIBS} pthread)
  add_dependencies(test_${stem} fake_cuda)
  add_test(NAME unit.${stem} COMMAND test_${stem} WORKING_DIRECTORY ${FAKE_OUT})
  set_tests_properties(unit.${stem} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()

fake_test(fake_procaddr test_fake_procaddr.c)

# Driver clients: Triton-style dlsym, cuBLAS-style cuGetProcAddress, PLT.
fake_client(client_dlsym client_dlsym.c)
fake_client(client_gpa client_gpa.c)
fake_client(client_direct client_direct.c)
target_link_libraries(client_direct PRIVATE fake_cuda)
fake_client(client_forker client_forker.c)
target_link_libraries(client_forker PRIVATE fake_cuda)
fake_client(client_rtnext client_rtnext.c)
foreach(c client_dlsym client_gpa client_rtnext)
  add_dependencies(${c} fake_cuda)
endforeach()
fake_test(fake_clients test_fake_clients.c)
add_dependencies(test_fake_clients client_rt_shared client_rt_static client_rt_ptds
  client_dlsym client_gpa client_direct client_forker client_rtnext)
fake_test(fake_inject test_fake_inject.c)
target_link_libraries(test_fake_inject PRIVATE fake_cudart)

# A static-runtime program exports no cuda* symbol: an interposer cannot see it.
add_test(NAME unit.fake_static_exports
  COMMAND sh -c "nm -D --defined-only client_rt_static | grep -c ' cuda' | grep -qx 0"
  WORKING_DIRECTORY ${FAKE_OUT})
set_tests_properties(unit.fake_static_exports PROPERTIES LABELS unit)
add_test(NAME unit.fake_rtnext COMMAND client_rtnext load WORKING_DIRECTORY ${FAKE_OUT})
set_tests_properties(unit.fake_rtnext PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION
  "RTLD_NEXT:puts [^ ]+ puts .*RTLD_DEFAULT:cuInit libcuda[.]so[.]1 cuInit")
fake_test(fake_sim test_fake_sim.c)
target_link_libraries(test_fake_sim PRIVATE fake_cuda)

# The workload `make demo` traces (scripts/demo.sh): simulated GPU.
fake_client(demo_workload demo_workload.c)
target_link_libraries(demo_workload PRIVATE fake_cudart m)
add_dependencies(demo_workload fake_cuda)
foreach(mode workers direct)
  add_test(NAME unit.fake_demo_${mode} COMMAND demo_workload ${mode} 24 4096
    WORKING_DIRECTORY ${FAKE_OUT})
  set_tests_properties(unit.fake_demo_${mode} PROPERTIES LABELS unit TIMEOUT 60
    PASS_REGULAR_EXPRESSION "simulated GPU [(]fake driver[)].*24 steps in.*checksum [0-9a-f]+")
endforeach()

add_library(fake_interposer SHARED ${FAKE_SRC}/fake_interposer.c)
fake_output(fake_interposer)
target_link_libraries(fake_interposer PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(test_fake_procaddr fake_interposer)
add_test(NAME unit.fake_procaddr_preloaded COMMAND test_fake_procaddr
  WORKING_DIRECTORY ${FAKE_OUT})
set_tests_properties(unit.fake_procaddr_preloaded PROPERTIES LABELS "unit;notsan" TIMEOUT 60
  ENVIRONMENT "LD_PRELOAD=${FAKE_OUT}/libfake_interposer.so")

# One planted cause per mode, for cli.real_cause_* (test/analyzer/real_cause.sh).
fake_client(cause_workload cause_workload.c)
target_link_libraries(cause_workload PRIVATE fake_cudart)
add_dependencies(cause_workload fake_cuda)

# The accuracy corpus (issue 30): one planted cause per mode, each with its
# own truth meter (test/accuracy.cmake, scripts/accuracy.py).
fake_client(accuracy_workload accuracy_workload.c)
target_link_libraries(accuracy_workload PRIVATE fake_cudart ${CMAKE_DL_LIBS})
add_dependencies(accuracy_workload fake_cuda)

# The fake NVML (libfake_nvml.so): the entry points the collector's NVML
# reader uses (sampler/nvml.c), answering from FAKE_NVML_* (fake_nvml.c);
# tests name it with CUDASPY_NVML.
add_library(fake_nvml SHARED ${FAKE_SRC}/fake_nvml.c)
fake_output(fake_nvml)
set_target_properties(fake_nvml PROPERTIES C_VISIBILITY_PRESET hidden)
