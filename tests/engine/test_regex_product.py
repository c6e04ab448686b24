"""The lexer's product form (native/lexer/regex_product.h): lookaheads `(?=(?:A)T)` /
`(?!(?:C)T)` before `(?:B)T` are the strings of B also in A and not in C, followed by T. What
the JSON Schema compiler writes for minLength/maxLength next to a pattern they are not implied
by. Oracles: Python's `re` on the same regex (both must agree on every text), and JSON Schema
itself (`jsonschema`) for the strings the compiler writes. Forms whose rewrite would not be
exact, and products past their budget, are refused with a RegexError."""

import json
import re

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide.engine.regex_lexer import RegexError, RegexLexer
from jaxguide.grammars.json_schema import products
from jaxguide.grammars.json_schema.pattern import string_units
from jaxguide.grammars.json_schema.units import key_regex

PRODUCTS = [
    '"(?=(?:[a-z]{2,4})")(?:[a-c]+)"',          # intersection with a length window
    '"(?!(?:ab)")(?:[a-c]+)"',                   # difference with a word
    '"(?!(?:a+)")(?:[a-c]*)"',                   # difference with an infinite language
    '"(?=(?:[^"]{0,3})")(?!(?:x+)")(?:[a-z]*)"',  # both, several lookaheads
    '(?!(?:a"b)")(?:x)*"',                       # T inside C, which B never reaches
    '(?i)(?!(?:a)")(?:[ab])*"',                  # case-insensitive parts
    'k(?=(?:(?:ab)*)")(?:a[ab]*)"z',             # a product between other items
]
TEXTS = st.text(alphabet='abcxz"AB', max_size=8)


@pytest.mark.parametrize("pattern", PRODUCTS)
@settings(max_examples=200, deadline=None)
@given(body=TEXTS)
def test_product_agrees_with_python_re(pattern, body):
    _assert_reads_as_re(pattern, (body, f'"{body}"', f'{body}"', f'k{body}"z'))


def _assert_reads_as_re(pattern: str, texts) -> None:
    """The lexer matches exactly the texts `re` fully matches."""
    lexer = RegexLexer([pattern])
    for text in texts:
        expected = re.fullmatch(pattern, text) is not None
        assert lexer.fullmatch(0, text.encode()) == expected, (pattern, text)


# Counted parts (regex_product.cc): a condition X{m,n} whose unit X is a prefix code is walked as
# (units read, state inside the unit) instead of built as a DFA of n copies; the other repeats
# (X not a prefix code: a string of X also begins a longer one, X re-enters its start, X
# matches the empty string) keep the subset construction. Both must read as `re` does.
COUNTED = [
    '"(?=(?:(?:[ab]|\\\\[\\\\"]|\\\\x[ab]{2}){2,5})")(?:(?:[abx]|\\\\[\\\\"])*)"',  # escapes
    '"(?=(?:(?:(?:[ab]|\\\\[ab])){1,})")(?:[ab\\\\]*)"',  # unbounded, through groups
    '"(?=(?:(?:[a-c]|\\\\")*)")(?:b(?:[a-c]|\\\\"){0,6})"',  # X*: k stays 0
    '"(?!(?:(?:ab|c){0,2})")(?:[a-c]*)"',                          # a negative counted part
    '"(?=(?:(?:a|ab){0,3})")(?:[ab]*)"',      # not a prefix code: a is a prefix of ab
    '"(?=(?:(?:(?:ab)*c){1,2})")(?:[a-c]*)"',  # re-enters its start after ab
    '"(?=(?:(?:a?){2,3})")(?:[ab]*)"',         # matches the empty string
]
COUNTED_TEXTS = st.text(alphabet='abcx"\\', max_size=10)


@pytest.mark.parametrize("pattern", COUNTED)
@settings(max_examples=300, deadline=None)
@given(body=COUNTED_TEXTS)
def test_counted_parts_agree_with_python_re(pattern, body):
    _assert_reads_as_re(pattern, (f'"{body}"', f'"{body}', body))


def test_a_counted_part_is_never_built_as_copies():
    # Built as a DFA of its copies, [ab]{0,70000} needs 70,001 states, past the parts' budget
    # (65,536): counted, only the 4 pairs with the base's states are made.
    lexer = RegexLexer(['"(?=(?:[ab]{0,70000})")(?:a{0,3})"'])
    assert lexer.fullmatch(0, b'"aaa"') and lexer.fullmatch(0, b'""')
    assert not lexer.fullmatch(0, b'"aaaa"') and not lexer.fullmatch(0, b'"b"')
    with pytest.raises(RegexError, match="more than"):  # not counted: a is a prefix of ab
        RegexLexer(['"(?=(?:(?:a|ab){0,70000})")(?:a{0,3})"'])


UNITS = st.lists(st.sampled_from(["a", "b", "-", "1", "é", "😀", "\\n", "\\\"", "\\u0061",
                                  "\\ud83d\\ude00", "x"]), max_size=12)
STRING_SCHEMAS = [
    {"pattern": "^[a-z]+(-[a-z]+)*$", "minLength": 3, "maxLength": 8},
    {"pattern": "x", "maxLength": 3},
    {"pattern": "^(ab|é)*$", "minLength": 2},
    {"pattern": "[0-9]$", "minLength": 1, "maxLength": 5},
]


@pytest.mark.parametrize("schema", STRING_SCHEMAS)
@settings(max_examples=200, deadline=None)
@given(units=UNITS)
def test_length_with_pattern_is_the_schema(schema, units):
    """The content the JSON Schema compiler writes for a string whose lengths its pattern does
    not imply: the product form, accepting exactly the valid strings (that the pattern's units
    spell; `\\u0061` is not an `a` to the pattern's units, so it is only checked one way)."""
    content = string_units(schema.get("minLength", 0), schema.get("maxLength"),
                           schema["pattern"])
    assert content.startswith("(?=")
    regex = key_regex(content)
    lexer = RegexLexer([regex])
    text = '"' + "".join(units) + '"'
    accepted = lexer.fullmatch(0, text.encode())
    assert accepted == (re.fullmatch(regex, text) is not None), text
    if accepted:
        assert jsonschema.Draft202012Validator({"type": "string", **schema}).is_valid(
            json.loads(text)), text
    elif "\\u" not in text and "\\\"" not in text and "\\n" not in text:
        assert not jsonschema.Draft202012Validator({"type": "string", **schema}).is_valid(
            json.loads(text)), text


@pytest.mark.parametrize("pattern", [
    '(?=(?:a)")(?:a|"b)*"',       # B reads T where A accepts: A's match could end early
    '(?=(?:a|a"b)")(?:a)"',       # A reads T where B accepts: A's match could run past T
])
def test_inexact_rewrite_is_refused(pattern):
    with pytest.raises(RegexError, match="cannot be rewritten exactly"):
        RegexLexer([pattern])


def test_anchor_in_a_part_is_refused():
    with pytest.raises(RegexError, match="anchors"):
        RegexLexer(['(?=(?:^a)")(?:a)"'])


def test_product_budget_is_an_error():
    with pytest.raises(RegexError, match="more than 65536 states"):
        RegexLexer(['"(?=(?:[ab]{0,4000})")(?:[ab]*a[ab]{5})"'])  # 4,001 x 64 states


def test_empty_product_matches_nothing():
    lexer = RegexLexer(['"(?=(?:a)")(?:b)"'])
    assert not lexer.fullmatch(0, b'"b"') and not lexer.fullmatch(0, b'"a"')


KEY_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "ab": {}},
              "patternProperties": {"^x-": {"type": "string"}, "^[a-z]+$": {"type": "integer"},
                                    "b": {"minimum": 3}},
              "additionalProperties": False}
KEYS = st.text(alphabet="abx-Z", min_size=1, max_size=4)


@pytest.fixture(scope="module")
def key_products():
    """KEY_SCHEMA with its key classes written as lexer products: the product DFA of the
    patterns is given a budget of 3 states, so it is 'too large' (MaskBench schemas reach the
    real budgets with long patterns)."""
    budget = pytest.MonkeyPatch()
    budget.setattr(products, "KEY_CLASS_DFA_STATES", 3)
    try:
        grammar = jaxguide.Grammar.from_json_schema(KEY_SCHEMA)
    finally:
        budget.undo()
    assert any(t.regex.startswith('"(?=') for t in grammar.ir.terminals)
    return jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))


@settings(max_examples=150, deadline=None)
@given(members=st.lists(st.tuples(KEYS, st.sampled_from([1, 5, "s"])), max_size=3,
                        unique_by=lambda m: m[0]))
def test_pattern_key_classes_as_products_are_the_schema(key_products, members):
    value = dict(members)
    matcher = jaxguide.Matcher(key_products)
    text = json.dumps(value).encode()
    accepted = matcher.accept_bytes(text) and matcher.is_accepting()
    assert accepted == jsonschema.Draft202012Validator(KEY_SCHEMA).is_valid(value), value


def test_a_key_class_no_key_may_be_in_is_not_built():
    """additionalProperties false: the keys that match no pattern can have no value, so their
    class (the complement of a 257-state DFA, whose regex is too large) is never written, and
    the one class left is the pattern's own DFA regex rather than a lexer product (asking for
    every class made the Github o98xx schemas build that DFA twice and fall back: 46 -> 12 ms)."""
    schema = {"type": "object", "additionalProperties": False,
              "patternProperties": {"^[0-9a-zA-Z_-]{1,255}$": {"type": "number"}}}
    grammar = jaxguide.Grammar.from_json_schema(schema)
    assert not any(t.regex.startswith('"(?=') for t in grammar.ir.terminals)
    compiled = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    matcher = jaxguide.Matcher(compiled)
    assert matcher.accept_bytes(b'{"a-1": 2, "' + b"z" * 255 + b'": 3}') and matcher.is_accepting()
    assert not jaxguide.Matcher(compiled).accept_bytes(b'{"' + b"z" * 256)
    assert not jaxguide.Matcher(compiled).accept_bytes(b'{"a.b"')
