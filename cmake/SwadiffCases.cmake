# SwadiffCases.cmake — CTest as swadiff's scheduler: one CTest test per
# case file, so `ctest -j` spreads case files over cores, and with a GPU
# device `ctest --resource-spec-file` spreads them over the GPUs.
#
#   find_package(swadiff CONFIG REQUIRED)       # or add_subdirectory(swadiff),
#                                               # or include(.../SwadiffCases.cmake)
#   swadiff_add_case_tests(DIR cases            # every *.json below (not schema/)
#                          [SWADIFF path|$<TARGET_FILE:...>]  # default: the swadiff::swadiff target
#                          [DEVICE host|cuda|hip|auto]   # default host
#                          [PREFIX swadiff]              # test names PREFIX.<relative path>
#                          [REPORT_DIR dir]              # one report folder per test, dir/<relative path>
#                          [PLUGINS target|path...]      # --plugin each (a target: its file)
#                          [LABELS l1 l2...] [ARGS extra run arguments...])
#
# Each test runs `swadiff run --device D --jobs 1 FILE`; exit 77 (no usable
# GPU) is a skip.  A case file whose every result was skipped exits 5
# (nothing compared) and fails its test: it checked no kernel.  With a GPU device a test asks for RESOURCE_GROUPS
# "gpus:1"; swadiff reads the GPU CTest allots (CTEST_RESOURCE_GROUP_0_GPUS)
# and runs on it.  Write the resource spec with
#   swadiff list devices --ctest-resource-spec resources.json
# then: ctest -j 8 --resource-spec-file resources.json -L swadiff
#
# A relative DIR is read from the calling folder's source dir, a relative
# REPORT_DIR written in its build dir; REPORT_DIR and its parents are created
# at configure time (swadiff creates only the last level of --report).
# docs/cmake.md has the whole story; tests/cmake_package.sh tests it.
include_guard(GLOBAL)

function(swadiff_add_case_tests)
  cmake_parse_arguments(SW "" "DIR;SWADIFF;DEVICE;PREFIX;REPORT_DIR" "LABELS;ARGS;PLUGINS" ${ARGN})
  if(SW_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "swadiff_add_case_tests: unknown arguments ${SW_UNPARSED_ARGUMENTS} "
            "(expected DIR, SWADIFF, DEVICE, PREFIX, REPORT_DIR, PLUGINS, LABELS, ARGS; run options go after ARGS)")
  endif()
  if(NOT SW_DIR)
    message(FATAL_ERROR "swadiff_add_case_tests: DIR is required (the folder of case files)")
  endif()
  if(NOT SW_SWADIFF)
    if(NOT TARGET swadiff::swadiff)
      message(FATAL_ERROR "swadiff_add_case_tests: no SWADIFF given and no swadiff::swadiff target "
              "(find_package(swadiff CONFIG) or add_subdirectory(swadiff) first, or pass SWADIFF /path/to/swadiff)")
    endif()
    set(SW_SWADIFF "$<TARGET_FILE:swadiff::swadiff>")
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
  get_filename_component(dir "${SW_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT IS_DIRECTORY "${dir}")
    message(FATAL_ERROR "swadiff_add_case_tests: DIR ${SW_DIR}: ${dir} is not a folder")
  endif()
  if(SW_REPORT_DIR)
    get_filename_component(SW_REPORT_DIR "${SW_REPORT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    file(MAKE_DIRECTORY "${SW_REPORT_DIR}")
  endif()
  set(plugin_args "")
  foreach(p IN LISTS SW_PLUGINS)
    if(TARGET "${p}")
      list(APPEND plugin_args --plugin "$<TARGET_FILE:${p}>")
    else()
      list(APPEND plugin_args --plugin "${p}")
    endif()
  endforeach()
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
    set(cmd "${SW_SWADIFF}" run --device ${SW_DEVICE} --jobs 1 ${plugin_args})
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
