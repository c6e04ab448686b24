"""Lark grammars: compile and mask times of jaxguide vs llguidance, same tokenizer, one core.

Compile. Each engine compiles each grammar in a fresh process (`--compile-probe`: every cache
empty; the tokenizer is loaded before the clock starts), `--compile-repeats` times, engines
alternating; the median is reported. jaxguide's time is split into lark's own work
(`load_grammar`: reading the text, `Grammar.compile`: EBNF expansion), jaxguide's lowering to
the IR (Python) and the native compile; llguidance's into `grammar_from_lark` and the
`LLMatcher` constructor (native: it parses the Lark text itself). The first mask after the
compile is timed too (`first_mask_s`: lazy work shows up there).

Masks. Sentences come from seeded random walks through jaxguide's masks
(`jaxguide.testing.random_walk`, seed `"<grammar>:<i>"`), kept when they end at EOS, when
`lark` (the oracle) parses them, and when llguidance accepts their tokens (the others are
counted: `llguidance_rejected`); walks go on until the sentences hold `--min-masks` masks. Each
sentence is tokenized canonically (tiktoken `encode_ordinary`, Llama-3, 128,256 ids). Then
`--runs` runs: each compiles both engines afresh, jaxguide's caches cleared (so its first
masks are cold, as for a new grammar in a server) and goes through the sentences, the two
engines alternating per sentence (who goes first alternates too) so that drift cancels; every
mask before every token and the final EOS mask is timed. Reported per engine: p50 / p99 / max
of masks (microseconds), all runs pooled and per run, and jaxguide / llguidance ratios. Pin to
one core: `taskset -c 0`.

llguidance runs with `step_max_items` raised (`llguidance_limits`). Its Lark dialect: line
continuations (`\\` + newline) are joined, and lookarounds (sqlpp's comments) are replaced by
regular equivalents (`llguidance_dialect`).

Usage: taskset -c 0 python benchmarks/bench_grammar.py [--grammars json,sqlpp] \\
           [--out benchmarks/results/grammar_masks.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from support.grammar_corpus import (  # noqa: E402
    JSON_LARK,
    PYTHON_SUBSET,
    TRICKY,
    bundled_grammar,
    outlines_grammar,
)

GRAMMARS = {
    "json": lambda: JSON_LARK,
    "arithmetic": lambda: outlines_grammar("arithmetic.lark"),
    "python_subset": lambda: PYTHON_SUBSET,
    "keywords": lambda: TRICKY["keywords"],
    "sqlpp": lambda: bundled_grammar("sqlpp"),
}

# sqlpp's lookaround comments, in regular regexes llguidance reads (same lexemes, except that
# `--+` may be lexed as `--` then `+` there).
_LLGUIDANCE_REWRITES = {
    r"LINE_COMMENT: /--(?!\+)[^\n]*/": r"LINE_COMMENT: /--(?:[^\n+][^\n]*)?/",
    r"BLOCK_COMMENT: /\/\*(?!\+).*?\*\//s":
        r"BLOCK_COMMENT: /\/\*(?:[^*+][^*]*)?\*+(?:[^\/*][^*]*\*+)*\//",
}


def llguidance_limits():
    """llguidance's default of 50,000 Earley items per mask stops it on sqlpp's first keyword
    ("Too many items"): raised 20x (a limit, not a speed setting)."""
    import llguidance

    return llguidance.LLParserLimits(step_max_items=1_000_000)


def llguidance_dialect(text: str) -> str:
    text = re.sub(r"[ \t]*\\\n[ \t]*", " ", text)
    for old, new in _LLGUIDANCE_REWRITES.items():
        text = text.replace(old, new)
    return text


def load_tokenizers():
    import llguidance.tiktoken

    import jaxguide
    from jaxguide.models import assets

    encoding = assets.llama3_tiktoken_encoding()
    info = jaxguide.TokenizerInfo.from_tiktoken(encoding)
    lltokenizer = llguidance.tiktoken.lltokenizer_from_encoding(
        encoding, eos_token=sorted(info.eos_token_ids))
    return encoding, info, lltokenizer


# --- compile, in a fresh process ----------------------------------------------------------------

def _timed(owner, name: str, totals: dict, key: str) -> None:
    """Wraps owner.name so that its time adds up in totals[key]."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[key] += time.perf_counter() - start

    setattr(owner, name, wrapper)


def compile_probe(engine: str, name: str) -> dict:
    """One compile of grammar `name` by `engine` in this (fresh) process, and its first mask."""
    text = GRAMMARS[name]()
    _, info, lltokenizer = load_tokenizers()
    if engine == "jaxguide":
        import lark.load_grammar

        import jaxguide
        from jaxguide.engine import compiled_grammar as engine_compiled
        from jaxguide.grammars import grammar as grammars_grammar

        totals = {"lark_load_grammar_s": 0.0, "lark_compile_s": 0.0, "lower_s": 0.0,
                  "native_s": 0.0}
        _timed(lark.load_grammar, "load_grammar", totals, "lark_load_grammar_s")
        _timed(lark.load_grammar.Grammar, "compile", totals, "lark_compile_s")
        _timed(grammars_grammar, "cached_lark_to_ir", totals, "lower_s")
        start = time.perf_counter()
        compiled = jaxguide.compile_grammar(text, info)
        total = time.perf_counter() - start
        lark_s = totals["lark_load_grammar_s"] + totals["lark_compile_s"]
        totals["lower_s"] -= lark_s
        totals["native_s"] = total - totals["lower_s"] - lark_s
        del engine_compiled
        bitmask = jaxguide.allocate_token_bitmask(1, info.logits_width)
        matcher = jaxguide.Matcher(compiled)
        start = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        first_mask = time.perf_counter() - start
        return {"total_s": total, "without_lark_s": total - lark_s, **totals,
                "first_mask_s": first_mask}
    import llguidance
    import llguidance.numpy as lln

    start = time.perf_counter()
    grammar = llguidance.LLMatcher.grammar_from_lark(llguidance_dialect(text))
    from_lark = time.perf_counter() - start
    matcher = llguidance.LLMatcher(lltokenizer, grammar, limits=llguidance_limits())
    total = time.perf_counter() - start
    assert not matcher.is_error(), matcher.get_error()
    bitmask = lln.allocate_token_bitmask(1, lltokenizer.vocab_size)
    start = time.perf_counter()
    lln.fill_next_token_bitmask(matcher, bitmask)
    first_mask = time.perf_counter() - start
    return {"total_s": total, "without_lark_s": total, "grammar_from_lark_s": from_lark,
            "matcher_s": total - from_lark, "first_mask_s": first_mask}


def compile_times(name: str, repeats: int) -> dict:
    runs = {"jaxguide": [], "llguidance": []}
    for i in range(repeats):
        order = ("jaxguide", "llguidance") if i % 2 == 0 else ("llguidance", "jaxguide")
        for engine in order:
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--compile-probe", engine, name],
                capture_output=True, text=True, check=True).stdout
            runs[engine].append(json.loads(out.strip().splitlines()[-1]))
    result = {}
    for engine, probes in runs.items():
        result[engine] = {key: statistics.median(p[key] for p in probes) for key in probes[0]}
        result[engine]["repeats"] = len(probes)
    return result


# --- sentences ----------------------------------------------------------------------------------

def sentences(name: str, text: str, encoding, info, lltokenizer, min_masks: int) -> dict:
    """Seeded walk sentences valid for lark and for both engines, with their tokens."""
    import llguidance

    import jaxguide
    from jaxguide.testing import LarkOracle, WalkConfig, random_walk

    getattr(jaxguide, "clear_caches", lambda: None)()
    compiled = jaxguide.compile_grammar(text, info)
    oracle = LarkOracle(text)
    llgrammar = llguidance.LLMatcher.grammar_from_lark(llguidance_dialect(text))
    eos = min(info.eos_token_ids)
    kept, counts, masks, seed = [], {"walks": 0, "not_eos": 0, "lark_rejected": 0,
                                     "not_utf8": 0, "llguidance_rejected": 0,
                                     "stripped": 0}, 0, 0
    while masks < min_masks and seed < 20 * min_masks:
        rng = random.Random(f"{name}:{seed}")
        seed += 1
        config = WalkConfig(p_eos=rng.choice([0.05, 0.2]), target_tokens=rng.randint(8, 80),
                            max_tokens=400)
        walk = random_walk(compiled, rng, config)
        counts["walks"] += 1
        if walk is None or walk.end != "eos":
            counts["not_eos"] += 1
            continue
        try:
            sentence = walk.text.decode("utf-8")
        except UnicodeDecodeError:
            counts["not_utf8"] += 1
            continue
        if oracle.check(sentence) is not None:
            counts["lark_rejected"] += 1
            continue
        # llguidance allows no %ignore'd text before the first lexeme nor after the last:
        # such a sentence is tried again without its outer whitespace, if lark still takes it.
        for variant in (sentence, sentence.strip()):
            tokens = encoding.encode_ordinary(variant) + [eos]
            llmatcher = llguidance.LLMatcher(lltokenizer, llgrammar, log_level=0,
                                              limits=llguidance_limits())
            if (variant == sentence or oracle.check(variant) is None) and all(
                    llmatcher.consume_token(t) for t in tokens):
                break
        else:
            counts["llguidance_rejected"] += 1
            continue
        counts["stripped"] += variant != sentence
        kept.append(tokens)
        masks += len(tokens)
    return {"tokens": kept, "counts": {**counts, "sentences": len(kept), "masks": masks}}


# --- masks --------------------------------------------------------------------------------------

def _jaxguide_sentence(compiled, bitmask, tokens, times) -> bool:
    import jaxguide

    matcher = jaxguide.Matcher(compiled)
    for token in tokens:
        start = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        times.append(time.perf_counter() - start)
        if not (bitmask[0, token >> 5] >> (token & 31)) & 1 or not matcher.accept_token(token):
            return False
    return True


def _llguidance_sentence(matcher, bitmask, tokens, times) -> bool:
    import llguidance.numpy as lln

    matcher.reset()
    for token in tokens:
        start = time.perf_counter()
        lln.fill_next_token_bitmask(matcher, bitmask)
        times.append(time.perf_counter() - start)
        allowed = (int(bitmask[0, token >> 5]) >> (token & 31)) & 1
        if not allowed or not matcher.consume_token(token):
            return False
    return True


def mask_runs(text: str, token_lists, info, lltokenizer, runs: int) -> dict:
    import llguidance
    import llguidance.numpy as lln

    import jaxguide

    jg_mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    ll_mask = lln.allocate_token_bitmask(1, lltokenizer.vocab_size)
    llgrammar = llguidance.LLMatcher.grammar_from_lark(llguidance_dialect(text))
    times = {"jaxguide": [], "llguidance": []}
    blocked = {"jaxguide": 0, "llguidance": 0}
    for run in range(runs):
        # A cold compile per run (jaxguide keeps compiled grammars; versions before the cache
        # have no clear_caches).
        getattr(jaxguide, "clear_caches", lambda: None)()
        compiled = jaxguide.compile_grammar(text, info)
        llmatcher = llguidance.LLMatcher(lltokenizer, llgrammar, limits=llguidance_limits())
        times["jaxguide"].append([])
        times["llguidance"].append([])
        for i, tokens in enumerate(token_lists):
            for engine in (("jaxguide", "llguidance") if (i + run) % 2 == 0
                           else ("llguidance", "jaxguide")):
                if engine == "jaxguide":
                    ok = _jaxguide_sentence(compiled, jg_mask, tokens, times[engine][-1])
                else:
                    ok = _llguidance_sentence(llmatcher, ll_mask, tokens, times[engine][-1])
                blocked[engine] += not ok
    out = {}
    for engine, per_run in times.items():
        pooled = [t for run in per_run for t in run]
        out[engine] = {"mask_us": percentiles(pooled),
                       "runs_us": [percentiles(run) for run in per_run],
                       "blocked_sentences": blocked[engine]}
    out["ratio"] = {key: out["jaxguide"]["mask_us"][key] / out["llguidance"]["mask_us"][key]
                    for key in ("p50", "p99", "max", "mean")}
    return out


def percentiles(samples: list[float]) -> dict[str, float]:
    us = np.asarray(samples) * 1e6
    return {"p50": float(np.percentile(us, 50)), "p99": float(np.percentile(us, 99)),
            "max": float(us.max()), "mean": float(us.mean()), "n": int(us.size)}


def bench_grammar(name: str, args, encoding, info, lltokenizer) -> dict:
    text = GRAMMARS[name]()
    result = {"compile": compile_times(name, args.compile_repeats) if args.compile_repeats
              else {}}
    corpus = sentences(name, text, encoding, info, lltokenizer, args.min_masks)
    result["sentences"] = corpus["counts"]
    result["masks"] = mask_runs(text, corpus["tokens"], info, lltokenizer, args.runs)
    report(name, result)
    return result


def report(name: str, result: dict) -> None:
    for engine in ("jaxguide", "llguidance"):
        m = result["masks"][engine]["mask_us"]
        c = result["compile"].get(engine, {})
        print(f"{name:14s} {engine:10s} masks p50 {m['p50']:8.1f} p99 {m['p99']:8.1f} "
              f"max {m['max']:8.1f} us (n {m['n']}); compile w/o lark "
              f"{c.get('without_lark_s', float('nan')) * 1e3:7.2f} ms, total "
              f"{c.get('total_s', float('nan')) * 1e3:7.2f} ms, first mask "
              f"{c.get('first_mask_s', float('nan')) * 1e3:6.2f} ms", flush=True)
    r = result["masks"]["ratio"]
    print(f"{name:14s} ratio      p50 {r['p50']:.2f} p99 {r['p99']:.2f} max {r['max']:.2f}; "
          f"sentences {result['sentences']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "grammar_masks.json"))
    parser.add_argument("--grammars", default=",".join(GRAMMARS))
    parser.add_argument("--min-masks", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compile-repeats", type=int, default=5)
    parser.add_argument("--compile-probe", nargs=2, metavar=("ENGINE", "GRAMMAR"))
    args = parser.parse_args()
    if args.compile_probe:
        print(json.dumps(compile_probe(*args.compile_probe)))
        return
    encoding, info, lltokenizer = load_tokenizers()
    import llguidance

    results = {name: bench_grammar(name, args, encoding, info, lltokenizer)
               for name in args.grammars.split(",")}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"benchmark": "grammar_masks", "tokenizer": "llama3 (128,256 ids)",
                   "llguidance": llguidance.__version__, "machine": platform.machine(),
                   "cpus": os.cpu_count(), "affinity": sorted(os.sched_getaffinity(0)),
                   "config": {k: v for k, v in vars(args).items() if k != "compile_probe"},
                   "results": results}, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
