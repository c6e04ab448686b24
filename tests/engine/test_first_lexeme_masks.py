"""The grammar's shared first-lexeme masks (CompiledGrammar::FirstLexemeMaskOf).

While a matcher has scanned nothing (every lexing thread on the initial Earley set: no lexeme
yet, %ignore'd text, the first lexeme in progress), its mask depends on the threads' lexer
states alone, and the first matcher of a grammar to compute it leaves it to every other. Each
mask here is compared with the tokens that `is_token_allowed` accepts one by one (no trie
walk, nothing shared), for the matcher that computes it and for a second one that copies it,
at every position of texts that stay inside the first lexeme and go past it (where nothing may
be shared: the threads stand on later sets). A matcher whose mask budget is below the walk's
cost gets no copy.
"""

from __future__ import annotations

import pytest
from support.finite_masks import allowed_one_by_one, mask_of
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Matcher

GRAMMAR = r"""
start: expr
expr: NUMBER | NAME "(" expr ")" | expr "+" expr
NAME: /[a-z]+/
%import common.NUMBER
%import common.WS
%ignore WS
"""
TEXTS = ["12.5e3 + sum(7)", "  \n sum (1)"]


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


def test_shared_masks_equal_tokens_tried_one_by_one(info):
    grammar = jaxguide.compile_grammar(GRAMMAR, info, cache=False)
    seen = {}
    for text in TEXTS:
        for end in range(len(text) + 1):
            prefix = text[:end].encode()
            if prefix in seen:
                continue
            masks = []
            for _ in range(2):  # the first matcher computes (or copies), the second copies
                matcher = Matcher(grammar)
                assert matcher.accept_bytes(prefix), prefix
                masks.append(mask_of(matcher, info))
            expected = allowed_one_by_one(matcher, info)
            assert masks[0] == expected and masks[1] == expected, prefix
            seen[prefix] = expected
    # Not vacuous: states of the first lexeme have masks of their own (nothing read, a number
    # that may go on, its fraction, a name after white space).
    firsts = [seen[p] for p in (b"", b"1", b"12.", b"  \n su")]
    assert len({frozenset(m) for m in firsts}) == len(firsts)


def test_a_smaller_mask_budget_walks_itself(info):
    grammar = jaxguide.compile_grammar(GRAMMAR, info, cache=False)
    assert mask_of(Matcher(grammar), info)  # computed and shared
    tight = Matcher(grammar, mask_step_budget=50)
    assert mask_of(tight, info) == set(info.eos_token_ids)  # the error state's mask
    assert "budget" in tight.error
