"""Speculation benchmark: tokens/s of schema-driven JSON with grammar-driven speculation, with a
self-drafting draft model (the first `--draft-layers` blocks of the model) and without speculation
(with and without fast-forward) vs unconstrained (issue #12; DOMINO reports up to 1.77x over
unconstrained).

SmolLM2-135M-Instruct, greedy, the schema and prompts of bench_decode.py. The predictor
(`jaxguide.decode.speculative.GrammarPredictor`) is warmed up on requests about other subjects,
then frozen for the timed runs. Each configuration runs once to compile, then `--repeats` timed
runs; tokens/s = generated tokens (sampled, forced and speculated) / decode time after prefill.

  python benchmarks/bench_speculation.py --batch 1,8 --out benchmarks/results/bench_speculation.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from bench_decode import requests_for  # noqa: E402

from jaxguide.decode import DecodeStats, Request, generate  # noqa: E402
from jaxguide.decode.speculative import (  # noqa: E402
    GrammarPredictor,
    SpeculationStats,
    generate_speculative,
)
from jaxguide.models import smollm2  # noqa: E402

WARMUP_SUBJECTS = ["an Indian architect", "a Mexican farmer", "a Swedish nurse",
                   "a Korean gamer", "an Irish poet", "a Greek sailor", "a Thai cook",
                   "a Polish miner"]


def warmup_requests(grammar) -> list[Request]:
    text = ("Describe {} as a JSON object with name, age, occupation, city, skills and "
            "married.")
    return [Request(messages=[{"role": "user", "content": text.format(s)}], grammar=grammar)
            for s in WARMUP_SUBJECTS]


def timed(run, repeats: int) -> dict:
    run(DecodeStats())  # compile
    runs = []
    for _ in range(repeats):
        stats = SpeculationStats()
        results = run(stats)
        decode_s = stats.total_s - stats.prefill_s
        runs.append({"tokens": stats.tokens, "steps": stats.steps,
                     "forced_tokens": stats.forced_tokens, "proposed": stats.proposed,
                     "accepted": stats.accepted, "draft_forwards": stats.draft_forwards,
                     "draft_s": stats.draft_s, "decode_s": decode_s,
                     "tokens_per_s": stats.tokens / decode_s if decode_s > 0 else 0.0,
                     "texts": [r.text for r in results]})
    return {"tokens_per_s_median": statistics.median(r["tokens_per_s"] for r in runs),
            "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", default="1,8")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--num-draft", type=int, default=6)
    parser.add_argument("--draft-layers", type=int, default=6,
                        help="early-exit draft model: the first N decoder blocks (0: skip)")
    parser.add_argument("--draft-model-num-draft", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/bench_speculation.json")
    args = parser.parse_args()
    backend = jax.default_backend()
    dtype = "float32" if backend == "cpu" else "bfloat16"
    model, info = smollm2.load(getattr(jnp, dtype))
    configs = []
    for batch in [int(b) for b in args.batch.split(",")]:
        unconstrained = requests_for("unconstrained", batch)
        schema = requests_for("schema_json", batch)
        grammar = schema[0].grammar
        predictor = GrammarPredictor()
        generate_speculative(model, info, warmup_requests(grammar), predictor=predictor,
                             num_draft=args.num_draft, max_new_tokens=args.max_new_tokens)
        plans = {
            "unconstrained": lambda s: generate(model, info, unconstrained,
                                                max_new_tokens=args.max_new_tokens, stats=s),
            "schema_json": lambda s: generate(model, info, schema,
                                              max_new_tokens=args.max_new_tokens, stats=s),
            "schema_json_no_ff": lambda s: generate(model, info, schema, fast_forward=False,
                                                    max_new_tokens=args.max_new_tokens, stats=s),
            "schema_json_speculative": lambda s: generate_speculative(
                model, info, schema, predictor=predictor, num_draft=args.num_draft,
                max_new_tokens=args.max_new_tokens, learn=False,
                stats=s if isinstance(s, SpeculationStats) else None),
        }
        if args.draft_layers:
            draft = model.with_layers(range(args.draft_layers))
            plans["schema_json_draft_model"] = lambda s: generate_speculative(
                model, info, schema, draft_model=draft, num_draft=args.draft_model_num_draft,
                max_new_tokens=args.max_new_tokens,
                stats=s if isinstance(s, SpeculationStats) else None)
        row = {"batch": batch}
        for name, run in plans.items():
            row[name] = timed(run, args.repeats)
            print(f"B={batch:3} {name:24} {row[name]['tokens_per_s_median']:8.1f} tokens/s",
                  flush=True)
        # Speculation is exact greedy decoding: it must equal the loop without fast-forward
        # (fast-forward's canonical forced tokens may differ from the model's own choice).
        same = row["schema_json_no_ff"]["runs"][0]["texts"] == \
            row["schema_json_speculative"]["runs"][0]["texts"]
        row["speculative_output_identical"] = same
        if args.draft_layers:
            row["draft_model_output_identical"] = row["schema_json_no_ff"]["runs"][0]["texts"] \
                == row["schema_json_draft_model"]["runs"][0]["texts"]
        base = row["unconstrained"]["tokens_per_s_median"]
        for name in plans:
            row[name]["vs_unconstrained"] = row[name]["tokens_per_s_median"] / base
        configs.append(row)
        report = {"benchmark": "bench_speculation", "backend": backend,
                  "device": str(jax.devices()[0]), "dtype": dtype,
                  "max_new_tokens": args.max_new_tokens, "num_draft": args.num_draft,
                  "draft_layers": args.draft_layers,
                  "draft_model_num_draft": args.draft_model_num_draft,
                  "repeats": args.repeats, "machine": platform.platform(),
                  "cpus": os.cpu_count(), "configs": configs}
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:  # after each batch: a cut-short run keeps them
            json.dump(report, f, indent=1)
        os.replace(args.out + ".tmp", args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
