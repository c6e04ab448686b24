#!/usr/bin/env bash
# Prepares this machine for `bazel test --config=offline //...` (see .bazelrc), idempotently:
#   1. Debian's Bazel 4.2.3 and the stand-in repositories .bazelrc's offline config points at
#      (bazel-bootstrap, bazel-bootstrap-source: mock_repos/, bazel-platforms);
#   2. pybind11 for the python3 that Bazel will build against and test with (@local_python reads
#      its headers from there; see tools/bazel/local_python.bzl).
# Nothing else is downloaded, by this script or by Bazel afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Each path .bazelrc's offline config names, and the package that provides it.
declare -A PROVIDERS=(
  [/usr/bin/bazel]=bazel-bootstrap
  [/usr/src/bazel-bootstrap/mock_repos/rules_cc]=bazel-bootstrap-source
  [/usr/src/bazel-bootstrap/mock_repos/rules_java]=bazel-bootstrap-source
  [/usr/src/bazel-bootstrap/mock_repos/bazel_skylib]=bazel-bootstrap-source
  [/usr/share/bazel/platforms]=bazel-bootstrap
)

missing=()
for path in "${!PROVIDERS[@]}"; do
  [[ -e "$path" ]] || missing+=("${PROVIDERS[$path]}")
done
if ((${#missing[@]})); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "prepare_offline: installing bazel-bootstrap bazel-bootstrap-source bazel-platforms" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    bazel-bootstrap bazel-bootstrap-source bazel-platforms
fi
for path in "${!PROVIDERS[@]}"; do
  if [[ ! -e "$path" ]]; then
    echo "prepare_offline: $path is missing after installing ${PROVIDERS[$path]};" \
      "update the paths in .bazelrc and this script" >&2
    exit 1
  fi
done

# The interpreter @local_python will probe: $PYTHON_BIN_PATH, else python3 on PATH.
python="${PYTHON_BIN_PATH:-$(command -v python3)}"
if ! "$python" -c 'import pybind11, sys; sys.exit(tuple(map(int, pybind11.__version__.split(".")[:2])) < (2, 13))' 2>/dev/null; then
  echo "prepare_offline: installing pybind11>=2.13 for $python" >&2
  "$python" -m pip install -q 'pybind11>=2.13'
fi
"$python" - <<'PY'
import sys, sysconfig, os, pybind11
include = sysconfig.get_paths()["include"]
if not os.path.isfile(os.path.join(include, "Python.h")):
    sys.exit(f"prepare_offline: no Python.h in {include}: install the Python development headers")
print(f"prepare_offline: ready ({sys.executable}, Python {sys.version.split()[0]}, "
      f"pybind11 {pybind11.__version__}); run: bazel test --config=offline //...")
PY
