"""Mask time of the grammar engine vs llguidance, same grammar, same tokenizer, one core.

For each grammar, a fixed set of sample documents is tokenized with the Llama-3 tokenizer
(128,256 ids; ASSETS.md); each engine computes the mask before every token of every document
(plus the final EOS mask) and accepts the token. Reported per engine: compile time and the mask
time distribution (p50 / p99 / max, microseconds) over two passes over the documents (the
first on a freshly compiled grammar, the second reusing it; also reported separately), and
whether every token was allowed.
Both engines run in this process, one after the other, on the same core.

Usage: python benchmarks/bench_grammar.py [--out benchmarks/results/grammar_masks.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support.grammar_corpus import (  # noqa: E402
    JSON_LARK,
    PYTHON_SUBSET,
    TRICKY,
    bundled_grammar,
    outlines_grammar,
)

import jaxguide  # noqa: E402
from jaxguide.models import assets  # noqa: E402

JSON_DOCS = [
    json.dumps({"name": "Alice Smith", "age": 42, "email": "alice@example.com",
                "tags": ["admin", "ops", True, None], "score": -12.5e3}),
    json.dumps({"items": [{"id": i, "label": f"item number {i}", "price": i * 1.25}
                          for i in range(6)], "total": 26.25}, indent=2),
    json.dumps(["une phrase en français", "日本語のテキスト", {"nested": {"deep": [[1, 2], [3]]}}]),
]
ARITHMETIC_DOCS = ["(1 + 2) * 3 - 4 / 5", "12 * (3 + 4 * (5 - 6)) / 7 + 8 - 9 * 10",
                   "-(1.5 + 2.25) * 3"]
KEYWORD_DOCS = ["select foo;\nx = y;\nSELECT bar_baz;\n", "a = b;\nc = d;\nselect e;\n"]
SQL_DOCS = [
    "SELECT name, age FROM users WHERE age > 30 ORDER BY name;",
    "SELECT u.id, COUNT(*) AS n FROM users AS u JOIN orders AS o ON u.id = o.user_id "
    "GROUP BY u.id HAVING COUNT(*) > 2;",
    "SELECT VALUE x FROM [1, 2, 3] AS x WHERE x > 1;",
    "UPDATE accounts SET balance = balance - 100 WHERE id = 7;",
    "SELECT * FROM t LIMIT 10;",
]
PYTHON_DOCS = [
    "import numpy as np\nfrom os import path, sep\nx = [i * 2 for i in range(10) if i % 3]\n",
    "def_ = lambda a, b: a if a > b else b  # pick\n"
    "total += sum(v['price'] * 1.5 for v in items)\n",
    "result = {'name': user.name, 'tags': tags[1:-1], 'ok': not failed and count >= 3}\n"
    "print(f(result, sep=', ', end=None))\n",
]

GRAMMARS = {
    "json": (JSON_LARK, JSON_DOCS),
    "sqlpp": (bundled_grammar("sqlpp"), SQL_DOCS),
    "python_subset": (PYTHON_SUBSET, PYTHON_DOCS),
    "arithmetic": (outlines_grammar("arithmetic.lark"), ARITHMETIC_DOCS),
    "keywords": (TRICKY["keywords"], KEYWORD_DOCS),
}


def percentiles(samples: list[float]) -> dict[str, float]:
    us = np.asarray(samples) * 1e6
    return {"p50": float(np.percentile(us, 50)), "p99": float(np.percentile(us, 99)),
            "max": float(us.max()), "mean": float(us.mean()), "n": int(us.size)}


def summarize(compile_s: float, passes: list[list[float]], blocked: int) -> dict:
    """`first_pass`: every document once on a freshly compiled grammar (cold caches);
    `second_pass`: the same documents again on the same compiled grammar (what a server that
    reuses a grammar sees); `mask_us`: both passes together."""
    return {"compile_s": compile_s, "mask_us": percentiles(passes[0] + passes[1]),
            "first_pass_us": percentiles(passes[0]), "second_pass_us": percentiles(passes[1]),
            "blocked_documents": blocked}


def run_jaxguide(text, docs, info, tokenize):
    start = time.perf_counter()
    compiled = jaxguide.compile_grammar(text, info)
    compile_s = time.perf_counter() - start
    bitmask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    passes, blocked = [[], []], 0
    eos = min(info.eos_token_ids)
    for times in passes:
        for doc in docs:
            matcher = jaxguide.Matcher(compiled)
            for token in tokenize(doc) + [eos]:
                start = time.perf_counter()
                matcher.fill_next_token_bitmask(bitmask)
                times.append(time.perf_counter() - start)
                allowed = (bitmask[0, token >> 5] >> (token & 31)) & 1
                if not allowed or not matcher.accept_token(token):
                    blocked += 1
                    break
    return summarize(compile_s, passes, blocked)


def run_llguidance(text, docs, lltokenizer, tokenize, eos):
    import llguidance
    import llguidance.numpy as lln

    start = time.perf_counter()
    grammar = llguidance.LLMatcher.grammar_from_lark(text)
    matcher0 = llguidance.LLMatcher(lltokenizer, grammar)
    compile_s = time.perf_counter() - start
    if matcher0.is_error():
        return {"error": matcher0.get_error()}
    bitmask = lln.allocate_token_bitmask(1, lltokenizer.vocab_size)
    passes, blocked = [[], []], 0
    for times in passes:
        for doc in docs:
            matcher = llguidance.LLMatcher(lltokenizer, grammar)
            for token in tokenize(doc) + [eos]:
                start = time.perf_counter()
                lln.fill_next_token_bitmask(matcher, bitmask)
                times.append(time.perf_counter() - start)
                allowed = (int(bitmask[0, token >> 5]) >> (token & 31)) & 1
                if not allowed or not matcher.consume_token(token):
                    blocked += 1
                    break
    return summarize(compile_s, passes, blocked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "grammar_masks.json"))
    args = parser.parse_args()
    import llguidance.tiktoken

    encoding = assets.llama3_tiktoken_encoding()
    info = jaxguide.TokenizerInfo.from_tiktoken(encoding)
    eos = min(info.eos_token_ids)
    lltokenizer = llguidance.tiktoken.lltokenizer_from_encoding(
        encoding, eos_token=sorted(info.eos_token_ids))
    results = {}
    for name, (text, docs) in GRAMMARS.items():
        ours = run_jaxguide(text, docs, info, encoding.encode_ordinary)
        theirs = run_llguidance(text, docs, lltokenizer, encoding.encode_ordinary, eos)
        results[name] = {"jaxguide": ours, "llguidance": theirs}
        for key in ("mask_us", "first_pass_us", "second_pass_us"):
            line = f"{name:14s} {key:15s} jaxguide p50 {ours[key]['p50']:8.1f} p99 " \
                   f"{ours[key]['p99']:8.1f} max {ours[key]['max']:8.1f}"
            if key in theirs:
                line += f" | llguidance p50 {theirs[key]['p50']:8.1f} p99 " \
                        f"{theirs[key]['p99']:8.1f} max {theirs[key]['max']:8.1f}"
            print(line)
        print(f"{name:14s} compile s: jaxguide {ours['compile_s']:.3f} llguidance "
              f"{theirs.get('compile_s', float('nan')):.3f}; blocked documents: "
              f"{ours['blocked_documents']} / {theirs.get('blocked_documents')}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"benchmark": "grammar_masks", "tokenizer": "llama3 (128,256 ids)",
                   "machine": platform.machine(), "cpus": os.cpu_count(), "results": results},
                  f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
