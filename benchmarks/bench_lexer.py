#!/usr/bin/env python3
"""Benchmark of the native regex lexer (native/lexer/): hot-path throughput and MaskBench patterns.

Two parts, both written to one JSON file (--out, default benchmarks/results/bench_lexer.json):

1. Hot path. A long matching input is fed through a warmed DFA with the native `feed` loop (one
   call per buffer, GIL released), so the figure is the cost of `Next(state, byte)` on a built
   transition, not Python overhead. Reported as bytes/s (best of --repeats runs).
2. MaskBench. Every JSON Schema `pattern` (and `patternProperties` key) in
   --maskbench-dir/*.jsonl.gz is compiled in the ECMA dialect (search semantics): compile time,
   clear errors grouped by reason, and the number of DFA states after exploring the whole DFA
   breadth-first over all 256 bytes (capped at --state-cap states per pattern), as p50/p99/max.
   The data lives outside the repository; this part is skipped when the folder is missing.

Usage:  python benchmarks/bench_lexer.py [--out PATH] [--maskbench-dir DIR] [--mib 16]
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import platform
import statistics
import sys
import time
from collections import deque

import lark
from lark.load_grammar import load_grammar

import jaxguide  # noqa: F401  (installs the error classes)
from jaxguide.engine.regex_lexer import UNICODE_VERSION, RegexError, RegexLexer

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "results", "bench_lexer.json")
DEFAULT_MASKBENCH = os.path.join(HERE, "..", "..", "shared", "data", "maskbench")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))
    return ordered[index]


def summary(values: list[float]) -> dict:
    return {"p50": percentile(values, 50), "p99": percentile(values, 99),
            "max": max(values) if values else float("nan"),
            "mean": statistics.fmean(values) if values else float("nan"), "count": len(values)}


def python_lark_terminals() -> list[str]:
    path = os.path.join(os.path.dirname(lark.__file__), "grammars", "python.lark")
    with open(path, encoding="utf-8") as f:
        grammar, _ = load_grammar(f.read(), "python.lark", [], False)
    terminals, _, _ = grammar.compile([], {n for n, _ in grammar.term_defs})
    out = []
    for terminal in terminals:
        regexp = terminal.pattern.to_regexp()
        try:
            RegexLexer([regexp])
            out.append(regexp)
        except RegexError:
            pass
    return out


def text_body(size: int) -> bytes:
    """Mixed ASCII and multi-byte UTF-8 text without quotes, backslashes or newlines."""
    unit = ("The quick brown fox jumps over the lazy dog 0123456789 "
            "caf\u00e9 \u20ac42 \u65e5\u672c\u8a9e \U0001F600 ").encode("utf-8")
    return (unit * (size // len(unit) + 1))[:size].decode("utf-8", "ignore").encode("utf-8")


def hot_path(mib: int, repeats: int) -> list[dict]:
    size = mib << 20
    body = text_body(size)
    cases = [
        ("json_string", ['"(?:[^"\\\\\\x00-\\x1f]|\\\\["\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})*"'],
         "python", b'"' + body + b'"'),
        ("python_lark_all_terminals_comment", python_lark_terminals(), "python", b"#" + body),
        ("bounded_repeat_lines", ["(?:[^\\n]{1,120}\\n)*"], "python",
         (b"y" * 99 + b"\n") * (size // 100)),
        ("ecma_search_email", ["^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$"], "ecma",
         b"x" * (size - 16) + b"@example.com"),
    ]
    results = []
    for name, patterns, dialect, data in cases:
        lexer = RegexLexer(patterns, dialect)
        start = lexer.start_state()
        state = lexer.feed(start, data)  # warm: builds every state the input visits
        assert lexer.is_match(state), name
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            lexer.feed(start, data)
            times.append(time.perf_counter() - t0)
        best = min(times)
        results.append({
            "case": name, "terminals": len(patterns), "bytes": len(data),
            "bytes_per_s": len(data) / best, "ns_per_byte": best / len(data) * 1e9,
            "median_bytes_per_s": len(data) / statistics.median(times),
            "dfa_states": lexer.num_states, "byte_classes": lexer.num_byte_classes,
            "nfa_instructions": lexer.num_nfa_instructions,
        })
        print(f"  {name:38s} {len(data) / best / 1e6:9.1f} MB/s  ({best / len(data) * 1e9:.2f} "
              f"ns/byte, {lexer.num_states} states, {lexer.num_byte_classes} byte classes)")
    return results


def maskbench_patterns(directory: str) -> collections.Counter:
    patterns: collections.Counter = collections.Counter()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "pattern" and isinstance(value, str):
                    patterns[value] += 1
                elif key == "patternProperties" and isinstance(value, dict):
                    for regex in value:
                        patterns[regex] += 1
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl.gz"))):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                walk(json.loads(line).get("schema"))
    return patterns


def explore(lexer, cap: int) -> tuple[int, bool]:
    """Breadth-first over all bytes from the start state; returns (states built, capped)."""
    start = lexer.start_state()
    seen = {start}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        for byte in range(256):
            nxt = lexer.next(state, byte)
            if nxt not in seen:
                seen.add(nxt)
                if len(seen) >= cap:
                    return lexer.num_states, True
                queue.append(nxt)
    return lexer.num_states, False


def maskbench(directory: str, cap: int) -> dict:
    patterns = maskbench_patterns(directory)
    compile_ms, states, errors, examples = [], [], collections.Counter(), {}
    capped = 0
    budget_errors = 0
    for pattern in patterns:
        t0 = time.perf_counter()
        try:
            lexer = RegexLexer([pattern], "ecma")
        except RegexError as e:
            errors[e.msg] += 1
            examples.setdefault(e.msg, pattern)
            continue
        except jaxguide.BudgetExceededError as e:
            errors["budget: " + str(e)] += 1
            continue
        compile_ms.append((time.perf_counter() - t0) * 1e3)
        try:
            built, was_capped = explore(lexer, cap)
        except jaxguide.BudgetExceededError:
            budget_errors += 1
            continue
        states.append(built)
        capped += was_capped
    compiled = len(compile_ms)
    print(f"  {len(patterns)} distinct patterns ({sum(patterns.values())} occurrences): "
          f"{compiled} compiled, {len(patterns) - compiled} clear errors")
    for reason, count in errors.most_common():
        print(f"    {count:4d}  {reason}   e.g. {examples.get(reason, '')[:70]!r}")
    print(f"  compile ms {summary(compile_ms)}")
    print(f"  states (BFS, cap {cap}) {summary(states)}; {capped} capped")
    return {
        "distinct_patterns": len(patterns), "occurrences": sum(patterns.values()),
        "compiled": compiled, "errors": dict(errors.most_common()),
        "error_examples": examples, "compile_ms": summary(compile_ms),
        "states_full_exploration": summary(states), "state_cap": cap,
        "patterns_hitting_cap": capped, "budget_errors_during_exploration": budget_errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--maskbench-dir", default=DEFAULT_MASKBENCH)
    parser.add_argument("--mib", type=int, default=16, help="hot-path input size in MiB")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--state-cap", type=int, default=2000)
    args = parser.parse_args()

    result = {
        "benchmark": "bench_lexer",
        "python": sys.version.split()[0], "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "unicode_version": UNICODE_VERSION,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    print("hot path (native feed over a warmed DFA):")
    result["hot_path"] = hot_path(args.mib, args.repeats)
    if os.path.isdir(args.maskbench_dir):
        print("MaskBench patterns (ECMA dialect):")
        result["maskbench"] = maskbench(args.maskbench_dir, args.state_cap)
    else:
        print(f"MaskBench data not found at {args.maskbench_dir}; skipped")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
