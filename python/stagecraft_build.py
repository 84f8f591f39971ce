"""stagecraft's PEP 517 build backend (pyproject.toml): `pip install .` and `python3 -m build
--wheel --no-isolation` drive CMake for the native module and pack the wheel with the standard
library alone, so both work offline in a fresh venv, which holds pip and setuptools but not the
`wheel` package that setuptools 66's bdist_wheel needs.

The native module is the `_native` target of a CMake build folder:
  STAGECRAFT_BUILD_DIR unset  build/ at the source root, configured as scripts/run.sh configures
                              it (Release, no tests), so the README's build and pip share it
  STAGECRAFT_BUILD_DIR=DIR    that folder: built as it is configured (a test build's module is
                              reused, python/CMakeLists.txt's python/pip-install test); configured
                              as above when it has no CMakeCache.txt yet
The wheel holds stagecraft/ (the Python half, its type stubs and py.typed), the module, and the
examples/ files under stagecraft/examples/ (stagecraft.examples.path). The version is
CMakeLists.txt's project version, the one the module reports as stagecraft.__version__.
"""

import base64
import hashlib
import importlib.machinery
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

NAME = "stagecraft"
SUMMARY = "Pipeline-parallel training and serving simulator (Python binding of the run library)"


def _source_root():
    return os.getcwd()  # PEP 517: the hooks run in the source tree's root


def _version():
    with open(os.path.join(_source_root(), "CMakeLists.txt"), encoding="utf-8") as cmake:
        match = re.search(r"project\(\s*stagecraft\s+VERSION\s+([0-9.]+)", cmake.read())
    if not match:
        raise RuntimeError("stagecraft_build: no `project(stagecraft VERSION x.y.z)` in CMakeLists.txt")
    return match.group(1)


def _tag():
    interpreter = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{interpreter}-{interpreter}{sys.abiflags}-{platform}"


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _metadata_files():
    metadata = "\n".join([
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {_version()}",
        f"Summary: {SUMMARY}",
        "Requires-Python: >=3.9",
        "",
    ])
    wheel = "\n".join([
        "Wheel-Version: 1.0",
        "Generator: stagecraft_build (python/stagecraft_build.py)",
        "Root-Is-Purelib: false",
        f"Tag: {_tag()}",
        "",
    ])
    return {"METADATA": metadata.encode(), "WHEEL": wheel.encode()}


def _run(command):
    print("stagecraft_build: " + " ".join(command), flush=True)
    subprocess.run(command, check=True)


def _build_native():
    """Builds the `_native` target (see the module's doc) and returns the module's path."""
    root = _source_root()
    given = os.environ.get("STAGECRAFT_BUILD_DIR")
    build = os.path.abspath(given or os.path.join(root, "build"))
    if not given or not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        # scripts/run.sh's configuration, for the interpreter that installs (its venv's base).
        python = getattr(sys, "_base_executable", sys.executable)
        _run(["cmake", "-S", root, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
              "-DSTAGECRAFT_BUILD_TESTS=OFF", "-DSTAGECRAFT_BUILD_BENCH=OFF",
              "-DSTAGECRAFT_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={python}"])
    _run(["cmake", "--build", build, "--target", "_native"])
    folder = os.path.join(build, "python")
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    built = sorted(name for name in os.listdir(folder) if name.startswith("_native"))
    for name in built:
        if any(name == "_native" + suffix for suffix in suffixes):
            return os.path.join(folder, name)
    raise RuntimeError(f"stagecraft_build: {folder} holds {built or 'no _native module'}, none for "
                       f"this interpreter ({suffixes[0]}); build into a fresh folder "
                       f"(STAGECRAFT_BUILD_DIR) with -DPython_EXECUTABLE={sys.executable}")


def _package_files(native):
    """(path in the wheel, path on disk) of everything the wheel holds but its metadata."""
    root = _source_root()
    files = []
    package = os.path.join(root, NAME)
    for parent, folders, names in os.walk(package):
        folders[:] = sorted(name for name in folders if name != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".pyi")) or name == "py.typed":
                path = os.path.join(parent, name)
                files.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
    files.append((f"{NAME}/{os.path.basename(native)}", native))
    examples = os.path.join(root, "examples")
    for parent, folders, names in os.walk(examples):
        folders.sort()
        for name in sorted(names):
            path = os.path.join(parent, name)
            relative = os.path.relpath(path, examples).replace(os.sep, "/")
            files.append((f"{NAME}/examples/{relative}", path))
    return files


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = os.path.join(metadata_directory, _dist_info())
    os.makedirs(folder, exist_ok=True)
    for name, data in _metadata_files().items():
        with open(os.path.join(folder, name), "wb") as out:
            out.write(data)
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    native = _build_native()
    wheel_name = f"{NAME}-{_version()}-{_tag()}.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as wheel:
        for arcname, path in _package_files(native):
            with open(path, "rb") as source:
                data = source.read()
            info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            wheel.writestr(info, data, zipfile.ZIP_DEFLATED)
            record.append(_record_line(arcname, data))
        for name, data in _metadata_files().items():
            arcname = f"{_dist_info()}/{name}"
            wheel.writestr(arcname, data)
            record.append(_record_line(arcname, data))
        record.append(f"{_dist_info()}/RECORD,,")
        wheel.writestr(f"{_dist_info()}/RECORD", "\n".join(record) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """The files git tracks (the whole source: CMake builds the module from it) and PKG-INFO."""
    root = _source_root()
    listed = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                            capture_output=True).stdout.decode().split("\0")
    base = f"{NAME}-{_version()}"
    sdist_name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, sdist_name), "w:gz",
                      format=tarfile.PAX_FORMAT) as sdist:
        for relative in filter(None, listed):
            path = os.path.join(root, relative)
            if os.path.isfile(path):
                sdist.add(path, arcname=f"{base}/{relative}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata_files()["METADATA"]
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return sdist_name
