#!/usr/bin/env bash
# Device call 1 (carry .gpu_kit/a): installs the carried wheels, builds jaxguide._native for the
# device's Python, keeps the first half of the GGUF in /tmp/jaxguide_kit, then checks the
# sampling functions on the GPU and runs the sampling benchmark (issue #6) into $OUT.
# KIT_SMOKE=1 (with OUT set) runs the scripts quickly on a CPU machine that has the packages.
#   run: bash tools/gpu/device_stage_a.sh        (timeout_s 600)
set -euo pipefail
kit=/tmp/jaxguide_kit
mkdir -p "$kit/site" "$kit/model"
if [ "${KIT_SMOKE:-0}" != 1 ]; then  # (a smoke run's Python has them and may not be 3.12)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$kit/site" .gpu_kit/a/wheels/*.whl
fi
cp .gpu_kit/a/gguf.part00 "$kit/model/"
export PYTHONPATH="$kit/site:$PWD" PYTHONUNBUFFERED=1
source tools/gpu/build_native.sh
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi") | tee "$OUT/device.txt"
python3 -c "import jax; print(jax.__version__, jax.devices())" | tee -a "$OUT/device.txt"
python3 -m pytest -q -p no:cacheprovider tests/test_sampling.py 2>&1 | tail -5 | tee "$OUT/test_sampling.txt"
if [ "${KIT_SMOKE:-0}" = 1 ]; then  # a quick run of the script itself on a CPU machine
  python3 benchmarks/bench_sampling.py --quick --repeats 3 --out "$OUT/bench_sampling.json" 2>&1 | tail -5
else
  python3 benchmarks/bench_sampling.py --out "$OUT/bench_sampling_gpu.json" 2>&1 \
    | tee "$OUT/bench_sampling_gpu.log" | tail -40
fi
