# test/fuzz.cmake: libFuzzer targets (test/fuzz/fuzz_<target>.c), built only
# with clang and -DCS_FUZZ=ON, in their own tree (scripts/fuzz.sh configures
# build-fuzz with ASan+UBSan and -fsanitize=fuzzer-no-link for every library,
# so coverage reaches the code under test). Seeds: test/fuzz/corpus/<target>/.
#   fuzz_runfile  run-file reader + analysis on a mutated run file
#   fuzz_cudablk  the compact CUDA block decoder on a mutated block value
#   fuzz_mcp      MCP request lines against two loaded runs
#   fuzz_cli      cudaspy-analyze and cudaspy-sampler command lines
#   fuzz_summary  the saved gate summary reader (+ gate_eval)
option(CS_FUZZ "build the libFuzzer targets (clang only)" OFF)
if(CS_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CS_FUZZ needs clang (libFuzzer): CC=clang cmake -DCS_FUZZ=ON ...")
  endif()
  set(FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR}/fuzz)

  # Everything of cudaspy-analyze but its main(); analyzer/main.c again as
  # an object with main renamed, for fuzz_cli.
  file(GLOB_RECURSE FUZZ_ANALYZE_SRCS ${CMAKE_SOURCE_DIR}/analyzer/*.c)
  list(REMOVE_ITEM FUZZ_ANALYZE_SRCS ${CMAKE_SOURCE_DIR}/analyzer/main.c)
  add_library(fuzz_analyze STATIC ${FUZZ_ANALYZE_SRCS})
  target_include_directories(fuzz_analyze PUBLIC ${CMAKE_SOURCE_DIR}/analyzer ${CS_JANSSON_INC})
  target_link_libraries(fuzz_analyze PUBLIC cs_runfile cs_core cs_samplerfind ${CS_LMDB_LIB}
                        ${CS_JANSSON_LIB} m)
  add_library(fuzz_analyze_main OBJECT ${CMAKE_SOURCE_DIR}/analyzer/main.c)
  target_compile_definitions(fuzz_analyze_main PRIVATE main=cs_analyze_main)

  function(cs_fuzz name)
    add_executable(${name} ${FUZZ_DIR}/${name}.c ${ARGN})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE fuzz_analyze ${CMAKE_DL_LIBS})
  endfunction()

  cs_fuzz(fuzz_runfile)
  cs_fuzz(fuzz_cudablk)
  cs_fuzz(fuzz_summary)
  cs_fuzz(fuzz_mcp)
  target_compile_definitions(fuzz_mcp PRIVATE
    CS_FUZZ_RUN="${FUZZ_DIR}/corpus/runfile/seed-small.run")
  cs_fuzz(fuzz_cli ${FUZZ_DIR}/fuzz_cli_sampler.c ${CMAKE_SOURCE_DIR}/sampler/privs.c
          ${CMAKE_SOURCE_DIR}/sampler/beside.c $<TARGET_OBJECTS:fuzz_analyze_main>)
  target_include_directories(fuzz_cli PRIVATE ${CMAKE_SOURCE_DIR}/sampler)
  if(TARGET cs_host)
    target_compile_definitions(fuzz_cli PRIVATE CS_HAVE_HOST=1)
    target_link_libraries(fuzz_cli PRIVATE cs_host cs_collect cs_host cs_collect)
  else()
    target_link_libraries(fuzz_cli PRIVATE cs_collect)
  endif()
endif()
