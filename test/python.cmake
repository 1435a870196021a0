# test/python.cmake: Python stacks (interpose/shim_python.c, docs/python.md)
# on a real CPython driving the fake CUDA runtime through ctypes
# (test/python/py_workload.py); test_py_dump prints the run's Python stacks
# and py_check.py compares them with the lines the workload made its calls
# from. Every interpreter found runs the workload: Debian's python3 always,
# others (CS_PYTHONS, a list of paths) where they are installed.
if(NOT TARGET cudaspy)
  return()
endif()
set(CS_PYTHONS /usr/bin/python3 CACHE STRING "Python interpreters the cli.python_* tests run")

add_executable(test_py_dump ${CMAKE_CURRENT_LIST_DIR}/unit/test_py_dump.c)
target_link_libraries(test_py_dump PRIVATE cs_runfile)

# cli.python_<mode>_py<version>: lines (every stack names its line), mixed
# (native frames too; not under TSan), off (CUDASPY_PYTHON=0), stress (frames
# torn down meanwhile; under ASan and TSan too).
foreach(py ${CS_PYTHONS})
  execute_process(COMMAND ${py} -c "import sys; print('py%d%d%s' % (sys.version_info[:2] + (getattr(sys, 'abiflags', ''),)))"
                  OUTPUT_VARIABLE pyname OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(STATUS "test: ${py} does not run; no cli.python_* tests for it")
    continue()
  endif()
  foreach(mode lines mixed off stress)
    add_test(NAME cli.python_${mode}_${pyname}
             COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/python_lines.sh ${CMAKE_BINARY_DIR} ${py} ${mode})
    # mixed unwinds with libunwind, whose per-thread destructor locks a mutex
    # after TSan has let go of the exiting thread: a TSan crash, not ours
    set(labels cli)
    if(mode STREQUAL "mixed")
      set(labels "cli;notsan")
    endif()
    set_tests_properties(cli.python_${mode}_${pyname} PROPERTIES LABELS "${labels}" TIMEOUT 240)
  endforeach()
  # cli.python_oom_py<version>: an out-of-memory error names its Python line (issue 31)
  add_test(NAME cli.python_oom_${pyname}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/python_oom.sh ${CMAKE_BINARY_DIR} ${py})
  set_tests_properties(cli.python_oom_${pyname} PROPERTIES LABELS cli TIMEOUT 120)
  # cli.python_recapture_py<version>: graph_recapture names the Python lines
  # that instantiate and capture the graph rebuilt every step (issue 31)
  add_test(NAME cli.python_recapture_${pyname}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/python_recapture.sh ${CMAKE_BINARY_DIR} ${py})
  set_tests_properties(cli.python_recapture_${pyname} PROPERTIES LABELS "cli;nosan" TIMEOUT 240)
  # cli.python_trees_py<version>: graph_recapture counts torch's CUDA-graph
  # code (a stand-in of cudagraph trees: warm-ups, recordings) against an
  # A/B run on one shape (issue 31)
  add_test(NAME cli.python_trees_${pyname}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/python_trees.sh ${CMAKE_BINARY_DIR} ${py})
  set_tests_properties(cli.python_trees_${pyname} PROPERTIES LABELS "cli;nosan" TIMEOUT 240)
  # cli.python_samples_<mode>_py<version>: the collector's samples of host
  # code (hostwork: its hot spots named; stress: frames torn down while
  # read; off: CUDASPY_PYSAMPLE_HZ=0)
  foreach(mode hostwork stress off)
    add_test(NAME cli.python_samples_${mode}_${pyname}
             COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/python_samples.sh ${CMAKE_BINARY_DIR} ${py} ${mode})
    set_tests_properties(cli.python_samples_${mode}_${pyname} PROPERTIES LABELS cli TIMEOUT 240)
  endforeach()
endforeach()

# cli.python_unknown_<case>: an interpreter we cannot read (fake_python):
# a version after the ones we know, a 3.13 whose debug offsets lack their
# cookie, a 3.11 whose frames are not where 3.11 keeps them (an unmapped
# address); one notice, every call recorded, no stack, no crash.
foreach(case "version 0x03630000 xdebugpy 0" "cookie 0x030d00f0 nodebug 0"
        "frames 0x030b02f0 none 16")
  string(REPLACE " " ";" args ${case})
  list(GET args 0 name)
  list(GET args 1 ver)
  list(GET args 2 cookie)
  list(GET args 3 frame)
  add_executable(fake_python_${name} ${CMAKE_CURRENT_LIST_DIR}/fake/fake_python.c)
  fake_output(fake_python_${name})
  set_target_properties(fake_python_${name} PROPERTIES ENABLE_EXPORTS ON)
  target_compile_definitions(fake_python_${name} PRIVATE FAKE_PY_VERSION=${ver}
                             FAKE_PY_COOKIE="${cookie}" FAKE_PY_FRAME=${frame})
  target_link_libraries(fake_python_${name} PRIVATE fake_cudart)
  add_dependencies(fake_python_${name} fake_cuda)
  add_test(NAME cli.python_unknown_${name}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/python_unknown.sh ${CMAKE_BINARY_DIR} ${name})
  set_tests_properties(cli.python_unknown_${name} PROPERTIES LABELS "cli" TIMEOUT 60)
endforeach()

# cli.capture: capture ranges (issue 33): --delay, --duration, --capture
# signal with `cudaspy ctl`, and CUDASPY_* under LD_PRELOAD record exactly
# the launches made inside the ranges, and the analysis covers those alone
# (Debian's python3 drives the fake runtime; timing: the ranges follow a
# tick of the collector; notsan: a TSan shim preloaded into a Python built
# without it crashes it, as cli.python_recapture's nosan says)
add_test(NAME cli.capture
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/capture.sh ${CMAKE_BINARY_DIR} /usr/bin/python3)
set_tests_properties(cli.capture PROPERTIES LABELS "cli;timing;notsan" TIMEOUT 120)
