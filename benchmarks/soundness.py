"""Soundness at scale: random mask walks over MaskBench, Lark grammars and regexes.

Every walk that ends at EOS must be valid for the independent oracle of its grammar's source
(`jaxguide.testing`: `jsonschema` + ECMA-262 `regress` + format checkers for JSON Schema, the
`lark` package for Lark, `re.fullmatch` for regexes); a mask with no token and no EOS (a dead
end) is a bug too. For JSON Schema the instances MaskBench ships are also run the other way:
valid ones (keys put in the schema's order, as `maskbench.py` does) must not be blocked, invalid
ones must not be accepted (unless the oracle finds them valid: MaskBench's labels treat some
`format`s as assertions that JSON Schema, and jaxguide, read as annotations; counted apart).

Walks alternate two kinds (`jaxguide.testing.SHORT_WALK`: P(EOS) 0.3, target 12 tokens, at
most 600; `LONG_WALK`: P(EOS) 0.02, target 64 tokens, at most 1,200, budgets that grow with
the grammar's shortest completion); each grammar gets
`--walks` walks, and more (up to 5x) until each kind ended at EOS `--min-eos` / 2 times. Seeds
are fixed (walk i of grammar g uses `random.Random(f"{g}:{i}:0")`): a run is reproducible, and
every failure names its seed.

Usage:
  python benchmarks/soundness.py --data ../shared/data/maskbench --walks 6 --min-eos 6 \\
      --jobs 2 --out benchmarks/results/soundness_maskbench.json
  python benchmarks/soundness.py --lark-walks 240 --regex-walks 40 --jobs 2 \\
      --out benchmarks/results/soundness_lark_regex.json

`--property-order any` builds the JSON Schema grammars with members in any order and checks
the instances as MaskBench writes them (no reordering).

Subsets: `--schema-contains '"uniqueItems": true'` walks only the schemas whose JSON holds the
string; `--without-top-enum` replaces each `{"enum": [...]}` part of a schema's top-level `allOf`
with `{}` (MaskBench's Synthesized schemas are `allOf: [{enum}, {not ...}]`: without the enum,
the walks test the complement itself; their instances no longer apply and are not run):
  python benchmarks/soundness.py --data DIR_WITH_Synthesized.jsonl.gz --without-top-enum \
      --walks 24 --min-eos 12 --out benchmarks/results/soundness_synthesized_without_enum.json

The regexes are the MaskBench patterns of tests/data/maskbench_patterns.json (every pattern of
the dev half, extracted by tools/extract_maskbench_patterns.py) and `--random-regexes` random
ones.

Output JSON: {"config", "kinds": {"json_schema" | "lark" | "regex": {grammars, compiled,
compile_errors, walks, ends, eos, long_eos, invalid, dead_ends, blocked, matcher_errors,
oracle_undecided, notes, eos_length_tokens and long_eos_length_tokens: {p50, p90, p99, max},
per_grammar_min_eos, grammars_below_3_eos, seconds}}, "instances": {valid, valid_blocked,
invalid, invalid_accepted, invalid_only_by_annotation}, "failures": [...], "per_grammar"}.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import multiprocessing
import os
import platform
import random
import re
import sys
import time
import warnings

import numpy as np

import jaxguide
from jaxguide import (
    CompiledGrammar,
    Grammar,
    GrammarError,
    TokenizerInfo,
    assets,
    compile_grammar,
)
from jaxguide.models.assets import package_file
from jaxguide.testing import (
    JsonSchemaOracle,
    LarkOracle,
    RegexOracle,
    SoundnessReport,
    check_instances,
    check_soundness,
)
from jaxguide.testing.generators import random_regex
from jaxguide.testing.soundness import LONG_WALK, SHORT_WALK

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from maskbench import load_tasks  # noqa: E402  (same instance ordering as MaskBench)
from support.grammar_corpus import JSON_LARK, PYTHON_SUBSET, TRICKY, bundled_grammar  # noqa: E402

_INFO: TokenizerInfo | None = None
# Seconds per `re.fullmatch` verdict (beyond: undecided, reported): a few MaskBench patterns
# with nested repetition backtrack for minutes on long walk texts.
_REGEX_TIME_LIMIT = 10.0
# Walk budgets of grammars whose oracle is slow on long texts: lark's Earley parser on the
# exponentially ambiguous `start: x+  x: "a" | "a" "a" | "aa" | x x` (minutes at 300 bytes).
_MAX_TOKENS = {"tricky_ambiguous": 40}


def _tokenizer() -> TokenizerInfo:
    global _INFO
    if _INFO is None:
        _INFO = TokenizerInfo.from_tiktoken(assets.llama3_tiktoken_encoding())
    return _INFO


# ------------------------------------------------------------------------------ the grammars


def lark_grammars() -> dict[str, str]:
    """name -> Lark text: the grammars jaxguide ships or tests against, and every grammar
    bundled with `lark` (those jaxguide refuses are counted as compile errors: python.lark
    needs a post-lexer, common.lark has no start rule, hcl2.lark's heredocs a backreference,
    so it also runs as `hcl2_eot` with the fixed delimiter the tests use)."""
    out = {"jaxguide_json": JSON_LARK, "python_subset": PYTHON_SUBSET}
    out.update({f"tricky_{k}": v for k, v in TRICKY.items()})
    for package, parts in (("outlines", ("grammars", "json.lark")),
                           ("outlines", ("grammars", "arithmetic.lark")),
                           ("lark_sqlpp", ("sqlpp.lark",)), ("hcl2", ("hcl2.lark",))):
        with open(package_file(package, *parts)) as f:
            out[f"{package}_{parts[-1][:-5]}"] = f.read()
    out["hcl2_eot"] = bundled_grammar("hcl2")
    lark_dir = os.path.join(os.path.dirname(__import__("lark").__file__), "grammars")
    for name in sorted(os.listdir(lark_dir)):
        if name.endswith(".lark"):
            with open(os.path.join(lark_dir, name)) as f:
                out[f"lark_{name[:-5]}"] = f.read()
    return out


def maskbench_patterns() -> list[str]:
    """Every distinct `pattern` / `patternProperties` key of the MaskBench schemas: the corpus
    tools/extract_maskbench_patterns.py writes to tests/data (the whole dev half)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                        "maskbench_patterns.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# ------------------------------------------------------------------------------ one grammar


def _percentiles(values: list[int]) -> dict:
    if not values:
        return {}
    a = np.asarray(values)
    return {"p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "max": int(a.max())}


def _walk_grammar(compiled: CompiledGrammar, oracle, name: str, walks: int, min_eos: int,
                  max_tokens: int | None = None) -> dict:
    """`walks` walks, half of each kind, then more (up to 5x in all) until each kind has
    ended at EOS at least min_eos / 2 times (long walks finish less often); `max_tokens`
    caps both kinds (else their own budgets)."""
    short, long = SHORT_WALK, LONG_WALK
    if max_tokens is not None:
        short = dataclasses.replace(short, max_tokens=max_tokens)
        long = dataclasses.replace(long, max_tokens=max_tokens,
                                   target_tokens=min(long.target_tokens, max_tokens // 3))
    report = SoundnessReport()
    need = (min_eos + 1) // 2
    for i in range(5 * walks):
        long_eos, short_eos = report.long_eos, report.eos_walks - report.long_eos
        if i >= walks and long_eos >= need and short_eos >= need:
            break
        if i < walks:
            config = long if i % 2 else short
        else:
            config = long if long_eos < need else short
        check_soundness(compiled, oracle, walks=1, seed=f"{name}:{i}", configs=(config,),
                        report=report)
    return {
        "walks": report.walks, "ends": dict(report.ends), "lengths": report.lengths,
        "long_lengths": report.long_lengths, "long_eos": report.long_eos,
        "invalid": [w.describe(compiled) for w in report.invalid],
        "dead_ends": [f"{name}: dead end after {w.text!r} (tokens {w.tokens})"
                      for w in report.dead_ends],
        "blocked": [f"{name}: token {t} missing from the mask after {text!r}"
                    for text, t in report.blocked],
        "errors": report.errors, "notes": report.notes,
        "oracle_undecided": [f"{why}: {text[:300]!r}" for text, why in report.undecided],
    }


def run_item(item: tuple) -> dict:
    """One grammar (in a worker): compile, walk, and for JSON Schema check the instances."""
    kind, name, source, params = item
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    out = {"kind": kind, "name": name}
    order = params.get("property_order", "declared")
    try:
        if kind == "json_schema":
            grammar = Grammar.from_json_schema(source["schema"], property_order=order)
            oracle = JsonSchemaOracle(source["schema"])
        elif kind == "lark":
            grammar = Grammar.from_lark(source)
            oracle = LarkOracle(source)
        else:
            grammar = Grammar.from_regex(source)
            oracle = RegexOracle(source, time_limit=_REGEX_TIME_LIMIT)
        compiled = compile_grammar(grammar, _tokenizer())
        out.update(_walk_grammar(compiled, oracle, name, params["walks"], params["min_eos"],
                                 _MAX_TOKENS.get(name)))
    except (GrammarError, jaxguide.BudgetExceededError, re.error) as e:
        out["compile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    except Exception as e:  # noqa: BLE001 (an oracle that cannot read the source)
        out["compile_error"] = f"{type(e).__name__} (oracle): {str(e)[:300]}"
    if kind == "json_schema" and "compile_error" not in out:
        tests = source["tests"]
        if order == "any":  # the instances as written, not put in the schema's order
            tests = [{**test, "text": test.get("plain", test["text"])} for test in tests]
        out["instances"] = _check_instances(compiled, oracle, tests)
    out["seconds"] = time.perf_counter() - started
    return out


def _check_instances(compiled: CompiledGrammar, oracle: JsonSchemaOracle,
                     tests: list[dict]) -> dict:
    """Valid instances accepted to the end (EOS allowed), invalid ones rejected. An instance
    MaskBench labels invalid that jaxguide accepts is checked by the oracle too: if the oracle
    deems it valid with a note (a `format` jaxguide reads as an annotation, as JSON Schema does
    by default), it is counted apart, not as a soundness failure."""
    out = {"valid": 0, "valid_blocked": [], "invalid": 0, "invalid_accepted": [],
           "invalid_only_by_annotation": []}
    for test in tests:
        accepted = not check_instances(compiled, [test["text"]])  # no problem: accepted
        if test["valid"]:
            out["valid"] += 1
            if not accepted:
                out["valid_blocked"].append(test["text"][:300])
        else:
            out["invalid"] += 1
            if accepted:
                if oracle.check(test["text"]) is None and oracle.note:
                    out["invalid_only_by_annotation"].append(
                        f"{test['text'][:300]} ({oracle.note})")
                else:
                    out["invalid_accepted"].append(test["text"][:300])
    return out


# ------------------------------------------------------------------------------ the run


def summarize(results: list[dict]) -> dict:
    kinds = {}
    for kind in ("json_schema", "lark", "regex"):
        rs = [r for r in results if r["kind"] == kind]
        if not rs:
            continue
        done = [r for r in rs if "compile_error" not in r]
        ends = collections.Counter()
        for r in done:
            ends.update(r["ends"])
        lengths = [n for r in done for n in r["lengths"]]
        long_lengths = [n for r in done for n in r["long_lengths"]]
        notes = collections.Counter(n.split(":")[0] for r in done for n in r["notes"])
        eos_per = [r["ends"].get("eos", 0) for r in done]
        kinds[kind] = {
            "grammars": len(rs), "compiled": len(done), "compile_errors": len(rs) - len(done),
            "walks": sum(r["walks"] for r in done), "ends": dict(ends),
            "eos": ends["eos"], "long_eos": sum(r["long_eos"] for r in done),
            "invalid": sum(len(r["invalid"]) for r in done),
            "dead_ends": sum(len(r["dead_ends"]) for r in done),
            "blocked": sum(len(r["blocked"]) for r in done),
            "matcher_errors": sum(len(r["errors"]) for r in done),
            "oracle_undecided": sum(len(r["oracle_undecided"]) for r in done),
            "notes": dict(notes),
            "eos_length_tokens": _percentiles(lengths),
            "long_eos_length_tokens": _percentiles(long_lengths),
            "per_grammar_min_eos": min(eos_per) if eos_per else 0,
            "grammars_below_3_eos": sum(1 for n in eos_per if n < 3),
            "seconds": sum(r["seconds"] for r in rs),
        }
    inst = [r["instances"] for r in results if "instances" in r]
    instances = {
        "valid": sum(i["valid"] for i in inst),
        "valid_blocked": sum(len(i["valid_blocked"]) for i in inst),
        "invalid": sum(i["invalid"] for i in inst),
        "invalid_accepted": sum(len(i["invalid_accepted"]) for i in inst),
        "invalid_only_by_annotation": sum(len(i["invalid_only_by_annotation"]) for i in inst),
    }
    return {"kinds": kinds, "instances": instances}


def without_top_enum(task: dict) -> dict:
    """The task with each `{"enum": ...}` part of its schema's top-level allOf made `{}` (kept
    in place, so that `#/allOf/i` references still resolve), and no instances."""
    schema = task["schema"]
    parts = schema.get("allOf") if isinstance(schema, dict) else None
    if not isinstance(parts, list):
        return task
    parts = [{} if isinstance(p, dict) and set(p) == {"enum"} else p for p in parts]
    return {**task, "name": task["name"] + ":without-top-enum",
            "schema": {**schema, "allOf": parts}, "tests": []}


def build_items(args) -> list[tuple]:
    items = []
    if args.data and args.walks:
        schema_params = {"walks": args.walks, "min_eos": args.min_eos,
                         "property_order": args.property_order}
        tasks = [task for task in load_tasks(args.data, args.limit_per_category)
                 if not args.schema_contains
                 or args.schema_contains in json.dumps(task["schema"])]
        if args.without_top_enum:
            tasks = [without_top_enum(task) for task in tasks]
        items += [("json_schema", task["name"], task, schema_params) for task in tasks]
    if args.lark_walks:
        params = {"walks": args.lark_walks, "min_eos": args.lark_walks * 5 // 6}
        items += [("lark", name, text, params) for name, text in lark_grammars().items()]
    if args.regex_walks:
        params = {"walks": args.regex_walks, "min_eos": 3}
        for pattern in maskbench_patterns():
            try:
                re.compile(pattern)
            except re.error:
                continue
            items.append(("regex", f"maskbench:{pattern}", pattern, params))
        rng = random.Random(args.seed)
        for i in range(args.random_regexes):
            pattern = random_regex(rng)
            items.append(("regex", f"random{i}:{pattern}", pattern, params))
    return items


def _dumps(report: dict) -> str:
    """The report as JSON: indented, except one line per grammar in `per_grammar`."""
    text = json.dumps({**report, "per_grammar": []}, indent=1)
    rows = ",\n  ".join(json.dumps(r) for r in report["per_grammar"])
    return text.replace('"per_grammar": []', f'"per_grammar": [\n  {rows}\n ]')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="MaskBench folder (../shared/data/maskbench)")
    parser.add_argument("--limit-per-category", type=int, default=None)
    parser.add_argument("--walks", type=int, default=6, help="walks per schema")
    parser.add_argument("--min-eos", type=int, default=4,
                        help="walk on (up to 5x --walks) until this many ended at EOS")
    parser.add_argument("--lark-walks", type=int, default=0, help="walks per Lark grammar")
    parser.add_argument("--regex-walks", type=int, default=0, help="walks per regex")
    parser.add_argument("--random-regexes", type=int, default=200)
    parser.add_argument("--schema-contains", default="",
                        help="only the schemas whose JSON text holds this string (a keyword)")
    parser.add_argument("--property-order", choices=("declared", "any"), default="declared",
                        help="JSON Schema object members: in the declared order, or in any "
                             "order (then instances are checked as written, not reordered)")
    parser.add_argument("--without-top-enum", action="store_true",
                        help="make each enum part of a schema's top-level allOf {} (see above)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)))
    parser.add_argument("--out", default="benchmarks/results/soundness.json")
    args = parser.parse_args()

    items = build_items(args)
    started = time.perf_counter()
    results = []
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for n, result in enumerate(pool.imap_unordered(run_item, items, chunksize=1), 1):
            results.append(result)
            bad = sum(len(result.get(k, [])) for k in ("invalid", "dead_ends", "blocked"))
            if bad:
                print(f"FAIL {result['kind']} {result['name']}: {bad}", flush=True)
                for text in (result.get("invalid", [])[:2] + result.get("dead_ends", [])[:2]
                             + result.get("blocked", [])[:2]):
                    print("  " + text.replace("\n", "\n  ")[:2000], flush=True)
            if n % 200 == 0:
                print(f"{n}/{len(items)} grammars, {time.perf_counter() - started:.0f} s",
                      flush=True)
    summary = summarize(results)
    failures = [{"kind": r["kind"], "name": r["name"], "invalid": r["invalid"],
                 "dead_ends": r["dead_ends"], "blocked": r["blocked"]}
                for r in results if r.get("invalid") or r.get("dead_ends") or r.get("blocked")]
    report = {
        "config": {**vars(args), "tokenizer": "llama3 (quicktok, 128,256 ids)",
                   "machine": platform.platform(), "cpus": os.cpu_count(),
                   "wall_seconds": time.perf_counter() - started},
        **summary, "failures": failures,
        "per_grammar": [{k: v for k, v in r.items()
                         if k not in ("lengths", "long_lengths", "notes")}
                        for r in sorted(results, key=lambda r: (r["kind"], r["name"]))],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(_dumps(report))
    print(json.dumps(summary, indent=1))
    print(f"wrote {args.out} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
