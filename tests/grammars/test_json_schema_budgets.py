"""JSON Schema front-end under large and malformed input (issue #22): big enums, deep and wide
schemas, nested oneOf, null and mistyped keyword values. Each answer is checked through a real
`Matcher` (Llama-3 vocabulary) or an independent `re` oracle, and each refusal names its
keyword.
"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, GrammarError, Matcher
from jaxguide.grammars.json_schema import JsonSchemaError
from jaxguide.grammars.json_schema.combinators import Combinators
from jaxguide.grammars.json_schema.errors import SchemaNestingError
from jaxguide.grammars.json_schema.limits import MAX_VALUE_NESTING
from jaxguide.grammars.json_schema.units import literal_set_units, literal_units


def matcher(schema, **options) -> Matcher:
    grammar = Grammar.from_json_schema(schema, **options)
    return Matcher(jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken")))


def accepts(compiled_matcher: Matcher, text: str) -> bool:
    probe = compiled_matcher.fork()
    return probe.accept_bytes(text.encode()) and probe.is_accepting()


# --- literal sets -----------------------------------------------------------------------------
_STRING_SETS = st.lists(st.text(alphabet=st.sampled_from('ab/"\\\u00e9\U0001f600\n '),
                                max_size=5), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(_STRING_SETS, st.lists(st.text(alphabet='ab/"\\\u00e9', max_size=5), max_size=8))
def test_string_trie_spells_exactly_the_set(strings, probes):
    """The trie of a literal set matches the same JSON string contents as the plain
    alternation of each string's spellings (the independent oracle: Python `re`)."""
    trie = re.compile(literal_set_units(strings))
    plain = re.compile("|".join(f"(?:{literal_units(s)})" for s in strings))
    for text in strings + probes:
        for content in {json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1],
                        json.dumps(text)[1:-1].replace("/", "\\/")}:
            assert bool(trie.fullmatch(content)) == bool(plain.fullmatch(content)), content


def test_enum_of_100k_strings_compiles_to_exactly_its_values():
    """Issue #22: was quadratic (each value validated against the whole enum: over 30 s) and
    then refused by the lexer's NFA budget with a message about counted repetition."""
    values = [f"value{i}" for i in range(100_000)]
    m = matcher({"enum": values})
    for text in ('"value0"', '"value99999"', '"value5"', '"value12345"'):
        assert accepts(m, text), text
    for text in ('"value"', '"value100000"', '"value01"', '"valu"', '"value5 "', "5"):
        assert not accepts(m, text), text


def test_many_numbers_are_one_terminal_with_the_same_values():
    numbers = list(range(-5, 400)) + [1.5, 2.25, 1e300, -0.0]
    m = matcher({"enum": numbers})
    for text in ("0", "-0", "-5", "399", "7.0", "7.000", "1.5", "1.50", "2.25", "1e+300"):
        assert accepts(m, text), text
    for text in ("-6", "400", "01", "1.25", "1.5e0", "7.", "--1"):
        assert not accepts(m, text), text
    integers = matcher({"type": "integer", "enum": numbers})
    assert accepts(integers, "399") and not accepts(integers, "7.0")


def test_an_enum_too_large_for_the_lexer_is_refused_naming_enum():
    values = [f"{i:x}{'-' * 40}{i}" for i in range(100_000)]  # no shared suffix: a wide trie
    with pytest.raises(JsonSchemaError, match="enum too large") as error:
        Grammar.from_json_schema({"properties": {"a": {"enum": values}}})
    assert error.value.keyword == "enum" and error.value.pointer == "/properties/a"


# --- size and depth -----------------------------------------------------------------------------
def test_500_required_properties_compile():
    """Issue #22: the members of one object were a Python recursion (RecursionError at
    about 330 properties, reported as "schema nesting too deep")."""
    names = [f"p{i}" for i in range(500)]
    m = matcher({"type": "object", "properties": {n: {"type": "integer"} for n in names},
                 "required": names, "additionalProperties": False})
    full = json.dumps({n: i for i, n in enumerate(names)})
    assert accepts(m, full)
    assert not accepts(m, json.dumps({n: i for i, n in enumerate(names[:-1])}))


@pytest.mark.parametrize("max_items", [1000, 4096])
def test_counted_items_up_to_the_documented_limit(max_items):
    m = matcher({"type": "array", "items": {"type": "integer"}, "maxItems": max_items})
    assert accepts(m, json.dumps([1] * max_items))
    assert not accepts(m, json.dumps([1] * (max_items + 1)))


def _nested_arrays(depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def test_value_nesting_budget():
    m = matcher(_nested_arrays(MAX_VALUE_NESTING))
    assert accepts(m, "[" * MAX_VALUE_NESTING + "1" + "]" * MAX_VALUE_NESTING)
    with pytest.raises(SchemaNestingError, match="nested more than 128 levels") as error:
        Grammar.from_json_schema(_nested_arrays(MAX_VALUE_NESTING + 1))
    assert error.value.pointer == "/items" * (MAX_VALUE_NESTING + 1)


def _nested_one_of(depth: int) -> dict:
    defs: dict = {"l0": {"type": "integer"}}
    for level in range(1, depth + 1):
        defs[f"l{level}"] = {"oneOf": [{"$ref": f"#/$defs/l{level - 1}"},
                                       {"$ref": f"#/$defs/l{level - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/l{depth}"}


def test_nested_one_of_expands_each_schema_once(monkeypatch):
    """Issue #22: oneOf expands its branches twice (once to prove them disjoint), which was
    exponential in the nesting depth (depth 18: 7 s). Each schema object is expanded once."""
    calls = []
    original = Combinators.expand_once
    monkeypatch.setattr(Combinators, "expand_once",
                        lambda self, *args: calls.append(args[1]) or original(self, *args))
    grammar = Grammar.from_json_schema(_nested_one_of(18))  # exact: both branches match,
    assert len(calls) < 400  # 2^18 before                   # so no value is valid
    with pytest.raises(GrammarError, match="language is empty"):
        jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    for depth in (17, 18):  # null is valid at odd depths only: it matches both branches
        disjoint: dict = {"type": "integer"}
        for _ in range(depth):
            disjoint = {"oneOf": [{"allOf": [disjoint]}, {"type": "null"}]}
        m = matcher(disjoint)
        for text in ("3", "null", "true", "1.5"):
            assert accepts(m, text) == jsonschema.Draft202012Validator(disjoint).is_valid(
                json.loads(text)), (depth, text)


def test_nesting_errors_are_not_reported_as_overlapping_one_of():
    schema: dict = {"type": "integer"}
    for _ in range(41):
        schema = {"oneOf": [{"allOf": [schema]}, {"type": "null"}]}
    with pytest.raises(SchemaNestingError, match="nesting too deep"):
        Grammar.from_json_schema(schema)


# --- malformed keyword values -----------------------------------------------------------------
@pytest.mark.parametrize("schema,message", [
    ({"type": "array", "minItems": None}, "minItems must not be null"),  # was: accepted
    ({"type": "number", "multipleOf": None}, "multipleOf must not be null"),
    ({"exclusiveMinimum": None}, "exclusiveMinimum must not be null"),
    ({"properties": {"a": {"pattern": None}}}, "pattern must not be null"),
    ({"allOf": [{"type": "array", "minItems": 1}, {"minItems": "2"}]},
     "minItems must be a non-negative integer"),  # was: TypeError from max()
    ({"allOf": [{"minimum": "x"}, {"minimum": 3}]}, "minimum must be a number"),
    ({"enum": ["a"], "type": 1}, "type must be a string or an array of strings"),
    ({"not": {"type": 5}}, "type must be a string or an array of strings"),
    ({"type": "strin"}, "unknown type 'strin'"),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "id": {},
      "items": {"enum": ["a"], "type": "string", "minLength": 1}},
     "cannot check the enum values"),  # (a bare type is checked without jsonschema)
    # Found by the 200,000-case fuzzing run (raw TypeError / OverflowError / MemoryError):
    ({"allOf": [{"enum": [[1]]}, {"prefixItems": 3}]}, "prefixItems must be an array"),
    ({"anyOf": [{"type": "boolean", "prefixItems": True}]}, "prefixItems must be an array"),
    ({"allOf": [{"required": ["a"]}, {"required": [["b"]]}]},
     "required must be an array of strings"),
    ({"properties": []}, "properties must be an object"),
    ({"not": 3}, "not must be a schema"),
    ({"type": "string", "minLength": 10 ** 400}, "minLength' cannot be enforced .inf above"),
    ({"type": "integer", "minimum": 0, "multipleOf": 2 ** 40},
     "digit automaton over 100,000 states"),
    ({"oneOf": [{"type": "string", "format": []}, {"type": "string"}]},
     "format must be a string"),  # was: unhashable type 'list' proving oneOf disjoint
])
def test_malformed_values_name_their_keyword(schema, message):
    with pytest.raises(JsonSchemaError, match=message):
        Grammar.from_json_schema(schema)


def test_const_null_is_a_value():
    m = matcher({"const": None})
    assert accepts(m, "null") and not accepts(m, "0")


def test_unbounded_multiples_by_last_digits():
    m = matcher({"type": "integer", "minimum": 0, "multipleOf": 64})
    for value in (0, 64, 128, 6400, 64 * 12345):
        assert accepts(m, str(value)), value
    for value in (32, 65, 6401):
        assert not accepts(m, str(value)), value
