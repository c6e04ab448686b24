"""Long bounds lowered without one rule per position, against `jsonschema`.

- A bounded array of many plain items (maxItems 1000) is counted in binary
  (`ArrayRules.counted_items`; the tests lower the threshold to 8): every length around the
  bounds and around each power of two is accepted exactly when `jsonschema` says valid, prefix
  items and minItems included; the rules grow with log(maxItems); random walks through the
  masks finish valid.
- A long free string's chunks past its minLength are counted in binary too
  (`Emitter.chunked_string`; the tests use chunks of 4 units, counted from 3): every length up
  to past the bound is accepted exactly when `jsonschema` says valid, walks finish valid, and a
  maxLength of 1,000,000 takes under a hundred rules.
- Masks near a chunk's end (where the string slice is allowed across the boundary only if
  the text goes on in the next chunk) equal the tokens `is_token_allowed` accepts one by one,
  with chunks of 256 units and of 4 (a token then crosses several ends).
- The keys of a single `patternProperties` pattern under `additionalProperties: false` use
  the pattern's content regex directly (`products.key_class_regexes`, no product automaton):
  keys are accepted exactly when the pattern matches, walks finish valid.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from support.finite_masks import allowed_one_by_one, mask_of
from support.real_tokenizers import real_tokenizer
from support.schema_walks import assert_schema_walks

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema import emit, emit_arrays, normalize


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


@pytest.fixture
def counted_from_8(monkeypatch):
    """Runs of 8 items and more counted in binary (the default threshold, 256, needs arrays too
    long for quick walks); lowered anew (no cached IR)."""
    monkeypatch.setattr(emit_arrays, "MIN_COUNTED_ITEMS", 8)
    jaxguide.clear_caches()
    yield
    jaxguide.clear_caches()


def compiled(schema, info):
    return jaxguide.compile_grammar(Grammar.from_json_schema(schema), info)


def accepts(compiled_grammar, text: str) -> bool:
    matcher = Matcher(compiled_grammar)
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


def valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


# (minItems, maxItems, prefix items)
ARRAY_BOUNDS = [(0, 33, 0), (5, 40, 0), (33, 100, 0), (2, 64, 3), (0, 1000, 0), (17, 77, 2),
                (64, 64, 0), (31, 95, 1), (0, 63, 0), (1, 9, 0), (0, 300, 0), (200, 600, 2)]


def lengths_to_try(low: int, high: int) -> list[int]:
    near = {0, 1, 2, low - 1, low, low + 1, high - 1, high, high + 1, (low + high) // 2}
    for power in (16, 32, 64, 128, 256, 512):
        near |= {power - 1, power, power + 1}
    return sorted(n for n in near if 0 <= n <= high + 1)


@pytest.mark.parametrize("low,high,prefix", ARRAY_BOUNDS)
def test_counted_arrays_accept_exactly_the_valid_lengths(info, counted_from_8, low, high,
                                                       prefix):
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": low,
              "maxItems": high}
    if prefix:
        schema["prefixItems"] = [{"type": "string"}] * prefix
    grammar = compiled(schema, info)
    for n in lengths_to_try(low, high):
        value = ["s" if i < prefix else i for i in range(n)]
        assert accepts(grammar, json.dumps(value)) == valid(schema, value), (low, high, n)


def test_long_runs_are_counted_and_short_ones_unrolled():
    def rules(max_items):
        jaxguide.clear_caches()
        schema = {"type": "array", "items": {"type": "boolean"}, "maxItems": max_items}
        return len(Grammar.from_json_schema(schema).ir.rules)
    assert rules(100) > 100  # one state per position (the default threshold is 256)
    assert rules(4096) < 60


def test_counted_arrays_grow_with_the_log_of_max_items(counted_from_8):
    def rules(max_items):
        schema = {"type": "array", "items": {"type": "boolean"}, "maxItems": max_items}
        return len(Grammar.from_json_schema(schema).ir.rules)
    assert rules(4096) - rules(64) <= 2 * 3 * 6  # six more doublings, a few rules each
    assert rules(4096) < 60


@pytest.mark.parametrize("schema", [
    {"type": "array", "items": {"enum": [0, 1]}, "minItems": 33, "maxItems": 35},
    {"type": "array", "items": {"type": "boolean"}, "maxItems": 40},
    {"type": "array", "prefixItems": [{"type": "string"}], "items": {"enum": [7]},
     "minItems": 2, "maxItems": 70},
])
def test_counted_arrays_walk_to_valid_texts(info, counted_from_8, schema):
    assert_schema_walks(compiled(schema, info), schema, info, seed=json.dumps(schema),
                        walks=24, min_eos=6)


@pytest.fixture
def chunks_of_4(monkeypatch):
    """Free strings longer than 4 units lexed in chunks of 4, runs of 3 chunks and more
    counted in binary (the defaults, 256 and 16, need strings too long for quick walks)."""
    monkeypatch.setattr(normalize, "STRING_CHUNK", 4)
    monkeypatch.setattr(emit, "STRING_CHUNK", 4)
    monkeypatch.setattr(emit, "MIN_COUNTED_CHUNKS", 3)
    jaxguide.clear_caches()
    yield
    jaxguide.clear_caches()


# (minLength, maxLength): counted runs with a full last chunk (max % 4 == 3) and a short one,
# minLength inside the first chunk, past it, on a chunk boundary; a chain too short to count.
STRING_BOUNDS = [(0, 60), (0, 63), (1, 61), (5, 70), (13, 100), (0, 15), (9, 23), (30, 30),
                 (8, 40), (3, 16), (0, 11)]


@pytest.mark.parametrize("low,high", STRING_BOUNDS)
def test_counted_strings_accept_exactly_the_valid_lengths(info, chunks_of_4, low, high):
    schema = {"type": "string", "minLength": low, "maxLength": high}
    grammar = compiled(schema, info)
    for n in range(high + 3):  # code points spelled raw or escaped: one unit each
        value = "".join(("x", "\u00e9", "\n", '"', "\\")[i % 5] for i in range(n))
        assert accepts(grammar, json.dumps(value, ensure_ascii=n % 2 == 0)) == valid(
            schema, value), (low, high, n)


@pytest.mark.parametrize("schema", [
    {"type": "string", "maxLength": 61},
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 6,
                                            "maxLength": 40}}, "required": ["s"]},
])
def test_counted_strings_walk_to_valid_texts(info, chunks_of_4, schema):
    assert_schema_walks(compiled(schema, info), schema, info, seed=json.dumps(schema),
                        walks=24, min_eos=6)


CHUNK_UNITS = ("a", "\u00e9", "c", "\\n", "\\u00e9", " ", "\U0001F600", "\u6f22", "b")


def chunk_text(n: int) -> str:
    """n units of JSON string text: ASCII, two- to four-byte characters and escapes (one unit
    each), so that the tokens around a chunk's end hold units of every kind."""
    return "".join(CHUNK_UNITS[i % len(CHUNK_UNITS)] for i in range(n))


# (schema, where the string's text starts, units before the positions checked): a chunked
# string ends its lexeme every 256 units, so a mask within 16 units of that end allows the
# string slice only if the text goes on in the next chunk; near maxLength it must not.
CHUNK_EDGES = [
    ({"type": "string", "maxLength": 1000}, '"', range(238, 260)),
    ({"type": "string", "maxLength": 1000}, '"', range(497, 514)),
    ({"type": "string", "maxLength": 520}, '"', range(500, 521)),
    ({"type": "string", "minLength": 500, "maxLength": 32767}, '"', range(496, 514)),
    ({"type": "object", "properties": {"k": {"type": "string", "maxLength": 270}},
      "required": ["k"], "additionalProperties": False}, '{"k": "', range(240, 271)),
]


@pytest.mark.parametrize("schema,opening,units", CHUNK_EDGES)
def test_masks_near_chunk_ends_equal_tokens_tried_one_by_one(info, schema, opening, units):
    grammar = compiled(schema, info)
    checked = 0
    for n in units:
        matcher = Matcher(grammar)
        assert matcher.accept_bytes((opening + chunk_text(n)).encode()), n
        expected = allowed_one_by_one(matcher, info)
        assert mask_of(matcher, info) == expected, (n, len(expected))
        checked += len(expected) > 1000  # the string slice (thousands of tokens) is in play
    assert checked >= len(units) - 2


@pytest.mark.parametrize("low,high", [(0, 61), (13, 40)])
def test_masks_across_several_chunk_ends_equal_tokens_tried_one_by_one(info, chunks_of_4, low,
                                                                       high):
    # Chunks of 4 units: a token of the string slice (up to 16 units) crosses several ends.
    schema = {"type": "string", "minLength": low, "maxLength": high}
    grammar = compiled(schema, info)
    for n in range(0, high + 1, 3):
        matcher = Matcher(grammar)
        assert matcher.accept_bytes(('"' + chunk_text(n)).encode()), n
        assert mask_of(matcher, info) == allowed_one_by_one(matcher, info), n


def test_long_strings_take_rules_in_the_log_of_max_length():
    def rules(max_length):
        jaxguide.clear_caches()
        schema = {"type": "string", "maxLength": max_length}
        return len(Grammar.from_json_schema(schema).ir.rules)
    assert rules(256 * 15) > 30  # 15 chunks: one nonterminal each
    assert rules(1_000_000) < 100  # (not 7,800: a chain of 3,906 chunks)


KEY_PATTERN = "^[0-9a-zA-Z_-]{1,255}$"
KEYED = {"type": "object", "patternProperties": {KEY_PATTERN: {"type": "integer"}},
         "additionalProperties": False}


@pytest.mark.parametrize("key", ["a", "A_b-9", "x" * 255, "x" * 256, "", "a b", "é", "a.b",
                                 "-", "a/b"])
def test_single_pattern_keys_follow_the_pattern(info, key):
    grammar = compiled(KEYED, info)
    value = {key: 1}  # spelled as json.dumps writes it (the units' convention)
    assert accepts(grammar, json.dumps(value)) == valid(KEYED, value), key


@pytest.mark.parametrize("schema", [
    KEYED,
    {"type": "object", "patternProperties": {"^x-": {"type": "boolean"}},
     "additionalProperties": False, "minProperties": 1},
    {"type": "object", "patternProperties": {"[0-9]$": {"enum": [1]}},
     "additionalProperties": False},
])
def test_single_pattern_objects_walk_to_valid_texts(info, schema):
    assert_schema_walks(compiled(schema, info), schema, info, seed=json.dumps(schema),
                        walks=24, min_eos=6)


def test_single_pattern_no_string_matches_leaves_only_the_empty_object(info):
    schema = {"type": "object", "patternProperties": {"[]": {}}, "additionalProperties": False}
    grammar = compiled(schema, info)
    assert accepts(grammar, "{}")
    assert not accepts(grammar, '{"a": 1}')


def test_single_pattern_keys_build_no_product_automaton(monkeypatch):
    from jaxguide.grammars.json_schema import products

    def refuse(*args, **kwargs):
        raise AssertionError("a product automaton was built")
    monkeypatch.setattr(products, "Dfa", refuse)
    jaxguide.clear_caches()
    Grammar.from_json_schema(KEYED)
