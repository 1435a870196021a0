# interpose/ring.cmake: cs_shimring, the ring client the shim links
# (shim_ring.c). PIC, hidden symbols, no LMDB: it runs inside traced programs.
find_package(Threads REQUIRED)
add_library(cs_shimring STATIC ${CMAKE_CURRENT_LIST_DIR}/shim_ring.c)
target_include_directories(cs_shimring PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(cs_shimring PUBLIC Threads::Threads)
set_target_properties(cs_shimring PROPERTIES POSITION_INDEPENDENT_CODE ON
                                             C_VISIBILITY_PRESET hidden)
