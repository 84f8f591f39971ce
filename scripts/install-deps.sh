#!/usr/bin/env bash
# Installs the Debian packages stagecraft builds with, when any is missing. Safe to rerun.
set -euo pipefail
#   scripts/install-deps.sh        the build and test packages
#   scripts/install-deps.sh fuzz   and clang with its libFuzzer runtime (scripts/fuzz.sh)
#   scripts/install-deps.sh format and clang-format (scripts/check-format.sh)
packages=(cmake g++ ninja-build libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libgtest-dev
          libgmock-dev libbenchmark-dev python3-dev pybind11-dev python3-pytest
          python3-venv python3-build  # pip install . and the wheel (tests/python/pip_install.sh)
          python3-pandas  # Result.to_frame() (optional for users; the Python suite tests it)
          chromium      # headless, for the HTML reports' browser test (tests/html/)
          libopenmpi-dev openmpi-bin)  # `mpirun -n K stagecraft plan` (tests/plan_mpirun.sh)
if [ "${1:-}" = "fuzz" ]; then
  packages+=(clang libclang-rt-14-dev)  # Debian 12: libFuzzer is libclang_rt.fuzzer in the latter
fi
if [ "${1:-}" = "format" ]; then
  packages+=(clang-format)
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
