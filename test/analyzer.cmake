# Analyzer tests (issue 5): exact statistics, the run-file error paths of
# cudaspy-analyze, and planted causes in synthetic runs written through the
# real writer (test/analyzer/gen_run.c). json_expect + expect_cause.sh are
# reusable on real runs (CS_ANALYZE, CS_JSON_EXPECT).
set(CS_AN_DIR ${CMAKE_CURRENT_SOURCE_DIR}/analyzer)
set(CS_AN_WORK ${CMAKE_CURRENT_BINARY_DIR}/analyzer-work)

add_executable(gen_run ${CS_AN_DIR}/gen_run.c ${CS_AN_DIR}/gen_blocks.c)
target_link_libraries(gen_run PRIVATE cs_runfile cs_core)

# runs whose calls carry Python stacks (issue 23), until the shim's capture lands
add_executable(gen_pyrun ${CS_AN_DIR}/gen_pyrun.c ${CS_AN_DIR}/gen_blocks.c)
target_include_directories(gen_pyrun PRIVATE ${CS_LMDB_INC})
target_link_libraries(gen_pyrun PRIVATE cs_runfile cs_core ${CS_LMDB_LIB})

# data.pyline: the lines of gen_pyrun's run in the text, JSON, --by pyline,
# HTML, Perfetto and MCP outputs (test/analyzer/pyline.sh)
if(TARGET cudaspy-analyze) # check_trace: export.cmake, read later
  add_test(NAME data.pyline
           COMMAND sh ${CS_AN_DIR}/pyline.sh $<TARGET_FILE:cudaspy-analyze>
                   $<TARGET_FILE:gen_pyrun> $<TARGET_FILE:check_trace> ${CS_AN_WORK}/pyline)
  set_tests_properties(data.pyline PROPERTIES LABELS unit TIMEOUT 120)
endif()

# data.pyhost: host_bound's lines from the samples of host code
# (test/analyzer/pyhost.sh, rules/pyhost.c)
add_test(NAME data.pyhost
         COMMAND sh ${CS_AN_DIR}/pyhost.sh $<TARGET_FILE:cudaspy-analyze>
                 $<TARGET_FILE:gen_run> ${CS_AN_WORK}/pyhost)
set_tests_properties(data.pyhost PROPERTIES LABELS unit TIMEOUT 120)

# data.pyline_real: the same outputs on a real recording of the shim's Python
# test program (test/python/py_workload.py, Debian's python3) under the fake
# driver: a row for every line that made a captured call, and no other.
if(TARGET cudaspy_launcher AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/python/py_workload.py)
  add_test(NAME data.pyline_real
           COMMAND sh ${CS_AN_DIR}/pyline_real.sh ${CMAKE_BINARY_DIR} /usr/bin/python3
                   ${CS_AN_WORK}/pyline_real)
  set_tests_properties(data.pyline_real PROPERTIES LABELS cli TIMEOUT 240 SKIP_RETURN_CODE 77)
endif()

add_executable(json_expect ${CS_AN_DIR}/json_expect.c)
target_include_directories(json_expect PRIVATE ${CS_JANSSON_INC})
target_link_libraries(json_expect PRIVATE ${CS_JANSSON_LIB})

add_executable(test_stats ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_stats.c)
target_include_directories(test_stats PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_stats PRIVATE cs_analysis)
add_test(NAME unit.stats COMMAND test_stats)
set_tests_properties(unit.stats PROPERTIES LABELS unit)
add_executable(test_qsel ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_qsel.c)
target_include_directories(test_qsel PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_qsel PRIVATE cs_analysis)
add_test(NAME unit.qsel COMMAND test_qsel)
set_tests_properties(unit.qsel PROPERTIES LABELS unit)
add_executable(test_offpass ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_offpass.c)
target_include_directories(test_offpass PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_offpass PRIVATE cs_analysis)
add_test(NAME unit.offpass COMMAND test_offpass)

add_executable(test_callstore ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_callstore.c)
target_include_directories(test_callstore PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_callstore PRIVATE cs_analysis)
add_test(NAME unit.callstore COMMAND test_callstore)
set_tests_properties(unit.callstore PROPERTIES LABELS unit)
add_executable(test_pystack ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_pystack.c)
target_include_directories(test_pystack PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_pystack PRIVATE cs_analysis)
add_test(NAME unit.pystack COMMAND test_pystack)
set_tests_properties(unit.pystack PROPERTIES LABELS unit)

# cli.analyze_<case>: test/cli/analyze_<case>.sh ANALYZE GEN_RUN WORKDIR
foreach(case missing_file random_bytes truncated corrupt corrupt_hang corrupt_cycle corrupt_id corrupt_meta
        future_version empty_run no_sampler usage help fail_on degraded scratch)
  add_test(NAME cli.analyze_${case}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/analyze_${case}.sh
                   $<TARGET_FILE:cudaspy-analyze> $<TARGET_FILE:gen_run> ${CS_AN_WORK}/cli_${case})
  set_tests_properties(cli.analyze_${case} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

add_test(NAME fault.analyze_cut_and_flip
         COMMAND sh ${CS_AN_DIR}/fault_sweep.sh $<TARGET_FILE:cudaspy-analyze>
                 $<TARGET_FILE:gen_run> ${CS_AN_WORK}/fault)
set_tests_properties(fault.analyze_cut_and_flip PROPERTIES LABELS fault TIMEOUT 120)
add_test(NAME fault.analyze_cut_and_flip_pyline
         COMMAND sh ${CS_AN_DIR}/fault_sweep.sh $<TARGET_FILE:cudaspy-analyze>
                 $<TARGET_FILE:gen_pyrun> ${CS_AN_WORK}/fault_pyline)
set_tests_properties(fault.analyze_cut_and_flip_pyline PROPERTIES LABELS fault TIMEOUT 120)
add_test(NAME fault.analyze_cut_and_flip_pysamples
         COMMAND sh ${CS_AN_DIR}/fault_sweep.sh $<TARGET_FILE:cudaspy-analyze>
                 $<TARGET_FILE:gen_run> ${CS_AN_WORK}/fault_pysamples)
set_tests_properties(fault.analyze_cut_and_flip_pysamples PROPERTIES LABELS fault TIMEOUT 120
                     ENVIRONMENT FAULT_SCENARIO=gpu_setup_host_pys)

# data.planted.<scenario>: the planted cause is the top finding
set(CS_AN_PLANTED
    "cpu_contention_tree\;top=cpu_contention_tree"
    "cpu_contention_external\;top=cpu_contention_external"
    "data_pipeline_starvation\;top=data_pipeline_starvation"
    "starvation_pin_thread\;top=data_pipeline_starvation"
    "pageable_memcpy\;top=pageable_memcpy"
    "alloc_churn\;top=alloc_churn"
    "sync_per_iteration\;top=sync_per_iteration"
    "launch_bound\;top=launch_bound"
    "launch_bound_ranks\;sev=launch_bound:MEDIUM\;nohigh"
    "io_wait\;top=io_wait"
    "page_alloc_pressure\;top=page_alloc_pressure"
    "clean\;nohigh\;nomissing"
    "gpu_tail\;nohigh\;gpu=sampled\;busy=90:100"
    # the set-up before the first step is no host_bound: the steps are GPU-bound
    "gpu_setup\;no=host_bound\;nohigh\;gpu=sampled\;steps=inferred:600\;setup=595:605"
    # a host-bound loop after a synced set-up: the set-up's sync is no host_bound site
    "gpu_setup_host_py\;top=host_bound\;site=host_bound:57\;nosite=host_bound:20"
    # with samples of its host code (docs/python.md, "Host code"): host_bound names
    # the lines the host ran in the GPU's idle, not the sync before them
    "gpu_setup_host_pys\;top=host_bound\;site=host_bound:88\;nosite=host_bound:57"
    # and without GPU activity: the set-up's 600 ms gap is no sync_per_iteration
    "sync_setup\;top=sync_per_iteration\;impact=sync_per_iteration:200:300\;setup=595:610"
    "nohost\;missing=no host data (sampler tier none: perf_event_open: permission denied)"
    # issue 23: the same runs with Python stacks name the line behind the cause
    "data_pipeline_starvation_py\;top=data_pipeline_starvation\;site=data_pipeline_starvation:57"
    "pageable_memcpy_py\;top=pageable_memcpy\;site=pageable_memcpy:45"
    "alloc_churn_py\;top=alloc_churn\;site=alloc_churn:30"
    "sync_per_iteration_py\;top=sync_per_iteration\;site=sync_per_iteration:57"
    "launch_bound_py\;top=launch_bound\;site=launch_bound:12"
    "cpu_contention_tree_py\;top=cpu_contention_tree\;site=cpu_contention_tree:57")
foreach(entry ${CS_AN_PLANTED})
  list(GET entry 0 scen)
  list(REMOVE_AT entry 0)
  add_test(NAME data.planted.${scen}
           COMMAND sh ${CS_AN_DIR}/planted.sh $<TARGET_FILE:gen_run> ${CS_AN_WORK}/planted
                   ${scen} ${entry})
  # CUDASPY_CALLS=store: the planted causes are found from the compact call
  # store too, which only runs too big for memory take by themselves
  set_tests_properties(data.planted.${scen} PROPERTIES LABELS unit TIMEOUT 60
    ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>;CS_JSON_EXPECT=$<TARGET_FILE:json_expect>;CUDASPY_CALLS=store")
endforeach()

# the two ways calls reach the compact store give one report (model/calls.c)
add_test(NAME data.calls_paths
         COMMAND sh ${CS_AN_DIR}/calls_paths.sh $<TARGET_FILE:gen_run>
                 $<TARGET_FILE:cudaspy-analyze> ${CS_AN_WORK}/calls_paths)
set_tests_properties(data.calls_paths PROPERTIES LABELS unit TIMEOUT 60)

add_executable(test_analysis ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_analysis.c)
target_include_directories(test_analysis PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_analysis PRIVATE cs_analysis)
add_test(NAME unit.analysis COMMAND test_analysis)
set_tests_properties(unit.analysis PROPERTIES LABELS unit)

# cli.real_cause_<mode>: the same causes planted in REAL recordings (launcher,
# sampler, shim, fake driver's simulated GPU; test/fake/cause_workload.c).
# nosan: the planted causes are timings (sync gaps, wake-up waits) that the
# sanitized builds' slowdown blurs, as for cli.gate_real_*. RUN_SERIAL: tree
# and external load both CPUs on purpose, and a parallel test's load would
# show up as outside contention in the others.
# (fake.cmake, read after this file, defines cause_workload)
if(TARGET cudaspy_launcher AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fake/cause_workload.c)
  foreach(mode tree external starve pageable churn sync clean slowinit syncstep hostdata)
    add_test(NAME cli.real_cause_${mode}
             COMMAND sh ${CS_AN_DIR}/real_cause.sh ${mode} $<TARGET_FILE:cudaspy_launcher>
                     $<TARGET_FILE:cause_workload> ${CS_AN_WORK}/real_${mode})
    set_tests_properties(cli.real_cause_${mode} PROPERTIES LABELS "slow;nosan" TIMEOUT 60
      RUN_SERIAL TRUE SKIP_RETURN_CODE 77
      ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>;CS_JSON_EXPECT=$<TARGET_FILE:json_expect>")
  endforeach()
  # device memory (issue 31): oom after which the program dies, allocator
  # retries every step, peak exact against the fake's (test/analyzer/memory.sh).
  # Only retries is a timing (HIGH): nosan; the others run under ASan too.
  foreach(case oom retries twice vmm many)
    set(labels "slow;notsan")
    if(case STREQUAL "retries" OR case STREQUAL "twice")
      set(labels "slow;nosan")
    endif()
    add_test(NAME cli.memory_${case}
             COMMAND sh ${CS_AN_DIR}/memory.sh ${case} $<TARGET_FILE:cudaspy_launcher>
                     $<TARGET_FILE:accuracy_workload> ${CS_AN_WORK}/memory_${case})
    set_tests_properties(cli.memory_${case} PROPERTIES LABELS "${labels}" TIMEOUT 60
      RUN_SERIAL TRUE ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>")
  endforeach()
  # steps inferred from the repeating calls count the loop's steps (steps.c)
  add_test(NAME cli.steps_count
           COMMAND sh ${CS_AN_DIR}/steps_count.sh $<TARGET_FILE:cudaspy_launcher>
                   $<TARGET_FILE:cause_workload> ${CS_AN_WORK}/steps_count)
  set_tests_properties(cli.steps_count PROPERTIES LABELS "slow;nosan" TIMEOUT 90 RUN_SERIAL TRUE
    ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>;CS_JSON_EXPECT=$<TARGET_FILE:json_expect>;CS_CHECK_TRACE=$<TARGET_FILE:check_trace>")
  # torch.compile's compiler pool is no data-loader worker (procs.c)
  add_test(NAME cli.compiler_pool
           COMMAND sh ${CS_AN_DIR}/compiler_pool.sh $<TARGET_FILE:cudaspy_launcher>
                   $<TARGET_FILE:accuracy_workload> ${CS_AN_WORK}/compiler_pool)
  set_tests_properties(cli.compiler_pool PROPERTIES LABELS "slow;nosan" TIMEOUT 60
    RUN_SERIAL TRUE ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>")
  # CUDA graphs (issue 31): kernels by name and GPU busy exact against the
  # fake's nodes, planted re-capture HIGH, a healthy replay loop (graphs.sh)
  foreach(mode nodes recapture healthy)
    add_test(NAME cli.graphs_${mode}
             COMMAND sh ${CS_AN_DIR}/graphs.sh ${mode} $<TARGET_FILE:cudaspy_launcher>
                     $<TARGET_FILE:accuracy_workload> ${CS_AN_WORK}/graphs_${mode})
    set_tests_properties(cli.graphs_${mode} PROPERTIES LABELS "slow;nosan" TIMEOUT 90
      RUN_SERIAL TRUE ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>")
  endforeach()
  # sampled and full GPU activity agree on a known duty cycle (docs/gpu.md)
  add_test(NAME cli.gpu_modes
           COMMAND sh ${CS_AN_DIR}/gpu_modes.sh $<TARGET_FILE:cudaspy_launcher>
                   $<TARGET_FILE:cause_workload> ${CS_AN_WORK}/gpu_modes)
  set_tests_properties(cli.gpu_modes PROPERTIES LABELS "slow;nosan" TIMEOUT 90 RUN_SERIAL TRUE
    ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>;CS_JSON_EXPECT=$<TARGET_FILE:json_expect>")
  # sampled GPU activity within its cost budget (issue 35, docs/gpu.md)
  add_test(NAME cli.gpu_budget
           COMMAND sh ${CS_AN_DIR}/gpu_budget.sh $<TARGET_FILE:cudaspy_launcher>
                   $<TARGET_FILE:cause_workload> ${CS_AN_WORK}/gpu_budget)
  set_tests_properties(cli.gpu_budget PROPERTIES LABELS "cli;notsan" TIMEOUT 90
    ENVIRONMENT "CS_ANALYZE=$<TARGET_FILE:cudaspy-analyze>;CS_JSON_EXPECT=$<TARGET_FILE:json_expect>")
endif()

# data.analyzer.<case>: golden reports. test/data/analyzer/<case>/ holds gen
# (gen_run arguments), optional opts (cudaspy-analyze options) and the
# expected report.json and report.txt; test/analyzer/golden.sh compares them
# byte for byte (issue 26: moves in analyzer/ must not change a report).
file(GLOB CS_AN_GOLDEN ${CMAKE_CURRENT_SOURCE_DIR}/data/analyzer/*/gen)
foreach(gen ${CS_AN_GOLDEN})
  get_filename_component(dir ${gen} DIRECTORY)
  get_filename_component(case ${dir} NAME)
  add_test(NAME data.analyzer.${case}
           COMMAND sh ${CS_AN_DIR}/golden.sh $<TARGET_FILE:cudaspy-analyze>
                   $<TARGET_FILE:gen_run> ${dir} ${CS_AN_WORK}/golden/${case})
  set_tests_properties(data.analyzer.${case} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
