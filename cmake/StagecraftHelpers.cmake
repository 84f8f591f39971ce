# Helpers shared by every CMakeLists.txt of the project.

# stagecraft_set_warnings(TARGET): the project's warning set on one target.
function(stagecraft_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow)
  # GCC 12 reports false -Wrestrict positives inside std::string at -O2/-O3 (GCC bug 105329).
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
  if(STAGECRAFT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(STAGECRAFT_SANITIZE OR STAGECRAFT_BUILD_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(STAGECRAFT_BUILD_FUZZ)  # coverage for libFuzzer; the fuzz targets link libFuzzer itself
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# stagecraft_add_module(NAME SOURCES... DEPS ...): one library target per module (DESIGN.md §6),
# aliased as stagecraft::NAME (its name when installed, cmake/StagecraftInstall.cmake), with src/
# on the include path.
function(stagecraft_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(stagecraft_${name} STATIC ${ARG_SOURCES})
  add_library(stagecraft::${name} ALIAS stagecraft_${name})
  set_target_properties(stagecraft_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(stagecraft_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
                                                       $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  target_compile_features(stagecraft_${name} PUBLIC cxx_std_20)
  target_link_libraries(stagecraft_${name} PUBLIC ${ARG_DEPS})
  if(STAGECRAFT_SANITIZE OR STAGECRAFT_BUILD_FUZZ)
    target_link_options(stagecraft_${name} PUBLIC -fsanitize=address,undefined)
  endif()
  stagecraft_set_warnings(stagecraft_${name})
endfunction()

# stagecraft_add_test(NAME SOURCES... DEPS ...): one GoogleTest executable registered with ctest.
function(stagecraft_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  if(NOT STAGECRAFT_BUILD_TESTS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  stagecraft_set_warnings(${name})
  include(GoogleTest)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()
