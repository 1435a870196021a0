# test/html.cmake: the self-contained HTML report (analyzer/views/report_html.c).
# cli.html_renders and cli.html_account load the page in headless Chromium
# (Debian package chromium); they are skipped when chromium is absent.
set(CS_HTML_DIR ${CMAKE_CURRENT_SOURCE_DIR}/html)

add_test(NAME unit.html_assets
         COMMAND sh ${CS_HTML_DIR}/html_cli.sh assets none none
                 ${CMAKE_CURRENT_BINARY_DIR}/html/assets ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.html_assets PROPERTIES LABELS unit)

if(TARGET cudaspy-analyze)
  foreach(case renders escaping bad_input)
    add_test(NAME cli.html_${case}
             COMMAND sh ${CS_HTML_DIR}/html_cli.sh ${case} $<TARGET_FILE:cudaspy-analyze>
                     $<TARGET_FILE:gate_gen_run> ${CMAKE_CURRENT_BINARY_DIR}/html/${case})
    set_tests_properties(cli.html_${case} PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
  # gen_run's gpu_tail: sampled GPU activity, so buckets and impacts have intervals
  add_test(NAME cli.html_account
           COMMAND sh ${CS_HTML_DIR}/html_cli.sh account $<TARGET_FILE:cudaspy-analyze>
                   $<TARGET_FILE:gen_run> ${CMAKE_CURRENT_BINARY_DIR}/html/account)
  set_tests_properties(cli.html_account PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
