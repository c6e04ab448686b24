"""The bad-input and misuse reproducers of the reliability issue, each in a fresh subprocess.

Every case runs in its own `python -c` child: the child imports jaxguide, loads the Llama-3
tokenizer, reads `ru_maxrss`, then runs the case and reports its outcome, its wall time and the
growth of `ru_maxrss` over that baseline. The parent enforces a wall-clock limit (a case past it
is a hang) and records a crash (a signal) as such. A case passes when it gives the right answer
or a `JaxguideError` naming the construct, within `--max-seconds` and `--max-growth-mb`.

    python benchmarks/bad_input.py --out benchmarks/results/bad_input.json [--case NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time

_PRELUDE = """
import json, os, resource, sys, threading, time, warnings
warnings.simplefilter("ignore")
import jaxguide
from jaxguide import Grammar, Matcher, BatchMatcher, TokenizerInfo, compile_grammar, assets
TOKENIZER = TokenizerInfo.from_tiktoken(assets.llama3_tiktoken_encoding())
def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def _report(outcome, detail):
    print("@@RESULT@@" + json.dumps({"outcome": outcome, "detail": str(detail)[:400],
        "seconds": time.perf_counter() - _START, "growth_mb": _rss_mb() - _BASE_MB}), flush=True)
_BASE_MB = _rss_mb()
_START = time.perf_counter()
try:
    RESULT = None
{body}
    _report("ok", RESULT)
except jaxguide.JaxguideError as error:
    _report("JaxguideError." + type(error).__name__, error)
except BaseException as error:
    _report("raw." + type(error).__name__, error)
"""

_ALTERNATION_10 = '("a"|"b"|"c"|"d"|"e"|"f"|"g"|"h"|"i"|"j")'


def _literals_2000() -> str:
    import random
    rng = random.Random(7)
    words = {"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 8)))
             for _ in range(2100)}
    return " | ".join(json.dumps(word) for word in sorted(words)[:2000])


def _nested_one_of(depth: int) -> str:
    """oneOf nested `depth` deep through $defs, both branches the level below (not disjoint:
    lenient, as anyOf)."""
    defs: dict = {"l0": {"type": "integer"}}
    for level in range(1, depth + 1):
        below = {"$ref": f"#/$defs/l{level - 1}"}
        defs[f"l{level}"] = {"oneOf": [below, dict(below)]}
    return json.dumps({"$defs": defs, "$ref": f"#/$defs/l{depth}"})


def _nested_disjoint_one_of(depth: int) -> str:
    """oneOf nested `depth` deep, a null branch beside an allOf of the level below."""
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {"oneOf": [{"allOf": [schema]}, {"type": "null"}]}
    return json.dumps(schema)


# name -> (code run in the child; set RESULT to describe a right answer). Each mirrors a line of
# the issue's "Why" section.
CASES: dict[str, str] = {
    "string maxLength 1e9": "Grammar.from_json_schema({'type': 'string', 'maxLength': 10**9})",
    "string maxLength 1e12": "Grammar.from_json_schema({'type': 'string', 'maxLength': 10**12})",
    "string maxLength 1e308": "Grammar.from_json_schema({'type': 'string', 'maxLength': 1e308})",
    "string minLength 1e18": "Grammar.from_json_schema({'type': 'string', 'minLength': 10**18})",
    "string minLength 1e6 maxLength 1e12": (
        "Grammar.from_json_schema({'type': 'string', 'minLength': 10**6, 'maxLength': 10**12})"),
    "lark ~6 of 10 literals": (
        f"compile_grammar(Grammar.from_lark('start: {_ALTERNATION_10}~6'), TOKENIZER)"),
    "lark ~3 of 2000 literals": (
        f"compile_grammar(Grammar.from_lark('start: (' + {_literals_2000()!r} + ')~3'), "
        "TOKENIZER)"),
    "lark 500 nested parentheses": (
        "compile_grammar(Grammar.from_lark('start: ' + '(' * 500 + '\"a\"' + ')' * 500), "
        "TOKENIZER)"),
    "lark unknown %import": (
        "Grammar.from_lark('%import nosuchmodule.WORD\\nstart: WORD')"),
    "nested oneOf depth 18, lenient": (
        f"compile_grammar(Grammar.from_json_schema({_nested_one_of(18)}, lenient=True), "
        "TOKENIZER)"),
    "nested oneOf depth 30, lenient": (
        f"compile_grammar(Grammar.from_json_schema({_nested_one_of(30)}, lenient=True), "
        "TOKENIZER)"),
    "nested disjoint oneOf depth 18": (
        f"compile_grammar(Grammar.from_json_schema({_nested_disjoint_one_of(18)}), TOKENIZER)"),
    "nested disjoint oneOf depth 41": (
        f"compile_grammar(Grammar.from_json_schema({_nested_disjoint_one_of(41)}), TOKENIZER)"),
    "regex lazy DFA blowup, 3 masks": textwrap.dedent("""\
        compiled = compile_grammar(Grammar.from_regex('(?:(?:.|a*|b{84,}){62,}){170}'), TOKENIZER)
        matcher = Matcher(compiled)
        bitmask = jaxguide.allocate_token_bitmask(1, TOKENIZER.vocab_size)
        for token in TOKENIZER.encode('a') * 3:
            matcher.fill_next_token_bitmask(bitmask)
            if matcher.error: break
            matcher.accept_token(token)
        RESULT = matcher.error"""),
    "format list": "Grammar.from_json_schema({'type': 'string', 'format': ['date']})",
    "minItems null": "Grammar.from_json_schema({'type': 'array', 'minItems': None})",
    "minItems string": "Grammar.from_json_schema({'type': 'array', 'minItems': 'x'})",
    "minItems 1.5": "Grammar.from_json_schema({'type': 'array', 'minItems': 1.5})",
    "maxItems string": "Grammar.from_json_schema({'type': 'array', 'maxItems': '2'})",
    "required [1]": "Grammar.from_json_schema({'type': 'object', 'required': [1]})",
    "minProperties string": "Grammar.from_json_schema({'type': 'object', 'minProperties': '1'})",
    "500 properties": textwrap.dedent("""\
        schema = {'type': 'object',
                  'properties': {f'p{i}': {'type': 'integer'} for i in range(500)},
                  'required': [f'p{i}' for i in range(500)], 'additionalProperties': False}
        compiled = compile_grammar(Grammar.from_json_schema(schema), TOKENIZER)
        matcher = Matcher(compiled)
        matcher.fill_next_token_bitmask(jaxguide.allocate_token_bitmask(1, TOKENIZER.vocab_size))
        RESULT = matcher.accept_bytes(b'{"p0": 1, "p1": 2') and not matcher.error"""),
    "maxItems 1000": textwrap.dedent("""\
        schema = {'type': 'array', 'items': {'type': 'integer'}, 'maxItems': 1000}
        compiled = compile_grammar(Grammar.from_json_schema(schema), TOKENIZER)
        RESULT = 'compiled'"""),
    "values nested 200 deep": textwrap.dedent("""\
        schema = {'type': 'integer'}
        for _ in range(200):
            schema = {'type': 'array', 'items': schema}
        Grammar.from_json_schema(schema)"""),
    "maxItems 4096": textwrap.dedent("""\
        schema = {'type': 'array', 'items': {'type': 'integer'}, 'maxItems': 4096}
        compiled = compile_grammar(Grammar.from_json_schema(schema), TOKENIZER)
        RESULT = 'compiled'"""),
    "lone surrogate in regex": "compile_grammar(Grammar.from_regex('a\\ud800'), TOKENIZER)",
    "lone surrogate in choice": "compile_grammar(Grammar.choice(['a', '\\ud800']), TOKENIZER)",
    "lone surrogate in const": (
        "compile_grammar(Grammar.from_json_schema({'const': '\\ud800'}), TOKENIZER)"),
    "enum of 100k strings": textwrap.dedent("""\
        compiled = compile_grammar(Grammar.from_json_schema(
            {'enum': [f'value{i}' for i in range(100_000)]}), TOKENIZER)
        RESULT = 'compiled'"""),
    "empty language a^b": "compile_grammar(Grammar.from_regex('a^b'), TOKENIZER)",
    "token ids": textwrap.dedent("""\
        matcher = Matcher(compile_grammar(Grammar.from_regex('[a-z]+'), TOKENIZER))
        answers = []
        for bad in (-1, 2**40):
            answers.append(matcher.accept_token(bad))
        try:
            matcher.accept_token(97.9)
        except TypeError as error:
            answers.append('float refused')
        matcher.rollback(2**70)
        try:
            Matcher(None)
        except TypeError:
            answers.append('Matcher(None) TypeError')
        RESULT = answers"""),
    "one matcher, four threads": textwrap.dedent("""\
        compiled = compile_grammar(Grammar.from_regex('[a-z]{1,40}'), TOKENIZER)
        matcher = Matcher(compiled)
        token = TOKENIZER.encode('ab')[0]
        busy = [0]
        def hammer(action):
            for _ in range(300):
                try:
                    action()
                except jaxguide.MatcherBusyError:
                    busy[0] += 1
        actions = [lambda: matcher.accept_token(token), matcher.fill_next_token_bitmask,
                   lambda: matcher.rollback(1), matcher.reset]
        threads = [threading.Thread(target=hammer, args=(a,)) for a in actions]
        for t in threads: t.start()
        for t in threads: t.join()
        RESULT = f'no crash, {busy[0]} busy errors'"""),
    "ff during batch fill": textwrap.dedent("""\
        compiled = compile_grammar(Grammar.from_json_schema({'type': 'object', 'properties':
            {'name': {'type': 'string'}}, 'required': ['name']}), TOKENIZER)
        matchers = [Matcher(compiled) for _ in range(8)]
        batch = BatchMatcher(num_threads=2)
        import numpy as np
        masks = jaxguide.allocate_token_bitmask(8, TOKENIZER.vocab_size)
        refused = 0
        for _ in range(50):
            handle = batch.fill_next_token_bitmask_async(matchers, masks)
            for call in (matchers[0].compute_ff_bytes, matchers[0].compute_ff_tokens,
                         lambda: matchers[0].pending_prefix):
                try:
                    call()
                except jaxguide.MatcherBusyError:
                    refused += 1
            handle.wait()
        RESULT = f'no crash, {refused} busy errors'"""),
    "fork during batch fill": textwrap.dedent("""\
        compiled = compile_grammar(Grammar.from_json_schema({'type': 'object', 'properties':
            {'name': {'type': 'string'}}}), TOKENIZER)
        matchers = [Matcher(compiled) for _ in range(16)]
        batch = BatchMatcher(num_threads=2)
        masks = jaxguide.allocate_token_bitmask(16, TOKENIZER.vocab_size)
        statuses = []
        for _ in range(20):
            handle = batch.fill_next_token_bitmask_async(matchers, masks)
            pid = os.fork()
            if pid == 0:
                signal_alarm = __import__('signal').alarm(5)
                child = Matcher(compiled)
                child.fill_next_token_bitmask(
                    jaxguide.allocate_token_bitmask(1, TOKENIZER.vocab_size))
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            statuses.append(status)
            handle.wait()
        if any(statuses):
            raise RuntimeError(f'child failed: {statuses}')
        RESULT = 'children all finished'"""),
}


def run_case(name: str, code: str, time_limit: float) -> dict:
    body = textwrap.indent(code if "\n" in code else f"RESULT = {code}", " " * 4)
    script = _PRELUDE.replace("{body}", body)
    started = time.perf_counter()
    try:
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               timeout=time_limit)
    except subprocess.TimeoutExpired:
        return {"case": name, "outcome": "hang", "detail": f"no answer in {time_limit:g} s",
                "seconds": time.perf_counter() - started, "growth_mb": None}
    for line in child.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            return {"case": name, **json.loads(line[len("@@RESULT@@"):])}
    return {"case": name, "outcome": f"crash (exit {child.returncode})",
            "detail": child.stderr[-400:], "seconds": time.perf_counter() - started,
            "growth_mb": None}


def verdict(result: dict, max_seconds: float, max_growth_mb: float) -> str:
    if not (result["outcome"] == "ok" or result["outcome"].startswith("JaxguideError.")):
        return "FAIL"
    if result["seconds"] > max_seconds or (result["growth_mb"] or 0) > max_growth_mb:
        return "SLOW"
    return "pass"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="run only these cases (repeatable)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds before a case counts as a hang")
    parser.add_argument("--max-seconds", type=float, default=1.0)
    parser.add_argument("--max-growth-mb", type=float, default=100.0)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args(argv)
    names = args.case or list(CASES)
    results = []
    for name in names:
        result = run_case(name, CASES[name], args.time_limit)
        result["verdict"] = verdict(result, args.max_seconds, args.max_growth_mb)
        results.append(result)
        growth = "-" if result["growth_mb"] is None else f"{result['growth_mb']:.0f} MB"
        print(f"{result['verdict']:4} {name:38} {result['seconds']:7.2f} s {growth:>7}  "
              f"{result['outcome']}: {result['detail'][:110]!r}", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"cases": results, "max_seconds": args.max_seconds,
                                        "max_growth_mb": args.max_growth_mb,
                                        "machine": os.uname().nodename}, indent=1) + "\n")
    return 0 if all(result["verdict"] == "pass" for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
