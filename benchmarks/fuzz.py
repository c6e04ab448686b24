"""The long fuzzing run (issue #22): mutated regexes, Lark grammars, JSON Schemas and request
lines through the public API, on persistent forked workers (`jaxguide.testing.fuzzing`).

Usage:
  python benchmarks/fuzz.py --cases 10000 --jobs 1 --seed 0 --out benchmarks/results/fuzz.json
  python benchmarks/fuzz.py --replay benchmarks/results/fuzz.json     # rerun its findings
  python benchmarks/fuzz.py --replay case.json --jobs 1               # one saved case

Case i of a run is `make_case(seeds, seed, i)` (a pure function), so `--seed S --first I
--cases 1` rebuilds it too. `--replay FILE` takes a results file (its findings' example
cases), a JSON list of cases or one case, runs each in a fresh worker under the same limits
and prints the outcome; `--out` then writes those results.

Output JSON: config; cases, wall_seconds, cases_per_second(_per_worker), case_seconds {p50,
p99, max}; totals and per front end ("regex", "lark", "json_schema", "request"): inputs,
compiled, compiled_share (for requests: the share of lines that parsed to a request), walked,
clean_error, unclean, invariant, memory, crash, hang, walk steps, clean_errors by type;
crashes, hangs, memory, unclean_errors, invariant_violations, peak_rss_mb (a worker's peak
resident set), worker_restarts, slowest_cases, and findings: one entry per signature (front
end, outcome, stage, error type, message) with its count and up to 3 example cases with their
results.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

from jaxguide.testing.fuzz_inputs import load_seeds, make_case
from jaxguide.testing.fuzzing import (
    CASE_SECONDS,
    MEMORY_BYTES,
    Environment,
    WorkerPool,
    run_fuzz,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _cases_of(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, dict) and "findings" in data:
        return [example["case"] for finding in data["findings"]
                for example in finding["examples"]]
    return data if isinstance(data, list) else [data]


def replay(path: str, jobs: int, case_seconds: float, memory_bytes: int) -> list[dict]:
    cases = _cases_of(path)
    pool = WorkerPool(Environment.load(), jobs, case_seconds, memory_bytes)
    out = []
    try:
        for case, result in pool.run(cases):
            print(f"case {case.get('id')} ({case['kind']}): {result['outcome']} "
                  f"{result.get('error_type', '')} {result.get('message', '')[:300]}")
            out.append({"case": case, "result": result})
    finally:
        pool.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--first", type=int, default=0, help="index of the first case")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", default="0")
    parser.add_argument("--case-seconds", type=float, default=CASE_SECONDS)
    parser.add_argument("--memory-mib", type=int, default=MEMORY_BYTES >> 20)
    parser.add_argument("--mild", action="store_true",
                        help="leave out the mutations of known bugs (as the CI test does)")
    parser.add_argument("--replay", help="a results file, a list of cases or one case")
    parser.add_argument("--out", help="where to write the JSON results")
    args = parser.parse_args()
    memory = args.memory_mib << 20
    if args.replay:
        results = replay(args.replay, args.jobs, args.case_seconds, memory)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(results, f, indent=1)
        return
    seeds = load_seeds(ROOT)
    cases = (make_case(seeds, args.seed, i, mild=args.mild)
             for i in range(args.first, args.first + args.cases))
    started = time.perf_counter()

    def progress(done: int, summary) -> None:
        if done % 1000 == 0:
            total = summary.totals()
            print(f"{done} cases, {done / (time.perf_counter() - started):.1f}/s, findings "
                  f"{sum(total[k] for k in ('unclean', 'invariant', 'memory', 'crash', 'hang'))}",
                  file=sys.stderr, flush=True)

    result = run_fuzz(cases, jobs=args.jobs, case_seconds=args.case_seconds,
                      memory_bytes=memory, progress=progress)
    result = {"config": {**vars(args), "cpu_count": os.cpu_count()}, **result}
    summary = {k: result[k] for k in ("cases", "wall_seconds", "cases_per_second_per_worker",
                                      "crashes", "hangs", "memory", "unclean_errors",
                                      "invariant_violations", "peak_rss_mb")}
    print(json.dumps(summary))
    for kind, stats in result["front_ends"].items():
        print(f"  {kind}: {stats['inputs']} inputs, compiled share {stats['compiled_share']}")
    for finding in result["findings"]:
        print(f"  {finding['count']:5d}  {finding['signature']}")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, default=repr)


if __name__ == "__main__":
    main()
