#!/bin/sh
# The installed C++ library (cmake/StagecraftInstall.cmake): `cmake --install` of an existing
# build into a clean prefix (nothing is compiled again), then a program of its own
# (consumer/) built with find_package(stagecraft) against that prefix alone, whose makespan of
# the bundled example must be the one `stagecraft simulate` prints.
#   find_package.sh BUILD_DIR STAGECRAFT_BINARY WORK_DIR CXX_COMPILER GENERATOR
set -eu
build=$1 cli=$2 work=$3 cxx=$4 generator=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
# Only the run library and its value types: none of the modules above it, no tests, no sources.
for module in commands cli plan serve fault precision testing; do
  if [ -e "$prefix/include/stagecraft/$module" ] || [ -e "$prefix/lib/libstagecraft_$module.a" ]; then
    echo "find_package: $module is installed, but only the run library is public" >&2
    exit 1
  fi
done
if find "$prefix" -name '*.cc' -o -name '*_test.*' | grep .; then
  echo "find_package: sources or tests installed (above)" >&2
  exit 1
fi
echo "installed: $(find "$prefix/include" -name '*.h' | wc -l) headers," \
     "$(find "$prefix/lib" -name '*.a' | wc -l) libraries"

cmake -S "$here/consumer" -B "$work/consumer" -G "$generator" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log"
grep -q "^stagecraft_DIR:PATH=$prefix/lib/cmake/stagecraft\$" "$work/consumer/CMakeCache.txt" || {
  echo "find_package: stagecraft was not found in $prefix:" >&2
  grep '^stagecraft_DIR' "$work/consumer/CMakeCache.txt" >&2
  exit 1
}
cmake --build "$work/consumer" >"$work/build.log" || { cat "$work/build.log" >&2; exit 1; }

got=$("$work/consumer/simulate_bundled")
want=$("$cli" simulate | sed -n 's/^  makespan  *\([0-9.]*\) ms$/makespan \1 ms/p')
echo "program: $got; stagecraft simulate: $want"
[ -n "$want" ] && [ "$got" = "$want" ]
