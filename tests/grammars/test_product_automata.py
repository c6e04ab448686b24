"""The native subset construction of the front-end's product automata
(native/lexer/nfa_product.h, registered by the engine) against the Python one (`automata.Dfa`
with no native builder): the same states in the same numbering, the same transitions and
accept vectors, the same budget refusals, on every MaskBench pattern alone, on pairs of them,
with declared names, and with the `format` patterns."""

from __future__ import annotations

import json
import pathlib
import random

import numpy as np
import pytest

from jaxguide.engine import _core  # (loads the core, which registers the builder)
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


# --- state elimination (native/lexer/state_elimination.h) against Dfa._eliminate --------------

def written(dfa, accept, unit, max_states, native: bool):
    """Dfa.regex by the core or in Python: the regex, None, or the refusal's message."""
    saved = automata._native_elimination
    automata.use_native_elimination(saved if native else None)
    try:
        return dfa.regex(accept, unit, max_states)
    except automata.RegexTooLarge as e:
        return f"refused: {e}"
    finally:
        automata.use_native_elimination(saved)


ACCEPTS = (all, lambda v: v[0] and not any(v[1:]), lambda v: not v[0], lambda v: v[-1])


def assert_same_regex(dfa, max_states=None) -> int:
    """Both eliminations agree for every accept predicate and both unit writers; how many
    regexes (not refusals, not None) were compared."""
    compared = 0
    for accept in ACCEPTS:
        for unit in (automata.unit_regex, automata._ecma_class):
            python = written(dfa, accept, unit, max_states, False)
            assert written(dfa, accept, unit, max_states, True) == python
            compared += isinstance(python, str) and not python.startswith("refused")
    return compared


def test_the_engine_registers_the_native_elimination():
    assert automata._native_elimination is not None


def test_native_elimination_writes_the_python_regex():
    rng = random.Random("state elimination")
    sample = rng.sample(PATTERNS, 160)
    names = ["id", "name", "x-a", "é", "a_b"]
    compared = 0
    for a, b in zip(sample[::2], sample[1::2]):
        for patterns, declared in (([a], ()), ([a, b], ()), ([a], names), ([a, b], names[:2])):
            nodes = nodes_of(patterns, declared)
            if nodes is None:
                continue
            try:
                dfa = Dfa(nodes, 400)
            except PatternError:
                continue
            compared += assert_same_regex(dfa, 300)
    for name in ("uri", "date-time", "ipv4"):
        for pattern in ("^https?://", "^[0-9]", "a"):
            compared += assert_same_regex(Dfa(nodes_of([FORMATS[name], pattern]), 2000), 300)
    assert compared > 300


def test_native_elimination_refuses_alike(monkeypatch):
    dfa = Dfa(nodes_of(["^[a-zé]{1,8}$", "^(?:ab|cd)*$"]), 400)
    full = written(dfa, lambda v: v[0] and not v[1], automata.unit_regex, None, False)
    assert isinstance(full, str) and not full.startswith("refused")
    live = len(dfa._live([v[0] and not v[1] for v in dfa.accepts]))
    assert written(dfa, lambda v: v[0] and not v[1], automata.unit_regex, live - 1, True) == (
        f"refused: key regex too large ({live} states to eliminate)")
    for bound in (1, live - 1, live):
        assert_same_regex(dfa, bound)
    for budget in (len(full) // 2, len(full) - 1, len(full)):
        monkeypatch.setattr(automata, "MAX_KEY_REGEX", budget)
        assert_same_regex(dfa)


def test_native_elimination_counts_code_points(monkeypatch):
    # Pieces of two code points and four bytes each: the budget is met in code points.
    dfa = Dfa(nodes_of(["^[a-c]{1,3}$"]), 400)
    full = written(dfa, all, lambda ranges: "éé", None, False)
    monkeypatch.setattr(automata, "MAX_KEY_REGEX", len(full))
    assert written(dfa, all, lambda ranges: "éé", None, True) == full
    monkeypatch.setattr(automata, "MAX_KEY_REGEX", len(full) - 1)
    assert written(dfa, all, lambda ranges: "éé", None, True) == "refused: key regex too large"


def test_native_elimination_checks_its_tables():
    with pytest.raises(ValueError, match="out of range"):
        _core._native.eliminate_states(np.array([[0, 5]], dtype=np.uint32), [True],
                                       lambda atoms: "a", 0, 100)
    with pytest.raises(ValueError, match="out of range"):
        _core._native.eliminate_states(np.array([[0, 0]], dtype=np.uint32), [True, False],
                                       lambda atoms: "a", 0, 100)


# --- ecma_search: the DFA walk against the NFA simulation --------------------------------------

def test_search_walks_the_dfa_as_the_nfa_simulation_answers():
    rng = random.Random("ecma search")
    alphabet = "ab01-_./:@xyzé \u00a0\U0001f600"
    texts = [""] + ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12)))
                    for _ in range(60)]
    walked = 0
    for pattern in rng.sample(PATTERNS, 150) + ["^[0-9a-zA-Z_-]{1,255}$", "a.{12}b"]:
        try:
            searcher = automata._searcher(pattern)
        except PatternError:
            continue
        walked += searcher is not None
        for text in texts + [pattern]:
            assert automata.ecma_search(pattern, text) == automata._nfa_search(pattern, text)
    assert walked > 100
    assert automata._searcher("a.{12}b") is None  # past MAX_DFA_STATES: the NFA is simulated


def test_format_automata_outlive_clear_caches_and_schema_ones_do_not():
    import jaxguide
    from jaxguide.grammars.json_schema.pattern import pattern_units_memo

    uri, schema_pattern = FORMATS["uri"], "^[a-z]{2,5}$"
    kept, dropped = automata.pattern_nfa(uri), automata.pattern_nfa(schema_pattern)
    units = pattern_units_memo(uri, 0, None)
    assert automata.pattern_nfa(schema_pattern) is dropped  # memoized within a schema
    jaxguide.clear_caches()
    assert automata.pattern_nfa(uri) is kept and pattern_units_memo(uri, 0, None) is units
    assert automata.pattern_nfa(schema_pattern) is not dropped
    # With lengths, a format's units depend on the schema: memoized as a schema's pattern.
    assert pattern_units_memo(uri, 0, 10) == pattern_units_memo(uri, 0, 10)


def test_names_as_a_trie_build_the_same_product():
    """`names_nfa` (a state per prefix) and `names_node` (Thompson's, two states per
    character) give the same DFA, numbering included, beside any pattern."""
    rng = random.Random("names trie")
    pool = ["id", "name", "x-a", "é", "a_b", "", "idx", "names", "na", "x-", "aaa", "\U0001f600"]
    compared = 0
    for pattern in rng.sample(PATTERNS, 120):
        names = rng.sample(pool, rng.randint(1, 7))
        nodes = nodes_of([pattern])
        if nodes is None:
            continue
        for budget in (400, 2000):
            thompson = build(nodes + [names_node(names)], budget, True)
            trie = build(nodes + [automata.names_nfa(names)], budget, True)
            assert trie == thompson, (pattern, names)
            compared += not isinstance(trie, str)
    assert compared > 150
