# `cmake --install`: the dtsim executable, the libraries and headers of the public API, and a
# CMake package, so that a program outside this tree can
#   find_package(dtsim REQUIRED)
#   target_link_libraries(my_dtsim PRIVATE dtsim::dtsim)
# register its own algorithms, models, compressors or orders and run the usual command line
# with them (docs/extending.md, examples/).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# dtsim::dtsim: everything, the command line included.
add_library(dtsim_all INTERFACE)
target_link_libraries(dtsim_all INTERFACE dtsim_cli)

set(dtsim_exported dtsim_options dtsim_core dtsim_data dtsim_models dtsim_cuda dtsim_topologies
    dtsim_system dtsim_engine dtsim_compression dtsim_ordering dtsim_optimizers dtsim_hdf5
    dtsim_trace dtsim_scenario dtsim_analysis dtsim_sweep_runner dtsim_cli dtsim_all)
foreach(target ${dtsim_exported})
  string(REGEX REPLACE "^dtsim_" "" short ${target})
  if(short STREQUAL "all")
    set(short dtsim)
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${short})
endforeach()

install(TARGETS dtsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${dtsim_exported} EXPORT dtsimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Headers keep their paths below include/dtsim ("sim/optimizers/algorithm_setup.hpp").
foreach(dir sim models cuda topologies data analysis apps)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dtsim
          FILES_MATCHING PATTERN "*.hpp")
endforeach()
# The analysis scripts, for `dtsim report` of an installed dtsim (apps/plot_script.hpp) and
# for users' own tables and figures.
install(FILES analysis/cli_input.py analysis/pivot.py analysis/plot.py analysis/seed_pairs.py
              analysis/stats.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/dtsim/analysis)
install(EXPORT dtsimTargets NAMESPACE dtsim:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dtsim)
configure_package_config_file(cmake/dtsimConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/dtsimConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dtsim)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dtsimConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dtsimConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/dtsimConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dtsim)
