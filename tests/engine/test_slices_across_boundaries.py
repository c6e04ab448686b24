"""The string slice across lexeme boundaries (Matcher::ReadsAnyTextAcrossBoundaries).

A lexeme that ends within the slice's reach (16 characters) while the text may go on in the
next lexeme (a long JSON string's chunks; here Lark terminals of a few characters) gets the
slice whole only if every text of up to 16 characters keeps a thread alive through the
boundaries. Masks are compared with the tokens that `is_token_allowed` accepts one by one (no
trie walk, no slices), with the llama3 vocabulary, at every position of a few texts:
- chunks of 3 characters that any text continues (the slice goes through);
- the same chunks where a trailing lookahead forbids `x` after a chunk (`x` shares its lexer
  byte class with the other letters: the search must tell it apart, else tokens with an `x`
  on a chunk's end would be let through);
- chunks of which at most three may follow (the text dies within reach: no slice there).
"""

from __future__ import annotations

import pytest
from support.finite_masks import allowed_one_by_one, mask_of
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Matcher

TEXT = r'/[^"\\\x00-\x1f\x7f]{3}/'
GRAMMARS = {
    "chunks": f"start: CHUNK+\nCHUNK: {TEXT}\n",
    "chunks_not_before_x": f"start: CHUNK+\nCHUNK: {TEXT[:-1]}(?!x)/\n",
    "at_most_three_chunks": f"start: CHUNK CHUNK? CHUNK?\nCHUNK: {TEXT}\n",
}
PREFIXES = ["", "a", "ab", "abc", "abcd", "héé", "ab\u6f22d", "abcdefg", "abcdefgh"]


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_equal_tokens_tried_one_by_one(info, name):
    grammar = jaxguide.compile_grammar(GRAMMARS[name], info)
    sizes = []
    for prefix in PREFIXES:
        matcher = Matcher(grammar)
        assert matcher.accept_bytes(prefix.encode()), prefix
        expected = allowed_one_by_one(matcher, info)
        assert mask_of(matcher, info) == expected, (name, prefix)
        sizes.append(len(expected))
    # Not vacuous: the slice's tokens (thousands) are allowed at some positions of every
    # grammar, and `x` after a chunk's end takes some away.
    assert max(sizes) > 5000


def test_a_forbidden_byte_after_a_chunk_takes_tokens_away(info):
    free = jaxguide.compile_grammar(GRAMMARS["chunks"], info)
    restricted = jaxguide.compile_grammar(GRAMMARS["chunks_not_before_x"], info)
    masks = []
    for grammar in (free, restricted):
        matcher = Matcher(grammar)
        assert matcher.accept_bytes(b"ab")
        masks.append(mask_of(matcher, info))
    taken = masks[0] - masks[1]
    assert taken and masks[1] < masks[0]
    # (after "ab", chunks end before the token's characters 1, 4, 7, ...)
    assert all("x" in info.token_bytes(t).decode()[1::3] for t in taken)
