"""Reproducers of what the fuzzer found (issue #22), minimized.

Fixed here (the Python layers of the matcher, the batch matcher and the JSONL request reader):
each call below used to escape the public API with an unclean error (pybind's "incompatible
function arguments" TypeError, a numpy MemoryError for an exabyte bitmask, a RecursionError,
ValueError or OverflowError out of `parse_request_line`, which never raises).

Fixed in the front-ends: Lark repetition ranges over alternatives, deep nesting and a crash
in lark's own error report (jaxguide/grammars/lark.py, lark_budgets.py), JSON Schema keyword
values of the wrong type (jaxguide/grammars/json_schema/). Each runs in a fuzzing worker under
a short time limit, so a hang fails the test instead of stalling it.
"""

from __future__ import annotations

import random
import time

import pytest

from jaxguide import (
    BatchMatcher,
    Grammar,
    Matcher,
    allocate_token_bitmask,
    compile_grammar,
)
from jaxguide.jobs.generation_job import parse_request_line
from jaxguide.testing import fuzzing
from jaxguide.testing.fuzzing import Environment, run_fuzz


@pytest.fixture(scope="module")
def env() -> Environment:
    return Environment.load(["mistral"])


@pytest.fixture(scope="module")
def matcher(env) -> Matcher:
    return Matcher(compile_grammar(Grammar.from_regex("abc(d|e)"), env.tokenizers["mistral"]))


@pytest.mark.parametrize("call,error", [
    (lambda m: m.compute_ff_bytes(-1), ValueError),
    (lambda m: m.compute_ff_bytes(None), TypeError),
    (lambda m: m.shortest_lexeme_completion(1.5), TypeError),
    (lambda m: m.shortest_lexeme_completion(-1), ValueError),
    (lambda m: m.compute_ff_tokens([], max_bytes=-5), ValueError),
    (lambda m: m.compute_ff_tokens([-1]), ValueError),
    (lambda m: m.compute_ff_tokens([2**40]), ValueError),
    (lambda m: m.fill_next_token_bitmask(allocate_token_bitmask(1, 32000), 2**63), ValueError),
    (lambda m: Matcher(m.compiled, mask_step_budget=1.5), TypeError),
    (lambda m: allocate_token_bitmask(2, 2**63), ValueError),
])
def test_matcher_misuse_raises_clean_errors(matcher, call, error):
    with pytest.raises(error) as info:
        call(matcher)
    assert "incompatible" not in str(info.value)
    mask = allocate_token_bitmask(1, matcher.compiled.tokenizer_info.logits_width)
    matcher.fill_next_token_bitmask(mask)  # the state is unchanged
    assert matcher.compute_ff_bytes() == b"abc"


def test_huge_bounds_mean_no_bound(matcher):
    assert matcher.compute_ff_bytes(10**30) == b"abc"
    assert matcher.shortest_lexeme_completion(10**30) == b""
    assert Matcher(matcher.compiled, mask_step_budget=10**30).accept_bytes(b"abcd")
    fork = matcher.fork()
    assert fork.accept_bytes(b"ab")
    BatchMatcher(num_threads=1).rollback([fork], 10**30)  # was pybind's "Unable to cast"
    BatchMatcher(num_threads=1).rollback([fork], [10**30])
    assert fork.compute_ff_bytes() == b"abc"


@pytest.mark.parametrize("line", [
    "[" * 100_000,                                                   # RecursionError
    '{"id": 1, "prompt": "x", "json_schema": ' + "[" * 5000 + "]" * 5000 + "}",
    '{"id": ' + "9" * 5000 + ', "prompt": "x"}',                     # int over 4300 digits
    '{"id": 1, "prompt": "x", "sampling": {"kind": "top_k", "top_k": 1e400}}',  # int(inf)
])
def test_request_reader_never_raises(line):
    job = parse_request_line(line, 1, {"kind": "greedy"})
    assert job.request is None and job.error.startswith("line 1: ")


def _outcome(env, case: dict) -> dict:
    result = run_fuzz([{"id": 0, "walk_seed": "0", "tokenizer": "mistral", **case}], env=env,
                      case_seconds=8.0)
    [(outcome, count)] = [(k, v) for k, v in result["totals"].items() if v and k not in (
        "inputs", "compiled")]
    return {"outcome": outcome, "findings": result["findings"]}


FRONT_END_FINDINGS = [
    # jaxguide/grammars/lark.py: a repetition range over alternatives is expanded by lark
    # itself (lark.Lark alone does not finish either): > 15 s.
    pytest.param({"kind": "lark", "input": 'start: ("x" | "y")~0..30'}, id="lark-range-hang"),
    # jaxguide/grammars/lark.py: RecursionError in lark's tree walk (Tree.scan_values).
    pytest.param({"kind": "lark", "input": "start: " + "(" * 1000 + '"a"' + ")" * 1000},
                 id="lark-deep-nesting"),
    # jaxguide/grammars/lark.py: TypeError "%d format: a real number is required, not
    # ParserState" from lark's own error translation (match_examples) escapes from_lark.
    pytest.param({"kind": "lark", "input": 'R:\nR:[""|+'}, id="lark-error-translation"),
    # jaxguide/grammars/json_schema: TypeError "argument of type 'int' is not iterable"
    # (normalize.py, literals) for a non-string `type` beside `enum`.
    pytest.param({"kind": "json_schema", "input": {"enum": ["a"], "type": 1}},
                 id="schema-enum-bad-type"),
    # jaxguide/grammars/json_schema: AttributeError from jsonschema's resolver when a
    # draft-04 `id` is not a string.
    pytest.param({"kind": "json_schema", "input": {
        "$schema": "http://json-schema.org/draft-04/schema#", "id": {},
        "items": {"enum": ["a"], "type": "string"}}}, id="schema-draft4-id-object"),
]


@pytest.mark.parametrize("case", FRONT_END_FINDINGS)
def test_front_end_findings(env, case):
    result = _outcome(env, case)
    assert result["outcome"] in ("walked", "clean_error"), result["findings"]



# Found by the 200,000-case run (benchmarks/results/fuzz.json), tokenizer Llama-3 there.
_AMBIGUOUS = 'start: x+\nx: ("a" | "a" "a" | "aa" | x x)~6\n'
_C_COMMENT = 'start: a b a "!"\na: "/*" /(.|\\n)*?/ "*/"\nb: a a | "y"*\n'
_LOOKAHEAD = 'start: (A B | A "c")~2\nA: /[+*]|[?](?![a-z])/\nB: /ab/\n'


def test_ambiguous_grammar_meets_the_earley_work_budget(env):
    # Each Earley set stayed under its 262,144 items, but completing them took seconds per
    # mask and per accept (> 10 s in the fuzzer); the work of building sets now counts
    # against the mask step budget, one call at a time.
    info = env.tokenizers["mistral"]
    matcher = Matcher(compile_grammar(Grammar.from_lark(_AMBIGUOUS), info))
    mask = allocate_token_bitmask(1, info.logits_width)
    start = time.process_time()
    while matcher.error is None and matcher.accept_bytes(b"a" * 8):
        matcher.fill_next_token_bitmask(mask)
    assert time.process_time() - start < 5.0
    assert "Earley parsing exceeded the budget" in matcher.error
    assert "mask step budget" in matcher.error
    assert fuzzing._resource_error(matcher)


def test_lazy_terminal_matching_the_empty_string_reads_on(env):
    # `/(.|\n)*?/` stopped at its empty match, so it never read a byte: a dead end after "/*".
    # Its lexemes end at their first non-empty match, as those of `/(.|\n)+?/` do.
    info = env.tokenizers["mistral"]
    compiled = compile_grammar(Grammar.from_lark(_C_COMMENT), info)
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(b"/*a*/y/*")
    mask = allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(mask)
    assert mask.any() and matcher.error is None
    assert matcher.accept_bytes(b"b*/!") and matcher.is_accepting()
    assert not Matcher(compiled).accept_bytes(b"/**/")  # an empty lexeme is none


@pytest.mark.parametrize("text", [_AMBIGUOUS, _C_COMMENT, _LOOKAHEAD])
def test_lark_walk_findings(env, text):
    result = _outcome(env, {"kind": "lark", "input": text})
    assert result["outcome"] == "walked", result["findings"]


def test_dead_end_by_a_follow_restriction_is_the_documented_limitation(env):
    # After "?" (A's lookahead forbids [a-z]) nothing can follow: README, Limits. The walk
    # ends there instead of reporting a violation; the same dead end without a follow
    # restriction in the grammar would still be one.
    info = env.tokenizers["mistral"]
    grammar = Grammar.from_lark(_LOOKAHEAD)
    walk = fuzzing._Walk(compile_grammar(grammar, info), env, "mistral", random.Random(0),
                         lambda: BatchMatcher(num_threads=1), grammar)
    question = next(i for i in range(info.vocab_size) if info.token_bytes(i) == b"?")
    assert walk.matcher.accept_token(question)
    walk.tokens = [question]
    row = walk.fill(walk.matcher)
    assert not row.any()
    with pytest.raises(fuzzing._DocumentedDeadEnd):
        walk.check_row(row)
    walk.grammar = None
    with pytest.raises(fuzzing.Violation):
        walk.check_row(row)
