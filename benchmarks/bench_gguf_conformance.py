"""llama.cpp's tokenizer conformance suite through `TokenizerInfo.from_gguf` (table + JSON).

For every `ggml-vocab-*.gguf` of the suite: the tokenizer model and pre-tokenizer it names,
whether `from_gguf` loads it (or why it refuses), its test pairs, how many of them are byte-exact
(the bytes of llama.cpp's expected ids are the text's UTF-8, after the dummy prefix) and how
many are id-exact (`encode(text)` is the expected ids). See jaxguide/testing/gguf_conformance.py.

Usage: python tools/llama_cpp_vocab/fetch.py   # once: the suite (cached)
       python benchmarks/bench_gguf_conformance.py [--suite DIR]
           [--out benchmarks/results/gguf_conformance.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

from jaxguide.testing.gguf_conformance import (
    SUITE_VERSION,
    as_json,
    run_suite,
    suite_dir,
    suite_missing,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default=None, help=f"suite folder (default {suite_dir()})")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "gguf_conformance.json"))
    args = parser.parse_args()
    directory = args.suite or suite_dir()
    missing = suite_missing(directory)
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    results = run_suite(directory)
    print(f"{'vocabulary':16} {'model':7} {'pre':15} {'loaded':6} {'pairs':>5} "
          f"{'bytes':>5} {'ids':>5} {'load s':>6}")
    for r in results:
        if not r.loaded:
            print(f"{r.name:16} {r.model or '-':7} {r.pre or '-':15} {'no':6} refused: "
                  f"{r.refusal}")
            continue
        print(f"{r.name:16} {r.model or '-':7} {r.pre or '-':15} {'yes':6} {r.pairs:5} "
              f"{r.bytes_exact:5} {r.ids_exact:5} {r.load_seconds:6.2f}")
    loaded = [r for r in results if r.loaded]
    print(f"loaded {len(loaded)} of {len(results)}; pairs {sum(r.pairs for r in loaded)}, "
          f"bytes exact {sum(r.bytes_exact for r in loaded)}, "
          f"ids exact {sum(r.ids_exact for r in loaded)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"suite": f"llama-cpp-python {SUITE_VERSION} vendor/llama.cpp/models",
                   "python": platform.python_version(), "vocabularies": as_json(results)},
                  f, indent=1, ensure_ascii=False)
        f.write("\n")
    exact = all(r.bytes_exact == r.ids_exact == r.pairs for r in loaded)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
