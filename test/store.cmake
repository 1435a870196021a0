# Storage and collector tests (store/runfile_*.c, sampler/collector.c,
# interpose/shim_ring.c): real files, real cudaspy-sampler processes.
add_executable(test_runfile ${CMAKE_CURRENT_LIST_DIR}/unit/test_runfile.c)
target_include_directories(test_runfile PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_SOURCE_DIR}/store)
target_link_libraries(test_runfile PRIVATE cs_runfile)
add_test(NAME unit.runfile COMMAND test_runfile)
set_tests_properties(unit.runfile PROPERTIES LABELS unit TIMEOUT 120)

# The compact CUDA block encoding alone (store/cudablk.c).
add_executable(test_cudablk ${CMAKE_CURRENT_LIST_DIR}/unit/test_cudablk.c)
target_include_directories(test_cudablk PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_cudablk PRIVATE cs_runfile)
add_test(NAME unit.cudablk COMMAND test_cudablk)
set_tests_properties(unit.cudablk PROPERTIES LABELS unit TIMEOUT 120)

# A stand-in traced program pushing through the real ring client.
add_executable(cs_producer ${CMAKE_CURRENT_LIST_DIR}/store/producer.c)
target_link_libraries(cs_producer PRIVATE cs_shimring)

add_executable(test_collector ${CMAKE_CURRENT_LIST_DIR}/unit/test_collector.c)
target_include_directories(test_collector PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_collector PRIVATE cs_runfile)
add_test(NAME unit.collector
         COMMAND test_collector $<TARGET_FILE:cudaspy-sampler> $<TARGET_FILE:cs_producer>)
set_tests_properties(unit.collector PROPERTIES LABELS unit TIMEOUT 240)
# Issue 25: paced producers through the default rings into a file on disk,
# producers and the collector SIGKILLed mid-stream (about 15 s).
# 100 records per ms and producer; 10 under the sanitizers, whose collector
# is several times slower (TSan's dropped most of 100).
if(CS_SANITIZE)
  set(CS_PACED_PER_MS 10)
else()
  set(CS_PACED_PER_MS 100)
endif()
add_test(NAME unit.collector_paced
         COMMAND test_collector $<TARGET_FILE:cudaspy-sampler> $<TARGET_FILE:cs_producer> paced
                 ${CS_PACED_PER_MS})
set_tests_properties(unit.collector_paced PROPERTIES LABELS "unit;slow" TIMEOUT 240)

# The run file is flushed to disk by the store's thread: a slow fdatasync
# never holds up the collector's loop.
add_executable(test_flush ${CMAKE_CURRENT_LIST_DIR}/unit/test_flush.c)
target_include_directories(test_flush PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_flush PRIVATE cs_collect)
add_test(NAME unit.flush COMMAND test_flush)
set_tests_properties(unit.flush PROPERTIES LABELS unit TIMEOUT 60)

# Map growth from 1 MiB past 1 GiB (writes ~1.1 GiB to /dev/shm or /tmp; skips when
# less than 3 GiB are free) and cuts at every page boundary.
add_executable(test_store_growth ${CMAKE_CURRENT_LIST_DIR}/fault/test_store_growth.c)
target_include_directories(test_store_growth PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_store_growth PRIVATE cs_runfile)
add_test(NAME fault.store_growth COMMAND test_store_growth)
set_tests_properties(fault.store_growth PROPERTIES LABELS "fault;slow" TIMEOUT 300)

# cudaspy-sampler's command line: --version, --help, exit codes 2 and 3.
add_test(NAME cli.sampler COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/store/cli_sampler.sh
                                  $<TARGET_FILE:cudaspy-sampler>)
set_tests_properties(cli.sampler PROPERTIES LABELS unit TIMEOUT 60)

# The run file's file system fills up mid-run (3 MiB tmpfs; skips without root).
add_executable(cs_open_run ${CMAKE_CURRENT_LIST_DIR}/store/open_run.c)
target_link_libraries(cs_open_run PRIVATE cs_runfile)
add_test(NAME fault.store_enospc COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/store/fault_enospc.sh
                                         $<TARGET_FILE:cudaspy-sampler>
                                         $<TARGET_FILE:cs_producer> $<TARGET_FILE:cs_open_run>)
set_tests_properties(fault.store_enospc PROPERTIES LABELS fault TIMEOUT 120)

# record --max-size, the flight recorder (issue 25): a capped run stays under
# its cap, keeps the newest records whole, and its aggregates give the exact
# counts and p50/p99 within 0.4 % of an uncapped run of the same workload;
# a SIGKILLed collector leaves a readable file.
add_executable(cs_flight_check ${CMAKE_CURRENT_LIST_DIR}/store/flight_check.c)
target_link_libraries(cs_flight_check PRIVATE cs_runfile)
add_test(NAME cli.flight COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/store/flight.sh
                                 $<TARGET_FILE:cudaspy-sampler> $<TARGET_FILE:cs_producer>
                                 $<TARGET_FILE:cs_flight_check> $<TARGET_FILE:cudaspy-analyze>)
set_tests_properties(cli.flight PROPERTIES LABELS unit TIMEOUT 120)
add_test(NAME cli.flight_usage COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/store/flight_cli.sh
                                       $<TARGET_FILE:cudaspy_launcher>
                                       $<TARGET_FILE:cudaspy-sampler>)
set_tests_properties(cli.flight_usage PROPERTIES LABELS unit TIMEOUT 60)

# Compact CUDA blocks (format 2, issue 25): the same records read from a
# version-1 file and from its compact recoding give byte-identical reports.
add_executable(cs_recode ${CMAKE_CURRENT_LIST_DIR}/store/recode.c)
target_link_libraries(cs_recode PRIVATE cs_runfile)
add_test(NAME store.compact_same_json
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/store/same_json.sh $<TARGET_FILE:cudaspy-analyze>
                 $<TARGET_FILE:cs_recode> ${CMAKE_CURRENT_BINARY_DIR}/compact_same_json
                 ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/runfile/seed-small.run)
set_tests_properties(store.compact_same_json PROPERTIES LABELS unit TIMEOUT 120)
