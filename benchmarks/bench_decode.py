"""End-to-end decode benchmark: tokens/s of constrained vs unconstrained generation.

SmolLM2-135M-Instruct (jaxguide.models.smollm2), batches of B identical-shape requests, three
workloads on the same prompts:
  * unconstrained:  no grammar (the baseline);
  * schema_json:    a JSON Schema (object with typed, bounded properties), with and without
                    fast-forward;
  * free_json:      any JSON value (`Grammar.from_json_schema({})`), with and without fast-forward.
Each configuration runs once to compile (every shape the loop will meet), then `--repeats`
timed runs; the figures are from the timed runs. tokens/s counts generated tokens (sampled
and forced) over the decode time after the prefill. The breakdown comes from
`jaxguide.decode.DecodeStats` (host work, mask wait, device wait).

Usage (GPU: the target of issue #9; CPU works too, slowly):
  python benchmarks/bench_decode.py --batch 1,8,64 --max-new-tokens 128 \\
      --out benchmarks/results/bench_decode_gpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxguide import Grammar  # noqa: E402
from jaxguide.decode import DecodeStats, Request, generate  # noqa: E402
from jaxguide.models import smollm2  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 32},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "occupation": {"type": "string", "maxLength": 32},
        "city": {"type": "string", "maxLength": 32},
        "skills": {"type": "array", "items": {"type": "string", "maxLength": 24},
                   "maxItems": 3},
        "married": {"type": "boolean"},
    },
    "required": ["name", "age", "occupation", "city", "skills", "married"],
    "additionalProperties": False,
}
SUBJECTS = ["a French chef", "a Japanese engineer", "a retired teacher", "a young pilot",
            "a Brazilian footballer", "an Egyptian doctor", "a Canadian singer",
            "a Kenyan runner"]


def requests_for(workload: str, batch: int) -> list[Request]:
    grammar = None
    if workload == "schema_json":
        grammar = Grammar.from_json_schema(SCHEMA, whitespace="compact")
    elif workload == "free_json":
        grammar = Grammar.from_json_schema({}, whitespace="compact")
    out = []
    for i in range(batch):
        subject = SUBJECTS[i % len(SUBJECTS)]
        text = (f"Describe {subject} as a JSON object with name, age, occupation, city, skills "
                "and married.")
        out.append(Request(messages=[{"role": "user", "content": text}], grammar=grammar))
    return out


def run_config(model, info, workload: str, batch: int, fast_forward: bool, max_new: int,
               repeats: int, opportunistic: str = "off") -> dict:
    requests = requests_for(workload, batch)
    generate(model, info, requests, max_new_tokens=max_new, fast_forward=fast_forward,
             opportunistic=opportunistic)  # compile
    runs = []
    for _ in range(repeats):
        stats = DecodeStats()
        results = generate(model, info, requests, max_new_tokens=max_new,
                           fast_forward=fast_forward, stats=stats, opportunistic=opportunistic)
        decode_s = stats.total_s - stats.prefill_s
        runs.append({"tokens": stats.tokens, "forced_tokens": stats.forced_tokens,
                     "steps": stats.steps, "extend_steps": stats.extend_steps,
                     "total_s": stats.total_s, "prefill_s": stats.prefill_s,
                     "decode_s": decode_s, "host_s": stats.host_s,
                     "mask_wait_s": stats.mask_wait_s, "device_wait_s": stats.device_wait_s,
                     "deferred_masks": stats.deferred_masks, "resampled": stats.resampled,
                     "tokens_per_s": stats.tokens / decode_s if decode_s > 0 else 0.0,
                     "finish": {r: sum(x.finish_reason == r for x in results)
                                for r in ("eos", "grammar_end", "max_tokens", "error")}})
    best = max(runs, key=lambda r: r["tokens_per_s"])
    return {"workload": workload, "batch": batch, "fast_forward": fast_forward,
            "opportunistic": opportunistic,
            "tokens_per_s_median": statistics.median(r["tokens_per_s"] for r in runs),
            "tokens_per_s_best": best["tokens_per_s"], "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", default="1,8,64")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default=None,
                        help="default: bfloat16 on accelerators, float32 on CPU")
    parser.add_argument("--workloads", default="unconstrained,schema_json,free_json")
    parser.add_argument("--opportunistic", default="off",
                        help="comma-separated policies to run for constrained workloads "
                             "(off, always, auto)")
    parser.add_argument("--out", default="benchmarks/results/bench_decode.json")
    args = parser.parse_args()
    backend = jax.default_backend()
    dtype = args.dtype or ("float32" if backend == "cpu" else "bfloat16")
    model, info = smollm2.load(getattr(jnp, dtype))
    configs = []

    def write_report() -> None:
        """Writes what has run so far (a run cut short still leaves its finished configs)."""
        baseline = {c["batch"]: c["tokens_per_s_median"] for c in configs
                    if c["workload"] == "unconstrained"}
        for c in configs:
            if c["batch"] in baseline and baseline[c["batch"]] > 0:
                c["vs_unconstrained"] = c["tokens_per_s_median"] / baseline[c["batch"]]
        report = {"benchmark": "bench_decode", "backend": backend,
                  "device": str(jax.devices()[0]), "dtype": dtype,
                  "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
                  "machine": platform.platform(), "cpus": os.cpu_count(),
                  "configs": configs}
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(report, f, indent=1)
        os.replace(args.out + ".tmp", args.out)

    for batch in [int(b) for b in args.batch.split(",")]:
        for workload in args.workloads.split(","):
            policies = ["off"] if workload == "unconstrained" else \
                args.opportunistic.split(",")
            for ff in ([False] if workload == "unconstrained" else [False, True]):
                for policy in policies:
                    start = time.perf_counter()
                    result = run_config(model, info, workload, batch, ff, args.max_new_tokens,
                                        args.repeats, policy)
                    configs.append(result)
                    write_report()
                    print(f"B={batch:3} {workload:13} ff={ff!s:5} opp={policy:6} "
                          f"{result['tokens_per_s_median']:9.1f} tokens/s "
                          f"({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"wrote {args.out}")
    for c in configs:
        print(f"B={c['batch']:3} {c['workload']:13} ff={c['fast_forward']!s:5} "
              f"opp={c['opportunistic']:6} {c['tokens_per_s_median']:9.1f} tok/s  x{c.get('vs_unconstrained', 0):.2f} vs "
              f"unconstrained")


if __name__ == "__main__":
    main()
