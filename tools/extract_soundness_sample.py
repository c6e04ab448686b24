"""Picks the seeded MaskBench sample that CI's soundness walks use (tests/testing/test_soundness.py):
`--per-category` schemas of every category that jaxguide compiles, drawn with a fixed seed among
those of at most `--max-bytes` of JSON, written to tests/data/soundness_schemas.jsonl.gz (one
{"name", "category", "schema"} per line).

Usage: python tools/extract_soundness_sample.py [--data DIR] [--out FILE] [--per-category 5]
(defaults: ../shared/data/maskbench, tests/data/soundness_schemas.jsonl.gz). The input is the
MaskBench part of guidance-ai/jsonschemabench (MIT; see tests/data/README.md).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import random
import warnings

from jaxguide import Grammar, GrammarError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "maskbench"))
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "data",
                                                      "soundness_schemas.jsonl.gz"))
    parser.add_argument("--per-category", type=int, default=5)
    parser.add_argument("--max-bytes", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = random.Random(args.seed)
    picked = []
    for path in sorted(glob.glob(os.path.join(args.data, "*.jsonl.gz"))):
        with gzip.open(path, "rt") as f:
            items = [json.loads(line) for line in f]
        rng.shuffle(items)
        chosen = 0
        for item in items:
            if chosen == args.per_category:
                break
            if len(json.dumps(item["schema"])) > args.max_bytes:
                continue
            try:
                Grammar.from_json_schema(item["schema"])
            except GrammarError:
                continue
            picked.append({"name": item["name"], "category": item["category"],
                           "schema": item["schema"]})
            chosen += 1
    with gzip.open(args.out, "wt") as f:
        for item in picked:
            f.write(json.dumps(item, sort_keys=True) + "\n")
    print(f"wrote {len(picked)} schemas to {args.out}")


if __name__ == "__main__":
    main()
