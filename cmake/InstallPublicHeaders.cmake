# Run by `cmake --install` (StagecraftInstall.cmake): installs STAGECRAFT_ENTRY_HEADERS (paths
# under STAGECRAFT_SRC) and every project header they include, directly or through another, into
# CMAKE_INSTALL_PREFIX/STAGECRAFT_INCLUDE_DESTINATION with their module folders.

cmake_policy(VERSION 3.25)  # run inside cmake_install.cmake, which sets no policies

set(stagecraft_pending ${STAGECRAFT_ENTRY_HEADERS})
set(stagecraft_installed)
while(stagecraft_pending)
  list(POP_FRONT stagecraft_pending header)
  if(header IN_LIST stagecraft_installed)
    continue()
  endif()
  list(APPEND stagecraft_installed ${header})
  file(STRINGS ${STAGECRAFT_SRC}/${header} stagecraft_lines REGEX "^#include \"")
  foreach(line IN LISTS stagecraft_lines)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    list(APPEND stagecraft_pending ${included})
  endforeach()
  get_filename_component(folder ${header} DIRECTORY)
  file(INSTALL ${STAGECRAFT_SRC}/${header}
       DESTINATION ${CMAKE_INSTALL_PREFIX}/${STAGECRAFT_INCLUDE_DESTINATION}/${folder})
endwhile()
