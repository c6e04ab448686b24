#!/usr/bin/env bash
# Builds .gpu_kit/ (git-ignored) for the lent GPU machine (the `device` tool), here, once.
#
# That machine has Python 3.12 with JAX, flax, jinja2, numpy, tiktoken, sentencepiece, tokenizers,
# absl-py, pyyaml, CMake, ninja and pybind11, but no network and not lark / gguf / jsonschema;
# and the SmolLM2 GGUF (98 MB) is over the 64 MiB one call may carry. So the kit travels in two
# calls on one warm machine:
#   stage a (call 1, carry .gpu_kit/a): wheels, tokenizer / grammar / MaskBench data, first half
#                                        of the GGUF -> device_stage_a.sh
#   stage b (call 2, carry .gpu_kit/b): second half + checksum         -> device_stage_b.sh
# Call 2 must follow call 1 before the machine is given back (it stays warm ~30 s after a call);
# if it was given back, device_stage_b.sh says so and call 1 must be repeated.
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=.gpu_kit
git check-ignore -q .gpu_kit/a || { echo '.gpu_kit must be git-ignored (.gitignore)' >&2; exit 1; }
rm -rf "$kit"
mkdir -p "$kit/a/wheels" "$kit/b"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform any)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d "$kit/a/wheels" \
  lark==1.3.1 gguf==0.19.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
  referencing==0.37.0 rpds-py==0.30.0
# Data files of asset packages the machine lacks, laid out as packages (jaxguide.models.assets finds
# them by package name): the Llama-3 ranks of quicktok and outlines' grammars (bench_batch.py),
# and the MaskBench files bench_batch.py reads its JSON documents from.
quicktok_data=$(python3 -c "from jaxguide.models import assets; import os; print(os.path.dirname(assets.package_file('quicktok', 'data', 'llama3.vocab')))")
outlines_grammars=$(python3 -c "from jaxguide.models import assets; import os; print(os.path.dirname(assets.package_file('outlines', 'grammars', 'json.lark')))")
mkdir -p "$kit/a/site/quicktok/data" "$kit/a/site/outlines/grammars" "$kit/a/maskbench"
cp "$quicktok_data"/llama3.* "$kit/a/site/quicktok/data/"
cp "$outlines_grammars"/*.lark "$kit/a/site/outlines/grammars/"
touch "$kit/a/site/quicktok/__init__.py" "$kit/a/site/outlines/__init__.py"
for f in Github_easy Github_medium Github_hard Kubernetes Snowplow Glaiveai2K JsonSchemaStore \
         WashingtonPost; do
  cp "../shared/data/maskbench/$f.jsonl.gz" "$kit/a/maskbench/"
done
gguf_path=$(python3 -c "from jaxguide.models import assets; print(assets.smollm2_gguf_path())")
split -n 2 -d "$gguf_path" "$kit/part"
mv "$kit/part00" "$kit/a/gguf.part00"
mv "$kit/part01" "$kit/b/gguf.part01"
(cd "$(dirname "$gguf_path")" && sha256sum "$(basename "$gguf_path")") > "$kit/b/gguf.sha256"
du -sh "$kit/a" "$kit/b"
