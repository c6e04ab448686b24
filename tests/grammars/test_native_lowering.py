"""The native path of JSON Schema lowering against the Python emitter.

The core lowers the common shapes (native/json_schema/schema_lowering.h) and must build the IR
the Python emitter builds, terminal for terminal and rule for rule; anything else falls back.
Oracle: the Python emitter itself (the path the core was written from), run with the native
path switched off. Checked on MaskBench's soundness sample (tests/data), on hand-written shapes
at the edges of the subset (shared sub-dicts, reference chains and cycles, empty objects, item
counts, closed / open / schema-valued additionalProperties), on random schemas of the shapes
(hypothesis), and for errors: a schema the core refuses or that raises gets the Python error.
tools/grammar_fingerprints.py runs the same comparison over the whole of MaskBench.
"""

from __future__ import annotations

import copy
import gzip
import json
import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxguide
from jaxguide.grammars.json_schema import (
    JsonSchemaError,
    json_schema_to_ir,
    native_lowering,
)

SAMPLE = pathlib.Path(__file__).parents[1] / "data" / "soundness_schemas.jsonl.gz"
SETTINGS = ({}, {"whitespace": "compact"}, {"additional_properties_default": False})


def lower_both(schema, **options):
    """(the IR or error of the Python emitter, of the default path, whether the core took it)."""
    lower = native_lowering._lower
    took = []

    def spy(*args, **kwargs):
        result = lower(*args, **kwargs)
        took.append(result is not None)
        return result

    outcomes = []
    for path in (None, spy):
        jaxguide.clear_caches()
        native_lowering._lower = path
        try:
            outcomes.append(json_schema_to_ir(copy.deepcopy(schema), **options).to_json())
        except JsonSchemaError as error:
            outcomes.append(f"{type(error).__name__}: {error}")
        finally:
            native_lowering._lower = lower
    return outcomes[0], outcomes[1], any(took)


def assert_same(schema, *, native: bool | None = None, **options):
    python, default, took = lower_both(schema, **options)
    assert default == python
    if native is not None:
        assert took == native
    return took


def test_the_engine_installs_the_native_path():
    assert native_lowering.native_lowering_installed()


def sample_schemas():
    with gzip.open(SAMPLE, "rt") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("options", SETTINGS, ids=["flexible", "compact", "closed"])
def test_maskbench_sample_lowers_the_same(options):
    taken = sum(assert_same(row["schema"], **options) for row in sample_schemas())
    assert taken >= 20  # the sample's plain schemas go through the core


LEAF = {"type": "string", "description": "a leaf"}
SHAPES = {
    "empty object": {"type": "object"},
    "required and optional": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "string", "format": "date"},
        "c": {"type": "boolean"}}, "required": ["b"]},
    "all required": {"type": "object", "properties": {"x": {"type": "number"},
                                                       "y": {"type": "null"}},
                     "required": ["y", "x", "y"], "additionalProperties": False},
    "extras schema": {"type": "object", "properties": {"k": LEAF},
                      "additionalProperties": {"type": "integer"}},
    "extras empty schema": {"type": "object", "properties": {"k": LEAF},
                            "additionalProperties": {}},
    "names to escape": {"type": "object", "properties": {
        "a b": LEAF, "q\"uote": LEAF, "sl/ash": LEAF, "é": LEAF, "x|y": LEAF, "": LEAF}},
    "boolean property schemas": {"type": "object", "properties": {"t": True, "f": False,
                                                                  "e": {}}},
    "enum leaves": {"type": "object", "properties": {
        "e": {"enum": ["a", "b", 3, None]}, "c": {"const": 1.5},
        "t": {"type": ["string", "null"], "enum": ["x", None]}}},
    "leaf keywords": {"type": "object", "properties": {
        "p": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 9},
        "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
        "x-unread": {"type": "string"}}},
    "arrays": {"type": "object", "properties": {
        "any": {"type": "array"}, "items": {"type": "array", "items": LEAF},
        "bounded": {"type": "array", "items": LEAF, "minItems": 2, "maxItems": 4},
        "at least": {"type": "array", "items": {"type": "integer"}, "minItems": 3},
        "none": {"type": "array", "items": LEAF, "minItems": 3, "maxItems": 2},
        "zero": {"type": "array", "items": LEAF, "maxItems": 0},
        "nested": {"type": "array", "items": {"type": "array", "items": {"type": "object"}}}}},
    "type lists": {"type": "object", "properties": {
        "on": {"type": ["object", "null"], "properties": {"a": LEAF}},
        "an": {"type": ["null", "array"], "items": LEAF, "maxItems": 2},
        "ob": {"type": ["boolean", "object", "array"], "items": LEAF, "required": []},
        "ao": {"type": ["array", "object"]}}},
    "no type": {"properties": {"a": LEAF, "d": {"description": "anything"},
                               "n": {"properties": {"x": LEAF}, "required": ["x"],
                                     "items": LEAF, "maxItems": 3}},
                "required": ["a"]},
    "scalar types beside object": {"type": "object", "properties": {
        "os": {"type": ["object", "string"], "properties": {"a": LEAF}},
        "ain": {"type": ["array", "integer", "number", "null"], "items": LEAF}}},
    "leaf branches": {"type": "object", "properties": {
        "int or string": {"oneOf": [{"type": "integer"}, {"type": "string", "format": "date"}],
                          "description": "k8s"},
        "any": {"anyOf": [{"type": "null"}, {"type": "number", "minimum": 0},
                          {"type": "boolean"}]},
        "one": {"oneOf": [{"type": "string"}]},
        "any of shapes": {"anyOf": [{"$ref": "#/properties/int or string"}, False,
                                    {"type": "object", "properties": {"x": LEAF}},
                                    {"type": ["array", "null"], "items": LEAF},
                                    {"type": "string"}, {"type": "string", "maxLength": 2}]},
        "any of anything": {"anyOf": [{"type": "integer"}, {}, {"type": "object"}]},
        "any of annotations": {"anyOf": [{"type": "integer"}, {"type": "object"},
                                         {"description": "anything"}, {"type": "string"}]},
        "one of an object": {"oneOf": [{"type": "object", "properties": {"x": LEAF}}]}}},
    "required not declared": {"type": "object", "properties": {
        "open": {"type": "object", "properties": {"a": LEAF}, "required": ["b", "a", "b"],
                 "additionalProperties": True},
        "typed": {"type": "object", "required": ["c", "d"],
                  "additionalProperties": {"type": "integer"}},
        "empty": {"type": "object", "required": ["é"], "additionalProperties": {}}}},
    "pattern properties": {"type": "object", "properties": {
        "open": {"type": "object", "patternProperties": {"^x-": LEAF}},
        "closed": {"type": "object", "additionalProperties": False, "patternProperties": {
            "^x-": LEAF, "^[0-9]+$": {"type": "integer"}}},
        "declared": {"type": "object", "properties": {"name": LEAF},
                     "patternProperties": {"^[0-9]{1,3}$": {"type": "boolean"}},
                     "additionalProperties": {"type": "null"}},
        "free": {"patternProperties": {".*": True, "^a": {}}},
        "false pattern": {"type": "object", "patternProperties": {"^_": False}},
        "long class": {"type": "object", "additionalProperties": False,
                       "patternProperties": {"^[a-z_-]{1,255}$": LEAF}},
        "shared": {"type": "object", "patternProperties": {"^s": {"$ref": "#/properties/open"}}}}},
    "keywords of types not admitted": {"type": "object", "properties": {
        "array": {"type": "array", "items": LEAF, "properties": {"a": LEAF}, "required": ["a"],
                  "additionalProperties": False, "minProperties": 2},
        "string": {"type": "string", "additionalProperties": False, "minItems": 1},
        "object": {"type": ["object", "null"], "properties": {"a": LEAF}, "minLength": 3,
                   "pattern": "^x", "format": "email", "multipleOf": 3, "uniqueItems": True},
        "boolean": {"type": "boolean", "maximum": 4, "maxLength": 1, "items": LEAF}},
        "minimum": 0, "prefixItems": [LEAF]},
    "long strings": {"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 5000},
        "same window": {"type": ["string", "null"], "maxLength": 5000, "description": "x"},
        "counted": {"type": "string", "minLength": 300, "maxLength": 65535},
        "unbounded": {"type": "string", "minLength": 1000},
        "short tail": {"type": ["null", "string"], "maxLength": 4351},
        "in an array": {"type": "array", "items": {"type": "string", "maxLength": 5000}},
        "short": {"type": "string", "maxLength": 200}}},
    "annotations not copied": {
        "type": "object", "description": "a lone \ud800 surrogate", "title": {"not": "text"},
        "default": {"a": [1, {"b": 2}]}, "examples": [{"x": 1}], "$comment": 5,
        "properties": {"a": {"type": "string", "default": "x", "description": "d"},
                       "b": {"type": "array", "items": {"example": {"$ref": "#/nowhere"}}},
                       "title": {"$ref": "#/definitions/default"},
                       "description": {"type": "object", "properties": {"examples": {}}}},
        "definitions": {"default": {"type": "integer", "title": "a definition"}}},
    "references": {"type": "object", "definitions": {
        "node": {"type": "object", "properties": {"value": {"$ref": "#/definitions/leaf"},
                                                  "next": {"$ref": "#/definitions/node"}}},
        "leaf": {"type": "integer", "description": "shared"},
        "a~b/c": {"type": "boolean"}},
        "properties": {"head": {"$ref": "#/definitions/node"},
                       "escaped": {"$ref": "#/definitions/a~0b~1c"},
                       "root": {"$ref": "#"},
                       "all of one": {"allOf": [{"$ref": "#/definitions/leaf"}],
                                      "description": "an OpenAPI idiom"},
                       "all of one alone": {"allOf": [{"$ref": "#/definitions/node"}]}}},
}


@pytest.mark.parametrize("name", list(SHAPES))
@pytest.mark.parametrize("options", SETTINGS, ids=["flexible", "compact", "closed"])
def test_shapes_lower_natively_and_the_same(name, options):
    assert_same(SHAPES[name], native=True, **options)


def test_a_dict_shared_by_identity_is_one_nonterminal_on_both_paths():
    shared = {"type": "object", "properties": {"v": {"type": "string"}}}
    schema = {"type": "object", "properties": {"a": shared, "b": shared,
                                               "c": {"type": "array", "items": shared}}}
    assert_same(schema, native=True)  # (deepcopy keeps the sharing)
    unshared = json.loads(json.dumps(schema))
    assert_same(unshared, native=True)
    assert len(json_schema_to_ir(schema).nonterminals) < len(
        json_schema_to_ir(unshared).nonterminals)


OUTSIDE = {
    "oneOf of objects": {"oneOf": [{"type": "object"}, {"type": "integer"}]},
    "anyOf of a combinator": {"anyOf": [{"anyOf": [LEAF]}, {"type": "integer"}]},
    "anyOf of an allOf": {"anyOf": [{"allOf": [{"$ref": "#"}]}]},
    "oneOf of overlapping leaves": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    "oneOf of enums": {"oneOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
    "oneOf beside type": {"type": "string", "oneOf": [{"type": "string"}]},
    "string keyword beside an object type": {"type": ["object", "string"], "maxLength": 3},
    "string keyword without type": {"properties": {"a": LEAF}, "pattern": "^a"},
    "number keyword beside integer": {"type": ["integer", "object"], "minimum": 1},
    "array keyword without type": {"properties": {"a": LEAF}, "uniqueItems": True},
    "repeated type": {"type": ["object", "object"]},
    "allOf of two": {"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/$defs/x"},
                                                                      {"$ref": "#/$defs/x"}]}},
                     "$defs": {"x": {"type": "string"}}},
    "allOf beside type": {"type": "object", "properties": {"a": {
        "type": "string", "allOf": [{"$ref": "#/$defs/x"}]}}, "$defs": {"x": {"type": "string"}}},
    "ref with siblings": {"type": "object", "properties": {"a": {"$ref": "#/$defs/x",
                                                                 "maxLength": 3}},
                          "$defs": {"x": {"type": "string"}}},
    "anchor ref": {"type": "object", "properties": {"a": {"$ref": "#x"}},
                   "$defs": {"x": {"$anchor": "x", "type": "string"}}},
    "percent ref": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a%20b"}},
                    "$defs": {"a b": {"type": "string"}}},
    "required not declared, closed": {"type": "object", "properties": {"a": LEAF},
                                       "required": ["b"], "additionalProperties": False},
    "required not declared, with patterns": {"type": "object", "required": ["b"],
                                             "patternProperties": {"^x": LEAF}},
    "a declared name a pattern matches": {"type": "object", "properties": {"x-a": LEAF},
                                          "patternProperties": {"^x-": LEAF}},
    "overlapping patterns": {"type": "object", "patternProperties": {
        "^x-": LEAF, "^x-a": {"type": "integer"}}},
    "patternProperties and minProperties": {"type": "object", "minProperties": 1,
                                            "patternProperties": {"^x-": LEAF}},
    "minProperties": {"type": "object", "minProperties": 1},
    "uniqueItems": {"type": "array", "items": LEAF, "uniqueItems": True},
    "tuple items": {"type": "array", "items": [LEAF, LEAF]},
    "long array": {"type": "array", "items": LEAF, "maxItems": 1000},
    "float count": {"type": "array", "items": LEAF, "minItems": 2.0},
    "marker key": {"type": "object", "jaxguide:witness": []},
    "a reference into an annotation": {"type": "object", "properties": {
        "a": {"$ref": "#/properties/b/default"},
        "b": {"type": "string", "default": {"type": "integer"}}}},
    "multipleOf leaf": {"type": "object", "properties": {"m": {"type": "number",
                                                               "multipleOf": 0.5}}},
}


@pytest.mark.parametrize("name", list(OUTSIDE))
def test_shapes_outside_fall_back_to_python(name):
    assert_same(OUTSIDE[name], native=False)


BAD = {
    "unresolved ref": {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}},
    "ref to a non-schema": {"type": "object", "properties": {"a": {"$ref": "#/x"}}, "x": 3},
    "required not a list": {"type": "object", "properties": {"a": LEAF}, "required": "a"},
    "null additionalProperties": {"type": "object", "additionalProperties": None},
    "negative count": {"type": "array", "items": LEAF, "minItems": -1},
    "bad leaf": {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
    "bad enum leaf": {"type": "object", "properties": {"a": {"type": "string",
                                                             "enum": [1, 2]}}},
    "too deep": {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {
        "type": "array", "items": {"$ref": "#/properties/b"}}}},
    # Keywords of a type not admitted: no form reads them, their shapes are still checked.
    "prefixItems not an array": {"anyOf": [{"type": "boolean", "prefixItems": True}]},
    "properties not an object": {"type": "string", "properties": []},
    "required names not strings": {"type": "array", "required": ["a", 1]},
    "items not a schema": {"type": "object", "items": 3},
    "additionalProperties not a schema": {"type": "null", "additionalProperties": "no"},
    "pattern not a string": {"type": ["object", "null"], "pattern": 5},
    "a null count": {"type": "object", "minLength": None},
}


@pytest.mark.parametrize("name", list(BAD))
def test_errors_are_the_python_errors(name):
    python, default, _ = lower_both(BAD[name])
    assert default == python


def test_a_reference_cycle_without_structure_lowers_the_same():
    assert_same({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"},
                                                "b": {"$ref": "#/$defs/a"}}}, native=True)
    assert_same({"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}},
                 "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
                native=True)


# Random schemas of the shapes: leaves, objects, arrays and references to definitions.
_leaves = st.sampled_from([
    {"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "boolean"},
    {"type": "number", "description": "n"}, {"enum": ["a", "b"]}, {"type": ["string", "null"]},
    {"type": "string", "format": "email"}, {"type": "string", "maxLength": 3}, True, {},
    {"description": "only annotations"}, {"required": []},
    {"type": "string", "maxLength": 5000}, {"type": ["string", "null"], "maxLength": 5000},
    {"type": "string", "minLength": 300, "maxLength": 70000}])
_names = st.text(alphabet="ab_ \"é", min_size=0, max_size=3)


def _typed(name: str):
    return st.sampled_from([name, [name, "null"], ["null", name], ["boolean", name]])


# Keywords of the other types, which a schema of one type ignores (no form reads them).
_STRAY = {"minLength": 2, "pattern": "^a", "format": "date", "minimum": 0, "multipleOf": 2,
          "exclusiveMaximum": 9}
_OBJECT_STRAY = {**_STRAY, "items": {"type": "string"}, "minItems": 1, "uniqueItems": True}
_ARRAY_STRAY = {**_STRAY, "properties": {"z": {"type": "integer"}}, "required": ["z"],
                "minProperties": 1, "additionalProperties": False}


def _stray(keywords: dict):
    return st.lists(st.sampled_from(sorted(keywords)), max_size=2, unique=True).map(
        lambda keys: {key: keywords[key] for key in keys})


def _object(children):
    return st.builds(
        lambda typed, props, required, extra, patterns, stray: {
            "type": typed, "properties": dict(props),
            "required": [n for n, _ in props][: required],
            **({} if extra == "absent" else {"additionalProperties": extra}),
            **({"patternProperties": patterns} if patterns else {}), **stray},
        _typed("object"),
        st.lists(st.tuples(_names, children), max_size=4, unique_by=lambda p: p[0]),
        st.integers(0, 4), st.sampled_from(["absent", True, False, {"type": "integer"}]),
        st.dictionaries(st.sampled_from(["^a", "b$", "é", "^_{1,3}$"]),
                        children | st.just(False), max_size=2),
        _stray(_OBJECT_STRAY))


def _array(children):
    return st.builds(lambda typed, items, low, high, stray: {
        "type": typed, "items": items, "minItems": low,
        **({} if high is None else {"maxItems": high}), **stray},
        _typed("array"), children, st.integers(0, 3), st.none() | st.integers(0, 4),
        _stray(_ARRAY_STRAY))


_values = st.recursive(_leaves | st.sampled_from([{"$ref": "#/definitions/d"},
                                                  {"allOf": [{"$ref": "#/definitions/d"}]}]),
                       lambda children: _object(children) | _array(children) | st.builds(
                           lambda branches: {"anyOf": branches},
                           st.lists(children, min_size=1, max_size=3)), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(root=_object(_values), definition=_values)
def test_random_schemas_of_the_shapes_lower_the_same(root, definition):
    schema = {**root, "definitions": {"d": definition}}
    assert_same(schema)
    assert_same(schema, whitespace="compact", additional_properties_default=False)


def test_the_core_rules_leave_the_garbage_collector_alone():
    """The rules the core returns are tuples of ints: untracked by the collector at once, so a
    large grammar's thousands add nothing to the collections after it."""
    import gc

    schema = {"type": "object", "properties": {"a": LEAF, "b": {"type": "array", "items": LEAF}}}
    assert lower_both(schema)[2]  # (through the core)
    gc.disable()  # (a collection would untrack them itself)
    try:
        rules = json_schema_to_ir(copy.deepcopy(schema)).rules
        tracked = [gc.is_tracked(rules)] + [
            gc.is_tracked(rule) or gc.is_tracked(rule[1]) for rule in rules]
    finally:
        gc.enable()
    assert rules and not any(tracked)
