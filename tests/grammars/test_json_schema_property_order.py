"""`property_order="any"`: object members in any order, each key at most once (the matcher
checks the keys beyond the grammar: native/matcher/unique_items.h; the grammar counts the
required members, so that all of them came when the object closes).

- Instances in every order of their members: accepted exactly when `jsonschema` says valid.
- Masks against a brute-force oracle on finite languages (compact whitespace): every valid
  document is listed (every order of every valid member set), and at every prefix of every
  document a token is allowed exactly when some document begins with the prefix and the token.
- Random walks (flexible whitespace): every finished text validates, no dead end.
- A repeated key is refused (JSON would keep the last value; the generated text has none).
"""

from __future__ import annotations

import itertools
import json
import math
import random

import jsonschema
import pytest
from support.finite_masks import assert_masks_equal_finite_language
from support.real_tokenizers import real_tokenizer
from support.schema_walks import assert_schema_walks

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema import JsonSchemaError


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


def compiled(schema, info, whitespace="flexible"):
    grammar = Grammar.from_json_schema(schema, whitespace=whitespace, property_order="any")
    return jaxguide.compile_grammar(grammar, info)


def accepts(compiled_grammar, text: str) -> bool:
    matcher = Matcher(compiled_grammar)
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


def valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def orders(value: dict, most: int = 120) -> list[str]:
    """`value` written with its members in every order (past `most` orders: as written,
    reversed and a seeded sample)."""
    items = list(value.items())
    if math.factorial(len(items)) <= most:
        return [json.dumps(dict(members)) for members in itertools.permutations(items)]
    rng = random.Random(len(items))
    picks = [items, items[::-1]] + [rng.sample(items, len(items)) for _ in range(most - 2)]
    return [json.dumps(dict(members)) for members in picks]


CASES = {
    "closed_required": (
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                          "c": {"type": "boolean"}},
         "required": ["a", "b"], "additionalProperties": False},
        [{"a": 1, "b": "x"}, {"a": 1, "b": "x", "c": True}, {"a": 1}, {"b": "x", "c": True},
         {"a": 1, "b": "x", "d": 1}, {"a": "1", "b": "x"}, {}]),
    "open_extras": (
        {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        [{"id": "a", "x": 1, "y": [2]}, {"x": 1}, {"id": 1, "x": 1}, {"id": "b"}]),
    "counted": (
        {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "required": ["a"],
         "minProperties": 2, "maxProperties": 3, "additionalProperties": {"type": "integer"}},
        [{"a": 1}, {"a": 1, "b": 2}, {"b": 1, "c": 2, "a": 3}, {"a": 1, "z": 2},
         {"a": 1, "b": 2, "c": 3, "z": 4}, {"a": 1, "z": "s"}, {"b": 1, "c": 2}]),
    "pattern_properties": (
        {"type": "object", "properties": {"name": {"type": "string"}},
         "patternProperties": {"^x-": {"type": "number"}}, "additionalProperties": False},
        [{"x-a": 1, "name": "n", "x-b": 2.5}, {"x-a": "s"}, {"y": 1}, {"name": "n"}]),
    "nested": (
        {"type": "object", "required": ["inner"], "properties": {
            "inner": {"type": "object", "required": ["p", "q"],
                      "properties": {"p": {"type": "integer"}, "q": {"type": "integer"}}},
            "tag": {"enum": ["t1", "t2"]}}},
        [{"tag": "t1", "inner": {"q": 1, "p": 2}}, {"inner": {"q": 1}}, {"inner": {}},
         {"inner": {"p": 1, "q": 2}, "tag": "t3"}]),
    "complement_witness": (  # an overlapping oneOf: "some undeclared member" (a witness)
        {"type": "object", "properties": {"id": {"type": "string"}},
         "oneOf": [{"additionalProperties": False, "properties": {"id": {}}},
                   {"required": ["id"]}]},
        [{"id": "a", "x": 1}, {"x": 1}, {"id": "a"}, {}, {"x": 1, "y": 2}]),
    # oneOf of required sets: its complements make alternatives whose required member can
    # have no value; with them the count of required members could only be made up by a
    # repeated key (a dead end once "b" and "c" both came; MaskBench Github_easy o90314)
    "exclusive_required": (
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"},
                                          "c": {"type": "string"}},
         "oneOf": [{"required": ["a", "b"]}, {"required": ["a", "c"]}],
         "additionalProperties": False},
        [{"a": "", "b": ""}, {"c": "", "a": ""}, {"b": "", "c": "", "a": ""}, {"a": ""}]),
    # the same where the required member's value has no finite instance (seen only once the
    # grammar is whole)
    "required_without_value": (
        {"anyOf": [{"type": "object", "required": ["x", "y"],
                    "properties": {"x": {"type": "integer"}, "y": {"$ref": "#/$defs/loop"}}},
                   {"type": "object", "required": ["w"], "additionalProperties": False,
                    "properties": {"w": {"type": "integer"}}}],
         "$defs": {"loop": {"type": "object", "required": ["next"],
                            "properties": {"next": {"$ref": "#/$defs/loop"}}}}},
        [{"w": 1}, {"w": 1, "x": 2}, {"x": 1, "y": {"next": {}}}, {"x": 1}]),
    # the same past MAX_TRACKED_REQUIRED required names, which are then counted (and only
    # the matcher's distinct keys make the count mean all of them)
    "counted_required_without_value": (
        {"anyOf": [{"type": "object", "required": [*"abcdefg", "y"],
                    "properties": {**{k: {"type": "integer"} for k in "abcdefg"},
                                   "y": {"$ref": "#/$defs/loop"}}},
                   {"type": "object", "required": ["w"], "additionalProperties": False,
                    "properties": {"w": {"type": "integer"}}}],
         "$defs": {"loop": {"type": "object", "required": ["next"],
                            "properties": {"next": {"$ref": "#/$defs/loop"}}}}},
        [{"w": 1}, {"w": 1, "a": 2}, {"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1}]),
    "counted_required": (  # eight required names, counted
        {"type": "object", "required": [*"abcdefgh"], "additionalProperties": False,
         "properties": {**{k: {"type": "integer"} for k in "abcdefgh"}, "z": {}}},
        [{k: 1 for k in "abcdefgh"}, {**{k: 1 for k in "hgfedcba"}, "z": None},
         {k: 1 for k in "abcdefg"}, {**{k: 1 for k in "abcdefg"}, "z": 1}]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_instances_in_every_order_accepted_exactly_when_valid(name, info):
    schema, values = CASES[name]
    grammar = compiled(schema, info)
    verdicts = {value_text: valid(schema, value) for value in values
                for value_text in orders(value)}
    assert any(verdicts.values()) and not all(verdicts.values()), verdicts
    for text, ok in verdicts.items():
        assert accepts(grammar, text) == ok, (text, ok)


@pytest.mark.parametrize("name", sorted(CASES))
def test_walks_through_the_masks_are_valid_without_dead_ends(name, info):
    schema = CASES[name][0]
    assert_schema_walks(compiled(schema, info), schema, info, seed=name)


def test_a_repeated_key_is_refused(info):
    grammar = compiled(CASES["open_extras"][0], info)
    assert accepts(grammar, '{"id": "a", "x": 1}')
    assert not accepts(grammar, '{"id": "a", "x": 1, "x": 2}')
    assert not accepts(grammar, '{"id": "a", "id": "b"}')
    assert not accepts(grammar, '{"id": "a", "\\u0069d": "b"}')  # the same key, escaped
    matcher = Matcher(grammar)
    assert matcher.accept_bytes(b'{"id": "a", "i')
    assert not matcher.accept_bytes(b'd"')


# Finite languages (compact): (member name -> its values, required names). No numbers: an
# enum's number may also be written 2.0, 2.00, ...
FINITE = {
    "three_members": ({"a": ["u", "v"], "b": [True], "c": [None]}, ["a"]),
    "counted": ({"a": ["u"], "ab": [False], "b": ["w"]}, []),
    "all_required": ({"x": ["p"], "xy": ["q"], "y": ["r"]}, ["x", "xy", "y"]),
}


def finite_documents(name) -> tuple[dict, set[bytes]]:
    members, required = FINITE[name]
    schema = {"type": "object", "additionalProperties": False, "required": required,
              "properties": {k: {"enum": v} for k, v in members.items()}}
    if name == "counted":
        schema.update(minProperties=1, maxProperties=2)
    documents = set()
    for n in range(len(members) + 1):
        for names in itertools.permutations(members, n):
            for values in itertools.product(*(members[k] for k in names)):
                value = dict(zip(names, values))
                if valid(schema, value):
                    documents.add(json.dumps(value, separators=(",", ":")).encode())
    return schema, documents


@pytest.mark.parametrize("name", sorted(FINITE))
def test_masks_equal_a_brute_force_oracle(name, info):
    schema, documents = finite_documents(name)
    grammar = compiled(schema, info, whitespace="compact")
    assert_masks_equal_finite_language(grammar, documents, info, seed=name)


def test_declared_order_is_the_default_and_refuses_other_orders(info):
    schema = CASES["closed_required"][0]
    declared = jaxguide.compile_grammar(Grammar.from_json_schema(schema), info)
    assert accepts(declared, '{"a": 1, "b": "x"}')
    assert not accepts(declared, '{"b": "x", "a": 1}')


def test_budget_and_bad_option():
    many = {"type": "object", "properties": {f"p{i}": {} for i in range(40)},
            "required": [f"p{i}" for i in range(40)], "maxProperties": 60}
    with pytest.raises(JsonSchemaError, match="property_order 'any'.*states"):
        Grammar.from_json_schema(many, property_order="any")
    uncounted = {k: v for k, v in many.items() if k != "maxProperties"}
    Grammar.from_json_schema(uncounted, property_order="any")  # 41 x 1 x 2 states
    with pytest.raises(JsonSchemaError, match="property_order must be one of"):
        Grammar.from_json_schema({}, property_order="sorted")
