#!/usr/bin/env bash
# Device call 1 (carry .gpu_kit/a): installs the carried wheels and data, builds jaxguide._native
# for the device's Python, keeps the first half of the GGUF in /tmp/jaxguide_kit, then checks
# the sampling functions on the GPU and runs the sampling benchmark (issue #6) and the batch
# mask-filling benchmark on the machine's 16 cores (issue #7) into $OUT.
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
cp -r .gpu_kit/a/site/. "$kit/site/"
export PYTHONPATH="$kit/site:$PWD" PYTHONUNBUFFERED=1
source tools/gpu/build_native.sh
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi") | tee "$OUT/device.txt"
python3 -c "import jax; print(jax.__version__, jax.devices())" | tee -a "$OUT/device.txt"
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/device/test_sampling.py 2>&1 | tail -5 | tee "$OUT/test_sampling.txt" || true
if [ "${KIT_SMOKE:-0}" = 1 ]; then  # a quick run of the script itself on a CPU machine
  python3 benchmarks/bench_sampling.py --quick --repeats 3 --out "$OUT/bench_sampling.json" 2>&1 | tail -5
  python3 benchmarks/bench_batch.py --threads 1,2 --batch 32 --steps 4 --handoff-steps 50 \
    --maskbench .gpu_kit/a/maskbench --out "$OUT/batch_masks.json" 2>&1 | tail -3
  exit 0
fi
# Each under its own time limit, so one running long cannot take the other's figures.
timeout 300 python3 benchmarks/bench_sampling.py --out "$OUT/bench_sampling_gpu.json" 2>&1 \
  | tee "$OUT/bench_sampling_gpu.log" | tail -40 || true
timeout 120 python3 benchmarks/bench_batch.py --threads 1,2,4,8,16 \
  --maskbench .gpu_kit/a/maskbench --out "$OUT/batch_masks_16core.json" 2>&1 \
  | tee "$OUT/batch_masks_16core.log" | tail -12 || true
