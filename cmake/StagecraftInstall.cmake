# `cmake --install BUILD [--prefix DIR]`: the run library for programs of their own
# (find_package(stagecraft), then target stagecraft::run; src/README.md, "The installed library"):
#   include/stagecraft/   the public headers: the run library's entry headers and every project
#                         header they include (its value types), found when installing
#   lib/                  the static libraries of the run module and of the modules it links
#   lib/cmake/stagecraft/ stagecraftConfig.cmake, its version file and the exported targets
# Nothing else is installed: not the commands, the command line, the planner, serving or fault
# tolerance, nor the Python module (pip installs that, pyproject.toml).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The run library's entry headers (src/README.md, **run**); their includes are public with them.
set(STAGECRAFT_PUBLIC_ENTRY_HEADERS run/run_setup.h run/simulate.h)

# stagecraft_link_closure(OUT TARGET): TARGET and every stagecraft_* library it links, directly or
# through another.
function(stagecraft_link_closure out target)
  set(closure)
  set(pending ${target})
  while(pending)
    list(POP_FRONT pending current)
    if(current IN_LIST closure)
      continue()
    endif()
    list(APPEND closure ${current})
    get_target_property(links ${current} LINK_LIBRARIES)
    foreach(link IN LISTS links)
      if(link MATCHES "^stagecraft::(.+)$")
        list(APPEND pending stagecraft_${CMAKE_MATCH_1})
      endif()
    endforeach()
  endwhile()
  set(${out} ${closure} PARENT_SCOPE)
endfunction()

stagecraft_link_closure(stagecraft_installed_libraries stagecraft_run)
install(TARGETS ${stagecraft_installed_libraries} EXPORT stagecraftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/stagecraft)
install(EXPORT stagecraftTargets NAMESPACE stagecraft::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stagecraft)

# The headers are followed from the entry headers when installing (InstallPublicHeaders.cmake),
# so the set is what the code includes today, never a list that drifts from it.
install(CODE "
  set(STAGECRAFT_SRC \"${PROJECT_SOURCE_DIR}/src\")
  set(STAGECRAFT_ENTRY_HEADERS \"${STAGECRAFT_PUBLIC_ENTRY_HEADERS}\")
  set(STAGECRAFT_INCLUDE_DESTINATION \"${CMAKE_INSTALL_INCLUDEDIR}/stagecraft\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/InstallPublicHeaders.cmake\")")

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/stagecraftConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/stagecraftConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stagecraft)
# 0.x: a minor version may change the interface.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/stagecraftConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/stagecraftConfig.cmake
              ${PROJECT_BINARY_DIR}/stagecraftConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stagecraft)
