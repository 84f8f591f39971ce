#!/usr/bin/env bash
# Builds stagecraft with its tests and runs them all (unit + golden) with ctest.
#   scripts/test.sh            Debug build in build-test/
#   SANITIZE=1 scripts/test.sh AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
if [ "${SANITIZE:-0}" = "1" ]; then
  dir=build-asan
  extra=(-DSTAGECRAFT_SANITIZE=ON)
  # The whole serving suite (163 figures, about 55 s in Debug, minutes under the sanitizers)
  # runs in the Debug pass; under the sanitizers its reader, command and simulator are covered
  # by validate/serving-errors and the serve goldens. The docs tests (whether each document's
  # commands still print what it shows) and the headless-browser check of the HTML reports
  # check text and rendering, which the sanitizers cannot; every command family they run has
  # goldens that run under the sanitizers. Together about 5 minutes of test time under ASan.
  skip=(-E '^golden/validate/serving$|^docs/|^html/chromium$')
else
  dir=build-test
  extra=()
  skip=()
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTAGECRAFT_BUILD_TESTS=ON \
  -DSTAGECRAFT_BUILD_BENCH=OFF "${extra[@]}" >/dev/null
cmake --build "$dir"
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" "${skip[@]}"
