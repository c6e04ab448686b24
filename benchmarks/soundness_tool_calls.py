"""Soundness of tool-call grammars at scale: random mask walks over real tool sets.

The tool sets are MaskBench's BFCL_* schemas (`--data`: the folder of <Category>.jsonl.gz; each
schema is `{"type": "object", "properties": {TOOL: parameters}}` or an `anyOf` of such, read as
a list of tools). Each tool set is compiled in every format of `--formats` with a tool_choice
and `parallel` drawn per (set, format), against the Llama-3 tokenizer; `--walks` seeded walks
each (half of the "auto" walks start with free text and the format's trigger, as free text
rarely walks into one by chance) must end in text that `jaxguide.testing.tool_call_oracle`
(calls split at the trigger, each validated by jsonschema; Gemma's lists read by `ast`) finds
valid, and never in a dead end. Tool sets a format refuses (Gemma: names that are not Python
names, values that could be JSON true/false/null) are counted apart.

Usage:
  python benchmarks/soundness_tool_calls.py --data ../shared/data/maskbench --sets 60 \\
      --walks 20 --out benchmarks/results/soundness_tool_calls.json

Output JSON: {"config", "formats": {fmt: {sets, refused, walks, eos, with_calls, calls,
invalid, dead_ends, errors}}, "failures": [...], "seconds"}.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import random
import sys
import time

from jaxguide import GrammarError, compile_grammar, tool_call_grammar
from jaxguide.grammars.tool_formats import FORMATS, parse_tool_calls
from jaxguide.testing import SHORT_WALK, random_walk, tool_call_oracle

CATEGORIES = ("BFCL_simple", "BFCL_multiple", "BFCL_parallel", "BFCL_parallel_multiple")


def tool_sets(data: str) -> list[tuple[str, list[dict]]]:
    """(name, tools in the OpenAI format) of every BFCL schema."""
    out = []
    for category in CATEGORIES:
        with gzip.open(os.path.join(data, f"{category}.jsonl.gz"), "rt") as f:
            for line in f:
                row = json.loads(line)
                schema = row["schema"]
                branches = schema.get("anyOf", [schema])
                tools = []
                for branch in branches:
                    for name, parameters in (branch.get("properties") or {}).items():
                        tools.append({"type": "function", "function": {
                            "name": name, "parameters": parameters}})
                if tools:
                    out.append((f"{category}/{row['name']}", tools))
    return out


def run_set(name, tools, fmt, walks, info, rng, stats, failures) -> None:
    names = [t["function"]["name"] for t in tools]
    choice = rng.choice(["auto", "auto", "required", rng.choice(names)])
    parallel = rng.random() < 0.6
    try:
        compiled = compile_grammar(tool_call_grammar(tools, choice, format=fmt,
                                                     parallel=parallel), info)
    except GrammarError:
        stats["refused"] += 1
        return
    stats["sets"] += 1
    oracle = tool_call_oracle(tools, choice, fmt, parallel)
    trigger = FORMATS[fmt].trigger
    for i in range(walks):
        walk_rng = random.Random(f"{name}:{fmt}:{i}")
        prefix = []
        if choice == "auto" and i % 2:
            prefix = info.encode(walk_rng.choice(["", "Sure. "]) + trigger)
        walk = random_walk(compiled, walk_rng, SHORT_WALK, prefix=prefix)
        stats["walks"] += 1
        if walk.end == "dead_end":
            stats["dead_ends"] += 1
            failures.append({"set": name, "format": fmt, "walk": i, "dead_end": True,
                             "text": walk.text.decode("utf-8", "replace")})
        elif walk.end == "error":
            stats["errors"] += 1
        if walk.end != "eos":
            continue
        stats["eos"] += 1
        text = walk.text.decode("utf-8", "replace")
        reason = oracle.check(text)
        if reason is not None:
            stats["invalid"] += 1
            failures.append({"set": name, "format": fmt, "choice": choice, "walk": i,
                             "text": text, "reason": reason})
            continue
        calls = len(parse_tool_calls(text, fmt))
        stats["calls"] += calls
        stats["with_calls"] += calls > 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="folder of MaskBench's .jsonl.gz")
    parser.add_argument("--sets", type=int, default=60, help="tool sets sampled")
    parser.add_argument("--walks", type=int, default=20, help="walks per set and format")
    parser.add_argument("--formats", default="hermes,smollm2,mistral,gemma")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    from jaxguide import TokenizerInfo, assets

    info = TokenizerInfo.from_tiktoken(assets.llama3_tiktoken_encoding())
    rng = random.Random(args.seed)
    sets = tool_sets(args.data)
    sample = rng.sample(sets, min(args.sets, len(sets)))
    formats = args.formats.split(",")
    stats = {fmt: collections.Counter() for fmt in formats}
    failures: list[dict] = []
    start = time.perf_counter()
    for name, tools in sample:
        for fmt in formats:
            run_set(name, tools, fmt, args.walks, info, rng, stats[fmt], failures)
    result = {"config": vars(args), "tool_sets_available": len(sets),
              "formats": {f: dict(c) for f, c in stats.items()}, "failures": failures[:50],
              "seconds": round(time.perf_counter() - start, 1)}
    text = json.dumps(result, indent=1)
    print(text if len(text) < 4000 else json.dumps(result["formats"], indent=1))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    bad = sum(c["invalid"] + c["dead_ends"] for c in stats.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
