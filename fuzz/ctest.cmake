# The test suite's fuzz step (label fuzz): each target runs for MUGRAPH_FUZZ_SECONDS on its
# committed corpus, so every regression input is replayed and a little new ground is covered
# on every run. Needs a fuzz build (fuzz/README.md); scripts/setup.sh makes one with clang in
# build-fuzz and points MUGRAPH_FUZZ_BUILD_DIR at it. Without one, there are no fuzz tests.
set(MUGRAPH_FUZZ_BUILD_DIR "" CACHE PATH "A fuzz build (MUGRAPH_FUZZ=ON) whose targets ctest runs")
set(MUGRAPH_FUZZ_SECONDS 10 CACHE STRING "Seconds each fuzz target runs in ctest")
if(MUGRAPH_FUZZ_BUILD_DIR)
  include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)
  foreach(target ${mugraph_fuzz_targets})
    add_test(NAME fuzz.${target}
             COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh ${target} ${MUGRAPH_FUZZ_SECONDS})
    # New inputs go to a folder emptied on each run, never into the committed corpus.
    set(environment MUGRAPH_FUZZ_BUILD_DIR=${MUGRAPH_FUZZ_BUILD_DIR}
                    MUGRAPH_FUZZ_FRESH_WORK_DIR=${CMAKE_BINARY_DIR}/fuzz-ctest/${target})
    set_tests_properties(fuzz.${target} PROPERTIES LABELS fuzz TIMEOUT 300
                         ENVIRONMENT "${environment}")
  endforeach()
endif()
