# sampler/host.cmake: cs_host, the host sampler (tiers A/B perf_event,
# tier C /proc polling, libpfm4 counters). Included by sampler/CMakeLists.txt,
# which links it into cudaspy-sampler; tests link it with a fake collector.
add_library(cs_host STATIC
  ${CMAKE_CURRENT_LIST_DIR}/host.c
  ${CMAKE_CURRENT_LIST_DIR}/host_poll.c
  ${CMAKE_CURRENT_LIST_DIR}/sched_fsm.c
  ${CMAKE_CURRENT_LIST_DIR}/sched_tab.c
  ${CMAKE_CURRENT_LIST_DIR}/pe_event.c
  ${CMAKE_CURRENT_LIST_DIR}/pe_ring.c
  ${CMAKE_CURRENT_LIST_DIR}/pe_decode.c
  ${CMAKE_CURRENT_LIST_DIR}/pe_tracefs.c
  ${CMAKE_CURRENT_LIST_DIR}/pe_pfm.c)
target_include_directories(cs_host PUBLIC ${CMAKE_CURRENT_LIST_DIR} PRIVATE ${CS_PFM_INC})
target_link_libraries(cs_host PUBLIC cs_core cs_procfs ${CS_PFM_LIB})
