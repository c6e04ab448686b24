#!/usr/bin/env bash
# ThreadSanitizer on the Python extension while Python threads use it (issue #22).
#
# Builds a TSan-instrumented jaxguide._native into build/python-tsan/ (its own CMake build dir,
# -fsanitize=thread -O1 -g; incremental on reruns; the installed extension is not touched), checks
# that TSan reports a planted race in an instrumented library driven by Python threads (so a
# silent run means something), then runs tools/tsan_python_threads.py with libtsan preloaded into
# the interpreter. That script puts the instrumented _native in place of the installed one through
# a finder first on sys.meta_path, and drives one Matcher, BatchMatcher and CompiledGrammar from
# several Python threads.
#
# Exit status: 0 no report names jaxguide code; 1 a TSan report names jaxguide code (each printed
# with its stacks); 2 the script failed, or the planted race was not reported; 77 no TSan runtime
# (`$CXX -print-file-name=libtsan.so` finds none) or it cannot run on this kernel: nothing was
# checked.
#
# Environment: PYTHON (interpreter, default python), CXX (default c++), JOBS (build jobs, default
# 2), TSAN_PYTHON_BUILD (build dir, default build/python-tsan).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CXX="${CXX:-c++}"
JOBS="${JOBS:-2}"
BUILD="${TSAN_PYTHON_BUILD:-$ROOT/build/python-tsan}"
# The real interpreter, not a wrapper (a pyenv shim is a bash script: libtsan preloaded into bash
# crashes it).
PY="$("${PYTHON:-python}" -c 'import sys; print(sys.executable)')"

LIBTSAN="$("$CXX" -print-file-name=libtsan.so 2>/dev/null || true)"
if [[ "$LIBTSAN" != /* || ! -e "$LIBTSAN" ]]; then
  echo "tsan_python: no ThreadSanitizer runtime ($CXX -print-file-name=libtsan.so: '$LIBTSAN')" >&2
  exit 77
fi

# --- build the instrumented module
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" \
    -DCMAKE_CXX_COMPILER="$(command -v "$CXX")" \
    -DJAXGUIDE_BUILD_PYTHON=ON -DJAXGUIDE_BUILD_TESTS=OFF -DJAXGUIDE_SANITIZE=thread \
    -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS=-fsanitize=thread -O1 -g" \
    -DPython_EXECUTABLE="$PY" -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" >/dev/null
fi
cmake --build "$BUILD" -j "$JOBS" --target _native >"$BUILD/build.log" 2>&1 || {
  tail -n 60 "$BUILD/build.log" >&2; echo "tsan_python: build failed" >&2; exit 2; }

export LD_PRELOAD="$LIBTSAN"
export TSAN_OPTIONS="suppressions=$ROOT/tools/tsan_python.supp halt_on_error=0 exitcode=0 second_deadlock_stack=1 ${TSAN_EXTRA_OPTIONS:-}"

# --- the planted race: two Python threads (ctypes calls run without the GIL) meet at a relaxed
# atomic (no happens-before), then both write one int of an instrumented library. TSan must
# report it, or it is not watching this setup.
mkdir -p "$BUILD/canary"
cat >"$BUILD/canary/canary.cc" <<'CCEOF'
#include <atomic>
// Apart (own cache lines): TSan keeps a few shadow cells per 8 bytes, and the spinning loads of
// `arrived` could push the racy write's record out if both shared a granule.
alignas(64) static std::atomic<int> arrived{0};
alignas(64) static int shared_value = 0;
extern "C" void tsan_canary_bump() {
  arrived.fetch_add(1, std::memory_order_relaxed);
  while (arrived.load(std::memory_order_relaxed) < 2) {
  }
  shared_value = shared_value + 1;
  // Neither thread leaves before both wrote: TSan drops a report whose other access it can no
  // longer restore a stack for, which happened when the first thread had already exited.
  arrived.fetch_add(1, std::memory_order_relaxed);
  while (arrived.load(std::memory_order_relaxed) < 4) {
  }
}
CCEOF
LD_PRELOAD= "$CXX" -fsanitize=thread -O1 -g -shared -fPIC "$BUILD/canary/canary.cc" \
  -o "$BUILD/canary/libcanary.so"
# Up to three tries: TSan's reports are best effort (a busy machine once starved one).
for _try in 1 2 3; do
  "$PY" -c '
import ctypes, sys, threading
bump = ctypes.CDLL(sys.argv[1]).tsan_canary_bump
threads = [threading.Thread(target=bump) for _ in range(2)]
[t.start() for t in threads]; [t.join() for t in threads]
' "$BUILD/canary/libcanary.so" 2>"$BUILD/canary/report.log" || true
  if grep -q -e "tsan_canary_bump" -e "FATAL: ThreadSanitizer" "$BUILD/canary/report.log"; then
    break
  fi
done
if grep -q "FATAL: ThreadSanitizer" "$BUILD/canary/report.log"; then
  # e.g. "unexpected memory mapping" (a kernel with more mmap randomness than this libtsan knows)
  echo "tsan_python: the TSan runtime cannot run here: $(grep -m1 FATAL "$BUILD/canary/report.log")" >&2
  exit 77
fi
if ! grep -q "tsan_canary_bump" "$BUILD/canary/report.log"; then
  cat "$BUILD/canary/report.log" >&2
  echo "tsan_python: TSan did not report the planted race; this setup checks nothing" >&2
  exit 2
fi

# --- the threads script under TSan
status=0
"$PY" "$ROOT/tools/tsan_python_threads.py" "$BUILD" 2>"$BUILD/report.log" || status=$?
unset LD_PRELOAD
"$PY" - "$BUILD/report.log" "$status" <<'PYEOF'
import re, sys
log = open(sys.argv[1], errors="replace").read()
status = int(sys.argv[2])
reports = re.findall(r"^WARNING: ThreadSanitizer:.*?^SUMMARY: ThreadSanitizer:[^\n]*", log,
                     re.M | re.S)
# A jaxguide frame: the C++ namespace, a source under native/<stage>/, or the module itself.
ours = [r for r in reports
        if re.search(r"jaxguide::|\bnative/\w+/\w+\.(?:cc|h)\b|_native\.cpython", r)]
for report in ours:
    print(report, "\n", file=sys.stderr)
print(f"tsan_python: {len(reports)} TSan report(s), {len(ours)} naming jaxguide code; "
      f"script exit status {status}", file=sys.stderr)
if status != 0:
    print(log[-6000:], file=sys.stderr)
    sys.exit(2)
if len(reports) > len(ours):
    print(f"tsan_python: {len(reports) - len(ours)} report(s) outside jaxguide (CPython); "
          "see the log, add a CPython-only entry to tools/tsan_python.supp", file=sys.stderr)
sys.exit(1 if ours else 0)
PYEOF
