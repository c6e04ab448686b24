"""The JSON Schema compiler's two phases, apart: normal forms built directly (dataclasses of
`normal_form`) and lowered by `emit`, checked against the IR of the equivalent schema and by
matching texts (a real `Matcher`, Llama-3 vocabulary); and what `normalize` reads a schema
into.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema import json_schema_to_ir
from jaxguide.grammars.json_schema import normal_form as nf
from jaxguide.grammars.json_schema.emit import normal_form_to_ir
from jaxguide.grammars.json_schema.normalize import Normalizer
from jaxguide.grammars.json_schema.units import ANY_UNIT


def read(items) -> list:
    """The items of a union or conjunction, the pending ones read."""
    made = [item.make() if isinstance(item, nf.Pending) else item for item in items]
    return [item for item in made if item is not None]


def one(*forms) -> nf.Union:
    return nf.Union((nf.Conjunction(forms=forms),))


def matches(ir, texts: dict[str, bool]) -> None:
    compiled = jaxguide.compile_grammar(Grammar(ir), real_tokenizer("llama3_tiktoken"))
    for text, ok in texts.items():
        matcher = Matcher(compiled)
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == ok, text


def test_string_form_with_lengths():
    form = one(nf.StringForm(min_length=2, max_length=4))
    ir = normal_form_to_ir(form)
    assert ir.to_json() == json_schema_to_ir(
        {"type": "string", "minLength": 2, "maxLength": 4}).to_json()
    matches(ir, {'"ab"': True, '"abcd"': True, '"\\u00e9\\n"': True, '"a"': False,
                 '"abcde"': False, "12": False})


def test_long_string_form_is_chunked_and_exact():
    form = one(nf.StringForm(min_length=300, max_length=600))
    ir = normal_form_to_ir(form)
    assert ir.to_json() == json_schema_to_ir(
        {"type": "string", "minLength": 300, "maxLength": 600}).to_json()
    assert any(n.startswith("str") for n in ir.nonterminals)
    matches(ir, {'"' + "x" * 300 + '"': True, '"' + "x" * 600 + '"': True,
                 '"' + "x" * 299 + '"': False, '"' + "x" * 601 + '"': False})


def test_object_form_with_an_optional_property():
    integer = nf.Subschema(one(nf.NumberForm(integer=True, minimum=1)))
    form = one(nf.ObjectForm(properties=(nf.Property("a", integer, required=True),
                                      nf.Property("b", nf.Subschema({"type": "string"})))))
    ir = normal_form_to_ir(form, whitespace="compact")
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1},
                                               "b": {"type": "string"}},
              "required": ["a"], "additionalProperties": False}
    assert ir.to_json() == json_schema_to_ir(schema, whitespace="compact").to_json()
    matches(ir, {'{"a":1}': True, '{"a":2,"b":"x"}': True, '{"b":"x"}': False,
                 '{"a":0}': False, '{"a":1,"c":2}': False, "{}": False})


def test_object_form_extra_keys_and_counts():
    form = one(nf.ObjectForm(
        properties=(nf.Property("id", nf.Subschema(nf.ANY)),),
        extras=(nf.ExtraKeys("x" + ANY_UNIT + "*", nf.Subschema(one(nf.BooleanForm()))),),
        min_properties=1, max_properties=2))
    matches(normal_form_to_ir(form, whitespace="compact"), {
        '{"id":null}': True, '{"xa":true}': True, '{"id":1,"x":false}': True,
        '{"ya":true}': False, '{"xa":1}': False, "{}": False,
        '{"id":1,"x":true,"xy":true}': False})


def test_array_form_prefix_and_rest():
    form = one(nf.ArrayForm(prefix_items=(nf.Subschema(one(nf.NullForm())),),
                         items=nf.Subschema(one(nf.NumberForm())), min_items=1, max_items=3))
    ir = normal_form_to_ir(form, whitespace="compact")
    assert ir.to_json() == json_schema_to_ir(
        {"type": "array", "prefixItems": [{"type": "null"}], "items": {"type": "number"},
         "minItems": 1, "maxItems": 3}, whitespace="compact").to_json()
    matches(ir, {"[null]": True, "[null,1.5,2]": True, "[]": False, "[1]": False,
                 "[null,1,2,3]": False})


def test_literals_and_union_of_alternatives():
    form = nf.Union((nf.Conjunction(literals=nf.Literals(("a", 2, [True]), floats=False)),
                  nf.Conjunction(forms=(nf.NullForm(),))))
    matches(normal_form_to_ir(form, whitespace="compact"), {
        '"a"': True, "2": True, "[true]": True, "null": True, "2.0": False, '"b"': False})


def test_none_and_negated_members():
    assert normal_form_to_ir(nf.NONE).rules == ((0, (1,)),)
    with pytest.raises(NotImplementedError):
        normal_form_to_ir(nf.Union((nf.Conjunction(forms=(nf.NullForm(),), negated=(nf.ANY,)),)))


def test_normalizer_reads_typed_forms():
    schema = {"anyOf": [{"type": "integer", "minimum": 0.5, "maximum": 7},
                        {"$ref": "#/$defs/s"}, {"enum": ["x", 1]}],
              "$defs": {"s": {"type": "string", "pattern": "^a+$", "maxLength": 3}}}
    normalizer = Normalizer(schema, True, False)
    alternatives = read(normalizer.normal_form(schema, "").alternatives)
    assert len(alternatives) == 3
    assert read(alternatives[0].forms) == [nf.NumberForm(integer=True, minimum=1, maximum=7)]
    assert alternatives[1] == nf.Ref(schema["$defs"]["s"], "#/$defs/s")
    assert alternatives[2].literals.values == ("x", 1)
    target = read(normalizer.normal_form(alternatives[1].schema, "#/$defs/s").alternatives)
    assert read(target[0].forms) == [nf.StringForm(0, 3, pattern="^a+$")]
    assert normalizer.normal_form({"anyOf": [{}, {"type": "null"}]}, "") is nf.ANY


def test_normalizer_reads_objects_and_arrays():
    schema = {"type": ["object", "array"], "properties": {"a": {"type": "null"}},
              "required": ["a"], "patternProperties": {"^x": {"type": "boolean"}},
              "additionalProperties": False, "items": False, "prefixItems": [True],
              "minItems": 1}
    conjunction, = read(Normalizer(schema, True, False).normal_form(schema, "").alternatives)
    array, obj = read(conjunction.forms)
    assert array == nf.ArrayForm(prefix_items=(nf.Subschema(True, "/prefixItems/0"),), items=None,
                              min_items=1, max_items=1)
    assert obj.properties == (nf.Property("a", nf.Subschema({"type": "null"}, "/properties/a"),
                                       required=True),)
    (extra,) = obj.extras
    assert extra.value == nf.Subschema({"type": "boolean"}, "/patternProperties")


def test_pending_items_are_read_when_emitted():
    made = []

    def string():
        made.append("string")
        return nf.StringForm(max_length=1)

    form = nf.Union((nf.Pending(lambda: None),
                     nf.Conjunction(forms=(nf.Pending(string), nf.NullForm()))))
    ir = normal_form_to_ir(form)
    assert made == ["string"]
    matches(ir, {'"a"': True, "null": True, '"ab"': False})


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, 2.5, -0.0])
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner,
                                                                max_size=2), max_leaves=4)
TYPE_NAMES = ["string", "boolean", "null", "object", "array", "number", "integer"]


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, types=st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3,
                                         unique=True), single=st.booleans())
def test_enum_values_checked_without_jsonschema_get_its_verdict(value, types, single):
    """`simple_type_check` stands in for jsonschema when an enum's only sibling is a type: it
    must give jsonschema's verdict in every draft, and decline (None) where drafts differ."""
    import jsonschema

    from jaxguide.grammars.json_schema.values import simple_type_check
    types = types[:1] if single else types
    rest = {"type": types[0] if single else types, "description": "annotations do not count",
            "name": "nor keywords no draft reads", "x-kind": {"minLength": 9}}
    check = simple_type_check(rest)
    if {"number", "integer"} & set(types):
        assert check is None  # 1.0 is an integer from draft 6 on; left to jsonschema
        return
    assert check is not None
    for validator in (jsonschema.Draft4Validator, jsonschema.Draft7Validator,
                      jsonschema.Draft202012Validator):
        assert check(value) == validator(rest).is_valid(value), (validator, value)
    assert simple_type_check({**rest, "minLength": 1}) is None
    assert simple_type_check({**rest, "divisibleBy": 2}) is None  # (draft 3 reads it)


def test_validation_keywords_are_the_ones_jsonschema_reads():
    import jsonschema

    from jaxguide.grammars.json_schema.values import VALIDATION_KEYWORDS
    read = set()
    for validator in (jsonschema.Draft3Validator, jsonschema.Draft4Validator,
                      jsonschema.Draft6Validator, jsonschema.Draft7Validator,
                      jsonschema.Draft201909Validator, jsonschema.Draft202012Validator):
        read |= set(validator.VALIDATORS)
    assert VALIDATION_KEYWORDS == read


@pytest.mark.parametrize("cls", [nf.Pending, nf.Union, nf.Subschema, nf.Ref, nf.Property,
                                 nf.Conjunction])
def test_direct_constructors_match_the_dataclass_fields(cls):
    """The hand-written constructors (normal_form's "Construction") take exactly the dataclass
    fields, in order, with the same defaults, and store what they are given, so that a field
    added to the class without its constructor line fails here; the instances stay frozen."""
    fields = dataclasses.fields(cls)
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields):
        assert p.default == (inspect.Parameter.empty if f.default is dataclasses.MISSING
                             else f.default), f.name
    values = [object() for _ in fields]
    made = cls(*values)
    assert [getattr(made, f.name) for f in fields] == values
    assert made == cls(**{f.name: v for f, v in zip(fields, values)})
    assert dataclasses.replace(made) == made
    assert pickle.loads(pickle.dumps(cls(*[f.name for f in fields]))) == \
        cls(*[f.name for f in fields])
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, fields[0].name, None)
