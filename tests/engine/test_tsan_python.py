"""ThreadSanitizer on the Python extension while Python threads use it (issue #22).

tools/tsan_python.sh builds a TSan-instrumented jaxguide._native into build/python-tsan/ (kept
between runs, so reruns only relink what changed), checks that TSan reports a planted race in
this setup, and runs tools/tsan_python_threads.py with libtsan preloaded: one Matcher from 4
threads, BatchMatcher fills from two threads with disjoint matchers, threads sharing one
CompiledGrammar, and Matcher calls during a batch fill. Any TSan report naming jaxguide code
fails the test. Skipped where the compiler has no TSan runtime (or it cannot run on the kernel).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "tsan_python.sh"
NO_TSAN = 77


@pytest.mark.slow
def test_python_threads_under_thread_sanitizer():
    for tool in ("cmake", "bash"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is required to build the TSan extension (it is in the test extra)")
    env = dict(os.environ, PYTHON=sys.executable,
               JOBS=str(max(1, min(4, os.cpu_count() or 1))))
    result = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=900, check=False)
    if result.returncode == NO_TSAN:
        pytest.skip(f"no usable ThreadSanitizer runtime: {result.stderr.strip()[-500:]}")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-12000:]
    assert "tsan_python_threads: all scenarios ran" in result.stdout
    assert "0 naming jaxguide code" in result.stderr
