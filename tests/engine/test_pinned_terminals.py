"""Pinned terminals (native/lexer/pinned_terminals.h): the JSON front-end's own terminals are
compiled once per process and copied into each grammar. A grammar whose terminals are copied
gives the same masks, step by step along seeded walks, as the same grammar whose terminals are
compiled from equivalent regexes that are not pinned; `clear_caches` keeps the pins."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, Matcher, compile_grammar
from jaxguide.engine._core import _native
from jaxguide.grammars.json_schema import pinned_key_suffixes, pinned_terminal_regexes

SCHEMAS = [
    {},
    {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"},
                                      "x": {"type": "array", "items": {"type": "number"}}},
     "required": ["n"]},
    {"type": "array", "items": {"enum": [True, None, "a"]}, "maxItems": 4},
]


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


def test_the_front_end_names_a_fixed_set_and_the_engine_pins_it():
    regexes = pinned_terminal_regexes()
    assert regexes == pinned_terminal_regexes()  # no schema of a user's in it
    string = Grammar.from_json_schema({"type": "string"}).ir.terminals[0].regex
    assert string in regexes and "," in regexes and "true|false" in regexes
    assert _native.num_pinned_terminals() >= len(regexes)
    count = _native.num_pinned_terminals()
    jaxguide.clear_caches()
    assert _native.num_pinned_terminals() == count
    _native.pin_terminal_regexes(list(regexes))  # pinning again adds nothing
    assert _native.num_pinned_terminals() == count


def test_a_regex_that_does_not_parse_is_an_error():
    with pytest.raises(ValueError):
        _native.pin_terminal_regexes(["(unclosed"])


def _unpinned(grammar: Grammar) -> Grammar:
    """The same grammar with each terminal's regex written differently (a group around it),
    so none is pinned: compiled from its regex."""
    terminals = tuple(dataclasses.replace(t, regex=f"(?:{t.regex})") for t in grammar.ir.terminals)
    return Grammar(dataclasses.replace(grammar.ir, terminals=terminals))


def _assert_same_masks(grammar: Grammar, other: Grammar, info, seed: int) -> None:
    """Both grammars give the same masks at every step of 6 seeded walks of up to 40 tokens."""
    copied = Matcher(compile_grammar(grammar, info, cache=False))
    compiled = Matcher(compile_grammar(other, info, cache=False))
    masks = jaxguide.allocate_token_bitmask(2, info.logits_width)
    rng = random.Random(seed)
    for walk in range(6):
        copied.reset()
        compiled.reset()
        for _ in range(40):
            copied.fill_next_token_bitmask(masks, 0)
            compiled.fill_next_token_bitmask(masks, 1)
            assert np.array_equal(masks[0], masks[1]), (walk, copied)
            allowed = np.flatnonzero(np.unpackbits(masks[0].view(np.uint8), bitorder="little"))
            allowed = allowed[allowed < info.vocab_size]
            if copied.is_terminated() or len(allowed) == 0:
                break
            token = int(rng.choice(list(allowed)))
            assert copied.accept_token(token) and compiled.accept_token(token)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@pytest.mark.parametrize("whitespace", ["flexible", "compact"])
def test_copied_terminals_give_the_masks_of_compiled_ones(info, index, whitespace):
    grammar = Grammar.from_json_schema(SCHEMAS[index], whitespace=whitespace)
    pinned = {t.regex for t in grammar.ir.terminals} & set(pinned_terminal_regexes())
    assert pinned  # the test compares something
    _assert_same_masks(grammar, _unpinned(grammar), info, index)


# Names with punctuation (escaped by the front-end or not) and one more than the others.
KEYED = {"type": "object", "properties": {
    "a-b": {"type": "integer"}, "x y": {"type": "boolean"}, "$id": {"type": "string"},
    "k.z": {"enum": [1, 2]}, "kind": {"type": "object", "properties": {"v": {"const": 0}},
                                      "required": ["v"]}}, "required": ["x y", "kind"]}


@pytest.mark.parametrize("whitespace", ["flexible", "compact", 2])
def test_shaped_key_terminals_give_the_masks_of_parsed_ones(info, whitespace):
    """Keys (a name and a pinned end) and "any key but these" terminals are built without the
    regex parser (native/lexer/pinned_terminals.h "Shaped terminals"): the same masks as the
    same regexes parsed (each in a group, which no shape matches)."""
    suffixes, (unit,) = pinned_key_suffixes()
    assert _native.num_pinned_suffixes() >= len(suffixes) + 1
    grammar = Grammar.from_json_schema(KEYED, whitespace=whitespace)
    regexes = [t.regex for t in grammar.ir.terminals]
    keys = [r for r in regexes if r.endswith(suffixes) and "(?!" not in r]
    any_key = [r for r in regexes if r.startswith('"(?!(?:') and unit + "*" in r]
    assert len(keys) >= 6 and len(any_key) == 2, regexes  # (the shapes the test compares)
    _assert_same_masks(grammar, _unpinned(grammar), info, 7)
