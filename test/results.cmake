# test/results.cmake: data.results.<campaign>, one per bench/results/gpu-*
# folder: bench/results_compact.py rerun runs every duty_pool.py and
# conc_pairs.py command that the campaign's kept files quote, on its
# data.jsonl, and fails when one no longer prints what is quoted, so the
# scripts keep the figures of the docs reproducible (issue 26). Needs
# python3; without it there are no such tests. Label slow: the bootstrap
# takes up to 10 s a campaign.
find_program(CS_PYTHON3 python3)
if(CS_PYTHON3)
  file(GLOB CS_CAMPAIGNS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/results/gpu-*/data.jsonl)
  foreach(data ${CS_CAMPAIGNS})
    get_filename_component(dir ${data} DIRECTORY)
    get_filename_component(campaign ${dir} NAME)
    add_test(NAME data.results.${campaign}
             COMMAND ${CS_PYTHON3} ${CMAKE_SOURCE_DIR}/bench/results_compact.py rerun ${data})
    set_tests_properties(data.results.${campaign} PROPERTIES LABELS "slow" TIMEOUT 120)
  endforeach()
endif()
