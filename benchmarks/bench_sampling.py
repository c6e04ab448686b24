#!/usr/bin/env python3
"""Benchmark of jaxguide.device.sampling and jaxguide.device.mask_queue: masked sampling cost and mask transfer.

Two parts, both written to one JSON file (--out, default
benchmarks/results/bench_sampling_<platform>[_quick].json):

1. Sampler. For B in {1, 8, 64, 256} x V in {32k, 128k, 256k} and each sampling config, one
   jitted sampling step on device-resident logits, with a packed bitmask (masked) and with
   `bitmask=None` (unmasked), timed end to end (dispatch + `block_until_ready`) over
   --repeats repetitions after a warm-up: p50 / p99 / max / mean in microseconds. The mask
   overhead is masked p50 - unmasked p50.
2. Transfer. A stand-in decode step: a jitted "forward" (a matmul chain sized like a small
   model's decode step, ending in a [B, V] logits projection) followed by a separately jitted
   sampler, as in the decode loop of DESIGN.md. Scenarios, each timed per step
   (the host reads the sampled tokens back at the end of each step):
     unconstrained  forward, then sample(bitmask=None), for reference;
     resident       forward, then sample with a mask already on the device: the baseline (the
                    same sampling work, no transfer);
     serial         forward, wait for logits, then device_put the host mask, wait for it, sample;
     queued         forward dispatched, host mask written into a MaskQueue buffer and submitted
                    while the forward runs, then sample: the transfer overlaps the forward.
   Also the raw host-to-device time of one mask (device_put + block_until_ready). The exposed
   transfer cost of a scenario is its step p50 minus the resident p50.
   The sampler must be a separate jitted call from the forward for the overlap to happen: a
   jitted program starts only once all its inputs are on the device.

Runs on CPU (use --quick there: small sizes), GPU and TPU alike; the platform is recorded.

Usage:  python benchmarks/bench_sampling.py [--quick] [--out PATH] [--repeats N] [--dtype bf16]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide.device.mask_queue import MaskQueue
from jaxguide.device.sampling import Greedy, MinP, Temperature, TopK, TopP, sample

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {
    "greedy": Greedy(),
    "temperature": Temperature(0.8),
    "top_k_50": TopK(50, 0.8),
    "top_p_0.9": TopP(0.9, 0.8),
    "min_p_0.05": MinP(0.05, 0.8),
}
FULL = {"batch": [1, 8, 64, 256], "vocab": [32768, 131072, 262144], "repeats": 100,
        "transfer_batch": [64, 256], "transfer_vocab": [131072], "hidden": 2048, "layers": 16,
        "steps": 100}
QUICK = {"batch": [1, 8, 64], "vocab": [32768], "repeats": 20,
         "transfer_batch": [8, 64], "transfer_vocab": [32768], "hidden": 256, "layers": 4,
         "steps": 30}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))
    return ordered[index]


def summary_us(seconds: list[float]) -> dict:
    values = [s * 1e6 for s in seconds]
    return {"p50": percentile(values, 50), "p99": percentile(values, 99), "max": max(values),
            "mean": statistics.fmean(values), "count": len(values)}


def random_bitmask(rng: np.random.Generator, batch: int, vocab: int) -> np.ndarray:
    """uint32 [B, ceil(V / 32)], about half the ids allowed, padding bits clear."""
    words = -(-vocab // 32)
    bitmask = rng.integers(0, 2**32, size=(batch, words), dtype=np.uint32)
    tail = vocab - 32 * (words - 1)
    if tail < 32:
        bitmask[:, -1] &= np.uint32((1 << tail) - 1)
    return bitmask


def time_interleaved(fns: dict, repeats: int, warmup: int = 3) -> dict[str, list[float]]:
    """Seconds per call of each fn (called with the repetition index, result waited on).

    The functions are called in turn within each repetition so that drift in machine load
    (other processes, clocks) affects them alike instead of biasing their difference.
    """
    for i in range(warmup):
        for fn in fns.values():
            jax.block_until_ready(fn(i))
    times = {name: [] for name in fns}
    for i in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(i))
            times[name].append(time.perf_counter() - start)
    return times


def bench_sampler(sizes: dict, dtype, repeats: int, log) -> list[dict]:
    rng = np.random.default_rng(0)
    results = []
    for vocab in sizes["vocab"]:
        for batch in sizes["batch"]:
            logits = jax.device_put(
                rng.normal(size=(batch, vocab)).astype(np.float32)).astype(dtype)
            bitmask = jax.device_put(random_bitmask(rng, batch, vocab))
            key = jax.random.key(0)
            for name, config in CONFIGS.items():
                masked = jax.jit(functools.partial(sample, config=config))
                unmasked = jax.jit(lambda l, k, config=config: sample(l, None, k, config))
                times = time_interleaved({
                    "masked": lambda i: masked(logits, bitmask, key),
                    "unmasked": lambda i: unmasked(logits, key)}, repeats)
                row = {"batch": batch, "vocab": vocab, "config": name,
                       "masked_us": summary_us(times["masked"]),
                       "unmasked_us": summary_us(times["unmasked"])}
                row["mask_overhead_p50_us"] = (row["masked_us"]["p50"] -
                                               row["unmasked_us"]["p50"])
                results.append(row)
                log(f"sampler B={batch:4d} V={vocab:6d} {name:12s} "
                    f"masked p50 {row['masked_us']['p50']:9.1f} us  "
                    f"unmasked p50 {row['unmasked_us']['p50']:9.1f} us")
    return results


def make_forward(hidden: int, layers: int, vocab: int, dtype, seed: int = 0):
    """A jitted decode-step stand-in: `layers` MLP blocks on [B, hidden], then [B, V] logits."""
    keys = jax.random.split(jax.random.key(seed), 2 * layers + 1)
    scale = 1.0 / np.sqrt(hidden)
    params = {
        "up": [(jax.random.normal(keys[2 * i], (hidden, 4 * hidden)) * scale).astype(dtype)
               for i in range(layers)],
        "down": [(jax.random.normal(keys[2 * i + 1], (4 * hidden, hidden)) * scale / 2)
                 .astype(dtype) for i in range(layers)],
        "out": (jax.random.normal(keys[-1], (hidden, vocab)) * scale).astype(dtype),
    }

    @jax.jit
    def forward(params, h):
        for up, down in zip(params["up"], params["down"]):
            h = h + jax.nn.gelu(h @ up) @ down
        return h @ params["out"]

    weight_bytes = sum(int(np.prod(p.shape)) * p.dtype.itemsize
                       for p in jax.tree_util.tree_leaves(params))
    return functools.partial(forward, params), weight_bytes


def bench_transfer(sizes: dict, dtype, log) -> list[dict]:
    rng = np.random.default_rng(1)
    results = []
    steps = sizes["steps"]
    config = Temperature(0.8)
    sampler = jax.jit(lambda logits, mask, key: sample(logits, mask, key, config))
    plain_sampler = jax.jit(lambda logits, key: sample(logits, None, key, config))
    for vocab in sizes["transfer_vocab"]:
        forward, weight_bytes = make_forward(sizes["hidden"], sizes["layers"], vocab, dtype)
        for batch in sizes["transfer_batch"]:
            h = jax.device_put(rng.normal(size=(batch, sizes["hidden"])).astype(np.float32)
                               ).astype(dtype)
            masks = [random_bitmask(rng, batch, vocab) for _ in range(4)]
            words = masks[0].shape[1]
            keys = list(jax.random.split(jax.random.key(2), steps + 8))

            def forward_only(i):
                jax.block_until_ready(forward(h))

            resident_mask = jax.device_put(masks[0])

            def resident(i):
                np.asarray(sampler(forward(h), resident_mask, keys[i]))

            def unconstrained(i):
                np.asarray(plain_sampler(forward(h), keys[i]))

            host = np.empty_like(masks[0])

            def serial(i):
                logits = jax.block_until_ready(forward(h))
                np.copyto(host, masks[i % 4])
                mask = jax.block_until_ready(jax.device_put(host))
                np.asarray(sampler(logits, mask, keys[i]))

            queue = MaskQueue(batch, words, num_buffers=2)

            def queued(i):
                logits = forward(h)  # dispatched; runs while the host fills and submits
                buffer = queue.acquire()
                np.copyto(buffer, masks[i % 4])
                mask = queue.submit(buffer)
                np.asarray(sampler(logits, mask, keys[i]))

            times = time_interleaved({
                "device_put": lambda i: jax.device_put(masks[i % 4]),
                "forward_only": forward_only, "unconstrained_step": unconstrained,
                "resident_step": resident, "serial_step": serial, "queued_step": queued},
                steps)
            row = {"batch": batch, "vocab": vocab, "words": words, "hidden": sizes["hidden"],
                   "layers": sizes["layers"], "weight_bytes": weight_bytes,
                   "mask_bytes": batch * words * 4, "sampler_config": repr(config),
                   **{f"{name}_us": summary_us(values) for name, values in times.items()}}
            base = row["resident_step_us"]["p50"]
            row["exposed_transfer_cost_p50_us"] = {
                "serial": row["serial_step_us"]["p50"] - base,
                "queued": row["queued_step_us"]["p50"] - base}
            results.append(row)
            log(f"transfer B={batch:4d} V={vocab:6d} forward p50 "
                f"{row['forward_only_us']['p50']:9.1f} us, put p50 "
                f"{row['device_put_us']['p50']:7.1f} us, resident step p50 {base:9.1f} us, "
                f"exposed transfer cost p50: serial "
                f"{row['exposed_transfer_cost_p50_us']['serial']:8.1f} us, queued "
                f"{row['exposed_transfer_cost_p50_us']['queued']:8.1f} us")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CPU smoke run)")
    parser.add_argument("--out", default=None, help="JSON output path")
    parser.add_argument("--repeats", type=int, default=None, help="timed repetitions")
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16",
                        help="logits and weights dtype")
    parser.add_argument("--skip-transfer", action="store_true")
    args = parser.parse_args(argv)

    sizes = QUICK if args.quick else FULL
    repeats = args.repeats or sizes["repeats"]
    dtype = jnp.dtype(args.dtype)
    device = jax.devices()[0]
    out = args.out or os.path.join(
        HERE, "results",
        f"bench_sampling_{device.platform}{'_quick' if args.quick else ''}.json")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log(f"device: {device.device_kind} ({device.platform}), jax {jax.__version__}")
    result = {
        "meta": {
            "benchmark": "bench_sampling",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "platform": device.platform, "device_kind": device.device_kind,
            "device_count": jax.device_count(), "jax": jax.__version__,
            "python": platform.python_version(), "machine": platform.machine(),
            "cpu_count": os.cpu_count(), "quick": args.quick, "dtype": args.dtype,
            "repeats": repeats, "sizes": sizes, "units": "microseconds",
            "configs": {name: repr(config) for name, config in CONFIGS.items()},
        },
        "sampler": bench_sampler(sizes, dtype, repeats, log),
        "transfer": [] if args.skip_transfer else bench_transfer(sizes, dtype, log),
    }
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
