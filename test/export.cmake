# test/export.cmake: the Chrome/Perfetto trace export (analyzer/views/export_chrome.c).
# check_trace is a strict checker of the Trace Event format; runs come from
# gate_gen_run (test/gate.cmake).
set(CS_EXPORT_DIR ${CMAKE_CURRENT_SOURCE_DIR}/export)

add_executable(check_trace ${CS_EXPORT_DIR}/check_trace.c)
target_include_directories(check_trace PRIVATE ${CS_JANSSON_INC})
target_link_libraries(check_trace ${CS_JANSSON_LIB} m)

if(TARGET cudaspy-analyze)
  foreach(case valid clipped window bad_input checker_rejects)
    add_test(NAME cli.export_${case}
             COMMAND sh ${CS_EXPORT_DIR}/export_cli.sh ${case} $<TARGET_FILE:cudaspy-analyze>
                     $<TARGET_FILE:gate_gen_run> $<TARGET_FILE:check_trace>
                     ${CMAKE_CURRENT_BINARY_DIR}/export/${case})
    set_tests_properties(cli.export_${case} PROPERTIES LABELS unit TIMEOUT 60)
  endforeach()
endif()

# cli.export_setup: the set-up before the first step on the steps track
if(TARGET cudaspy-analyze)
  add_test(NAME cli.export_setup
           COMMAND sh ${CS_EXPORT_DIR}/export_setup.sh $<TARGET_FILE:cudaspy-analyze>
                   $<TARGET_FILE:gen_run> $<TARGET_FILE:check_trace>
                   ${CMAKE_CURRENT_BINARY_DIR}/export/setup)
  set_tests_properties(cli.export_setup PROPERTIES LABELS unit TIMEOUT 60)
endif()

# cli.export_account: the account, one slice per feeding process and GPU
if(TARGET cudaspy-analyze)
  add_test(NAME cli.export_account
           COMMAND sh ${CS_EXPORT_DIR}/export_account.sh $<TARGET_FILE:cudaspy-analyze>
                   $<TARGET_FILE:gen_run> $<TARGET_FILE:check_trace>
                   ${CMAKE_CURRENT_BINARY_DIR}/export/account)
  set_tests_properties(cli.export_account PROPERTIES LABELS unit TIMEOUT 60)
endif()

# The same export loaded by a real parser: Chrome DevTools' trace engine.
if(TARGET cudaspy-analyze)
  add_test(NAME cli.export_devtools
           COMMAND sh ${CS_EXPORT_DIR}/devtools_check.sh $<TARGET_FILE:cudaspy-analyze>
                   $<TARGET_FILE:gate_gen_run> ${CMAKE_CURRENT_BINARY_DIR}/export/devtools
                   ${CMAKE_BINARY_DIR}/npm-trace-engine)
  set_tests_properties(cli.export_devtools PROPERTIES LABELS slow TIMEOUT 360 SKIP_RETURN_CODE 77)
endif()

# Export and HTML report of a real run file (shim + sampler on the fake driver).
# fake.cmake (included after this file) defines client_rt_shared from fake/client_rt.c.
if(TARGET cudaspy-analyze AND TARGET cudaspy_launcher AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fake/client_rt.c)
  foreach(case export_real html_real)
    add_test(NAME cli.${case}
             COMMAND sh ${CS_EXPORT_DIR}/export_real.sh ${case} $<TARGET_FILE:cudaspy-analyze>
                     $<TARGET_FILE:cudaspy_launcher> $<TARGET_FILE:client_rt_shared>
                     $<TARGET_FILE:check_trace> ${CMAKE_CURRENT_BINARY_DIR}/export/${case})
    set_tests_properties(cli.${case} PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()
