"""Token boundaries: where a tokenizer would cut text, at the prompt/output boundary
(`heal_prompt`) and around forced bytes (`encode_in_context`, used by fast-forward).

Canonical tokenization is a property of the tokenizer, not of the grammar: these functions ask
the tokenizer itself (`TokenizerInfo.encode`) and compare byte offsets, so the tokens they give
are the ones the model would have produced.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxguide.engine.tokenizer import TokenizerInfo


def heal_prompt(tokens: Sequence[int], tokenizer_info: TokenizerInfo, *,
                max_healed_tokens: int = 1) -> tuple[list[int], bytes]:
    """Token healing at the prompt/output boundary.

    A prompt that ends inside what the model would write as one longer token (a trailing space
    before a word, `"` before `":`) pushes the model towards unnatural tokenizations. This
    removes up to `max_healed_tokens` final tokens whose bytes some longer token extends, and
    returns them as bytes the output must start with: pass them as
    `Matcher(..., required_prefix=...)` so the first sampled token may span them.

    Returns:
      (kept_tokens, forced_prefix_bytes); nothing healed -> (tokens, b"").
    """
    kept, healed = [int(t) for t in tokens], b""
    for _ in range(max_healed_tokens):
        if not kept:
            break
        candidate = tokenizer_info.token_bytes(kept[-1]) + healed
        if len(candidate) == len(healed):  # a special token: the boundary is already clean
            break
        if not any(len(tokenizer_info.token_bytes(int(t))) > len(candidate)
                   for t in tokenizer_info.tokens_with_prefix(candidate)):
            break
        kept.pop()
        healed = candidate
    return kept, healed


def complete_utf8_prefix(data: bytes) -> bytes:
    """The longest prefix of `data` that ends on a UTF-8 character boundary."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            data[:cut].decode("utf-8")
            return data[:cut]
        except UnicodeDecodeError:
            continue
    return b""


def encode_in_context(info: TokenizerInfo, context: bytes, data: bytes) -> list[int] | None:
    """The tokens the tokenizer gives `data` when it follows `context`, or None when the
    tokenization of context + data has no token boundary where `data` starts (the forced text
    would merge with what precedes it). Without context (the start, or after a special token)
    `data` is encoded alone, or — when the tokenizer prepends a dummy prefix (SentencePiece),
    which does not apply mid-sequence — after the first neutral context that leaves a clean
    boundary."""
    if not data:
        return []
    contexts = [context] if context else ([b""] if not info.dummy_prefix else
                                          [b"\n", b".", b"a", b"0"])
    for candidate in contexts:
        try:
            text = (candidate + data).decode("utf-8")
        except UnicodeDecodeError:
            return None
        tokens = info.encode(text)
        start = len(info.dummy_prefix) + len(candidate)
        if info.decode_bytes(tokens) != info.dummy_prefix + candidate + data:
            return None
        length = 0
        for i, token in enumerate(tokens):
            if length == start:
                return tokens[i:]
            length += len(info.token_bytes(token))
            if length > start:
                break
    return None
