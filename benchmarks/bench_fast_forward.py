"""Fast-forward on MaskBench: the share of tokens forced, and non-canonical forced sequences.

For every valid instance of the MaskBench schemas (`--data`, JSONL.gz files), the text the
model would write (`json.dumps`, compact or default separators) is tokenized canonically; the
walk asks the matcher for fast-forward tokens at every step (`compute_ff_tokens`, with the last
tokens as context) and compares them with the canonical tokens at that position. A forced
sequence that differs is non-canonical (must be 0); then the canonical token is taken instead.
Reported per tokenizer x whitespace: schemas, instances, tokens, forced tokens (share), forced
sequences, non-canonical sequences.

Usage: python benchmarks/bench_fast_forward.py --data ../shared/data/maskbench
           [--limit-per-category N] [--tokenizers a,b] [--out benchmarks/results/fast_forward.json]
       python benchmarks/bench_fast_forward.py --data ../shared/data/maskbench \
           --random-grammars 400 --merge   (random regexes and the Lark corpus instead; texts
           from seeded walks to EOS, tokenized canonically and replayed the same way)
           [--merge]

Tokenizers are the names of tests/support/real_tokenizers.py; "qwen2_gguf" needs llama.cpp's
vocabulary suite (tools/llama_cpp_vocab/fetch.py). `--merge` keeps the entries of `--out` that
this run does not redo, and records each run's command line under "commands".
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support.grammar_corpus import (  # noqa: E402
    BUNDLED,
    JSON_LARK,
    PYTHON_SUBSET,
    TRICKY,
    bundled_grammar,
)
from support.real_tokenizers import real_tokenizer  # noqa: E402

import jaxguide  # noqa: E402
from jaxguide.testing import SHORT_WALK, random_regex, random_walk  # noqa: E402


def canonical_tokens(info, text: str) -> list[int]:
    """The tokenizer's tokens for `text` in the middle of a sequence (no dummy prefix)."""
    if not info.dummy_prefix:
        return info.encode(text)
    tokens = info.encode("\n" + text)
    for k in range(len(tokens)):
        if info.decode_bytes(tokens[:k]) == info.dummy_prefix + b"\n":
            return tokens[k:]
    raise ValueError("no token boundary after the context")


def walk(matcher, tokens, span_probes: int = 16) -> tuple[int, int, int, list]:
    """(forced tokens, forced sequences, non-canonical sequences, examples)."""
    forced = sequences = bad = 0
    examples = []
    i = 0
    while i < len(tokens):
        ff = matcher.compute_ff_tokens(recent_tokens=tokens[max(0, i - 3):i],
                                       max_span_probes=span_probes)
        if ff:
            sequences += 1
            if ff == tokens[i:i + len(ff)]:
                assert matcher.accept_tokens(ff) == len(ff)
                forced += len(ff)
                i += len(ff)
                continue
            bad += 1
            if len(examples) < 5:
                examples.append({"at": i, "forced": ff, "canonical": tokens[i:i + len(ff)]})
        if not matcher.accept_token(tokens[i]):
            raise AssertionError(f"canonical token {tokens[i]} rejected at {i}")
        i += 1
    return forced, sequences, bad, examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--limit-per-category", type=int, default=None,
                        help="schemas per category (default: all, the whole dev half)")
    parser.add_argument("--tokenizers", default="llama3_tiktoken,mistral_sp_v1,deepseek_hf_json,"
                        "gemma3_gguf,qwen2_gguf",
                        help="Llama-3 byte-level BPE, Mistral SentencePiece, DeepSeek HF BPE, "
                        "Gemma 3 SentencePiece BPE (GGUF), Qwen2 byte-level BPE (GGUF)")
    parser.add_argument("--span-probes", type=int, default=16,
                        help="compute_ff_tokens' max_span_probes (0: the check before the cut "
                        "off, as before it existed)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other tokenizers' entries already in --out")
    parser.add_argument("--random-grammars", type=int, default=0,
                        help="instead of MaskBench: this many seeded random regexes plus the "
                        "Lark corpus (tests/support/grammar_corpus.py), texts from walks")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "fast_forward.json"))
    args = parser.parse_args()
    if args.random_grammars:
        write_results(args, {f"{tokenizer}/random_grammars": random_grammar_totals(
            real_tokenizer(tokenizer), args.random_grammars, args.span_probes)
            for tokenizer in args.tokenizers.split(",")})
        return
    schemas = []
    for name in sorted(os.listdir(args.data)):
        if not name.endswith(".jsonl.gz"):
            continue
        with gzip.open(os.path.join(args.data, name), "rt") as f:
            for k, line in enumerate(f):
                if args.limit_per_category is not None and k >= args.limit_per_category:
                    break
                schemas.append(json.loads(line))
    results = {}
    for tokenizer in args.tokenizers.split(","):
        info = real_tokenizer(tokenizer)
        for whitespace in ("compact", "flexible"):
            separators = (",", ":") if whitespace == "compact" else (", ", ": ")
            totals = {"schemas": 0, "instances": 0, "tokens": 0, "forced_tokens": 0,
                      "forced_sequences": 0, "non_canonical_sequences": 0, "skipped": 0}
            examples = []
            start = time.time()
            for entry in schemas:
                try:
                    grammar = jaxguide.Grammar.from_json_schema(entry["schema"],
                                                                whitespace=whitespace)
                    compiled = jaxguide.compile_grammar(grammar, info)
                except jaxguide.GrammarError:
                    continue
                totals["schemas"] += 1
                for test in entry["tests"]:
                    if not test["valid"]:
                        continue
                    text = json.dumps(test["data"], separators=separators)
                    tokens = canonical_tokens(info, text)
                    matcher = jaxguide.Matcher(compiled)
                    try:
                        result = walk(matcher, tokens, args.span_probes)
                    except AssertionError:
                        totals["skipped"] += 1  # e.g. keys not in schema order
                        continue
                    add_instance(totals, examples, tokens, result, schema=entry["name"])
            finish_totals(totals, examples, start)
            suffix = "" if args.span_probes == 16 else f"/span_probes={args.span_probes}"
            results[f"{tokenizer}/{whitespace}{suffix}"] = totals
            print(f"{tokenizer:16s} {whitespace:8s} schemas {totals['schemas']:4d} instances "
                  f"{totals['instances']:4d} tokens {totals['tokens']:6d} forced "
                  f"{totals['forced_tokens']:6d} ({100 * totals['forced_share']:.1f}%) "
                  f"non-canonical {totals['non_canonical_sequences']} skipped "
                  f"{totals['skipped']}", flush=True)
    write_results(args, results)


def add_instance(totals: dict, examples: list, tokens: list, result: tuple, **where) -> None:
    """Adds one replayed instance (`walk`'s result) to the totals, and up to 5 examples of
    non-canonical sequences labelled with `where`."""
    forced, sequences, bad, found = result
    totals["instances"] += 1
    totals["tokens"] += len(tokens)
    totals["forced_tokens"] += forced
    totals["forced_sequences"] += sequences
    totals["non_canonical_sequences"] += bad
    examples += [dict(e, **where) for e in found][:5 - len(examples)]


def finish_totals(totals: dict, examples: list, start: float) -> None:
    totals["forced_share"] = totals["forced_tokens"] / max(1, totals["tokens"])
    totals["seconds"] = round(time.time() - start, 1)
    totals["non_canonical_examples"] = examples


def random_grammars(count: int) -> list[tuple[str, jaxguide.Grammar]]:
    """(name, grammar): `count` seeded random regexes (jaxguide.testing.random_regex) and every
    grammar of the Lark corpus."""
    out = []
    for k in range(count):
        pattern = random_regex(random.Random(f"ff-regex:{k}"))
        try:
            out.append((f"regex:{pattern}", jaxguide.Grammar.from_regex(pattern)))
        except jaxguide.GrammarError:
            continue
    corpus = {"json": JSON_LARK, "python_subset": PYTHON_SUBSET, **TRICKY,
              **{name: bundled_grammar(name) for name in BUNDLED}}
    for name, text in corpus.items():
        try:
            out.append((f"lark:{name}", jaxguide.Grammar.from_lark(text)))
        except jaxguide.GrammarError:
            continue
    return out


def random_grammar_totals(info, count: int, span_probes: int, walks: int = 6) -> dict:
    """Fast-forward over texts of random grammars: each grammar walked `walks` times to EOS
    (seeded), each finished text tokenized canonically and replayed as `walk` does."""
    totals = {"grammars": 0, "instances": 0, "tokens": 0, "forced_tokens": 0,
              "forced_sequences": 0, "non_canonical_sequences": 0, "skipped": 0}
    examples = []
    start = time.time()
    for name, grammar in random_grammars(count):
        try:
            compiled = jaxguide.compile_grammar(grammar, info)
        except jaxguide.GrammarError:
            continue
        totals["grammars"] += 1
        for w in range(walks):
            found = random_walk(compiled, random.Random(f"ff:{name}:{w}"), SHORT_WALK)
            if found is None or found.end != "eos" or not found.text:
                continue
            try:
                tokens = canonical_tokens(info, found.text.decode("utf-8"))
                result = walk(jaxguide.Matcher(compiled), tokens, span_probes)
            except (UnicodeDecodeError, ValueError, AssertionError):
                totals["skipped"] += 1
                continue
            add_instance(totals, examples, tokens, result, grammar=name)
    finish_totals(totals, examples, start)
    print(f"{info.kind:16s} random grammars {totals['grammars']} instances "
          f"{totals['instances']} forced {totals['forced_tokens']} non-canonical "
          f"{totals['non_canonical_sequences']} skipped {totals['skipped']}", flush=True)
    return totals


def write_results(args: argparse.Namespace, results: dict) -> None:
    """Writes `--out`; with `--merge`, over the entries already there (same data limit)."""
    command = "python benchmarks/bench_fast_forward.py " + " ".join(sys.argv[1:])
    report = {"benchmark": "fast_forward", "limit_per_category": args.limit_per_category,
              "commands": [command], "results": results}
    if args.merge and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        if old.get("limit_per_category") != args.limit_per_category:
            raise SystemExit(f"--merge: {args.out} has limit_per_category "
                             f"{old.get('limit_per_category')}, this run {args.limit_per_category}")
        commands = old.get("commands") or ([old["command"]] if "command" in old else [])
        report["commands"] = commands + [command]
        report["results"] = {**old["results"], **results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
