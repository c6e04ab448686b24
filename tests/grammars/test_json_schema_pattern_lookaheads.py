"""ECMA patterns that open with lookaheads (`^(?!X)R`, `^(?=Y)R`) or close with one (`R(?=X)`):
`pattern.split_lookaheads` takes them out, and the lexer's lookahead product enforces them
(native/lexer/regex_product.h). Checked against an independent ECMA-262 engine (`regress`, the
soundness oracle's): tables, every string over a small alphabet (hypothesis), and seeded walks
through the masks.
"""

from __future__ import annotations

import json

import pytest
import regress
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema import JsonSchemaError
from jaxguide.grammars.json_schema.pattern import split_lookaheads
from jaxguide.testing import JsonSchemaOracle, check_soundness


@pytest.mark.parametrize("pattern,rest,looks", [
    ("^(?!ab)[a-c]*$", "^[a-c]*$", ((False, "^ab"),)),
    ("^(?=a)(?!ab|^c)b*", "^b*", ((True, "^a"), (False, "^ab|^c"))),
    ("^(?![(]|\\))x", "^x", ((False, "^[(]|^\\)"),)),          # classes, escapes: no group
    ("x(?=y|z)", "x(?:y|z)", ()),                                 # a search finds either
    ("^(?!a)b|c", "^(?!a)b|c", ()),                               # alternation: left alone
    ("a(?=b)c", "a(?=b)c", ()),                                   # mid-pattern: left alone
    ("^abc$", "^abc$", ()),
    # "no X anywhere" (a tempered dot): X searched, on a line without terminators
    ("^((?!mode)(?!Mode).)*$", "^.*$", ((False, "mode"), (False, "Mode"))),
    ("^(?:(?!a|b*).)*$", "^(?:(?!a|b*).)*$", ()),                 # b* matches "": left alone
])
def test_split_lookaheads(pattern, rest, looks):
    assert split_lookaheads(pattern) == (rest, looks)


# Each pattern's leading/closing lookaheads are taken out; ECMA semantics (searched).
PATTERNS = [
    "^(?!ab)[a-c]*$",
    "^(?!a|bc$).*",
    "^(?=.*c)(?!.*cc)[a-c]{1,5}$",
    "^(?!^ab|ba)",
    "(?:a|b)(?=c)",
    "^(?![ab]*$)[abc]+",
    "^((?!ab)(?!c1).)*$",
    "^(?:(?!b).)*$",
]
ALPHABET = "abc1\n"

_COMPILED: dict[str, jaxguide.CompiledGrammar] = {}


def compiled(pattern: str) -> jaxguide.CompiledGrammar:
    if pattern not in _COMPILED:
        grammar = Grammar.from_json_schema({"type": "string", "pattern": pattern})
        _COMPILED[pattern] = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    return _COMPILED[pattern]


def accepts(pattern: str, text: str) -> bool:
    matcher = Matcher(compiled(pattern))
    return matcher.accept_bytes(json.dumps(text).encode()) and matcher.is_accepting()


def ecma(pattern: str, text: str) -> bool:
    return regress.Regex(pattern, "u").find(text) is not None


@pytest.mark.parametrize("pattern", PATTERNS)
def test_tables_against_an_ecma_engine(pattern):
    texts = ["", "a", "ab", "abc", "ba", "bc", "cc", "c", "ac", "bcc", "1", "abab", "cab", "c1",
             "a\nc"]
    verdicts = {text: ecma(pattern, text) for text in texts}
    assert any(verdicts.values()) and not all(verdicts.values()), verdicts
    for text, ok in verdicts.items():
        assert accepts(pattern, text) == ok, (pattern, text, ok)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(alphabet=ALPHABET, max_size=6))
def test_every_string_accepted_exactly_when_the_pattern_matches(pattern, text):
    assert accepts(pattern, text) == ecma(pattern, text), (pattern, text)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_walks_through_the_masks_are_valid(pattern):
    schema = {"type": "string", "pattern": pattern}
    report = check_soundness(compiled(pattern), JsonSchemaOracle(schema), walks=24, seed=pattern)
    assert not report.invalid, report.invalid[0].describe(compiled(pattern))
    assert not report.dead_ends and not report.blocked
    assert report.eos_walks >= 6


def test_in_property_names_and_with_lengths():
    info = real_tokenizer("llama3_tiktoken")
    schema = {"type": "object", "propertyNames": {"pattern": "^(?!x-)[a-z-]+$", "maxLength": 4}}
    grammar = jaxguide.compile_grammar(Grammar.from_json_schema(schema), info)
    for text, ok in [('{"ab": 1}', True), ('{"x-a": 1}', False), ('{"y-a": 1}', True),
                     ('{"abcde": 1}', False), ('{"x": 1}', True)]:
        matcher = Matcher(grammar)
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == ok, text


def test_other_lookarounds_are_still_refused_naming_pattern():
    for pattern in ["a(?=b)c", "^(?!a)b|c", "(?<=a)b"]:
        with pytest.raises(JsonSchemaError, match="lookaround") as error:
            Grammar.from_json_schema({"type": "string", "pattern": pattern})
        assert error.value.keyword == "pattern"
