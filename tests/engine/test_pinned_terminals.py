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
from jaxguide.grammars.json_schema import pinned_terminal_regexes

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


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@pytest.mark.parametrize("whitespace", ["flexible", "compact"])
def test_copied_terminals_give_the_masks_of_compiled_ones(info, index, whitespace):
    grammar = Grammar.from_json_schema(SCHEMAS[index], whitespace=whitespace)
    pinned = {t.regex for t in grammar.ir.terminals} & set(pinned_terminal_regexes())
    assert pinned  # the test compares something
    copied = Matcher(compile_grammar(grammar, info, cache=False))
    compiled = Matcher(compile_grammar(_unpinned(grammar), info, cache=False))
    masks = jaxguide.allocate_token_bitmask(2, info.logits_width)
    rng = random.Random(index)
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
