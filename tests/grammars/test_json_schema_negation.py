"""Complements in JSON Schema (`negation`): `not`, overlapping `oneOf`, `if`/`then`/`else` and
the dependencies keywords, and the witnesses and counts they rest on (several undeclared
members an object must hold, `contains` with minContains / maxContains), each checked three
ways against `jsonschema`: instance tables (accepted exactly when valid), seeded walks through
the masks (every finished text valid), and instances aimed at what the keyword excludes
(random JSON values: whatever the matcher accepts must validate; random walks rarely reach the
excluded corner).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer
from support.schema_cases import SchemaCases
from support.schema_walks import assert_schema_walks

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema import JsonSchemaError

_OBJ_AB = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}


def _some_key(pattern: str) -> dict:
    """"Some key matches `pattern`", as a complement."""
    return {"not": {"propertyNames": {"not": {"pattern": pattern}}}}


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
    # "some member matching a pattern fails" next to patternProperties: the witness is one
    # member of a key class of the object's patterns, split by the witness's pattern
    "pattern_member_fails_beside_patterns": (
        {"type": "object", "patternProperties": {"^c": {"type": "integer"}},
         "not": {"patternProperties": {"a": {"type": "string"}}}},
        ['{"a": 1}', '{"ca": 1}', '{"ca": "x"}', '{"a": "x"}', '{"b": 1}', "{}",
         '{"a": "x", "xa": null}', '{"c": 1, "ba": [1]}', '{"c": "x", "ba": 1}']),
    "pattern_member_fails_closed": (
        {"type": "object", "patternProperties": {"^x": {"type": "integer"}},
         "additionalProperties": False, "not": {"patternProperties": {"^x1": {"minimum": 5}}}},
        ['{"x1": 4}', '{"x": 9, "x12": -3}', '{"x1": 5}', '{"x2": 1}', '{"y1": 1}', "{}",
         '{"x1": 4.5}']),
    "some_member_fails_beside_patterns": (
        {"type": "object", "patternProperties": {"^n": {"type": "number"}},
         "not": {"additionalProperties": {"type": "number"}}},
        ['{"a": "x"}', '{"n": 1, "b": null}', '{"n": "x"}', '{"n": 1}', '{"a": 1}', "{}"]),
    "pattern_witness_and_declared_name": (
        {"type": "object", "properties": {"ab": {"type": "integer"}},
         "patternProperties": {"b$": {"type": "string"}},
         "not": {"patternProperties": {"^a": {"type": "integer"}}}},
        ['{"ab": 1}', '{"ab": 1, "ac": "x"}', '{"ab": 1, "acb": "s"}', '{"ab": 1, "acb": 3}',
         '{"a": null}', '{"ab": "x"}', '{"ac": 3}', '{"ac": 3.5}', "{}"]),
    "has_an_undeclared_member": (  # a dict no merge reaches (no allOf)
        {"type": "object", "properties": {"a": {}}, "not": {"additionalProperties": False}},
        ['{"a": 1}', '{"b": 1}', "{}", '{"a": 1, "b": 2}', "[]"]),
    # several items that must fail `items` or match `contains`: one item may meet several
    "two_items_must_fail": (
        {"type": "array", "items": {"type": "integer"},
         "not": {"anyOf": [{"items": {"maximum": 5}}, {"items": {"minimum": 0}}]}},
        ["[6, -1]", "[-1, 3, 7]", "[6]", "[-1]", "[]", "[3]", '[6, "x", -1]']),
    "one_item_meets_both": (
        {"type": "array", "maxItems": 1,
         "not": {"anyOf": [{"items": {"maximum": 5}}, {"items": {"multipleOf": 2}}]}},
        ["[7]", "[6]", "[3]", "[7, 1]", "[]", '["x"]', "[7.5]"]),
    "contains_and_an_item_that_fails": (
        {"type": "array", "contains": {"const": "a"}, "not": {"items": {"type": "string"}}},
        ['["a", 1]', '[1, "a"]', '["a"]', "[1]", "[]", '["b", null, "a"]']),
    "two_contains_in_all_of": (
        {"type": "array", "allOf": [{"contains": {"type": "string"}},
                                    {"contains": {"type": "integer"}}]},
        ['["a", 1]', '[1, null, "a"]', '["a"]', "[1]", "[]", "[1.5, true]"]),
    "not_typed_multiple": (
        {"not": {"type": "number", "multipleOf": 3}},
        ["3", "4", "6.0", "4.5", '"x"', "null", "[3]"]),
    "one_of_pattern_branches": (  # MaskBench Handwritten oneof1_2
        {"type": "object", "oneOf": [
            {"patternProperties": {"a": {"multipleOf": 10, "maximum": 35}}},
            {"patternProperties": {"a": {"multipleOf": 10, "maximum": 40}}}]},
        ['{"a": 40}', '{"a": 10, "ba": 40}', '{"a": 30}', '{"a": 50}', '{"b": 40}', "{}",
         '{"b": "x", "ab": 40}']),
    # several witnesses in one object (`object_witnesses`): keyed objects, a bit mask of the
    # witnesses met; "some key matches P" is `not {"propertyNames": {"not": {"pattern": P}}}`
    "several_name_witnesses": (
        {"type": "object", "allOf": [_some_key("a"), _some_key("b")], "maxProperties": 2},
        ['{"ab": 1}', '{"a": 1, "b": 2}', '{"a": 1}', '{"x": 1, "ab": 2}', '{"a": 1, "x": 2}',
         "{}"]),
    "name_witness_beside_property_names": (
        {"type": "object", "propertyNames": {"pattern": "^.$"},
         "not": {"propertyNames": {"not": {"const": "a"}}}},
        ['{"a": 1}', '{"b": 1, "a": 2}', '{"b": 1}', '{"ab": 1}', "{}"]),
    "name_witnesses_and_required_names": (  # MaskBench Handwritten object8, smaller
        {"type": "object", "propertyNames": {"pattern": "^..$"}, "maxProperties": 2,
         "allOf": [_some_key("a"), _some_key("b"), _some_key("c"), _some_key("d"),
                   {"anyOf": [{"required": ["da"]}, {"required": ["db"]}]}],
         "patternProperties": {"(b|c){2}": False}},
        ['{"db": 1, "ac": 2}', '{"da": 1, "bc": 2}', '{"ab": 1, "cd": 2}', '{"da": 1, "cb": 2}',
         '{"db": 1, "ca": 2}']),
    "one_of_several_pattern_witnesses": (  # MaskBench Handwritten oneOf4
        {"type": "object", "maxProperties": 1, "oneOf": [
            {"patternProperties": {"a": {"multipleOf": 10, "maximum": 20}}},
            {"patternProperties": {"a": {"multipleOf": 5, "maximum": 80}}},
            {"patternProperties": {"a": {"multipleOf": 5, "maximum": 60}}}]},
        ['{"a": 10}', '{"a": 70}', '{"a": 65}', '{"a": 55}', '{"x": 1}', '{"a": 85}',
         '{"ba": 75}']),
    "two_value_witnesses": (  # a repeated key would replace a witness: refused (keyed)
        {"type": "object", "allOf": [{"not": {"additionalProperties": {"type": "integer"}}},
                                     {"not": {"additionalProperties": {"type": "string"}}}]},
        ['{"a": 1, "b": "x"}', '{"a": null}', '{"a": 1}', '{"a": "x"}', '{"a": 1, "a": "x"}',
         '{"b": "x", "a": 1, "c": 2}']),
    "min_properties_of_undeclared_keys": (  # keyed: members are distinct keys
        {"type": "object", "minProperties": 2},
        ['{"a": 1, "b": 2}', '{"a": 1}', '{"a": 1, "a": 2}', "{}"]),
    "pattern_properties_beside_property_names": (
        {"type": "object", "propertyNames": {"pattern": "^[a-c]+$"},
         "patternProperties": {"^a": {"type": "integer"}},
         "additionalProperties": {"type": "string"}},
        ['{"ab": 1, "b": "x"}', '{"ab": "x"}', '{"x": "s"}', '{"b": 1}', "{}",
         '{"c": "s", "a": 2}']),
    "complement_of_a_witness": (  # not (... and some b-key is not an integer)
        {"type": "object", "not": {"allOf": [
            {"patternProperties": {"b": {"type": "object"}}},
            {"not": {"patternProperties": {"b": {"not": {"type": "integer"}}}}}]}},
        ['{"a": {"c": 1}}', '{"b": 1}', '{"b": "x"}', '{"b": {}}', "{}", "1",
         '{"b": {}, "ab": 2}']),
    # `contains` with minContains / maxContains: the matching items counted (`array_counted`)
    "min_contains": (
        {"type": "array", "contains": {"type": "integer"}, "minContains": 2},
        ["[1, 2]", "[1]", '[1, "a", 2]', "[]", '["a", "b"]', "[1, 2, 3]"]),
    "max_contains": (
        {"type": "array", "contains": {"type": "integer"}, "maxContains": 2},
        ["[1, 2]", "[1]", '[1, "a", 2]', "[]", '["a"]', "[1, 2, 3]"]),
    "at_most_one_contained": (
        {"type": "array", "contains": {"type": "integer"}, "minContains": 0, "maxContains": 1},
        ["[]", '["a"]', "[1]", "[1, 2]", '[1, "a", 2]']),
    "counted_contains_with_prefix_items": (
        {"type": "array", "prefixItems": [{"type": "string"}], "contains": {"type": "string"},
         "minContains": 2, "maxContains": 3},
        ['["a", "b"]', '["a"]', '["a", 1, "b", "c"]', '["a", "b", "c", "d"]', '[1, "a", "b"]']),
    "contains_with_prefix_items": (
        {"type": "array", "prefixItems": [{"type": "integer"}], "contains": {"type": "string"}},
        ['[1, "b"]', "[1]", '["a"]', '[1, 2, "x"]']),
    "not_counted_contains": (  # fewer than 2 integers, or more than 3
        {"type": "array", "not": {"contains": {"type": "integer"}, "minContains": 2,
                                  "maxContains": 3}},
        ["[]", "[1]", "[1, 2]", "[1, 2, 3]", "[1, 2, 3, 4]", '["a", 1]', "1"]),
    "counted_contains_unique_items": (
        {"type": "array", "uniqueItems": True, "contains": {"enum": [1, 2, 3]},
         "minContains": 2, "items": {"type": "integer", "minimum": 0, "maximum": 5}},
        ["[1, 2]", "[1, 1]", "[1, 4, 3]", "[1]"]),
}

_SUITE = SchemaCases(CASES)
compiled = _SUITE.compiled


@pytest.mark.parametrize("name", sorted(CASES))
def test_instances_accepted_exactly_when_valid(name):
    _SUITE.check_instances(name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_walks_through_the_masks_are_valid(name):
    assert_schema_walks(compiled(name), CASES[name][0], real_tokenizer("llama3_tiktoken"),
                        seed=name, walks=24, min_eos=6)


_KEYS = st.sampled_from(["a", "b", "c", "k", "x", "y", "z", "id", "kind", "n", "r", "l", "w",
                         "ab", "ac", "ca", "db", "da", "ba"])
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
    _SUITE.check_accepted_validates(name, value)


@pytest.mark.parametrize("schema,keyword", [
    ({"type": "object", "not": {"patternProperties": {"a": {"type": "integer"},
                                                      "b": {"type": "string"}}}}, "not"),
    ({"type": "number", "not": {"anyOf": [{"type": "integer"}, {"multipleOf": 0.5}]}}, "not"),
    ({"type": "array", "not": {"uniqueItems": True}}, "not"),
    ({"type": "array", "prefixItems": [{"type": "integer"}],
      "not": {"items": {"type": "string"}}}, "not"),
    ({"type": "array", "contains": {"type": "integer"}, "maxContains": 5000}, "maxContains"),
    ({"type": "integer", "not": {"enum": list(range(65))}}, "not"),
    ({"type": "object", "allOf": [_some_key(k) for k in "abcde"]}, "not"),  # 5 witnesses
    ({"type": "object", "propertyNames": {"maxLength": 3}, "allOf": [_some_key("a")]}, "not"),
    ({"type": "object", "not": {"propertyNames": {"pattern": "a"}}}, "not"),
])
def test_complements_without_a_finite_shape_are_refused(schema, keyword):
    """... and objects over the witness budgets (`MAX_OBJECT_WITNESSES`), a witness beside
    a propertyNames that is not patterns, a key that fails a pattern (its complement)."""
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
