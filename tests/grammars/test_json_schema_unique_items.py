"""uniqueItems, enforced beyond the grammar (native/matcher/unique_items.h), against `jsonschema`.

- Instances: accepted exactly when `jsonschema` says valid, with duplicates that differ only in
  how JSON writes them (`1` / `1.0` / `1e0`, `"a"` / `"\\u0061"`, key order, `0` / `-0`) and
  values JSON Schema keeps apart (`true` / `1`).
- Masks against a brute-force oracle: on finite languages (compact whitespace, enum / bounded
  domains) every valid document is listed, and at every prefix of every document a token is
  allowed exactly when some document begins with the prefix and the token's bytes (the masks
  neither let a duplicate through nor leave a dead end).
- Random walks through the masks (flexible whitespace): every finished text validates, and no
  walk meets a dead end.
- Rollback, `is_token_allowed`, fast-forward and speculation see the same rule.
"""

from __future__ import annotations

import itertools
import json
import random

import jsonschema
import pytest
from support.finite_masks import assert_masks_equal_finite_language, mask_of
from support.real_tokenizers import real_tokenizer
from support.schema_walks import assert_schema_walks

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema.normalize import Normalizer


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


def compiled(schema, info, whitespace="flexible"):
    return jaxguide.compile_grammar(Grammar.from_json_schema(schema, whitespace=whitespace), info)


def valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def accepts(compiled_grammar, text: str) -> bool:
    matcher = Matcher(compiled_grammar)
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


# name -> (schema, texts): each text's verdict comes from jsonschema; every case holds both.
CASES = {
    "strings": (
        {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        ['["a", "b"]', '["a", "a"]', '["a", "\\u0061"]', '["\\"", "\\u0022"]', '["ab", "a"]',
         '[]', '["x"]', '["\\ud83d\\ude00", "\U0001F600"]', '["a\\/", "a/"]']),
    "numbers": (
        {"type": "array", "items": {"type": "number"}, "uniqueItems": True},
        ['[1, 2]', '[1, 1.0]', '[1, 1e0]', '[10, 1e1]', '[0.5, 5e-1]', '[0, -0]', '[1, 10]',
         '[100, 1E2]', '[1.5, 15e-1, 2]', '[-1, 1]', '[0.1, 0.10]', '[12, 120e-1]']),
    "integers_bounded": (
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 12},
         "uniqueItems": True},
        ['[1, 11, 12]', '[11, 1, 11]', '[0, 10]', '[3, 3]']),
    "literals_apart_from_numbers": (
        {"type": "array", "uniqueItems": True},
        ['[true, 1]', '[false, 0]', '[null, false]', '[true, true]', '[null, null]',
         '["1", 1]', '[[], {}]', '[[], []]', '[{}, {}]']),
    "objects": (
        {"type": "array", "items": {"type": "object"}, "uniqueItems": True},
        ['[{"a": 1, "b": 2}, {"b": 2, "a": 1}]', '[{"a": 1}, {"a": 1.0}]',
         '[{"a": 1}, {"a": 2}]', '[{"a": [1, 2]}, {"a": [2, 1]}]', '[{"a": {"b": "c"}}, {"a": '
         '{"b": "\\u0063"}}]', '[{}, {"a": null}]']),
    "enum_objects": (
        {"type": "array", "uniqueItems": True,
         "items": {"type": "object", "properties": {"k": {"enum": ["x", "y"]}},
                   "required": ["k"], "additionalProperties": False}},
        ['[{"k": "x"}, {"k": "y"}]', '[{"k": "x"}, {"k": "x"}]', '[{"k": "y"}]']),
    "arrays_of_arrays": (
        {"type": "array", "items": {"type": "array", "items": {"type": "integer"}},
         "uniqueItems": True},
        ['[[1, 2], [2, 1]]', '[[1, 2], [1, 2]]', '[[], []]', '[[1, 1], [1]]', '[[1], [1, 1]]']),
    "unique_inside_plain": (
        {"type": "array", "items": {"type": "array", "items": {"type": "integer"},
                                    "uniqueItems": True}},
        ['[[1, 2], [1, 2]]', '[[1, 1]]', '[[2, 1], [3]]']),
    "plain_inside_unique": (
        {"type": "array", "uniqueItems": True,
         "items": {"type": "object", "properties": {"tags": {"type": "array"}}}},
        ['[{"tags": [1, 1]}, {"tags": [1]}]', '[{"tags": [1, 1]}, {"tags": [1, 1]}]']),
    "prefix_items": (
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
         "items": {"type": "integer"}, "uniqueItems": True},
        ['[1, "1", 2]', '[1, "a", 1]', '[2, "b", 3, 2]', '[5, "x"]']),
    "enum_strings": (
        {"type": "array", "items": {"enum": ["ab", "ac", "b"]}, "uniqueItems": True},
        ['["ab", "ac", "b"]', '["ab", "ab"]', '["b", "ac"]', '["ac", "b", "ac"]']),
    "property": (
        {"type": "object", "properties": {"ids": {"type": "array", "uniqueItems": True,
                                                  "items": {"type": "string", "maxLength": 2}}}},
        ['{"ids": ["a", "b"]}', '{"ids": ["a", "a"]}', '{"ids": []}']),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_instances_accepted_exactly_when_valid(name, info):
    schema, texts = CASES[name]
    grammar = compiled(schema, info)
    verdicts = {text: valid(schema, json.loads(text)) for text in texts}
    assert any(verdicts.values()) and not all(verdicts.values()), verdicts  # can fail both ways
    for text, ok in verdicts.items():
        assert accepts(grammar, text) == ok, (text, ok)


@pytest.mark.parametrize("name", sorted(CASES))
def test_walks_through_the_masks_are_valid_without_dead_ends(name, info):
    schema = CASES[name][0]
    assert_schema_walks(compiled(schema, info), schema, info, seed=name)


# Finite languages, compact whitespace: (schema, the item values in the order of the domain,
# how many items at most). The grammar writes each value one way: json.dumps, compact.
FINITE = {
    "enum_strings": ({"items": {"enum": ["ab", "ac", "b", "abc"]}}, ["ab", "ac", "b", "abc"], 4),
    "bounded_integers": ({"items": {"type": "integer", "minimum": 0, "maximum": 12},
                          "maxItems": 3}, list(range(13)), 3),
    "booleans_and_null": ({"items": {"enum": [True, False, None]}}, [True, False, None], 3),
    "enum_objects": ({"items": {"enum": [{"a": 1}, {"a": 2}, {"b": 1}]}},
                     [{"a": 1}, {"a": 2}, {"b": 1}], 3),
    "enum_arrays": ({"items": {"enum": [[1], [1, 2], [2]]}}, [[1], [1, 2], [2]], 3),
    "one_letter_strings": ({"items": {"type": "string", "pattern": "^[xy]$"},
                            "minItems": 1, "maxItems": 2}, ["x", "y"], 2),
}


def finite_documents(name) -> tuple[dict, set[bytes]]:
    extra, domain, most = FINITE[name]
    schema = {"type": "array", "uniqueItems": True, **extra}
    documents = set()
    for n in range(most + 1):
        for values in itertools.permutations(domain, n):
            if valid(schema, list(values)):
                documents.add(json.dumps(list(values), separators=(",", ":")).encode())
    return schema, documents


@pytest.mark.parametrize("name", sorted(FINITE))
def test_masks_equal_a_brute_force_oracle(name, info):
    schema, documents = finite_documents(name)
    assert any(b"," in d for d in documents)
    grammar = compiled(schema, info, whitespace="compact")
    assert_masks_equal_finite_language(grammar, documents, info, seed=name)


def test_a_prefix_with_only_duplicates_to_follow_is_refused(info):
    schema = {"type": "array", "items": {"enum": ["ab", "ac"]}, "uniqueItems": True}
    grammar = compiled(schema, info, whitespace="compact")
    matcher = Matcher(grammar)
    assert matcher.accept_bytes(b'["ab","a')
    assert not matcher.accept_bytes(b"b")          # would close "ab" again
    assert matcher.accept_bytes(b'c"]') and matcher.is_accepting()
    matcher = Matcher(grammar)
    assert not matcher.accept_bytes(b'["ac","ac')  # only a duplicate can follow
    assert matcher.accept_bytes(b'["ac","a')
    assert not matcher.is_token_allowed(info.encode("c")[0])
    assert matcher.is_token_allowed(info.encode("b")[0])


def test_rollback_restores_the_items(info):
    schema = CASES["strings"][0]
    grammar = compiled(schema, info)
    matcher = Matcher(grammar)
    first = info.encode('["a", "b"')
    assert matcher.accept_tokens(first) == len(first)
    before = mask_of(matcher, info)
    again = info.encode(', "a"]')
    accepted = matcher.accept_tokens(again)  # "a" again: refused at its closing quote
    assert accepted == len(again) - 1 and info.token_bytes(again[-1]).startswith(b'"')
    matcher.rollback(accepted)
    assert mask_of(matcher, info) == before
    assert matcher.accept_bytes(b', "a') and not matcher.accept_bytes(b'"')
    matcher.rollback(1)
    assert matcher.accept_bytes(b', "c"]') and matcher.is_accepting()


def test_is_token_allowed_matches_the_masks_along_walks(info):
    schema = CASES["enum_strings"][0]
    grammar = compiled(schema, info)
    rng = random.Random(3)
    for _ in range(6):
        matcher = Matcher(grammar)
        for _ in range(30):
            allowed = mask_of(matcher, info)
            if not allowed:
                pytest.fail("dead end")
            sample = rng.sample(range(info.vocab_size), 300) + sorted(allowed)[:50]
            for token in sample:
                assert matcher.is_token_allowed(token) == (token in allowed), token
            token = rng.choice(sorted(allowed))
            if token in info.eos_token_ids:
                break
            assert matcher.accept_token(token)


def test_fast_forward_and_speculation_respect_unique_items(info):
    schema = {"type": "array", "items": {"enum": ["alpha", "alphabet"]}, "uniqueItems": True}
    grammar = compiled(schema, info, whitespace="compact")
    matcher = Matcher(grammar)
    assert matcher.accept_bytes(b'["alpha",')
    assert matcher.compute_ff_bytes() == b'"alpha'  # the grammar's part; then `bet"` only
    draft = info.encode('"alpha"]')
    assert matcher.validate_tokens(draft) < len(draft)
    good = info.encode('"alphabet"]')
    assert matcher.validate_tokens(good) == len(good)
    forced = matcher.compute_ff_tokens()
    assert matcher.accept_tokens(forced) == len(forced)
    written = info.decode_bytes(forced)
    assert b'"alpha'.startswith(written)
    assert matcher.accept_bytes(b'"alpha'[len(written):])
    assert not matcher.is_token_allowed(info.encode('"]')[0])  # "alpha" again
    assert matcher.accept_bytes(b'bet"]') and matcher.is_accepting()


def test_a_domain_smaller_than_min_items_admits_no_array(info):
    schema = {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 3, "uniqueItems": True}
    with pytest.raises(jaxguide.GrammarError, match="language is empty"):
        compiled(schema, info)
    schema["minItems"] = 2
    assert accepts(compiled(schema, info), '["b", "a"]')


@pytest.mark.parametrize("items,written", [
    ({"type": "integer", "minimum": 0, "maximum": 2}, [0, 2, 1]),
    ({"type": "integer", "exclusiveMinimum": 0, "maximum": 9, "multipleOf": 3}, [3, 9, 6]),
    ({"type": "object", "properties": {"k": {"enum": ["x", "y"]}, "b": {"type": "boolean"}},
      "required": ["k", "b"], "additionalProperties": False},
     [{"k": k, "b": b} for k in "xy" for b in (True, False)]),
    ({"type": ["boolean", "null"]}, [None, False, True]),
])
def test_no_comma_once_the_domain_is_used_up(items, written, info):
    schema = {"type": "array", "items": items, "uniqueItems": True}
    grammar = compiled(schema, info, whitespace="compact")
    matcher = Matcher(grammar)
    text = json.dumps(written, separators=(",", ":"))[:-1]
    assert matcher.accept_bytes(text.encode())
    assert not matcher.accept_bytes(b",")
    assert mask_of(matcher, info) == set(info.tokens_prefixing(b"]").tolist())
    assert matcher.accept_bytes(b"]") and matcher.is_accepting()
    shorter = Matcher(grammar)  # one value left: the comma stays
    assert shorter.accept_bytes(json.dumps(written[:-1], separators=(",", ":"))[:-1].encode())
    assert shorter.accept_bytes(b",")


@pytest.mark.parametrize("items,count", [
    ({"enum": ["a", "b", "a", 1, 1.0]}, 3),
    ({"type": "integer", "minimum": -2.5, "exclusiveMaximum": 4}, 6),
    ({"type": "object", "properties": {"k": {"enum": ["x", "y"]}, "b": {"type": "boolean"}},
      "required": ["k"], "additionalProperties": False}, 6),   # 2 * (2 + absent)
    ({"type": ["null", "boolean"]}, 3),
    ({"type": "integer", "minimum": 0}, None),
    ({"type": "object", "properties": {"k": {"const": 1}}}, None),  # other properties too
    ({"type": "string", "maxLength": 1}, None),
])
def test_unique_items_hold_no_more_items_than_their_domain(items, count):
    schema = {"type": "array", "items": items, "uniqueItems": True, "minItems": 1}
    conjunction, = read_alternatives(schema)
    array, = [form.make() if hasattr(form, "make") else form for form in conjunction.forms]
    assert array.unique and array.max_items == count


def read_alternatives(schema) -> list:
    alternatives = Normalizer(schema, True, False).normal_form(schema, "").alternatives
    return [a.make() if hasattr(a, "make") else a for a in alternatives]


def test_inside_a_lark_grammar_by_json_schema(info):
    grammar = Grammar.from_lark('start: "tags=" %json {"type": "array", "items": '
                                '{"type": "string"}, "uniqueItems": true} ";"\n')
    compiled_grammar = jaxguide.compile_grammar(grammar, info)
    assert accepts(compiled_grammar, 'tags=["a", "b"];')
    assert not accepts(compiled_grammar, 'tags=["a", "a"];')
