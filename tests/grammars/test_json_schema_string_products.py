"""Strings under several patterns whose product is too large to write back as one pattern
(`allOf` of two patterns, `format` with `pattern`, a `not` of patterns and names, a
`propertyNames` of two patterns): the string form keeps them apart and the lexer builds their
product (`products.string_form_units`, native/lexer/regex_product.h). The regex budget is
lowered here so that small patterns take that path; each case is checked against `jsonschema`:
an instance table (accepted exactly when valid), every string over a small alphabet (accepted
exactly when valid: the product is exact), and seeded walks through the masks.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer
from support.schema_cases import SchemaCases
from support.schema_walks import assert_schema_walks

import jaxguide
from jaxguide import Grammar
from jaxguide.grammars.json_schema import JsonSchemaError, automata, products

# name -> (schema, texts: valid ones and ones each pattern excludes)
CASES = {
    "allOf_two_patterns": (
        {"type": "string", "allOf": [{"pattern": "^[a-c]+$"}, {"pattern": "b.?c"}]},
        ['"bc"', '"abac"', '"bbc"', '"ab"', '"bxc"', '"c"', '""', "1"]),
    "allOf_two_patterns_length": (
        {"type": "string", "allOf": [{"pattern": "^[a-c]+$"}, {"pattern": "b.?c"}],
         "minLength": 3, "maxLength": 4},
        ['"bbc"', '"abac"', '"bc"', '"abacb"', '"aaa"']),
    "format_with_pattern": (
        {"type": "string", "format": "date", "pattern": "-0[1-3]-"},
        ['"2024-02-29"', '"2023-01-31"', '"2023-02-29"', '"2023-05-01"', '"x-01-y"']),
    "not_patterns_and_names": (
        {"type": "string", "pattern": "^[a-c\"!]*$",
         "not": {"anyOf": [{"pattern": "^c"}, {"enum": ["ab", "a\"b", "!"]}]}},
        ['"a"', '""', '"abc"', '"b!"', '"ab"', '"a\\"b"', '"!"', '"ca"', '"x"']),
    "not_of_two_patterns": (
        {"not": {"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "b$"}]}},
        ['"ab"', '"acb"', '"a"', '"b"', '""', "2", "null"]),
    "property_names_two_patterns": (
        {"type": "object", "propertyNames": {"allOf": [{"pattern": "^k"}, {"pattern": "[0-9]$"}]}},
        ['{}', '{"k1": 1}', '{"kk2": 1, "k3": 2}', '{"k": 1}', '{"1": 1}', '{"k1": 1, "x": 2}']),
}


@pytest.fixture(autouse=True)
def small_regex_budget(monkeypatch):
    """Regexes written back from a product DFA capped at 20 characters: the products above
    take the lexer's lookahead path (the memos are emptied before and after)."""
    monkeypatch.setattr(automata, "MAX_KEY_REGEX", 20)
    jaxguide.clear_caches()
    yield
    jaxguide.clear_caches()


def _lexer_product(grammar: Grammar) -> None:
    """Each case is lowered as the lexer's lookahead product (what this file tests)."""
    assert any("(?=(?:" in t.regex or "(?!(?:" in t.regex for t in grammar.ir.terminals)


_SUITE = SchemaCases(CASES, formats=True, check_grammar=_lexer_product)
accepts, valid = _SUITE.accepts, _SUITE.valid


@pytest.mark.parametrize("name", sorted(CASES))
def test_instances_accepted_exactly_when_valid(name):
    _SUITE.check_instances(name)


@pytest.mark.parametrize("name", sorted(set(CASES) - {"format_with_pattern"}))
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(alphabet='abck12"!', max_size=6))
def test_every_string_accepted_exactly_when_valid(name, text):
    value = {text: 0} if name == "property_names_two_patterns" else text
    assert accepts(name, json.dumps(value)) == valid(name, value), value


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(day=st.dates().map(str) | st.text(alphabet="0123-", min_size=10, max_size=10))
def test_dates_accepted_exactly_when_valid(day):
    assert accepts("format_with_pattern", json.dumps(day)) == valid("format_with_pattern", day)


@pytest.mark.parametrize("name", sorted(CASES))
def test_walks_through_the_masks_are_valid(name):
    assert_schema_walks(_SUITE.compiled(name), CASES[name][0], real_tokenizer("llama3_tiktoken"),
                        seed=name, walks=24, min_eos=6)


def test_names_as_a_pattern_match_exactly_themselves():
    names = ["a.b", "x y", "é\"\\", "(?:", ""]
    pattern = products.ecma_literal(names)
    for text in names + ["aXb", "x", "é", "(?", " "]:
        assert automata.ecma_search(pattern, text) == (text in names), text


def test_a_product_past_its_budget_is_refused_when_lowered(monkeypatch):
    monkeypatch.setattr(products, "MAX_INTERSECTION_STATES", 4)
    with pytest.raises(JsonSchemaError, match="'pattern'"):
        Grammar.from_json_schema(CASES["allOf_two_patterns"][0])
    with pytest.raises(JsonSchemaError, match="'not'"):
        Grammar.from_json_schema(CASES["not_patterns_and_names"][0])
    jaxguide.clear_caches()
    Grammar.from_json_schema(CASES["allOf_two_patterns"][0], lenient=True)  # a pattern dropped
