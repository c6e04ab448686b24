"""Speculation with grammars: draft verification and speculate-then-correct.

Design note. Speculative decoding proposes K draft tokens and has the model score them in one
extend step; with a grammar, the target's choice at draft position i must be taken under the
mask *after draft[:i]*. `fill_draft_bitmasks` computes those K+1 masks in one call by accepting
the draft one token at a time, filling a row per position, then rolling back: the matcher ends
where it started, and rows past the first grammar-illegal draft token are zero (the target can
never agree with an illegal token there, so verification stops before them).
`validate_tokens` is the same walk without masks (the longest legal prefix of a draft).

Speculate-then-correct (grammar-guide): `check_text` takes text from any generator, finds the
longest prefix that the grammar allows (a prefix of some sentence of the language), and returns
a matcher positioned after it with the allowed continuations there: the caller regenerates
from that point under the grammar instead of from scratch. The walk is byte by byte
(`accept_bytes` of one byte per step), so its cost is one lexer step per byte plus parser work
at lexeme boundaries; the prefix is byte-exact (it may end inside a UTF-8 character).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from jaxguide.engine.compiled_grammar import CompiledGrammar
from jaxguide.engine.matcher import Matcher, allocate_token_bitmask


def validate_tokens(matcher: Matcher, token_ids: Sequence[int]) -> int:
    """The length of the longest prefix of `token_ids` the grammar allows from the matcher's
    state (EOS counts as a token, allowed where the output may end). State unchanged."""
    return matcher.validate_tokens(token_ids)


def fill_draft_bitmasks(matcher: Matcher, bitmask: np.ndarray, draft: Sequence[int],
                        first_row: int = 0) -> int:
    """Masks for the K+1 positions of a K-token draft, in one call (`Matcher.fill_draft_bitmasks`:
    rows after the first illegal draft token are zeroed; state unchanged). Returns the number
    of draft tokens the grammar allows in a row."""
    return matcher.fill_draft_bitmasks(bitmask, draft, first_row)


@dataclasses.dataclass
class TextCheck:
    """What `check_text` found.

    Attributes:
      valid_prefix: the longest prefix of the text (bytes) the grammar allows.
      valid_length: len(valid_prefix); equal to the text's length iff the whole text is allowed.
      complete: whether the whole text is a complete sentence of the grammar.
      matcher: a matcher positioned after `valid_prefix` (continue generation from it).
      allowed_tokens: int64 token ids allowed right after `valid_prefix`.
      forced: the bytes the grammar forces right after `valid_prefix` (b"" if none).
    """

    valid_prefix: bytes
    valid_length: int
    complete: bool
    matcher: Matcher
    allowed_tokens: np.ndarray
    forced: bytes


def check_text(compiled: CompiledGrammar, text: str | bytes, *,
               matcher: Matcher | None = None) -> TextCheck:
    """Speculate-then-correct: the longest grammar-valid prefix of a generator's text.

    Args:
      compiled: the grammar (compiled against the tokenizer whose token ids are wanted).
      text: the generator's output.
      matcher: optional matcher to start from (e.g. after a shared prefix); it is advanced.

    Returns:
      A TextCheck; `matcher` is positioned after the valid prefix.
    """
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    matcher = matcher if matcher is not None else Matcher(compiled)
    length = 0
    for length in range(len(data) + 1):
        if length == len(data) or not matcher.accept_bytes(data[length:length + 1]):
            break
    info = compiled.tokenizer_info
    bitmask = allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")
    allowed = np.flatnonzero(bits[:info.vocab_size]).astype(np.int64)
    complete = length == len(data) and matcher.is_accepting()
    return TextCheck(valid_prefix=data[:length], valid_length=length, complete=complete,
                     matcher=matcher, allowed_tokens=allowed, forced=matcher.compute_ff_bytes())
