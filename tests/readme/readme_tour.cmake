# The README is a test (tests/readme/README.md): every shell block of
# README.md and of docs/*.md that holds a kvsim command is one ctest,
# `readme.BLOCK` (`readme.docs.DOC.BLOCK` for docs/DOC.md), which runs the
# block's commands in a fresh folder (a view of the source tree, so a block
# cannot read another block's output) and holds every number its comments
# quote to what the commands printed and wrote. The blocks are read from the
# documents when CMake configures, and again whenever a document changes.
#
# A block that replays ../shared/data skips (exit 77, "Skipped" in ctest)
# with a message where the folder is absent. A block whose own text says it
# takes minutes (a wall-clock time it quotes beside a command, summed over
# the block, above KVSIM_TOUR_LONG_SECONDS) is registered only with
# -DKVSIM_README_LONG=ON, so that ctest on 2 cores stays within its budget.

option(KVSIM_README_LONG "Also run the README blocks that take minutes (calibrate --cv on every GPU row)" OFF)
set(KVSIM_TOUR_LONG_SECONDS 120)

# Under the sanitizers every run is 20-30x slower (the tour would take most
# of an hour on 2 cores), and the tour checks what the text says, which a
# sanitizer build does not change: `make asan` leaves it to `make test`.
if(KVSIM_SANITIZE)
  message(STATUS "KVSIM_SANITIZE: the README tour tests are not registered")
  return()
endif()
if(NOT Python_EXECUTABLE OR NOT EXISTS "${Python_EXECUTABLE}")
  message(STATUS "no python3: the README tour tests are not registered")
  return()
endif()

set(KVSIM_TOUR ${CMAKE_SOURCE_DIR}/tests/readme/readme_tour.py)
file(GLOB KVSIM_TOUR_DOCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
list(PREPEND KVSIM_TOUR_DOCS ${CMAKE_SOURCE_DIR}/README.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KVSIM_TOUR_DOCS}
             ${KVSIM_TOUR} ${CMAKE_SOURCE_DIR}/tests/readme/tour_doc.py)
execute_process(COMMAND ${Python_EXECUTABLE} ${KVSIM_TOUR} cmake --source ${CMAKE_SOURCE_DIR} ${KVSIM_TOUR_DOCS}
                OUTPUT_VARIABLE tour_blocks RESULT_VARIABLE tour_result)
if(NOT tour_result EQUAL 0)
  message(FATAL_ERROR "tests/readme/readme_tour.py could not read the documents' blocks")
endif()
string(REPLACE "\n" ";" tour_blocks "${tour_blocks}")

foreach(entry ${tour_blocks})
  if(entry STREQUAL "")
    continue()
  endif()
  string(REPLACE "|" ";" fields "${entry}")
  list(GET fields 0 block)
  list(GET fields 1 doc)
  list(GET fields 2 quoted_wall_s)
  get_filename_component(stem ${doc} NAME_WE)
  if(doc STREQUAL "${CMAKE_SOURCE_DIR}/README.md")
    set(test readme.${block})
  else()
    set(test readme.docs.${stem}.${block})
  endif()
  set(timeout 300)
  if(quoted_wall_s GREATER KVSIM_TOUR_LONG_SECONDS)
    if(NOT KVSIM_README_LONG)
      continue()
    endif()
    math(EXPR timeout "3 * ${quoted_wall_s}")
  endif()
  add_test(NAME ${test}
           COMMAND ${Python_EXECUTABLE} ${KVSIM_TOUR} run --source ${CMAKE_SOURCE_DIR}
                   --kvsim $<TARGET_FILE:kvsim> --work ${CMAKE_BINARY_DIR}/readme-tour/${test} ${doc} ${block})
  set_tests_properties(${test} PROPERTIES SKIP_RETURN_CODE 77 LABELS readme TIMEOUT ${timeout})
endforeach()

# The rules on fixed text: which numbers are results, when one matches, how
# a block and its tables are read, what the fresh folder holds.
add_test(NAME readme.rules COMMAND ${Python_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/readme/test_tour_rules.py)
set_tests_properties(readme.rules PROPERTIES LABELS readme TIMEOUT 60)

# The test of the test: the same check on a copy of README.md with one
# quoted number edited must fail, at that number's line. One plain number,
# one quoted with a tilde (one unit of its last digit), one in a table
# under a block, and a block that reads a folder it did not write.
function(kvsim_tour_mutation name block old new)
  add_test(NAME readme.mutation.${name}
           COMMAND ${Python_EXECUTABLE} ${KVSIM_TOUR} mutate --source ${CMAKE_SOURCE_DIR}
                   --kvsim $<TARGET_FILE:kvsim> --work ${CMAKE_BINARY_DIR}/readme-tour/mutation.${name}
                   --old ${old} --new ${new} ${ARGN} ${CMAKE_SOURCE_DIR}/README.md ${block})
  set_tests_properties(readme.mutation.${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS readme TIMEOUT 300)
endfunction()
kvsim_tour_mutation(plain capacity-1 "weights 61.02 GiB" "weights 61.03 GiB")
kvsim_tour_mutation(tilde compare "from ~224 to" "from ~226 to")
kvsim_tour_mutation(table rag-2 "| 130.9 | 310.5 |" "| 130.9 | 310.7 |")
kvsim_tour_mutation(own-folder check "--quiet --out out/default" "--quiet --out out/default-2"
                    --fail-line-offset 1)
