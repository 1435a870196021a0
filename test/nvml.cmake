# test/nvml.cmake: the collector's GPU meta from NVML (sampler/nvml.c,
# docs/format.md: gpu_pcie_max, gpu_names) against the fake NVML
# (test/fake/fake_nvml.c, built in fake.cmake).
# unit.nvml: the reader itself through dlopen: answers, failures, the thread.
add_executable(test_nvml ${CMAKE_CURRENT_LIST_DIR}/unit/test_nvml.c)
target_include_directories(test_nvml PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_nvml PRIVATE cs_collect)
add_dependencies(test_nvml fake_nvml)
add_test(NAME unit.nvml COMMAND test_nvml $<TARGET_FILE:fake_nvml>)
set_tests_properties(unit.nvml PROPERTIES LABELS unit TIMEOUT 60)

# cs_run_meta RUN KEY...: the run's meta, "KEY=VALUE" per key it has.
add_executable(cs_run_meta ${CMAKE_CURRENT_LIST_DIR}/store/run_meta.c)
target_link_libraries(cs_run_meta PRIVATE cs_runfile)

# cli.nvml_<case>: a recorded fake client with the fake NVML, NVML off, a
# failing nvmlInit, a missing library (test/cli/nvml.sh).
if(TARGET cudaspy)
  foreach(case fake preload off init_fail missing)
    add_test(NAME cli.nvml_${case} COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/nvml.sh
                                           ${CMAKE_BINARY_DIR} ${case})
    set_tests_properties(cli.nvml_${case} PROPERTIES LABELS "cli;notsan" TIMEOUT 90)
  endforeach()
endif()
