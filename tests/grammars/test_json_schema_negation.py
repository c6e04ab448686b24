"""Complements in JSON Schema (`negation`): `not`, overlapping `oneOf`, `if`/`then`/`else` and
the dependencies keywords, each checked three ways against `jsonschema`: instance tables
(accepted exactly when valid), seeded walks through the masks (every finished text valid), and
instances aimed at what the keyword excludes (random JSON values: whatever the matcher accepts
must validate; random walks rarely reach the excluded corner).
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema import JsonSchemaError
from jaxguide.testing import JsonSchemaOracle, check_soundness

_OBJ_AB = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}

# name -> (schema, texts: valid ones and ones aimed at what the keyword excludes)
CASES = {
    "oneOf_enum_in_string": (
        {"oneOf": [{"enum": ["linux", "osx"]}, {"type": "string"}]},
        ['"linux"', '"osx"', '"win"', '""', '"linuxx"', "1"]),
    "oneOf_required": (
        {**_OBJ_AB, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        ['{"a": 1}', '{"b": "x"}', '{"a": 1, "b": "x"}', "{}"]),
    "oneOf_three_required_sets": (
        {"type": "object", "properties": {k: {"type": "number"} for k in "rlwbh"},
         "oneOf": [{"required": ["r"]}, {"required": ["l", "w"]}, {"required": ["b", "h"]}]},
        ['{"r": 1}', '{"l": 1, "w": 2}', '{"r": 1, "l": 1}', '{"r": 1, "l": 1, "w": 2}',
         '{"l": 1, "w": 2, "b": 3, "h": 4}', '{"l": 1}', "{}"]),
    "oneOf_closed_objects": (
        {"oneOf": [
            {"type": "object", "properties": {"id": {"type": "string"}, "x": {"type": "integer"}},
             "required": ["id"], "additionalProperties": False},
            {"type": "object", "properties": {"id": {"type": "string"}, "y": {"type": "integer"}},
             "required": ["id"], "additionalProperties": False}]},
        ['{"id": "a"}', '{"id": "a", "x": 1}', '{"id": "a", "y": 1}', '{"id": "a", "z": 1}']),
    "oneOf_open_object_witness": (
        {"type": "object", "properties": {"id": {"type": "string"}},
         "oneOf": [{"additionalProperties": False, "properties": {"id": {}}},
                   {"required": ["id"]}]},
        ['{"id": "a"}', '{"id": "a", "x": 1}', '{"x": 1}', "{}"]),
    "oneOf_open_object_additional_schema": (
        {"oneOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}},
             "additionalProperties": {"type": "string"}},
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}]},
        ['{"a": 1}', '{"a": 1, "b": "x"}', '{"a": 1, "b": 2}', '{"b": 2}', '{"b": "x"}', "{}"]),
    "not_object_keywords_bare": (  # a non-object satisfies the body: `not` rejects it
        {"allOf": [{"type": ["object", "integer"], "properties": {"a": {}, "b": {}},
                    "additionalProperties": False},
                   {"not": {"properties": {"a": {}}, "additionalProperties": False}}]},
        ['{"a": 1}', '{"b": 1}', "{}", "3", '{"a": 1, "b": 2}']),
    "oneOf_pattern_and_string": (
        {"oneOf": [{"type": "string", "pattern": "^[0-9a-f]{4}$"}, {"type": "string"}]},
        ['"abcd"', '"abcg"', '"0123"', '"012"', '"x"']),
    "oneOf_number_ranges": (
        {"oneOf": [{"type": "number", "minimum": 0}, {"type": "number", "maximum": 10}]},
        ["-5", "5", "0", "10", "15", "10.5", "-0.5"]),
    "oneOf_refs": (
        {"$defs": {"p": {"type": "object", "properties": {"kind": {"type": "string"},
                                                          "n": {"type": "integer"}},
                         "required": ["kind"]},
                   "q": {"type": "object", "properties": {"kind": {"const": "q"}},
                         "required": ["kind"]}},
         "oneOf": [{"$ref": "#/$defs/p"}, {"$ref": "#/$defs/q"}]},
        ['{"kind": "p"}', '{"kind": "q"}', '{"kind": "p", "n": 2}', '{"kind": "q", "n": 2}']),
    "oneOf_pattern_discriminator": (
        {"type": "array", "maxItems": 2, "items": {"oneOf": [
            {"type": "object", "required": ["t"], "additionalProperties": False,
             "properties": {"t": {"type": "string", "pattern": "^b:int$"},
                            "v": {"type": "integer"}}},
            {"type": "object", "required": ["t"], "additionalProperties": False,
             "properties": {"t": {"type": "string", "pattern": "^b:str$"},
                            "v": {"type": "string"}}}]}},
        ['[{"t": "b:int", "v": 1}]', '[{"t": "b:str", "v": "x"}]', '[{"t": "b:int", "v": "x"}]',
         '[{"t": "b:flt"}]']),
    "allOf_two_patterns": (
        {"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "b$"}]},
        ['"ab"', '"axb"', '"a"', '"b"', '"ba"']),
    "not_numbers": (
        {"type": "integer", "not": {"enum": [1, 2, 3]}},
        ["0", "1", "2", "3", "4", "-1"]),
    "not_strings_and_types": (
        {"not": {"enum": ["a", 1, None]}},
        ['"a"', '"b"', "1", "2", "null", "true", "[]", "{}"]),
    "not_pattern_bare": (
        {"not": {"pattern": "^a"}},
        ['"abc"', '"bc"', '""', "1", "null"]),
    "not_object_shape": (
        {"type": "object", "properties": {"a": {"type": "integer"}},
         "not": {"required": ["a"], "properties": {"a": {"minimum": 5}}}},
        ['{"a": 1}', '{"a": 5}', '{"a": 7}', "{}"]),
    "not_integer": (
        {"type": "array", "maxItems": 2, "items": {"type": "number", "not": {"type": "integer"}}},
        ["[1.5]", "[2]", "[2.0]", "[-0.25, 3.05]", "[0.0]", '["a"]']),
    "not_not": (
        {"not": {"not": {"type": "string", "maxLength": 2}}},
        ['"ab"', '"abc"', "1"]),
    "not_length": (
        {"type": "string", "not": {"minLength": 2, "maxLength": 3}},
        ['""', '"a"', '"ab"', '"abc"', '"abcd"']),
    "not_array_prefix": (
        {"type": "array", "items": {"type": "integer"}, "maxItems": 3,
         "not": {"prefixItems": [{"const": 1}], "minItems": 1}},
        ["[]", "[1]", "[2]", "[1, 2]", "[2, 1]"]),
    "not_contains": (
        {"type": "array", "maxItems": 3, "items": {"type": "integer"},
         "not": {"contains": {"const": 0}}},
        ["[]", "[0]", "[1, 2]", "[1, 0]"]),
    "contains": (
        {"type": "array", "items": {"type": "integer"}, "maxItems": 4, "contains": {"const": 0}},
        ["[]", "[0]", "[1, 2]", "[1, 0]", "[1, 2, 0, 4]"]),
    "not_items": (
        {"type": "array", "maxItems": 3, "not": {"items": {"type": "integer"}}},
        ["[]", "[1]", '[1, "a"]', '["a"]', "[1.5, 2]"]),
    "not_items_bare": (
        {"not": {"items": {"type": "integer"}}},
        ["[]", "[1]", '["a"]', "3", '"s"']),
    "not_items_after_prefix": (
        {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"},
         "maxItems": 4, "not": {"prefixItems": [True], "items": {"minimum": 5}}},
        ['["a"]', '["a", 6]', '["a", 6, 3]', '["a", 3]']),
    "if_then_else": (
        {"type": "object", "properties": {"k": {"type": "string"}, "y": {"type": "integer"},
                                          "z": {"type": "boolean"}},
         "if": {"properties": {"k": {"const": "x"}}, "required": ["k"]},
         "then": {"required": ["y"]}, "else": {"required": ["z"]}},
        ['{"k": "x", "y": 1}', '{"k": "x"}', '{"k": "w", "z": true}', '{"k": "w"}',
         '{"z": true}', '{"k": "x", "z": true}']),
    "dependent_required": (
        {**_OBJ_AB, "dependentRequired": {"a": ["b"]}},
        ['{"a": 1}', '{"a": 1, "b": "x"}', '{"b": "x"}', "{}"]),
    "dependencies_both_forms": (
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
         "properties": {"a": {}, "b": {}, "c": {"type": "integer"}},
         "dependencies": {"a": ["b"], "b": {"properties": {"c": {"minimum": 3}},
                                            "required": ["c"]}}},
        ['{"a": 1, "b": 2, "c": 3}', '{"a": 1}', '{"b": 2}', '{"b": 2, "c": 2}', '{"c": 1}',
         "{}"]),
    # Repeated undeclared keys (JSON keeps the last value): a member a complement needs is
    # not replaced by a later one; minProperties counts distinct keys.
    "witness_not_replaced_by_repeated_key": (
        {"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
                    "additionalProperties": {"type": "string"}},
                   {"type": "object", "properties": {"a": {"type": "integer"}},
                    "required": ["a"]}]},
        ['{"a": 1, "b": 2, "b": "x"}', '{"a": 1, "b": "x", "b": 2}', '{"a": 1, "b": 2}',
         '{"a": 1, "b": "x"}']),
    "min_properties_finite_pattern_keys": (  # the dependencies of MaskBench's dep10, smaller
        {"type": "object", "patternProperties": {"^[a-d]$": {"type": "integer"}},
         "additionalProperties": False, "minProperties": 3,
         "dependentSchemas": {"a": {"not": {"required": ["c"]}}}},
        ['{"a": 1, "b": 2, "d": 3}', '{"a": 1, "a": 2, "b": 3}', '{"b": 1, "c": 2, "d": 3}',
         '{"b": 1, "b": 2, "b": 3}', '{"a": 1, "b": 2}', '{"a": 1, "b": 2, "c": 3}']),
    "min_properties_property_names_enum": (
        {"type": "object", "propertyNames": {"enum": ["x", "y", "z"]}, "minProperties": 2},
        ['{"x": 1, "y": 2}', '{"x": 1, "x": 2}', '{"x": 1}', '{"y": [], "z": {}}']),
    # `not` of integer with other types: "a number but no integer", and the others gone
    # (strings once passed: MaskBench Synthesized, type_id64 without its enum)
    "not_integer_and_string": (
        {"not": {"type": ["integer", "string"]}},
        ['"a"', '""', "3", "-2", "0.5", "null", "true", "[]", "{}", "1e3"]),
    "not_integer_and_string_in_allof": (
        {"allOf": [{}, {"not": {"type": ["string", "integer", "null"]}}]},
        ['"a"', "3", "0.5", "null", "false", '[1, "a"]', '{"a": "b"}']),
    "not_of_not_integer_and_string": (  # the complement of a complement: strings and integers
        {"not": {"type": ["object", "boolean", "null", "array", "number"],
                 "not": {"type": ["integer", "string"]}}},
        ['"a"', "3", "0.5", "null", "true", "[]", "{}", "-7"]),
    "dependencies_untyped": (
        {"dependentRequired": {"a": ["b"]}, "properties": {"a": {}, "b": {}}},
        ['{"a": 1}', '{"a": 1, "b": 2}', "3", '"s"']),
    # `not` of object / array values: each value's shape complemented member by member
    "not_const_object": (
        {"type": "object", "additionalProperties": False, "not": {"const": {"a": 1, "b": [1, 2]}},
         "properties": {"a": {"type": "integer"},
                        "b": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}}},
        ['{"a": 1, "b": [1, 2]}', '{"a": 1, "b": [1]}', '{"a": 1}', '{"b": [1, 2]}',
         '{"a": 1, "b": [1, 2, 3]}', '{"a": 2, "b": [1, 2]}', "{}"]),
    "not_enum_of_arrays": (
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2},
         "maxItems": 2, "not": {"enum": [[1, 2], [0], []]}},
        ["[1, 2]", "[0]", "[]", "[2, 1]", "[1]", "[0, 0]", "[1.0, 2]"]),
    "not_enum_of_arrays_draft7": (  # items as an array of position schemas
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
         "items": {"enum": ["x", "y"]}, "maxItems": 2, "not": {"enum": [["x", "y"], ["y"]]}},
        ['["x", "y"]', '["y"]', '["y", "x"]', '["x"]', "[]", '["y", "y"]']),
    "not_enum_nested_and_scalars": (
        {"not": {"enum": [{"a": {"a": {}}}, 3, "s", [[]]]}},
        ['{"a": {"a": {}}}', '{"a": {"a": {"b": 1}}}', '{"a": {}}', "3", "3.0", '"s"', "4",
         "[[]]", "[[1]]", "[]", "null"]),
    # ... inside a closed recursive object: the complement's "some member differs" is
    # resolved before the merge brings the declared member (`stale_witnesses`)
    "not_const_in_closed_recursion": (
        {"allOf": [{"$ref": "#/$defs/chain"}, {"not": {"const": {"a": {"a": {}}}}}],
         "$defs": {"chain": {"type": "object", "additionalProperties": False,
                             "properties": {"a": {"$ref": "#/$defs/chain"}}}}},
        ["{}", '{"a": {}}', '{"a": {"a": {}}}', '{"a": {"a": {"a": {}}}}',
         '{"a": {"a": {"a": {"a": {}}}}}', '{"b": {}}']),
    "not_empty_object_closed": (
        {"type": "object", "properties": {"a": {"type": "object"}}, "additionalProperties": False,
         "not": {"const": {}}},
        ["{}", '{"a": {}}', '{"a": {"b": 1}}', '{"b": {}}']),
    "some_member_fails_after_merge": (  # a member the `not` body does not declare
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}},
         "additionalProperties": False,
         "not": {"properties": {"a": {"const": 1}}, "additionalProperties": False}},
        ['{"a": 1}', '{"a": 2}', '{"a": 1, "b": 0}', '{"b": 0}', "{}"]),
}

_COMPILED: dict[str, jaxguide.CompiledGrammar] = {}


def compiled(name: str) -> jaxguide.CompiledGrammar:
    if name not in _COMPILED:
        grammar = Grammar.from_json_schema(CASES[name][0])
        _COMPILED[name] = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    return _COMPILED[name]


def accepts(name: str, text: str) -> bool:
    matcher = Matcher(compiled(name))
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


def valid(name: str, value) -> bool:
    schema = CASES[name][0]
    validator = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    return validator(schema).is_valid(value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_instances_accepted_exactly_when_valid(name):
    schema, texts = CASES[name]
    verdicts = {text: valid(name, json.loads(text)) for text in texts}
    assert any(verdicts.values()) and not all(verdicts.values()), verdicts  # can fail both ways
    for text, ok in verdicts.items():
        assert accepts(name, text) == ok, (text, ok)


@pytest.mark.parametrize("name", sorted(CASES))
def test_walks_through_the_masks_are_valid(name):
    schema = CASES[name][0]
    report = check_soundness(compiled(name), JsonSchemaOracle(schema), walks=24, seed=name)
    assert not report.invalid, report.invalid[0].describe(compiled(name))
    assert not report.dead_ends and not report.blocked
    assert report.eos_walks >= 6


_KEYS = st.sampled_from(["a", "b", "c", "k", "x", "y", "z", "id", "kind", "n", "r", "l", "w"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 12),
                     st.sampled_from([0.5, -0.5, 10.5]),
                     st.sampled_from(["", "a", "ab", "abc", "abcd", "x", "q", "p", "linux",
                                      "0123", "abcg"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=8)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_VALUES)
def test_whatever_is_accepted_validates(name, value):
    text = json.dumps(value)
    if accepts(name, text):
        assert valid(name, value), text


@pytest.mark.parametrize("schema,keyword", [
    ({"type": "object", "not": {"additionalProperties": False}}, "not"),
    ({"type": "number", "not": {"anyOf": [{"type": "integer"}, {"multipleOf": 0.5}]}}, "not"),
    ({"type": "array", "not": {"uniqueItems": True}}, "not"),
    ({"type": "array", "prefixItems": [{"type": "integer"}],
      "not": {"items": {"type": "string"}}}, "not"),
    ({"type": "array", "contains": {"type": "integer"}, "maxContains": 2}, "maxContains"),
    ({"type": "object", "minProperties": 2}, "minProperties"),  # {"k": 1, "k": 2} counts 2
    ({"type": "object", "patternProperties": {"^k": {}}, "additionalProperties": False,
      "properties": {"a": {}}, "required": ["a"], "minProperties": 3}, "minProperties"),
    ({"type": "integer", "not": {"enum": list(range(65))}}, "not"),
])
def test_complements_without_a_finite_shape_are_refused(schema, keyword):
    """... and minProperties that undeclared keys of an infinite class must make up: a key
    may repeat, and the rules count members, not distinct keys."""
    with pytest.raises(JsonSchemaError) as info:
        Grammar.from_json_schema(schema)
    assert info.value.keyword == keyword


def test_overlapping_oneof_budget_is_an_error_before_building():
    branches = [{"type": "object", "required": [f"a{i}", f"b{i}"]} for i in range(12)]
    with pytest.raises(JsonSchemaError, match="more than 256 alternatives"):
        Grammar.from_json_schema({"oneOf": branches})


def test_lenient_reads_as_before_when_complements_exceed_a_budget():
    """lenient never fails where it compiled before complements: oneOf is then read as anyOf,
    warned (the strict reading is the budget error above)."""
    branches = [{"type": "object", "required": [f"a{i}", f"b{i}"]} for i in range(12)]
    with pytest.warns(UserWarning, match="as anyOf"):
        grammar = Grammar.from_json_schema({"oneOf": branches}, lenient=True)
    matcher = Matcher(jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken")))
    text = b'{"a0": 1, "b0": 2, "a1": 3, "b1": 4}'  # two branches: anyOf takes it
    assert matcher.accept_bytes(text) and matcher.is_accepting()


def test_next_to_an_enum_the_values_are_checked_instead():
    """An enum/const beside a `not` with no finite shape: the values are filtered exactly
    (`jsonschema`), so nothing is refused and no complement is built ("a" satisfies
    multipleOf, which only constrains numbers, so `not` rejects it)."""
    schema = {"allOf": [{"enum": [1, 2, 3, "a"]}, {"not": {"multipleOf": 2}}]}
    compiled_grammar = jaxguide.compile_grammar(Grammar.from_json_schema(schema),
                                                real_tokenizer("llama3_tiktoken"))
    for text, ok in (("1", True), ("2", False), ("3", True), ('"a"', False), ("4", False)):
        matcher = Matcher(compiled_grammar)
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == ok, text
