"""Cold time to first mask of two jaxguide checkouts on MaskBench, interleaved per schema.

Each checkout runs in a worker process of its own (`python -S`, the checkout first on
sys.path, so no installed or editable jaxguide is seen; its native module must be built in the
checkout's `jaxguide/` folder). Every schema goes to both workers, who goes first alternating;
each worker clears every schema-keyed cache (`jaxguide.clear_caches()`) and times compile plus
first mask, as `maskbench.py` does for its cold TTFM; over `--passes` timed passes (who goes
first alternating again) each schema's minimum counts, so that a one-off spike (a garbage
collection, the OS) does not decide a percentile. A first pass over all the schemas, not
timed, warms what is per process and not per schema (lazy imports such as jsonschema's, first
uses of code paths), which would otherwise land on whichever schema comes first. Reported on
the schemas both compile: p50 / p90 / p99 / max of each and the ratios B / A, and the schemas
that slowed down most.

Usage: python benchmarks/ttfm_ab.py --a /path/to/old/checkout --b . \\
           [--data ../shared/data/maskbench] [--limit N] [--out results.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

WORKER = r'''
import json, sys, sysconfig, time
root, assets = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
sys.path += [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], assets]
import jaxguide
from jaxguide.models import assets as bundled
info = jaxguide.TokenizerInfo.from_tiktoken(bundled.llama3_tiktoken_encoding())
bitmask = jaxguide.allocate_token_bitmask(1, info.logits_width)
print(json.dumps({"ready": jaxguide.__file__}), flush=True)
for line in sys.stdin:
    schema = json.loads(line)
    jaxguide.clear_caches()
    t0 = time.perf_counter()
    try:
        compiled = jaxguide.compile_grammar(jaxguide.Grammar.from_json_schema(schema), info)
        jaxguide.Matcher(compiled).fill_next_token_bitmask(bitmask)
        print(json.dumps({"ok": True, "ms": (time.perf_counter() - t0) * 1e3}), flush=True)
    except Exception as e:  # noqa: BLE001 - any failure is a compile error
        print(json.dumps({"ok": False, "error": type(e).__name__}), flush=True)
'''


class Worker:
    """One checkout's worker process: `ask(schema_json)` -> {"ok", "ms"} or {"ok", "error"}."""

    def __init__(self, root: str, assets: str):
        self.process = subprocess.Popen(
            [sys.executable, "-S", "-c", WORKER, root, assets], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd=str(ROOT))
        self.module = json.loads(self.process.stdout.readline())["ready"]

    def ask(self, schema_json: str) -> dict:
        self.process.stdin.write(schema_json + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())


def schemas(data: pathlib.Path, limit: int | None):
    """(name, schema JSON text) of the MaskBench schemas, file by file (at most `limit`)."""
    count = 0
    for path in sorted(data.glob("*.jsonl.gz")):
        for line in gzip.open(path, "rt"):
            if limit is not None and count >= limit:
                return
            row = json.loads(line)
            yield row["name"], json.dumps(row["schema"])
            count += 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(rows: list[dict]) -> dict:
    both = [r for r in rows if r["a"]["ok"] and r["b"]["ok"]]
    a = [r["a"]["ms"] for r in both]
    b = [r["b"]["ms"] for r in both]
    out = {"schemas": len(rows), "a_compiled": sum(r["a"]["ok"] for r in rows),
           "b_compiled": sum(r["b"]["ok"] for r in rows), "both_compiled": len(both)}
    for q, name in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (1.0, "max")):
        pa, pb = percentile(a, q), percentile(b, q)
        out[f"{name}_ms"] = {"a": round(pa, 3), "b": round(pb, 3), "b_over_a": round(pb / pa, 3)}
    out["sum_ms"] = {"a": round(sum(a), 1), "b": round(sum(b), 1)}
    slowest = sorted(both, key=lambda r: r["b"]["ms"] - r["a"]["ms"], reverse=True)[:20]
    out["slowed_most"] = [{"name": r["name"], "a_ms": round(r["a"]["ms"], 2),
                           "b_ms": round(r["b"]["ms"], 2)} for r in slowest]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="checkout A (the baseline)")
    parser.add_argument("--b", default=str(ROOT), help="checkout B (default: this one)")
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data/maskbench"))
    parser.add_argument("--assets", default=str(ROOT / ".assets"),
                        help="folder of the asset packages (requirements/assets.txt)")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--passes", type=int, default=2,
                        help="timed passes; each schema's minimum counts (spikes: GC, the OS)")
    parser.add_argument("--out")
    args = parser.parse_args()
    workers = {"a": Worker(args.a, args.assets), "b": Worker(args.b, args.assets)}
    print({k: w.module for k, w in workers.items()}, flush=True)
    start = time.perf_counter()
    for _, text in schemas(pathlib.Path(args.data), args.limit):  # warm-up pass, not timed
        for worker in workers.values():
            worker.ask(text)
    rows = []
    for timed in range(args.passes):
        for i, (name, text) in enumerate(schemas(pathlib.Path(args.data), args.limit)):
            if timed == 0:
                rows.append({"name": name})
            row = rows[i]
            for key in ("a", "b") if (i + timed) % 2 == 0 else ("b", "a"):
                result = workers[key].ask(text)
                if key not in row or (result["ok"] and result["ms"] < row[key]["ms"]):
                    row[key] = result
    summary = summarize(rows)
    summary["seconds"] = round(time.perf_counter() - start, 1)
    report = {"benchmark": "ttfm_ab", "a": args.a, "b": args.b, "data": args.data,
              "summary": summary}
    print(json.dumps(summary, indent=1))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
