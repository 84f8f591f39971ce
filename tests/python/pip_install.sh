#!/bin/sh
# The installed Python package (pyproject.toml, python/stagecraft_build.py), from a build whose
# module is already built (STAGECRAFT_BUILD_DIR: nothing is compiled again):
#   1. `pip install --no-build-isolation REPO` into a fresh venv, then the README's line from a
#      folder outside the repository prints the makespan `stagecraft simulate` prints;
#   2. `python3 -m build --wheel --no-isolation`, the wheel into a second fresh venv, and the
#      Python suite (tests/python/) against it (STAGECRAFT_INSTALLED=1: the package must be the
#      venv's, with its own examples).
# The venvs and the folder the package is used from are made outside the repository.
#   pip_install.sh REPO BUILD_DIR STAGECRAFT_BINARY PYTHON
set -eu
repo=$1 build=$2 cli=$3 python=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/stagecraft-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/elsewhere"
export STAGECRAFT_BUILD_DIR="$build" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_ROOT_USER_ACTION=ignore
unset STAGECRAFT_PYTHON_DIR PYTHONPATH

"$python" -m venv "$work/pip-venv"
"$work/pip-venv/bin/pip" install -q --no-build-isolation "$repo" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log" >&2; exit 1; }
got=$(cd "$work/elsewhere" && "$work/pip-venv/bin/python" -c "import stagecraft; print(stagecraft.simulate(stagecraft.examples.path('deepseek-v4.1-flash.yaml')).makespan_ms)")
want=$(cd "$repo" && "$cli" simulate examples/deepseek-v4.1-flash.yaml |
       sed -n 's/^  makespan  *\([0-9.]*\) ms$/\1/p')
echo "pip install: makespan_ms $got; stagecraft simulate: $want ms"
[ -n "$want" ] && [ "$got" = "$want" ]

(cd "$repo" && "$python" -m build --wheel --no-isolation --outdir "$work/dist" .) \
  >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
"$python" -m venv "$work/wheel-venv"
"$work/wheel-venv/bin/pip" install -q "$work"/dist/stagecraft-*.whl
# The suite runs with Debian's pytest: the venv now sees the system's packages after its own.
"$python" -m venv --system-site-packages --without-pip "$work/wheel-venv"
cd "$work/elsewhere"
STAGECRAFT_INSTALLED=1 STAGECRAFT_BINARY="$cli" \
  "$work/wheel-venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/tests/python"
