# Checks the module dependency rule of src/README.md ("The dependency rule"), run by ctest as
# `module_deps`:
#   cmake -DSRC=<src folder> -P cmake/CheckModuleDeps.cmake
# 1. Every module (a folder of SRC whose CMakeLists.txt calls stagecraft_add_module) has a row in
#    the table of SRC/README.md, and the row's modules (the `backticked` names in its second
#    column) are exactly the stagecraft::NAME targets the module's stagecraft_add_module lists.
# 2. The table has no cycle.
# 3. Every #include "X/..." of a module's .h and .cc files names the module itself or a module it
#    lists (a direct dependency: a module that uses another names it, even where a dependency of
#    its own already pulls it in, so the table says what each module reaches). A test file
#    (*_test.cc) may also include what its stagecraft_add_test targets list, through their
#    dependencies, and the header-only `testing/`.
# Each broken rule is one line naming the file (and line) and what the table allows; the script
# fails when there is any.

cmake_minimum_required(VERSION 3.20)

if(NOT SRC)
  message(FATAL_ERROR "CheckModuleDeps: give -DSRC=<the src folder>")
endif()
get_filename_component(SRC "${SRC}" ABSOLUTE)

# The names of the stagecraft::NAME targets in every call of `function_name` in `cmake_file`.
function(targets_in_calls cmake_file function_name out)
  file(READ "${cmake_file}" text)
  string(REGEX MATCHALL "${function_name}\\([^)]*\\)" calls "${text}")
  set(names "")
  foreach(call IN LISTS calls)
    string(REGEX MATCHALL "stagecraft::[a-z_]+" targets "${call}")
    foreach(target IN LISTS targets)
      string(REPLACE "stagecraft::" "" name "${target}")
      list(APPEND names "${name}")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# The table: rows "| `module` | `dep`, `dep` ... |" of SRC/README.md.
file(STRINGS "${SRC}/README.md" rows REGEX "^\\| `[a-z_]+` \\|")
set(modules_in_table "")
foreach(row IN LISTS rows)
  string(REGEX MATCH "^\\| `([a-z_]+)` \\|([^|]*)\\|" matched "${row}")
  set(module "${CMAKE_MATCH_1}")
  string(REGEX MATCHALL "`[a-z_]+`" deps "${CMAKE_MATCH_2}")
  string(REPLACE "`" "" deps "${deps}")
  set(table_${module} "${deps}")
  list(APPEND modules_in_table "${module}")
endforeach()

set(problems "")

# The modules the build defines.
file(GLOB entries RELATIVE "${SRC}" "${SRC}/*")
set(modules "")
foreach(entry IN LISTS entries)
  if(EXISTS "${SRC}/${entry}/CMakeLists.txt")
    file(READ "${SRC}/${entry}/CMakeLists.txt" cmake_text)
    if(cmake_text MATCHES "stagecraft_add_module\\(")
      list(APPEND modules "${entry}")
    endif()
  endif()
endforeach()

foreach(module IN LISTS modules)
  if(NOT module IN_LIST modules_in_table)
    list(APPEND problems
         "src/${module}: a module with no row in src/README.md's dependency table (add one)")
    continue()
  endif()
  targets_in_calls("${SRC}/${module}/CMakeLists.txt" "stagecraft_add_module" built)
  list(REMOVE_ITEM built "${module}")
  set(listed "${table_${module}}")
  list(SORT built)
  list(SORT listed)
  if(NOT "${built}" STREQUAL "${listed}")
    string(REPLACE ";" ", " built_text "${built}")
    string(REPLACE ";" ", " listed_text "${listed}")
    list(APPEND problems
         "src/${module}/CMakeLists.txt: the module depends on [${built_text}] but src/README.md's table says [${listed_text}] (make them agree)")
  endif()
endforeach()

# closure_<module>: every module it depends on, directly or not.
foreach(module IN LISTS modules_in_table)
  set(closure "")
  set(frontier "${table_${module}}")
  while(frontier)
    list(POP_FRONT frontier next)
    if(next IN_LIST closure)
      continue()
    endif()
    list(APPEND closure "${next}")
    list(APPEND frontier ${table_${next}})
  endwhile()
  if(module IN_LIST closure)
    list(APPEND problems "src/README.md: module ${module} depends on itself through the table (a cycle)")
  endif()
  set(closure_${module} "${closure}")
endforeach()

foreach(module IN LISTS modules)
  if(NOT module IN_LIST modules_in_table)
    continue()
  endif()
  set(allowed "${module};${table_${module}}")
  targets_in_calls("${SRC}/${module}/CMakeLists.txt" "stagecraft_add_test" test_targets)
  set(test_allowed "${module};${closure_${module}};testing")
  foreach(target IN LISTS test_targets)
    list(APPEND test_allowed "${target}" ${closure_${target}})
  endforeach()
  string(REPLACE ";" ", " allowed_text "${table_${module}}")
  if(allowed_text STREQUAL "")
    set(allowed_text "nothing")
  endif()
  file(GLOB sources "${SRC}/${module}/*.h" "${SRC}/${module}/*.cc")
  list(SORT sources)
  foreach(source IN LISTS sources)
    get_filename_component(file_name "${source}" NAME)
    set(may "${allowed}")
    if(file_name MATCHES "_test\\.cc$")
      set(may "${test_allowed}")
    endif()
    file(STRINGS "${source}" includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "^#include \"(([a-z_]+)/[^\"]*)\"" matched "${line}")
      set(header "${CMAKE_MATCH_1}")
      set(target_module "${CMAKE_MATCH_2}")
      if(NOT IS_DIRECTORY "${SRC}/${target_module}" OR target_module IN_LIST may)
        continue()
      endif()
      list(APPEND problems
           "src/${module}/${file_name}: includes '${header}', but ${module} may include only ${allowed_text} (src/README.md, \"The dependency rule\": its direct dependencies): move the code, or add the dependency to the table and to src/${module}/CMakeLists.txt if it keeps the graph acyclic")
    endforeach()
  endforeach()
endforeach()

if(problems)
  list(LENGTH problems count)
  foreach(problem IN LISTS problems)
    message("${problem}")
  endforeach()
  message(FATAL_ERROR "module dependencies: ${count} broken")
endif()
list(LENGTH modules count)
message("module dependencies: ok (${count} modules)")
