"""The native subset construction of the front-end's product automata
(native/lexer/nfa_product.h, registered by the engine) against the Python one (`automata.Dfa`
with no native builder): the same states in the same numbering, the same transitions and
accept vectors, the same budget refusals, on every MaskBench pattern alone, on pairs of them,
with declared names, and with the `format` patterns."""

from __future__ import annotations

import json
import pathlib
import random

import pytest

from jaxguide.engine import _core  # noqa: F401  (loads the core, which registers the builder)
from jaxguide.grammars.json_schema import automata
from jaxguide.grammars.json_schema.automata import Dfa, names_node, pattern_node
from jaxguide.grammars.json_schema.formats import FORMATS
from jaxguide.grammars.json_schema.pattern import PatternError

PATTERNS = json.loads((pathlib.Path(__file__).parents[1] / "data" /
                       "maskbench_patterns.json").read_text())


def build(nodes, max_states, native: bool):
    """(states, transitions, accepts, atoms) or the refusal's message."""
    saved = automata._native_product
    automata.use_native_product(saved if native else None)
    try:
        dfa = Dfa(nodes, max_states)
        return len(dfa.states), dfa.trans, dfa.accepts, dfa.atoms
    except PatternError as e:
        return str(e)
    finally:
        automata.use_native_product(saved)


def nodes_of(patterns, names=()):
    nodes = []
    for p in patterns:
        try:
            nodes.append(pattern_node(p))
        except PatternError:
            return None
    return nodes + ([names_node(list(names))] if names else [])


def assert_same(nodes, max_states):
    python, native = build(nodes, max_states, False), build(nodes, max_states, True)
    assert type(python) is type(native)
    if isinstance(python, str):
        assert python == native
        return 0
    assert python == native
    return python[0]


def test_the_engine_registers_the_native_builder():
    assert automata._native_product is not None


@pytest.mark.parametrize("part", range(4))
def test_every_maskbench_pattern_alone(part):
    built = refused = 0
    for pattern in PATTERNS[part::4]:
        nodes = nodes_of([pattern])
        if nodes is None:
            continue
        states = assert_same(nodes, 400)
        built += states > 0
        refused += states == 0
    assert built > 300 and refused > 0  # both outcomes are compared


def test_pairs_names_and_formats():
    rng = random.Random("product automata")
    sample = rng.sample(PATTERNS, 120)
    names = ["id", "name", "x-a", "é", "a_b"]
    compared = 0
    for a, b in zip(sample[::2], sample[1::2]):
        for patterns, declared in (([a, b], ()), ([a], names), ([a, b], names[:2])):
            nodes = nodes_of(patterns, declared)
            if nodes is not None:
                compared += assert_same(nodes, 2000) > 0
    for name in ("uri", "email", "date-time", "ipv4"):
        for pattern in ("^https?://", "@example\\.com$", "^[0-9]", "a"):
            compared += assert_same(nodes_of([FORMATS[name], pattern]), 2000) > 0
    assert compared > 100


def test_a_budget_is_refused_alike_at_every_size():
    nodes = nodes_of(["^[a-z]{1,40}$", "^(?:ab|cd)*$"])
    full = assert_same(nodes, 10_000)
    for budget in (1, 2, full - 1, full):
        assert_same(nodes, budget)
    assert build(nodes, full - 1, True) == automata.PRODUCT_TOO_LARGE


def test_a_regex_past_its_state_bound_is_refused_before_elimination():
    dfa = Dfa(nodes_of(["^[a-z]{1,40}$"]), 400)
    assert dfa.regex(all, max_states=41) is not None  # 41 live states to eliminate
    with pytest.raises(automata.RegexTooLarge, match="41 states"):
        dfa.regex(all, max_states=40)
    empty = Dfa(nodes_of(["^[a-z]{1,40}$", "^[0-9]+$"]), 400)
    assert empty.regex(all, max_states=1) is None  # no string: known before the bound
