# test/cli.cmake: what every program says about itself, and the links of
# the Markdown files (issue 26).
# cli.version_help_<kind>: --version is exactly one line, --help exits 0
# with its usage first; cudaspy's whole --help, which lists its
# subcommands, and its usage errors word for word (test/cli/version_help.sh).
# cli.doc_links: every relative link in every tracked Markdown file names a
# file that exists (test/cli/doc_links.sh); cli.readme_length: README.md
# is at most 200 lines. cli.doc_claims: the MCP tools, finding causes,
# account buckets and top-level JSON keys the docs name are the code's
# (test/cli/doc_claims.py, issue 36).
set(CS_CLI_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli-work)
foreach(prog "cudaspy:cudaspy_launcher" "sampler:cudaspy-sampler" "analyze:cudaspy-analyze")
  string(REPLACE ":" ";" prog "${prog}")
  list(GET prog 0 kind)
  list(GET prog 1 target)
  add_test(NAME cli.version_help_${kind}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli/version_help.sh ${kind}
                   $<TARGET_FILE:${target}> ${CS_CLI_WORK}/version_help_${kind})
  set_tests_properties(cli.version_help_${kind} PROPERTIES LABELS unit TIMEOUT 30)
endforeach()
add_test(NAME cli.doc_links COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli/doc_links.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(cli.doc_links PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME cli.readme_length COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli/readme_length.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(cli.readme_length PROPERTIES LABELS unit TIMEOUT 10)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME cli.doc_claims
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli/doc_claims.py
                   ${CMAKE_SOURCE_DIR} $<TARGET_FILE:cudaspy-analyze> $<TARGET_FILE:gen_run>
                   ${CS_CLI_WORK}/doc_claims)
  set_tests_properties(cli.doc_claims PROPERTIES LABELS unit TIMEOUT 60)
endif()
# cli.top, cli.metrics: the live view on a real terminal (tmux) and the
# Prometheus metrics of a run being recorded (issue 33, docs/live.md),
# on the fake driver's cause_workload. Timings (top must name the planted
# cause within 3 s): notsan, RUN_SERIAL; 77 when tmux or curl is missing.
# (fake.cmake, read after this file, defines cause_workload)
if(TARGET cudaspy_launcher AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/fake/cause_workload.c)
  foreach(case top metrics)
    add_test(NAME cli.${case}
             COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli/${case}.sh ${CMAKE_BINARY_DIR})
    set_tests_properties(cli.${case} PROPERTIES LABELS "cli;timing;notsan" TIMEOUT 60
      RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
  endforeach()
endif()
