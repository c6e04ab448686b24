"""Masks checked against a finite language given by its documents: at each prefix of a seeded
sample of the documents' prefixes, the mask is exactly the tokens that continue some document
(the end-of-sequence tokens where one ends), and `is_token_allowed` agrees on a few of them.
`allowed_one_by_one`: the oracle of any mask, every token tried with `is_token_allowed`."""

from __future__ import annotations

import random

import numpy as np

from jaxguide import Matcher
from jaxguide.engine.matcher import allocate_token_bitmask


def mask_of(matcher, info) -> set[int]:
    """The token ids the matcher's next mask allows."""
    row = allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(row, 0)
    bits = np.unpackbits(row[0].view(np.uint8), bitorder="little")[:info.vocab_size]
    return set(np.nonzero(bits)[0].tolist())


def allowed_one_by_one(matcher, info) -> set[int]:
    """The mask's oracle: each token tried on its own (`is_token_allowed` reads its bytes
    through the lexer and parser; no trie walk, no cached lexer-only masks, no slices)."""
    return {t for t in range(info.vocab_size) if matcher.is_token_allowed(t)}


def expected_mask(prefix: bytes, documents: set[bytes], info) -> set[int]:
    """The tokens after `prefix` that keep it a prefix of some document (EOS where it is one)."""
    allowed = set()
    for document in documents:
        if document.startswith(prefix):
            rest = document[len(prefix):]
            if rest:
                allowed.update(int(t) for t in info.tokens_prefixing(rest))
            else:
                allowed.update(info.eos_token_ids)
    return allowed


def assert_masks_equal_finite_language(compiled, documents: set[bytes], info, *, seed: str,
                                       limit: int = 400) -> None:
    prefixes = sorted({d[:i] for d in documents for i in range(len(d) + 1)})
    random.Random(seed).shuffle(prefixes)
    for prefix in prefixes[:limit]:
        matcher = Matcher(compiled)
        assert matcher.accept_bytes(prefix), prefix
        got, want = mask_of(matcher, info), expected_mask(prefix, documents, info)
        assert got == want, (prefix, sorted(got - want)[:5], sorted(want - got)[:5])
        for token in sorted(want)[:3]:
            assert matcher.is_token_allowed(token), (prefix, token)
