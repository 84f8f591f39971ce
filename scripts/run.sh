#!/usr/bin/env bash
# Builds stagecraft (Release: the tool and the Python module, which `import stagecraft` then
# loads from the repository root) and runs the main job: a simulation of the bundled example.
# Extra arguments go to `stagecraft simulate`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTAGECRAFT_BUILD_TESTS=OFF \
  -DSTAGECRAFT_BUILD_BENCH=OFF >/dev/null
cmake --build build --target stagecraft _native
./build/src/cli/stagecraft simulate "$@"
