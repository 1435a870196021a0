# Fleet tests (issue 32, docs/fleet.md): runs pushed into a real local
# ClickHouse server (test/fleet/clickhouse.sh starts a private one) and the
# fleet queries of docs/fleet.md run on them. Without clickhouse-server the
# test exits 77 and ctest reports it skipped.
if(TARGET cudaspy-analyze)
  add_test(NAME cli.fleet_push
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fleet/push.sh ${CMAKE_BINARY_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/fleet-work/push)
  set_tests_properties(cli.fleet_push PROPERTIES LABELS cli TIMEOUT 180
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
