"""Soundness by generation (issue #18): every text a mask walk finishes is valid for an
independent oracle of the grammar's *source*, and no walk meets a dead end.

CI runs a fixed, seeded sample within a budget of about a minute and a half: MaskBench schemas
(tests/data/soundness_schemas.jsonl.gz, picked by tools/extract_soundness_sample.py), the
regression schemas of test_json_schema.py, the Lark grammars we ship or test against, MaskBench
patterns and random regexes. `benchmarks/soundness.py` runs the same checker at scale. The
checker itself is tested too: it must catch a mask that lets a bad token through.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import re
from pathlib import Path

import pytest
from support.grammar_corpus import (
    JSON_LARK,
    PYTHON_SUBSET,
    TRICKY,
    bundled_grammar,
    outlines_grammar,
)
from support.real_tokenizers import real_tokenizer
from support.schema_regressions import REGRESSIONS

import jaxguide
from jaxguide import Grammar, GrammarError, compile_grammar
from jaxguide.testing import (
    LONG_WALK,
    SHORT_WALK,
    JsonSchemaOracle,
    LarkOracle,
    OracleUndecided,
    RegexOracle,
    SoundnessReport,
    WalkConfig,
    check_soundness,
    random_regex,
    random_walk,
)

DATA = Path(__file__).parents[1] / "data"


def llama3() -> jaxguide.TokenizerInfo:
    return real_tokenizer("llama3_tiktoken")


def assert_sound(report: SoundnessReport, compiled, min_eos: int) -> None:
    failures = [w.describe(compiled) for w in report.invalid]
    failures += [f"dead end after {w.text!r} (tokens {w.tokens})" for w in report.dead_ends]
    failures += [f"token {t} missing from the mask after {text!r}, though it spells a viable "
                 "continuation" for text, t in report.blocked]
    assert not failures, "\n\n".join(failures)
    decided = report.eos_walks - len(report.undecided)
    assert decided >= min_eos, (report.ends, report.undecided[:3])


def walk(grammar: Grammar, oracle, name: str, walks: int, min_eos: int,
         configs=(SHORT_WALK, LONG_WALK)) -> SoundnessReport:
    compiled = compile_grammar(grammar, llama3())
    report = check_soundness(compiled, oracle, walks=walks, seed=name, configs=configs)
    assert_sound(report, compiled, min_eos)
    return report


def sample_schemas() -> list[dict]:
    with gzip.open(DATA / "soundness_schemas.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def test_maskbench_sample_walks_are_valid():
    schemas = sample_schemas()
    assert len(schemas) >= 90
    eos = 0
    for item in schemas:
        report = walk(Grammar.from_json_schema(item["schema"]),
                      JsonSchemaOracle(item["schema"]), item["name"], walks=10, min_eos=0)
        eos += report.eos_walks
    assert eos >= 7 * len(schemas)


@pytest.mark.parametrize("schema", [t[0] for t in REGRESSIONS],
                         ids=[json.dumps(t[0])[:60] for t in REGRESSIONS])
def test_regression_schemas_walks_are_valid(schema):
    try:
        grammar = Grammar.from_json_schema(schema)
        compile_grammar(grammar, llama3())
    except GrammarError:
        return  # unsatisfiable (test_json_schema checks that it is)
    walk(grammar, JsonSchemaOracle(schema), json.dumps(schema), walks=12, min_eos=8)


LARK = {"jaxguide_json": JSON_LARK, "python_subset": PYTHON_SUBSET,
        **{f"tricky_{k}": v for k, v in TRICKY.items()}}
# Walks per grammar and the longest walk, within CI's budget: masks of the keyword and Python
# grammars take ~1-7 ms, and lark's Earley parser is slow on long texts of the ambiguous one.
LARK_BUDGETS = {"python_subset": (10, 150), "tricky_keywords": (12, 150),
                "tricky_ambiguous": (20, 40), "lark": (12, 200), "hcl2": (12, 200),
                "sqlpp": (4, 120)}


@pytest.mark.parametrize("name", sorted(LARK) + ["outlines_json", "outlines_arithmetic",
                                               "lark", "hcl2", "sqlpp"])
def test_lark_grammar_walks_are_valid(name):
    if name in LARK:
        text = LARK[name]
    elif name.startswith("outlines_"):
        text = outlines_grammar(name[len("outlines_"):] + ".lark")
    else:
        text = bundled_grammar(name)
    walks, max_tokens = LARK_BUDGETS.get(name, (40, 300))
    configs = (dataclasses.replace(SHORT_WALK, max_tokens=max_tokens),
               dataclasses.replace(LONG_WALK, max_tokens=max_tokens,
                                   target_tokens=min(64, max_tokens // 3)))
    walk(Grammar.from_lark(text), LarkOracle(text), name, walks=walks, min_eos=walks // 3,
         configs=configs)


def test_maskbench_pattern_walks_are_valid():
    """Patterns as Python regexes (`Grammar.from_regex`: re.fullmatch semantics)."""
    patterns = json.loads((DATA / "maskbench_patterns.json").read_text())
    rng = random.Random(18)
    checked = 0
    for pattern in rng.sample(patterns, 120):
        try:
            re.compile(pattern)
            grammar = Grammar.from_regex(pattern)
            compile_grammar(grammar, llama3())
        except (re.error, GrammarError):
            continue
        walk(grammar, RegexOracle(pattern), pattern, walks=4, min_eos=0)
        checked += 1
    assert checked >= 80


def test_random_regex_walks_are_valid():
    rng = random.Random(1818)
    eos = 0
    for i in range(60):
        pattern = random_regex(rng)
        eos += walk(Grammar.from_regex(pattern), RegexOracle(pattern), f"random{i}", walks=4,
                    min_eos=0).eos_walks
    assert eos >= 3 * 60


# ---------------------------------------------------------------------------------------------
# The checker catches what it must (a test that cannot fail is a defect)

class _BrokenOracle:
    """An oracle of a *narrower* language than the grammar's: walks must find texts outside
    it, as they would find a mask that is wider than its source."""

    kind = "regex"
    source = "[0-9]{1,2}"
    note = None

    def check(self, text: str):
        return None if re.fullmatch(r"[0-9]{1,2}", text) else "too long or not ASCII digits"


def test_checker_catches_a_mask_wider_than_its_source():
    # The grammar of Python's \d+ (any Unicode digit) against an oracle of ASCII digits: the
    # walks must find a non-ASCII digit (the bias toward non-ASCII tokens) and long numbers.
    compiled = compile_grammar(Grammar.from_regex(r"\d+"), llama3())
    report = check_soundness(compiled, _BrokenOracle(), walks=30, seed="broken")
    assert report.invalid
    assert any(any(ord(c) > 127 for c in w.text) for w in report.invalid)
    located = [w for w in report.invalid if w.bad_step is not None]
    assert located and "first bad step" in located[0].describe(compiled)


def test_walks_are_reproducible_and_take_only_masked_tokens():
    compiled = compile_grammar(Grammar.from_lark(JSON_LARK), llama3())
    config = WalkConfig(p_eos=0.1, target_tokens=20, max_tokens=200)
    first = random_walk(compiled, random.Random("seed"), config)
    again = random_walk(compiled, random.Random("seed"), config)
    assert first.tokens == again.tokens and first.end == again.end
    matcher = jaxguide.Matcher(compiled)
    for token in first.tokens:
        assert matcher.is_token_allowed(token)
        assert matcher.accept_token(token)
    assert first.end == "eos" and matcher.is_accepting()


def test_lark_oracle_failures_are_undecided_never_valid():
    """lark 1.3's Earley parser raises RuntimeError ("please report this bug") on some texts of
    lark.lark: the oracle must say it cannot decide, not let the exception out nor pass it."""
    oracle = LarkOracle(bundled_grammar("lark"))
    assert oracle.check("h:A{f}//\n# x\n") is None
    assert oracle.check("h:A{f} %") is not None
    try:
        verdict = oracle.check("h:A{f}//\n#")
    except OracleUndecided as e:
        assert "lark failed" in str(e)
    else:  # a lark that no longer fails: the text is a sentence of lark.lark
        assert verdict is None
