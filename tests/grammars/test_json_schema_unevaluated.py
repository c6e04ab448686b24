"""`unevaluatedProperties` / `unevaluatedItems` where the evaluated members are known statically
(`json_schema/unevaluated.py`: through allOf and $ref), checked against `jsonschema`: instance
tables (accepted exactly when valid), seeded walks through the masks (every finished text
valid), random values (whatever the matcher accepts validates); refused beside the keywords
whose branches decide what is evaluated.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer
from support.schema_cases import SchemaCases
from support.schema_walks import assert_schema_walks

from jaxguide import Grammar
from jaxguide.grammars.json_schema import JsonSchemaError

# name -> (schema, texts: valid ones and ones the keyword excludes)
CASES = {
    "properties_through_ref_and_all_of": (
        {"type": "object", "allOf": [{"$ref": "#/$defs/a"},
                                     {"properties": {"b": {"type": "integer"}}}],
         "unevaluatedProperties": False,
         "$defs": {"a": {"properties": {"a": {"type": "string"}},
                         "patternProperties": {"^x-": {}}}}},
        ['{"a": "s", "b": 1}', '{"a": "s", "c": 1}', '{"x-y": 1}', '{"b": "s"}', "{}"]),
    "unevaluated_schema": (
        {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": {"type": "integer"}},
        ['{"a": "s", "b": 1}', '{"b": "s"}', '{"a": null}', '{"c": 2, "a": 1}']),
    "additional_properties_evaluates_all": (
        {"type": "object", "allOf": [{"additionalProperties": {"type": "string"}}],
         "unevaluatedProperties": False},
        ['{"a": "s"}', '{"a": 1}']),
    "not_evaluates_nothing": (
        {"type": "object", "properties": {"a": {}}, "not": {"required": ["b"]},
         "unevaluatedProperties": False},
        ['{"a": 1}', '{"a": 1, "b": 2}', '{"c": 1}']),
    "items_after_the_longest_prefix": (
        {"type": "array", "allOf": [{"prefixItems": [{"type": "string"}]}],
         "prefixItems": [{}, {}], "unevaluatedItems": False},
        ['["a", 1]', '["a", 1, 2]', "[1]", "[]"]),
    "unevaluated_items_schema": (
        {"type": "array", "prefixItems": [{"type": "string"}],
         "unevaluatedItems": {"type": "integer"}},
        ['["a", 1, 2]', '["a", "b"]', "[]", "[1]"]),
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


_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.sampled_from(["", "s", "x"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(
        st.sampled_from(["a", "b", "c", "x-y", "x"]), inner, max_size=4)), max_leaves=8)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_VALUES)
def test_whatever_is_accepted_validates(name, value):
    _SUITE.check_accepted_validates(name, value)


@pytest.mark.parametrize("schema,keyword", [
    ({"type": "object", "oneOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}],
      "unevaluatedProperties": False}, "unevaluatedProperties"),
    ({"type": "object", "allOf": [{"$ref": "#/$defs/x"}], "unevaluatedProperties": False,
      "$defs": {"x": {"if": {"required": ["a"]}, "then": {"properties": {"b": {}}}}}},
     "unevaluatedProperties"),
    ({"type": "array", "contains": {"type": "string"}, "unevaluatedItems": False},
     "unevaluatedItems"),
    ({"$defs": {**{f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(45)},
                "d45": {"type": "object"}},
      "$ref": "#/$defs/d0", "unevaluatedProperties": False}, "unevaluatedProperties"),
])
def test_dynamic_evaluation_is_refused(schema, keyword):
    """Where the branches that validate decide what is evaluated (anyOf / oneOf / if /
    dependentSchemas, or the items contains matched), or the $ref chain is past the nesting
    budget, the keyword is refused, and with lenient ignored with a warning."""
    with pytest.raises(JsonSchemaError) as info:
        Grammar.from_json_schema(schema)
    assert info.value.keyword == keyword
    with pytest.warns(UserWarning, match=keyword):
        Grammar.from_json_schema(schema, lenient=True)
