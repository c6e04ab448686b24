"""multipleOf beyond the regexes: digit automata (json_schema/digit_automata.py).

A step with a range (11 from -50 up, 7 up to 100,000), a decimal step (2.5, 0.3, 1.5 on
integers), two steps in one allOf, `not multipleOf` and overlapping oneOf branches of steps go
to the lexer as explicit automata. Checked against the exact-number `jsonschema` oracle: every
number text of a wide sample is accepted exactly when valid (exponents, `14.0` for an integer
and `-0` may be refused: the documented sound subset), walks through the masks end valid, and
hypothesis texts accepted validate. The automaton builder is checked alone against Decimal
arithmetic, and the native reader refuses malformed automata.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer
from support.schema_walks import assert_schema_walks

import jaxguide
from jaxguide import Grammar, GrammarError, Matcher
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema import (
    JsonSchemaError,
    digit_automata,
    json_schema_to_ir,
)
from jaxguide.grammars.json_schema.digit_automata import (
    PLAIN_NUMBER_RX,
    DigitAutomatonTooLarge,
    accepts,
    digit_automaton,
)
from jaxguide.grammars.json_schema.leaf_recipes import clear_leaf_recipes
from jaxguide.grammars.json_schema.numbers import int_range
from jaxguide.testing import JsonSchemaOracle

CASES = {
    "integer_step_with_wide_range": {"type": "integer", "multipleOf": 7, "minimum": 10,
                                     "maximum": 100_000},
    "integer_step_from_a_negative_bound": {"type": "integer", "multipleOf": 11, "minimum": -50},
    "decimal_step": {"type": "number", "multipleOf": 2.5},
    "decimal_step_with_range": {"type": "number", "multipleOf": 0.3, "minimum": -5,
                                "exclusiveMaximum": 5},
    "decimal_step_on_integers": {"type": "integer", "multipleOf": 1.5},
    "not_multiple": {"type": "integer", "not": {"multipleOf": 3}},
    "not_decimal_multiple": {"type": "number", "minimum": 0, "not": {"multipleOf": 0.5}},
    "step_and_not_step": {"type": "integer", "minimum": 0, "multipleOf": 4,
                          "not": {"multipleOf": 6}},
    "two_steps_in_all_of": {"type": "number", "allOf": [{"multipleOf": 0.25},
                                                        {"multipleOf": 0.1}]},
    "overlapping_one_of": {"type": "integer", "oneOf": [{"multipleOf": 3}, {"multipleOf": 5}]},
    "number_with_integer_step_and_range": {"type": "number", "multipleOf": 7, "minimum": 0,
                                           "maximum": 100_000},
    "step_in_an_object": {"type": "object", "properties": {
        "n": {"type": "integer", "multipleOf": 13, "minimum": 5}, "x": {"not": {"multipleOf": 2}}},
        "required": ["n"], "additionalProperties": False},
}

_COMPILED: dict[str, jaxguide.CompiledGrammar] = {}


def compiled(name: str) -> jaxguide.CompiledGrammar:
    if name not in _COMPILED:
        grammar = Grammar.from_json_schema(CASES[name])
        _COMPILED[name] = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    return _COMPILED[name]


def accepted(name: str, text: str) -> bool:
    matcher = Matcher(compiled(name))
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


def number_texts() -> list[str]:
    """Integers, quarters and tenths around zero and near the bounds above, with trailing
    zeros, `-0`, leading zeros and exponents."""
    texts = {str(i) for i in range(-120, 121)} | {str(i) for i in range(99_900, 100_010)}
    for i in range(-80, 81):
        for frac in (Decimal(i) / 4, Decimal(i) / 10, Decimal(i) / 3):
            text = f"{frac:.3f}"
            texts |= {text, text.rstrip("0"), text + "00"}
    texts |= {"-0", "0.0", "-0.0", "007", "1e2", "15e0", "2.5E1", "3.", ".5", "+3"}
    return sorted(t for t in texts if not t.endswith("."))


def test_every_number_text_is_accepted_exactly_when_valid():
    texts = number_texts()
    for name, schema in CASES.items():
        if schema["type"] == "object":
            continue
        assert any(t.automaton for t in compiled(name).grammar.ir.terminals), name
        oracle = JsonSchemaOracle(schema)
        wrong = []
        for text in texts:
            # May be refused although valid, as everywhere: exponents, `14.0` for an integer,
            # `-0` (the range regexes write zero unsigned).
            subset = "e" in text.lower() or (schema["type"] == "integer" and "." in text) or \
                text.startswith("-0") and not text.strip("-0.")
            valid = oracle.check(text) is None
            if accepted(name, text) != valid and not (subset and valid):
                wrong.append((text, valid))
        assert not wrong, (name, wrong[:10])
        assert any(accepted(name, t) for t in texts) and not all(accepted(name, t) for t in texts)


@pytest.mark.parametrize("name", sorted(CASES))
def test_walks_through_the_masks_are_valid(name):
    assert_schema_walks(compiled(name), CASES[name], real_tokenizer("llama3_tiktoken"),
                        seed=name, walks=24, min_eos=6)


@pytest.mark.parametrize("name", ["decimal_step_with_range", "not_decimal_multiple",
                                  "two_steps_in_all_of", "step_in_an_object"])
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=st.one_of(st.integers(-10**6, 10**6), st.decimals(-1000, 1000, places=3),
                       st.fixed_dictionaries({"n": st.integers(-100, 500)},
                                             optional={"x": st.decimals(-50, 50, places=2)})))
def test_whatever_is_accepted_validates(name, value):
    text = json.dumps(value, default=str)
    if accepted(name, text):
        assert JsonSchemaOracle(CASES[name]).check(text) is None, text


def test_the_automaton_alone_equals_decimal_arithmetic():
    rng = random.Random(7)
    samples = [Decimal(rng.randrange(-3000, 3000)) / rng.choice([1, 2, 4, 8, 10, 100])
               for _ in range(600)]
    too_large = 0
    for _ in range(40):
        steps = [Decimal(rng.choice([3, 7, 11, 12, 25, 15])) / rng.choice([1, 2, 10, 100])
                 for _ in range(rng.randrange(0, 3))]
        non = [Decimal(rng.choice([2, 3, 9])) / rng.choice([1, 10]) for _ in range(rng.randrange(
            0 if steps else 1, 3))]
        lo, hi = sorted(rng.sample(range(-400, 400), 2))
        integers = rng.random() < 0.5
        try:
            states = digit_automaton(int_range(lo, hi) if integers else PLAIN_NUMBER_RX, steps,
                                     non)
        except DigitAutomatonTooLarge:
            too_large += 1
            continue
        for value in samples:
            text = f"{value:f}"
            in_range = value == value.to_integral_value() and lo <= value <= hi if integers \
                else True
            expected = in_range and all(value % s == 0 for s in steps) and all(
                value % n != 0 for n in non)
            if integers and "." in text:
                expected = False  # the integer range regex writes no fraction
            got = states is not None and accepts(states, text)
            assert got == expected, (text, steps, non, lo, hi, integers)
    assert too_large <= 10


def test_budget_is_a_clear_error_and_lenient_ignores_it():
    schema = {"type": "integer", "minimum": 0, "multipleOf": 2 ** 40}
    with pytest.raises(JsonSchemaError, match="digit automaton over 100,000 states") as info:
        Grammar.from_json_schema(schema)
    assert info.value.keyword == "multipleOf"
    with pytest.warns(UserWarning, match="multipleOf"):
        grammar = Grammar.from_json_schema(schema, lenient=True)
    assert not any(t.automaton for t in grammar.ir.terminals)


def test_the_automata_of_one_schema_share_a_budget(monkeypatch):
    """Each alternative of a distribution may build its own automaton: their product states
    are charged to one budget per schema (`MAX_DIGIT_AUTOMATON_TOTAL`), so many alternatives
    are a clear error, not minutes of work. Under a budget of 50 states, one automaton (mod
    7: about 30) fits, two do not."""
    monkeypatch.setattr(digit_automata, "MAX_DIGIT_AUTOMATON_TOTAL", 50)
    one = {"type": "integer", "multipleOf": 7, "not": {"multipleOf": 2}}
    Grammar.from_json_schema(one)
    two = {"type": "integer", "oneOf": [{"multipleOf": 7}, {"multipleOf": 11}],
           "not": {"multipleOf": 2}}
    with pytest.raises(JsonSchemaError, match="digit automata over 50 states in one"):
        Grammar.from_json_schema(two)


def test_no_multiple_left_is_no_number():
    schema = {"type": "integer", "multipleOf": 7, "minimum": 1, "maximum": 6, "not": {
        "multipleOf": 2}}
    with pytest.raises(GrammarError):
        jaxguide.compile_grammar(Grammar.from_json_schema(schema),
                                 real_tokenizer("llama3_tiktoken"))


@pytest.mark.parametrize("automaton,message", [
    ((), None),
    (((True, ((0x30, 0x39, 1),)),), "which it does not have"),
    (((True, ((0x30, 0x39, 0), (0x35, 0x40, 0))),), "overlapping transitions"),
])
def test_native_reader_checks_the_automaton(automaton, message):
    """An empty automaton means none (the regex); a target out of range or overlapping sets
    are refused with the terminal's name."""
    ir = GrammarIR(terminals=(TerminalIR("DIGITS", "[0-9]+", automaton=automaton),),
                   nonterminals=("start",), rules=((0, (0,)),), start=0)
    info = real_tokenizer("llama3_tiktoken")
    if message is None:
        jaxguide.compile_grammar(Grammar(ir), info)
        return
    with pytest.raises(GrammarError, match=message):
        jaxguide.compile_grammar(Grammar(ir), info)


def test_ir_json_names_the_automaton_only_where_set():
    ir = Grammar.from_json_schema(CASES["decimal_step"]).ir
    assert '"automaton"' in ir.to_json()
    assert '"automaton"' not in Grammar.from_json_schema({"type": "integer"}).ir.to_json()
    assert "automaton of" in str(ir)


def test_leaf_recipes_keep_the_automaton():
    """A number leaf with a digit automaton, emitted again from its recipe, is the same IR."""
    schema = {"type": "object", "properties": {
        "a": {"type": "number", "multipleOf": 2.5}, "b": {"type": "number", "multipleOf": 2.5},
        "c": {"type": "integer", "multipleOf": 7, "minimum": 3}}}
    clear_leaf_recipes()
    first = json_schema_to_ir(schema).to_json()
    again = json_schema_to_ir(schema).to_json()
    clear_leaf_recipes()
    assert first == again == json_schema_to_ir(schema).to_json() and '"automaton"' in first
