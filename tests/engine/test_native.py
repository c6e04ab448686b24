"""Builds the C++ unit tests under native/ (`*_test.cc`) with CMake and runs them with CTest.

Each configuration (plain, ASan+UBSan, TSan) has its own build directory under
build/native-tests*, so reruns are incremental. A sanitizer report makes the test executable
exit non-zero (-fno-sanitize-recover), which fails the test.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is required to build the native tests (it is in the test extra)")
    return path


def _build_and_test(sanitizer: str) -> subprocess.CompletedProcess:
    build = ROOT / "build" / f"native-tests{'-' + sanitizer if sanitizer else ''}"
    cmake = _tool("cmake")
    configure = [cmake, "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
                 "-DJAXGUIDE_BUILD_PYTHON=OFF", "-DJAXGUIDE_BUILD_TESTS=ON",
                 f"-DJAXGUIDE_SANITIZE={sanitizer}",
                 # Sanitizer builds at -O0 (with assertions): a third of the compile time of
                 # -O2, the same reports; the plain build checks the optimized code, the
                 # extension's flags (Release: no debug info, 44 s against 70 s on 2 cores).
                 f"-DCMAKE_BUILD_TYPE={'Debug' if sanitizer else 'Release'}"]
    _tool("ninja")
    subprocess.run(configure, check=True, capture_output=True, text=True)
    jobs = str(max(1, min(4, os.cpu_count() or 1)))
    built = subprocess.run([cmake, "--build", str(build), "-j", jobs], capture_output=True,
                           text=True)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    assert "warning:" not in built.stdout + built.stderr, "native build has warnings"
    ctest = str(pathlib.Path(cmake).with_name("ctest"))
    if not os.path.exists(ctest):
        ctest = _tool("ctest")
    return subprocess.run([ctest, "--output-on-failure", "-j", jobs], cwd=build,
                          capture_output=True, text=True)


@pytest.mark.parametrize("sanitizer", ["", "address", "thread"])
def test_native_unit_tests(sanitizer):
    """Plain, AddressSanitizer+UBSan and ThreadSanitizer builds must all pass without reports."""
    result = _build_and_test(sanitizer)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    assert "tests passed" in result.stdout
