# SwadiffCases.cmake — CTest as swadiff's scheduler: one CTest test per
# case file, so `ctest -j` spreads case files over cores, and with a GPU
# device `ctest --resource-spec-file` spreads them over the GPUs.
#
#   include(/path/to/swadiff/cmake/SwadiffCases.cmake)
#   swadiff_add_case_tests(DIR cases            # every *.json below (not schema/)
#                          SWADIFF $<TARGET_FILE:swadiff> | /usr/bin/swadiff
#                          [DEVICE host|cuda|hip|auto]   # default host
#                          [PREFIX swadiff]              # test names PREFIX.<relative path>
#                          [REPORT_DIR dir]              # one report folder per test
#                          [LABELS l1 l2...] [ARGS extra run arguments...])
#
# Each test runs `swadiff run --device D --jobs 1 FILE`; exit 77 (no usable
# GPU) is a skip.  A case file whose every result was skipped exits 5
# (nothing compared) and fails its test: it checked no kernel.  With a GPU device a test asks for RESOURCE_GROUPS
# "gpus:1"; swadiff reads the GPU CTest allots (CTEST_RESOURCE_GROUP_0_GPUS)
# and runs on it.  Write the resource spec with
#   swadiff list devices --ctest-resource-spec resources.json
# then: ctest -j 8 --resource-spec-file resources.json -L swadiff
function(swadiff_add_case_tests)
  cmake_parse_arguments(SW "" "DIR;SWADIFF;DEVICE;PREFIX;REPORT_DIR" "LABELS;ARGS" ${ARGN})
  if(NOT SW_DIR OR NOT SW_SWADIFF)
    message(FATAL_ERROR "swadiff_add_case_tests: DIR and SWADIFF are required")
  endif()
  if(NOT SW_DEVICE)
    set(SW_DEVICE host)
  endif()
  if(NOT SW_DEVICE MATCHES "^(host|cuda|hip|auto)")
    message(FATAL_ERROR "swadiff_add_case_tests: DEVICE ${SW_DEVICE}: expected host, cuda, hip or auto")
  endif()
  if(NOT SW_PREFIX)
    set(SW_PREFIX swadiff)
  endif()
  get_filename_component(dir "${SW_DIR}" ABSOLUTE)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${dir}/*.json")
  list(FILTER files EXCLUDE REGEX "/schema/")
  if(NOT files)
    message(FATAL_ERROR "swadiff_add_case_tests: no *.json case file under ${dir}")
  endif()
  foreach(f IN LISTS files)
    file(RELATIVE_PATH rel "${dir}" "${f}")
    string(REGEX REPLACE "\\.json$" "" rel "${rel}")
    string(REPLACE "/" "." rel "${rel}")
    set(name "${SW_PREFIX}.${rel}")
    set(cmd "${SW_SWADIFF}" run --device ${SW_DEVICE} --jobs 1)
    if(SW_REPORT_DIR)
      list(APPEND cmd --report "${SW_REPORT_DIR}/${rel}")
    endif()
    add_test(NAME "${name}" COMMAND ${cmd} ${SW_ARGS} "${f}")
    set_tests_properties("${name}" PROPERTIES LABELS "swadiff;${SW_DEVICE};${SW_LABELS}" SKIP_RETURN_CODE 77)
    if(SW_DEVICE MATCHES "^(cuda|hip)$")
      set_tests_properties("${name}" PROPERTIES RESOURCE_GROUPS "gpus:1")
    endif()
  endforeach()
endfunction()
