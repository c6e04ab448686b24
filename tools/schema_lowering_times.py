"""Cold JSON Schema lowering time over every MaskBench schema (issue #20).

For each schema: `jaxguide.clear_caches()`, then `Grammar.from_json_schema(schema)` timed in CPU
time of this thread (`time.thread_time`: on a shared machine, other processes do not inflate it;
`--wall` for `time.perf_counter`). Errors are timed too. Prints p50 / p90 / p99 / max / sum.

Usage:
  taskset -c 0 python tools/schema_lowering_times.py [--out times.json] [--profile prof.out]
      [--min-ms 3 --only times.json]   # only the schemas slower than 3 ms in an earlier --out
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import gzip
import json
import pathlib
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jaxguide  # noqa: E402
from jaxguide import Grammar  # noqa: E402


def schemas(data: pathlib.Path):
    for path in sorted(data.glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as lines:
            for number, line in enumerate(lines):
                yield f"{path.name}:{number}", json.loads(line)["schema"]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data/maskbench"))
    parser.add_argument("--out")
    parser.add_argument("--profile")
    parser.add_argument("--only", help="an earlier --out file")
    parser.add_argument("--min-ms", type=float, default=0.0)
    parser.add_argument("--wall", action="store_true", help="wall-clock time instead of CPU")
    parser.add_argument("--gc-off", action="store_true",
                        help="no cyclic garbage collection (its pauses land on random schemas)")
    args = parser.parse_args()
    keep = None
    if args.only:
        earlier = json.loads(pathlib.Path(args.only).read_text())
        keep = {k for k, v in earlier.items() if v >= args.min_ms}
    profiler = cProfile.Profile() if args.profile else None
    times = {}
    clock = time.perf_counter if args.wall else time.thread_time
    if args.gc_off:
        gc.disable()
    warnings.simplefilter("ignore")
    for key, schema in schemas(pathlib.Path(args.data)):
        if keep is not None and key not in keep:
            continue
        jaxguide.clear_caches()
        if profiler:
            profiler.enable()
        start = clock()
        try:
            Grammar.from_json_schema(schema)
        except Exception:  # noqa: BLE001 - errors are timed too
            pass
        times[key] = (clock() - start) * 1e3
        if profiler:
            profiler.disable()
    if profiler:
        profiler.dump_stats(args.profile)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(times, indent=0, sort_keys=True))
    values = list(times.values())
    print(f"{len(values)} schemas, cold lowering ms ({'wall' if args.wall else 'CPU'}): "
          f"p50 {percentile(values, .5):.2f} "
          f"p90 {percentile(values, .9):.2f} p99 {percentile(values, .99):.2f} "
          f"max {max(values):.1f} sum {sum(values) / 1e3:.2f} s")
    slow = sorted(times.items(), key=lambda kv: -kv[1])[:8]
    print("slowest: " + ", ".join(f"{k} {v:.0f}" for k, v in slow))
    return 0


if __name__ == "__main__":
    sys.exit(main())
