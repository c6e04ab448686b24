"""Fast lowering of many tool schemas (issue #25 item 4, #20): tag schemas lowered into one shared
emitter, call objects as sequences, fragments spliced from the cache, leaf recipes and the
direct member chain. Each shortcut must give the IR (single schemas) or the language (tool
grammars) of the path it replaces."""

from __future__ import annotations

import itertools
import json

import pytest

import jaxguide
from jaxguide import GrammarError, Matcher, TokenizerInfo, compile_grammar
from jaxguide.grammars.json_schema import emit, json_schema_to_ir, leaf_recipes
from jaxguide.grammars.json_schema.errors import JsonSchemaError
from jaxguide.grammars.json_schema.leaf_recipes import clear_leaf_recipes, leaf_key
from jaxguide.grammars.json_schema.normalize import Normalizer
from jaxguide.grammars.tool_calls import (
    StructuralTag,
    _closed_members,
    clear_tool_caches,
    parse_tools,
    structural_tags_grammar,
)
from jaxguide.grammars.tool_formats import (
    FORMATS,
    clear_tool_grammar_cache,
    tool_call_grammar,
)

DEFS = {"$defs": {"unit": {"enum": ["C", "F"]}}, "type": "object",
        "properties": {"unit": {"$ref": "#/$defs/unit"}, "at": {"type": "string"}},
        "required": ["unit"]}
TOOLS = [
    {"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "description": "A city"},
                                         "days": {"type": "integer", "minimum": 1}},
        "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "convert", "parameters": DEFS}},
    {"name": "noop"},  # parameters default to {"type": "object"}
]
TEXTS = [  # (text after the trigger, in the hermes format; accepted)
    ('{"name": "weather", "arguments": {"city": "Oslo"}}', True),
    ('{"name": "weather", "arguments": {"city": "Oslo", "days": 2}}', True),
    ('{"name": "weather", "arguments": {"days": 2, "city": "Oslo"}}', False),
    ('{"name": "weather", "arguments": {"city": "Oslo", "days": 0}}', False),
    ('{"name": "weather", "arguments": {"city": "Oslo", "x": 1}}', False),
    ('{"arguments": {"city": "Oslo"}, "name": "weather"}', False),
    ('{"name": "convert", "arguments": {"unit": "C", "at": "noon", "more": [1]}}', True),
    ('{"name": "convert", "arguments": {"unit": "K"}}', False),
    ('{"name": "noop", "arguments": {"any": {"thing": null}}}', True),
    ('{"name": "noop", "arguments": []}', False),
    ('{ "name" : "noop" ,\n "arguments" : { } }', True),
]


def byte_tokenizer() -> TokenizerInfo:
    return TokenizerInfo([bytes([b]) for b in range(256)] + [b""], eos_token_ids=[256])


def verdicts(grammar) -> list[bool]:
    compiled = compile_grammar(grammar, byte_tokenizer(), cache=False)
    out = []
    for text, _ in TEXTS:
        matcher = Matcher(compiled)
        out.append(matcher.accept_bytes(f"<tool_call>{text}</tool_call>".encode())
                   and matcher.is_accepting())
    return out


def test_tool_grammar_cold_and_from_cached_fragments():
    clear_tool_caches()
    clear_tool_grammar_cache()
    cold = tool_call_grammar(TOOLS, "auto", format="hermes")
    assert verdicts(cold) == [ok for _, ok in TEXTS]
    clear_tool_grammar_cache()  # the grammar again, its tag schemas spliced from the cache
    warm = tool_call_grammar(TOOLS, "auto", format="hermes")
    assert warm is not cold and verdicts(warm) == verdicts(cold)
    clear_tool_grammar_cache()  # some tools cached, one new
    mixed = tool_call_grammar([TOOLS[1], {"name": "other"}, TOOLS[0], TOOLS[2]], "auto",
                              format="hermes")
    assert verdicts(mixed) == verdicts(cold)


def test_call_objects_lowered_as_sequences_only_when_closed_and_required():
    schema = FORMATS["hermes"].call_schema(parse_tools(TOOLS[1:2])[0])
    assert [name for name, _ in _closed_members(schema)] == ["name", "arguments"]
    assert _closed_members({**schema, "required": ["name"]}) is None
    assert _closed_members({**schema, "additionalProperties": True}) is None
    assert _closed_members({**schema, "minProperties": 2}) is None
    assert _closed_members({**schema, "properties": {}, "required": []}) is None
    assert _closed_members({**schema, "required": ["name", "name"]}) is None


def test_tag_schemas_as_json_text_and_errors_with_their_pointer():
    clear_tool_caches()
    text = json.dumps({"type": "object", "properties": {"a": {"const": 1}},
                       "required": ["a"], "additionalProperties": False})
    grammar = structural_tags_grammar([StructuralTag("<f>", text, "</f>")], ["<f>"])
    matcher = Matcher(compile_grammar(grammar, byte_tokenizer()))
    assert matcher.accept_bytes(b'x<f>{"a": 1}</f>') and matcher.is_accepting()
    bad = {"type": "function", "function": {"name": "bad", "parameters": {
        "type": "object", "properties": {"x": {"type": "strin"}}}}}
    with pytest.raises(JsonSchemaError) as raised:
        tool_call_grammar([bad], "auto", format="hermes")
    alone = FORMATS["hermes"].call_schema(parse_tools([bad])[0])
    with pytest.raises(JsonSchemaError) as expected:
        json_schema_to_ir(alone)
    assert str(raised.value) == str(expected.value) and "/properties/arguments" in str(
        raised.value)
    with pytest.raises(GrammarError, match="no trigger starts"):
        structural_tags_grammar([StructuralTag("<g>", text)], ["<f>"])


OBJECT_SHAPES = [
    {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(n)},
     "required": [f"p{i}" for i in range(n) if required[i]], **extra}
    for n in range(5) for required in itertools.product([False, True], repeat=n)
    for extra in ({}, {"additionalProperties": False},
                  {"additionalProperties": {"type": "integer"}},
                  {"patternProperties": {"^x": {"type": "number"}}})]


@pytest.mark.parametrize("whitespace", ["flexible", 2])
def test_member_chain_gives_the_recursions_ir(monkeypatch, whitespace):
    for schema in OBJECT_SHAPES + [{"type": "object", "properties": {"a": {
            "type": "object", "properties": {"b": {}}}}, "minProperties": 1}]:
        direct = json_schema_to_ir(schema, whitespace=whitespace).to_json()
        monkeypatch.setattr(emit, "DIRECT_MEMBER_CHAIN", False)
        recursive = json_schema_to_ir(schema, whitespace=whitespace).to_json()
        monkeypatch.setattr(emit, "DIRECT_MEMBER_CHAIN", True)
        assert direct == recursive, schema


LEAVES = {"type": "object", "properties": {
    "a": {"type": "string", "description": "one"}, "b": {"type": "string", "title": "two"},
    "c": {"type": ["integer", "null"], "minimum": -3}, "d": {"enum": ["x", 1, 1.0, True]},
    "e": {"type": "string", "format": "date", "maxLength": 400},
    "f": {"type": "string", "minLength": 300}, "g": {"const": [1, 2]},
    "h": {"type": "number", "multipleOf": 0.01, "maximum": 10}}}


def test_leaf_recipes_give_the_same_ir():
    clear_leaf_recipes()
    first = json_schema_to_ir(LEAVES).to_json()  # recipes recorded (a repeats within it)
    again = json_schema_to_ir(LEAVES).to_json()  # every leaf from its recipe
    clear_leaf_recipes()
    assert first == again == json_schema_to_ir(LEAVES).to_json()
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
              "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}}}
    fresh = json_schema_to_ir(draft4).to_json()
    json_schema_to_ir({"type": "object", "properties": {"n": {
        "type": "integer", "minimum": 0, "exclusiveMinimum": 5}}})  # another dialect's leaf
    assert json_schema_to_ir(draft4).to_json() == fresh


def test_leaf_keys():
    def key(schema, root=None, lenient=False):
        return leaf_key(schema, Normalizer(root or {}, True, lenient))

    assert key({"type": "string", "description": "x"}) == key({"type": "string"})
    assert key({"type": "integer", "minimum": 1}) != key({"type": "integer", "minimum": 1.0})
    assert key({"enum": [1]}) != key({"enum": [True]})
    assert key({"type": "string"}, {"$schema": "http://json-schema.org/draft-04/schema#"}) \
        != key({"type": "string"})
    for other in ({"type": "object"}, {"type": "array"}, {"minimum": 1}, {"$ref": "#"},
                  {"type": "string", "not": {"const": "a"}}, {"enum": [{"a": 1}]},
                  {"enum": ["v" * 3000]}):
        assert key(other) is None, other
    assert key({"type": "string"}, lenient=True) is None
    # keywords jaxguide never reads are annotations to the key; its own merge markers are not
    assert key({"type": "integer", "_format": "int32", "x-k": [1]}) == key({"type": "integer"})
    assert key({"type": "string", "jaxguide:patterns": ("a",)}) is None
    assert key({"type": "string", 3: "x"}) is None


@pytest.mark.parametrize("dialect", leaf_recipes.PINNED_DIALECTS)
def test_pinned_leaf_recipes_give_the_same_ir(monkeypatch, dialect):
    """The pinned recipes of the scalar types (kept by clear_caches) give the IR that lowering
    the leaves gives, under each pinned dialect, with and without unread keywords."""
    jaxguide.clear_caches()
    types = sorted({"string", "integer", "number", "boolean", "null"})
    pinned = {key for key in leaf_recipes._pinned_recipes if key[0] == repr(dialect)}
    assert len(pinned) == len(types)
    schema = {"type": "object", "properties": {
        **{t: {"type": t, "description": t} for t in types},
        **{f"{t}2": {"type": t, "x-unread": {"a": 1}} for t in types}}}
    if dialect is not None:
        schema["$schema"] = dialect
    with_pins = json_schema_to_ir(schema).to_json()
    monkeypatch.setattr(leaf_recipes, "_pinned_recipes", {})
    clear_leaf_recipes()
    assert json_schema_to_ir(schema).to_json() == with_pins


def test_a_leaf_recipe_still_checks_the_root_its_enum_needs():
    draft4 = "http://json-schema.org/draft-04/schema#"
    leaf = {"enum": ["a"], "type": "string", "minLength": 1}  # (a bare type needs no validator)
    clear_leaf_recipes()
    json_schema_to_ir({"$schema": draft4, "items": dict(leaf)})  # the recipe, from a good root
    with pytest.raises(JsonSchemaError, match="cannot check the enum values"):
        json_schema_to_ir({"$schema": draft4, "id": {}, "items": dict(leaf)})
