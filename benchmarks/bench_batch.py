"""Batch mask filling: masks per second vs threads, and the per-step cost of the async handoff.

Workload (MaskBench-like mixed batches). B rows (default 256), each a Matcher following its own
document with the Llama-3 tokenizer (128,256 ids, ASSETS.md): 70% JSON rows (JSON_LARK) over
valid test instances of MaskBench schemas (../shared/data/maskbench, JSON texts generated for
real schemas), and 10% each of arithmetic, left-recursive expressions and keyword/identifier
statements, the last being the expensive kind (every mask walks the trie through the parser,
~1 ms where a JSON string continuation costs ~10 us). Rows start at random offsets into their
documents. Every step fills the B masks (timed: `fill_next_token_bitmask_async(...).wait()`),
then accepts each row's next document token (a finished document restarts its row with a new
one). The same seeded sequence of steps is replayed for every thread count, and for a plain
sequential baseline (Matcher.fill_next_token_bitmask in a Python loop).

Handoff (the per-step cost the decode loop's Python thread pays for going asynchronous, with
the fill itself overlapped elsewhere): `dispatch` = the fill_next_token_bitmask_async call for
B rows (the same matcher list every step), `wait_done` = wait() once the fill has finished,
`python_side` = their sum; `round_trip` = dispatch to wait() return for one cheap (EOS-only) row
(it adds the pool's wake-up and completion signalling); `queue_submit` = PendingMask.submit()
(on the CPU backend this includes the device_put copy of the B x W buffer).

Usage: python benchmarks/bench_batch.py [--threads 1,2,16] [--batch 256] [--steps 40]
           [--out benchmarks/results/batch_masks.json]
Thread counts above the usable cores are skipped unless --oversubscribe.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support.grammar_corpus import JSON_LARK, TRICKY, outlines_grammar  # noqa: E402

import jaxguide  # noqa: E402
from jaxguide.models import assets  # noqa: E402

MASKBENCH = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "maskbench")
MASKBENCH_FILES = ["Github_easy", "Github_medium", "Github_hard", "Kubernetes", "Snowplow",
                   "Glaiveai2K", "JsonSchemaStore", "WashingtonPost"]

ARITHMETIC = ["(1 + 2) * 3 - 4 / 5", "12 * (3 + 4 * (5 - 6)) / 7 + 8 - 9 * 10",
              "-(1.5 + 2.25) * 3", "((((1))))+2*3-(4/5)*(6-7)", "3.14159 * 2 * 2 - 1 / 3"]
LEFT_RECURSIVE = ["1 + 2 * 3 - 4 * (5 + 6) * 7", "(1 - 2) * (3 - 4) * (5 - 6) + 12345",
                  "9 * 8 * 7 * 6 * 5 * 4 * 3 * 2 * 1 - 0"]
KEYWORDS = ["select foo;\nx = y;\nSELECT bar_baz;\n", "a = b;\nc = d;\nselect e;\n",
            "select alpha_beta_gamma;\nresult = value;\nselect z9;\n"]


def percentiles(samples_s) -> dict[str, float]:
    us = np.asarray(samples_s) * 1e6
    return {"p50": float(np.percentile(us, 50)), "p99": float(np.percentile(us, 99)),
            "max": float(us.max()), "mean": float(us.mean()), "n": int(us.size)}


def maskbench_documents(limit: int, rng: random.Random, folder: str = MASKBENCH) -> list[str]:
    docs = []
    for name in MASKBENCH_FILES:
        path = os.path.join(folder, name + ".jsonl.gz")
        if not os.path.exists(path):
            continue
        with gzip.open(path, "rt") as f:
            for line in f:
                record = json.loads(line)
                for test in record.get("tests", []):
                    if test.get("valid") in (True, "True"):
                        indent = rng.choice([None, None, 2])
                        docs.append(json.dumps(test["data"], indent=indent, ensure_ascii=False))
                        break
                if len(docs) >= limit * (MASKBENCH_FILES.index(name) + 1) // len(MASKBENCH_FILES):
                    break
    if not docs:  # no data folder: fall back to a few generated documents
        docs = [json.dumps({"id": i, "name": f"item {i}", "tags": ["a", "b"], "price": i * 1.5})
                for i in range(limit)]
    return docs


class Workload:
    """Rows following documents; replayable from a seed."""

    def __init__(self, info, batch: int, seed: int, docs_by_kind, compiled, weights):
        self.info = info
        self.rng = random.Random(seed)
        self.docs_by_kind = docs_by_kind
        self.compiled = compiled
        self.kinds = list(weights)
        self.weights = [weights[k] for k in self.kinds]
        self.encoded: dict[str, list[int]] = {}
        self.rows = [self._new_row(start_anywhere=True) for _ in range(batch)]
        self.matchers = [row[0] for row in self.rows]

    def _tokens(self, doc: str) -> list[int]:
        if doc not in self.encoded:
            self.encoded[doc] = self.info.encode(doc) + [min(self.info.eos_token_ids)]
        return self.encoded[doc]

    def _new_row(self, start_anywhere: bool):
        kind = self.rng.choices(self.kinds, self.weights)[0]
        doc = self.rng.choice(self.docs_by_kind[kind])
        tokens = self._tokens(doc)
        matcher = jaxguide.Matcher(self.compiled[kind])
        start = self.rng.randrange(len(tokens) - 1) if start_anywhere else 0
        assert matcher.accept_tokens(tokens[:start]) == start, (kind, doc[:80])
        return [matcher, tokens, start, kind]

    def advance(self, accept) -> None:
        """Accepts each row's next token (through `accept(matchers, tokens)`), then restarts
        finished rows."""
        tokens = [row[1][row[2]] for row in self.rows]
        accepted = accept(self.matchers, tokens)
        assert all(accepted), "a document token was refused"
        for i, row in enumerate(self.rows):
            row[2] += 1
            if row[2] >= len(row[1]):
                self.rows[i] = self._new_row(start_anywhere=False)
                self.matchers[i] = self.rows[i][0]


def run_threads(num_threads, args, info, docs, compiled, weights):
    batch = jaxguide.BatchMatcher(num_threads=num_threads)
    work = Workload(info, args.batch, args.seed, docs, compiled, weights)
    bitmask = jaxguide.allocate_token_bitmask(args.batch, info.logits_width)
    for _ in range(2):  # warm the lexer / lexeme-mask caches (shared by every run)
        batch.fill_next_token_bitmask_async(work.matchers, bitmask).wait()
    times, cpu = [], 0.0
    for _ in range(args.steps):
        start, start_cpu = time.perf_counter(), time.process_time()
        errors = batch.fill_next_token_bitmask_async(work.matchers, bitmask).wait()
        times.append(time.perf_counter() - start)
        cpu += time.process_time() - start_cpu
        assert not errors, errors
        work.advance(batch.accept_tokens)
    batch.close()
    total = sum(times)
    # cpu_per_wall: process CPU seconds per wall second while filling; below num_threads when
    # the cores are shared with other processes (or the batch's tail leaves workers idle).
    return {"step_us": percentiles(times), "masks_per_s": args.batch * len(times) / total,
            "cpu_per_wall": cpu / total}


def run_sequential(args, info, docs, compiled, weights):
    work = Workload(info, args.batch, args.seed, docs, compiled, weights)
    bitmask = jaxguide.allocate_token_bitmask(args.batch, info.logits_width)
    for i, m in enumerate(work.matchers):
        m.fill_next_token_bitmask(bitmask, i)
    times, per_mask = [], {k: [] for k in weights}
    for _ in range(args.steps):
        start = time.perf_counter()
        for i, m in enumerate(work.matchers):
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bitmask, i)
            per_mask[work.rows[i][3]].append(time.perf_counter() - t0)
        times.append(time.perf_counter() - start)

        def accept(matchers, tokens):
            return [m.accept_token(t) for m, t in zip(matchers, tokens)]
        work.advance(accept)
    return {"step_us": percentiles(times),
            "masks_per_s": args.batch * len(times) / sum(times),
            "mask_us_by_kind": {k: percentiles(v) for k, v in per_mask.items() if v}}


def run_handoff(args, info, compiled):
    """Per-step Python-side cost of the async handoff, and the one-row round trip."""
    batch = jaxguide.BatchMatcher()
    # Cheap rows: terminated matchers (the JSON text "1", then EOS) write EOS-only masks (a
    # memset of the row) and report no error.
    eos = min(info.eos_token_ids)
    cheap = [jaxguide.Matcher(compiled["json"]) for _ in range(args.batch)]
    for m in cheap:
        assert m.accept_tokens(info.encode("1") + [eos]) == len(info.encode("1")) + 1
    bitmask = jaxguide.allocate_token_bitmask(args.batch, info.logits_width)
    batch.fill_next_token_bitmask_async(cheap, bitmask).wait()
    dispatch, wait_done = [], []
    for _ in range(args.handoff_steps):
        t0 = time.perf_counter()
        handle = batch.fill_next_token_bitmask_async(cheap, bitmask)
        t1 = time.perf_counter()
        while not handle.done():
            time.sleep(0)
        t2 = time.perf_counter()
        handle.wait()
        t3 = time.perf_counter()
        dispatch.append(t1 - t0)
        wait_done.append(t3 - t2)
        del handle
    python_side = [a + b for a, b in zip(dispatch, wait_done)]
    one = cheap[:1]
    row = bitmask[:1]
    round_trip = []
    for _ in range(args.handoff_steps):
        t0 = time.perf_counter()
        batch.fill_next_token_bitmask_async(one, row).wait()
        round_trip.append(time.perf_counter() - t0)
    inline = []
    for _ in range(args.handoff_steps):
        t0 = time.perf_counter()
        cheap[0].fill_next_token_bitmask(row)
        inline.append(time.perf_counter() - t0)
    result = {"batch": args.batch, "dispatch_us": percentiles(dispatch),
              "wait_done_us": percentiles(wait_done), "python_side_us": percentiles(python_side),
              "round_trip_one_row_us": percentiles(round_trip),
              "inline_one_row_us": percentiles(inline)}
    try:
        from jaxguide.device.mask_queue import MaskQueue
        queue = MaskQueue(batch_size=args.batch, width=info.bitmask_width, num_buffers=2)
        submit = []
        for _ in range(min(args.handoff_steps, 300)):
            pending = queue.fill_async(batch, cheap)
            pending.handle.wait()
            t0 = time.perf_counter()
            pending.submit()
            submit.append(time.perf_counter() - t0)
        queue.drain()
        result["queue_submit_us"] = percentiles(submit)
        import jax
        result["queue_backend"] = jax.default_backend()
    except ImportError:
        pass
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,2,16")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--handoff-steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--oversubscribe", action="store_true")
    parser.add_argument("--maskbench", default=MASKBENCH,
                        help="folder of the MaskBench .jsonl.gz files (the JSON documents)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "batch_masks.json"))
    args = parser.parse_args()

    load_at_start = os.getloadavg()
    cores = jaxguide._native.default_num_threads()
    requested = [int(t) for t in args.threads.split(",")]
    threads = [t for t in requested if t <= cores or args.oversubscribe]
    skipped = [t for t in requested if t not in threads]

    info = jaxguide.TokenizerInfo.from_tiktoken(assets.llama3_tiktoken_encoding())
    rng = random.Random(args.seed)
    if not os.path.isdir(args.maskbench):
        print(f"no MaskBench data at {args.maskbench}: generated JSON documents instead",
              flush=True)
    docs = {"json": maskbench_documents(48, rng, args.maskbench), "arithmetic": ARITHMETIC,
            "left_recursive": LEFT_RECURSIVE, "keywords": KEYWORDS}
    texts = {"json": JSON_LARK, "arithmetic": outlines_grammar("arithmetic.lark"),
             "left_recursive": TRICKY["left_recursive"], "keywords": TRICKY["keywords"]}
    compiled = {k: jaxguide.compile_grammar(t, info) for k, t in texts.items()}
    weights = {"json": 0.7, "arithmetic": 0.1, "left_recursive": 0.1, "keywords": 0.1}

    results = {"sequential": run_sequential(args, info, docs, compiled, weights)}
    print("sequential", json.dumps(results["sequential"]["step_us"]), flush=True)
    by_threads = {}
    for t in threads:
        by_threads[str(t)] = run_threads(t, args, info, docs, compiled, weights)
        print(f"threads={t}", json.dumps(by_threads[str(t)]), flush=True)
    base = by_threads.get("1", {}).get("masks_per_s")
    if base:
        for t, r in by_threads.items():
            r["speedup_vs_1"] = r["masks_per_s"] / base
            r["efficiency"] = r["speedup_vs_1"] / int(t)
    results["threads"] = by_threads
    results["handoff"] = run_handoff(args, info, compiled)
    print("handoff", json.dumps(results["handoff"]), flush=True)

    out = {"benchmark": "batch_masks", "tokenizer": "llama3 (128,256 ids)",
           "machine": platform.machine(), "cpus": os.cpu_count(), "usable_cores": cores,
           "loadavg_at_start": load_at_start, "command": " ".join(sys.argv),
           "batch": args.batch, "steps": args.steps, "mix": weights,
           "json_documents": len(docs["json"]),
           "json_documents_from": os.path.abspath(args.maskbench)
           if os.path.isdir(args.maskbench) else "generated (no MaskBench data)",
           "skipped_threads": skipped,
           "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
