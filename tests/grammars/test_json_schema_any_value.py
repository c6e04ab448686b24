"""The any-value group replayed from a recording (`json_schema.any_value`) gives exactly the IR
that lowering it in place gives, for every option that reaches it."""

from __future__ import annotations

import json

import pytest

import jaxguide
from jaxguide import Grammar
from jaxguide.grammars.json_schema import any_value, emit

SCHEMAS = [
    {},
    True,
    {"type": "object", "properties": {"a": {"type": "string"}}},
    {"type": "object", "properties": {"a": {}, "b": {"type": "array"}}, "required": ["a"]},
    {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
     "properties": {"t": {"type": "array", "items": [{"type": "string"}, {}]}}},
    {"anyOf": [{"type": "object"}, {"type": "array", "minItems": 2}]},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}}},
     "additionalProperties": {"type": "object"}},
    {"type": "object", "patternProperties": {"^x-": {}}, "properties": {"k": {"enum": [1]}}},
]
OPTIONS = [{}, {"whitespace": "compact"}, {"whitespace": 2}, {"lenient": True},
           {"property_order": "any"}, {"additional_properties_default": False},
           {"formats": "annotation"}]


def ir_json(schema, options) -> str:
    jaxguide.clear_caches()  # (else Grammar.from_json_schema answers from its cache)
    return Grammar.from_json_schema(schema, **options).ir.to_json()


@pytest.mark.parametrize("options", OPTIONS, ids=json.dumps)
def test_replayed_group_gives_the_ir_of_lowering_it_in_place(monkeypatch, options):
    replayed = [ir_json(schema, options) for schema in SCHEMAS]
    monkeypatch.setattr(emit, "splice_any_value", lambda emitter, depth: None)
    in_place = [ir_json(schema, options) for schema in SCHEMAS]
    for schema, a, b in zip(SCHEMAS, replayed, in_place):
        assert a == b, schema


def test_the_group_is_recorded_once_per_options_and_not_for_indented_layouts():
    any_value._RECORDINGS.clear()
    jaxguide.clear_caches()
    for schema in SCHEMAS:
        Grammar.from_json_schema(schema)
        Grammar.from_json_schema(schema, whitespace=2)
    assert len(any_value._RECORDINGS) == 2  # the default dialect and draft-04's flags
    assert all(recording is not None and recording.nonterminals[0] == "any"
               for recording in any_value._RECORDINGS.values())


def test_a_group_past_the_nesting_limit_is_lowered_in_place_and_refused():
    deep = {}
    for _ in range(200):
        deep = {"type": "array", "items": deep}
    with pytest.raises(Exception, match="nested"):
        Grammar.from_json_schema(deep)
