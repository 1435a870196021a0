# test/accuracy.cmake: accuracy.corpus, the accuracy corpus of issue 30
# (docs/accuracy.md): scripts/accuracy.py records every case of
# test/accuracy/cases.json 3 times (test/fake/accuracy_workload.c and the
# demo workload, on the fake driver's simulated GPU) and checks that
# cudaspy-analyze names each planted cause first, with an impact within 20 %
# of the workload's own meter. Runs and reports stay in accuracy-work/.
# nosan: the truths are timings, which a sanitized shim and sampler blur (as
# for cli.real_cause_*); the cases are planted large so that the box's other
# load (the sanitizer trees' tests included) cannot mask them. RUN_SERIAL:
# two cases load both CPUs on purpose. 77 (skipped): no sampler tier A.
# (fake.cmake, read after this file, defines accuracy_workload)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(TARGET cudaspy_launcher AND Python3_Interpreter_FOUND
   AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fake/accuracy_workload.c)
  add_test(NAME accuracy.corpus
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/accuracy.py
                   --build ${CMAKE_BINARY_DIR} --count 3 --require-tier A
                   --keep ${CMAKE_CURRENT_BINARY_DIR}/accuracy-work
                   --summary ${CMAKE_CURRENT_BINARY_DIR}/accuracy-work/summary.json)
  set_tests_properties(accuracy.corpus PROPERTIES LABELS "accuracy;slow;nosan" TIMEOUT 420
    RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
endif()

# unit.accuracy_scorer: the scorer's verdict rules and exit codes on made-up
# truth lines and reports (test/accuracy/test_scorer.py): no recording.
if(Python3_Interpreter_FOUND)
  add_test(NAME unit.accuracy_scorer
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/accuracy/test_scorer.py)
  set_tests_properties(unit.accuracy_scorer PROPERTIES LABELS unit TIMEOUT 60)
endif()
