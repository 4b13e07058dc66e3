# cmake/install.cmake — what `cmake --install BUILD --prefix PREFIX` lays out,
# and the package config that lets another project write
#   find_package(swadiff 0.2 CONFIG REQUIRED)
# to get swadiff::swadiff (the binary), swadiff::plugin (the plug-in ABI
# header) and swadiff_add_case_tests() (docs/cmake.md):
#
#   PREFIX/bin/swadiff
#   PREFIX/include/swadiff/plugin.h
#   PREFIX/share/swadiff/adapters/   swadiff_adapter.py, the adapters, registry.json
#   PREFIX/share/swadiff/bench/      peers_bench.py (`swadiff bench --device cuda
#                                    --peers --peers-script PATH`)
#   PREFIX/share/swadiff/cases/      the case library (cases/)
#   PREFIX/lib/cmake/swadiff/        swadiffConfig.cmake, ...Version, ...Targets,
#                                    SwadiffCases.cmake
#   PREFIX/share/doc/swadiff/        README.md, LICENSE, docs/, examples/
#
# The binary finds the adapters' helper as ../share/swadiff/adapters from its
# own folder (backends/external/adapter.c), so the prefix can be moved.
# Test: tests/cmake_package.sh (install, then an outside project).
include(CMakePackageConfigHelpers)

set(SWADIFF_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/swadiff CACHE STRING
    "Where swadiff's package config is installed (relative to the prefix)")
set(SWADIFF_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/swadiff)
set(SWADIFF_INSTALL_ADAPTERDIR ${SWADIFF_INSTALL_DATADIR}/adapters)
set(SWADIFF_INSTALL_CASESDIR ${SWADIFF_INSTALL_DATADIR}/cases)
# the binary looks for PREFIX/share/swadiff/adapters: another DATADIR would hide the helper
if(NOT SWADIFF_INSTALL_ADAPTERDIR STREQUAL "share/swadiff/adapters"
   OR NOT CMAKE_INSTALL_BINDIR STREQUAL "bin")
  message(WARNING "swadiff: CMAKE_INSTALL_BINDIR=${CMAKE_INSTALL_BINDIR}, CMAKE_INSTALL_DATADIR=${CMAKE_INSTALL_DATADIR}: "
          "the installed binary looks for its adapter helper in ../share/swadiff/adapters from its folder; "
          "set SWADIFF_ADAPTER_DIR=PREFIX/${SWADIFF_INSTALL_ADAPTERDIR} when running adapters")
endif()

install(TARGETS swadiff swadiff_plugin EXPORT swadiffTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/swadiff DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/adapters/ DESTINATION ${SWADIFF_INSTALL_ADAPTERDIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "*.json" PATTERN "*.md" PATTERN "__pycache__" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/bench/peers_bench.py DESTINATION ${SWADIFF_INSTALL_DATADIR}/bench)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/cases/ DESTINATION ${SWADIFF_INSTALL_CASESDIR}
        FILES_MATCHING PATTERN "*.json" PATTERN "*.md")
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs ${PROJECT_SOURCE_DIR}/examples DESTINATION ${CMAKE_INSTALL_DOCDIR})

install(EXPORT swadiffTargets NAMESPACE swadiff:: FILE swadiffTargets.cmake DESTINATION ${SWADIFF_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/swadiffConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/swadiffConfig.cmake
                              INSTALL_DESTINATION ${SWADIFF_INSTALL_CMAKEDIR}
                              PATH_VARS SWADIFF_INSTALL_ADAPTERDIR SWADIFF_INSTALL_CASESDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version may change the plug-in ABI or the case format
write_basic_package_version_file(${PROJECT_BINARY_DIR}/swadiffConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/swadiffConfig.cmake ${PROJECT_BINARY_DIR}/swadiffConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/SwadiffCases.cmake
        DESTINATION ${SWADIFF_INSTALL_CMAKEDIR})
