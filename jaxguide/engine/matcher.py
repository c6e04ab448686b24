"""Matcher: the grammar state of one sequence, and the packed token bitmask it fills.

A `CompiledGrammar` (from `compile_grammar`) is immutable and shared by any number of
`Matcher`s, one per sequence, on any threads. A Matcher accepts tokens, rolls back, and writes
the set of allowed next tokens into a row of a uint32 bitmask `[B, W]` (token t is bit t % 32
of word t // 32, W >= ceil(logits_width / 32)). Matchers never raise while decoding: a work
budget exceeded or an internal fault puts the matcher in an error state (`error` says why) in
which only EOS is allowed, so a batch keeps running. The lexer's DFA is built lazily, as text
reaches new states; every call charges the states it builds to `mask_step_budget`, so no call
(accept, query or mask) can run for long on a grammar with huge lexer states.

While a batch operation (`jaxguide.BatchMatcher`) owns a matcher, e.g. a mask fill in flight
on the thread pool, every Matcher method raises `MatcherBusyError` instead of racing it.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

import numpy as np

from jaxguide.engine._core import _native
from jaxguide.engine.compiled_grammar import CompiledGrammar
from jaxguide.engine.token_boundaries import (
    complete_utf8_prefix,
    encode_in_context,
    first_byte_classes,
    unstable_tail_start,
)
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.errors import MatcherBusyError


def allocate_token_bitmask(batch: int, logits_width: int) -> np.ndarray:
    """A zeroed uint32 bitmask `[batch, ceil(logits_width / 32)]` (token ids are 32-bit, so
    `logits_width` is at most 2**32)."""
    batch, logits_width = operator.index(batch), operator.index(logits_width)
    if batch < 0 or not 0 < logits_width <= 2**32:
        raise ValueError(f"bad bitmask shape: batch={batch}, logits_width={logits_width}")
    return np.zeros((batch, (logits_width + 31) // 32), dtype=np.uint32)


def eos_only_row(tokenizer_info: TokenizerInfo, width: int) -> np.ndarray:
    """The uint32 `[width]` mask row that allows only the EOS tokens."""
    row = np.zeros(width, np.uint32)
    for token in tokenizer_info.eos_token_ids:
        row[token >> 5] |= np.uint32(1 << (token & 31))
    return row


_matcher_in_flight = _native._matcher_in_flight


def _token_id(token_id) -> int | None:
    """`token_id` as an int (TypeError for a float or another non-integer), or None when it is
    no token of any vocabulary (negative, or beyond 32 bits): such an id is never allowed."""
    token = operator.index(token_id)
    return token if 0 <= token < 2**32 else None


# The most bytes one compute_ff_bytes / compute_ff_tokens call looks ahead: a grammar can force
# an endless run of bytes (`a+` before a terminal that starts with `a`), and each byte is one
# lexer and parser step. A larger `max_bytes` is clamped to it.
MAX_FORCED_BYTES = 1 << 16


def _bound(value, name: str) -> int:
    """A size argument (`max_bytes`, `max_states`) as an int in [0, 2**63): TypeError for a
    non-integer, ValueError when negative; huge values are clamped (a bound past any grammar)."""
    if value is None or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    value = operator.index(value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return min(value, 2**63 - 1)


class Matcher:
    """The grammar state of one sequence. Use a Matcher from one thread at a time: a call made
    while another thread's call (or an unfinished batch operation) holds it raises
    `MatcherBusyError` instead of racing (`fork()` a matcher per thread)."""

    def __init__(self, compiled: CompiledGrammar, *, mask_step_budget: int | None = None,
                 required_prefix: bytes = b""):
        """A fresh matcher at the start of the grammar.

        Args:
          compiled: from `compile_grammar`.
          mask_step_budget: work budget of one mask computation, in lexer steps (one byte
            through one lexing hypothesis, and 4 per NFA instruction visited while building
            lexer DFA states); default 5e7. Every other call gets the same budget for the
            lexer DFA states it builds (this constructor too). Exceeding it puts the matcher
            in its error state (EOS-only masks, `error` says why); a call that runs out
            answers as in that state (an accept refuses its token), except
            `shortest_lexeme_completion`, which answers None and changes nothing.
          required_prefix: token healing (see `heal_prompt`): bytes the output must start with
            before the grammar's text; a token may span their end and the grammar's first bytes.
        """
        if not isinstance(compiled, CompiledGrammar):
            raise TypeError("Matcher needs a CompiledGrammar (from jaxguide.compile_grammar), "
                            f"got {type(compiled).__name__}")
        self.compiled = compiled
        if mask_step_budget is None:
            self.native = _native.Matcher(compiled.native)
        else:
            budget = operator.index(mask_step_budget)
            if budget <= 0:
                raise ValueError(f"mask_step_budget must be positive, got {mask_step_budget}")
            self.native = _native.Matcher(compiled.native, min(budget, 2**64 - 1))
        if required_prefix:
            self.native.require_prefix(bytes(required_prefix))

    def accept_token(self, token_id: int) -> bool:
        """Advances by one token; False (state unchanged) if the token is not allowed (an id
        outside the vocabulary never is), or False in the error state, entered when a budget
        runs out (building the lexer states the token reaches past `mask_step_budget`)."""
        token = _token_id(token_id)
        return token is not None and self._idle().accept_token(token)

    def accept_tokens(self, token_ids: Iterable[int]) -> int:
        """Accepts tokens until one is not allowed; returns how many were accepted."""
        native = self._idle()
        accepted = 0
        for token_id in token_ids:
            token = _token_id(token_id)
            if token is None or not native.accept_token(token):
                break
            accepted += 1
        return accepted

    def accept_bytes(self, data: bytes) -> bool:
        """Advances by raw bytes (all or nothing); counts as one step for rollback. As for
        `accept_token`, a budget that runs out (a long text through huge lexer states) refuses
        the bytes and leaves the matcher in its error state."""
        return self._idle().accept_bytes(bytes(data))

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last `num_tokens` accepted steps (at most all of them)."""
        num_tokens = operator.index(num_tokens)
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        self._idle().rollback(min(num_tokens, 2**64 - 1))  # the native side clamps to the history

    def reset(self) -> None:
        self._idle().reset()

    def fork(self) -> Matcher:
        """An independent copy of this matcher's state."""
        other = Matcher.__new__(Matcher)
        other.compiled = self.compiled
        other.native = self._idle().fork()
        return other

    def is_accepting(self) -> bool:
        """Whether the output so far is a complete sentence (EOS allowed)."""
        return self._idle().is_accepting()

    def min_terminals_to_accept(self) -> int:
        """The fewest grammar terminals (lexemes: a key, a number, `,`) still to write before
        the output is complete (0 when `is_accepting()`); a guide for steering output toward
        its end (jaxguide.testing's walks use it), not a byte count. Large (2**30 - 1) in the
        error state."""
        return self._idle().min_terminals_to_accept()

    def shortest_lexeme_completion(self, max_states: int = 4096) -> bytes | None:
        """The shortest bytes that finish the lexeme in progress as a terminal the grammar
        takes next (b"" when none is in progress or it can end here), found by a breadth-first
        search over at most `max_states` lexer states (None beyond, once the lexer states it
        builds pass `mask_step_budget` (state unchanged), or in the error state).
        Printable ASCII is preferred; `accept_bytes` still decides (a follow restriction may
        refuse them). With `min_terminals_to_accept`, a guide for steering output to its end."""
        return self._idle().shortest_lexeme_completion(_bound(max_states, "max_states"))

    def is_terminated(self) -> bool:
        """Whether EOS was accepted."""
        return self._idle().is_terminated()

    def is_token_allowed(self, token_id: int) -> bool:
        """Whether one token is allowed now (no full mask computed). State unchanged, except
        that a budget running out (see `mask_step_budget`) enters the error state."""
        token = _token_id(token_id)
        return token is not None and self._idle().is_token_allowed(token)

    def compute_ff_bytes(self, max_bytes: int = 256) -> bytes:
        """The bytes the grammar forces next (every continuation starts with them), up to a
        forced special token or max_bytes (at most `MAX_FORCED_BYTES`); b"" when the output may
        end here. State unchanged (b"" and the error state if a budget runs out, see
        `mask_step_budget`)."""
        pieces = self._idle().compute_forced(min(_bound(max_bytes, "max_bytes"), MAX_FORCED_BYTES))
        return pieces[0] if pieces and isinstance(pieces[0], bytes) else b""

    def compute_ff_tokens(self, recent_tokens: Sequence[int] = (), *,
                          max_hold_back_tokens: int = 4, max_bytes: int = 256,
                          max_span_probes: int = 16) -> list[int]:
        """The forced continuation as the tokens the model itself would use (fast-forward).

        The forced bytes (and forced special tokens) are tokenized canonically with the
        tokenizer's own encoder, the bytes in the context of `recent_tokens` (the last tokens of
        the sequence so far: a forced text that would merge with them yields nothing). Then, as
        in llguidance's fast-forward, tokens are held back from the end of the forced bytes
        when some token that the grammar allows there starts inside the last
        `max_hold_back_tokens` tokens and reaches past the end of the forced bytes: the model
        would write that longer token, so forcing the shorter ones would be non-canonical
        (e.g. a forced `order` before `Id`|`Name`, or a forced `"` before `": `). The tokens of
        the last pre-token of the forced bytes are held back too where a character the grammar
        lets follow could change it, for tokenizers that split text with a pre-tokenizer regex
        (a forced `":[]` before `}` or `,`: Llama-3 tokenizes the whole punctuation run `":[]},`
        together, starting `":[`; `token_boundaries.unstable_tail_start`). Last, the tokens
        kept must also begin the tokenization of the forced bytes continued by each of (up to
        `max_span_probes` of) those longer tokens: BPE merges may move a boundary before the
        cut (Gemma 3 encodes `":".` as `":` `".` but `":"./` as `":"` `./`). State unchanged;
        accepting the returned tokens advances the matcher as usual.

        Raises:
          TokenizerError: the TokenizerInfo has no encoder.
          ValueError: a recent token id outside the vocabulary, a negative bound.
          TypeError: a non-integer token id or bound.
        """
        info = self.compiled.tokenizer_info
        recent = [operator.index(t) for t in list(recent_tokens)[-3:]]
        if any(not 0 <= t < info.vocab_size for t in recent):
            raise ValueError(f"recent_tokens {recent} hold an id outside the vocabulary of "
                             f"{info.vocab_size}")
        pieces = self._idle().compute_forced(min(_bound(max_bytes, "max_bytes"), MAX_FORCED_BYTES))
        if not pieces:  # the usual case in a decode loop: nothing is forced
            return []
        tokens: list[int] = []
        context = info.decode_bytes(recent)
        for k, piece in enumerate(pieces):
            if isinstance(piece, int):
                tokens.append(piece)
                context = b""
                continue
            last = k == len(pieces) - 1
            encoded = encode_in_context(info, context, piece if not last else
                                         complete_utf8_prefix(piece))
            if encoded is None:
                return tokens
            if last:
                encoded = self._hold_back(tokens, context, encoded, max_hold_back_tokens,
                                          _bound(max_span_probes, "max_span_probes"))
            tokens.extend(encoded)
            context = b""
        return tokens

    def _hold_back(self, before: list[int], context: bytes, encoded: list[int],
                   max_tokens: int, span_probes: int) -> list[int]:
        """Drops the final tokens of `encoded` (the last forced bytes, after the tokens
        `before`, encoded after `context`) that a grammar-allowed token starting among them
        could span past the end; the tokens kept are also those the tokenizer gives the text
        continued by such a token (BPE merges may move a boundary before the cut: Gemma
        encodes `":".` as `":` `".` but `":"./` as `":"` `./`)."""
        info = self.compiled.tokenizer_info
        forced = info.decode_bytes(encoded)
        window = len(info.decode_bytes(encoded[-max_tokens:])) if max_tokens > 0 else 0
        cut = len(forced)
        spanning: np.ndarray = np.zeros(0, np.int64)
        span_start = cut
        lengths = info.token_byte_lengths
        for start in range(len(forced) - window, len(forced)):
            suffix = forced[start:]
            with_prefix = info.tokens_with_prefix(suffix)
            longer = with_prefix[lengths[with_prefix] > len(suffix)]
            if not len(longer):
                continue
            probe = self.fork()
            if not all(probe.accept_token(t) for t in before) or not probe.accept_bytes(
                    forced[:start]):
                continue
            if len(longer) <= 16:
                spanning = longer[[probe.is_token_allowed(int(t)) for t in longer]]
            else:  # (e.g. the thousands of tokens that start with `"`): one mask, vectorized
                mask = allocate_token_bitmask(1, info.logits_width)
                probe.fill_next_token_bitmask(mask)
                spanning = longer[((mask[0, longer >> 5] >> (longer & 31)) & 1).astype(bool)]
            if len(spanning):
                cut = span_start = start
                break
        # The last pre-token may change with what follows; the probe of what the grammar lets
        # follow can only move the cut later, so it is skipped when the cut is already earlier.
        if info.regex_pre_tokenized and unstable_tail_start(forced) < cut:
            cut = min(cut, unstable_tail_start(forced, self._following_classes(before, forced)))
        kept, length = [], 0
        for token in encoded:
            length += len(info.token_bytes(token))
            if length > cut:
                break
            kept.append(token)
        return self._stable_prefix(context, kept, forced[:span_start], spanning[:span_probes])

    def _stable_prefix(self, context: bytes, kept: list[int], data: bytes,
                       spanning: np.ndarray) -> list[int]:
        """The longest prefix of `kept` that is also a prefix of the tokenization of `data`
        (the forced bytes before the spanning tokens start) continued by each of the
        grammar-allowed `spanning` tokens."""
        info = self.compiled.tokenizer_info
        for token in spanning.tolist():
            if not kept:
                break
            text = complete_utf8_prefix(data + info.token_bytes(token))
            other = encode_in_context(info, context, text) or []
            same = 0
            while same < min(len(kept), len(other)) and kept[same] == other[same]:
                same += 1
            kept = kept[:same]
        return kept

    def _following_classes(self, before: list[int], forced: bytes) -> frozenset[str] | None:
        """The character classes the grammar lets follow the forced bytes (first bytes of the
        tokens its mask allows there); None if the probe fails."""
        info = self.compiled.tokenizer_info
        probe = self.fork()
        if not all(probe.accept_token(t) for t in before) or not probe.accept_bytes(forced):
            return None
        mask = allocate_token_bitmask(1, info.logits_width)
        probe.fill_next_token_bitmask(mask)
        bits = np.unpackbits(mask[0].view(np.uint8), bitorder="little")[:info.vocab_size]
        return first_byte_classes(np.unique(info.token_first_bytes[np.flatnonzero(bits)]))

    def validate_tokens(self, token_ids: Sequence[int]) -> int:
        """Length of the longest prefix of `token_ids` (e.g. a speculative draft) the grammar
        allows from here (EOS counts as a token, allowed where the output may end). State
        unchanged."""
        accepted = self.accept_tokens(token_ids)
        self.rollback(accepted)
        return accepted

    def fill_draft_bitmasks(self, bitmask: np.ndarray, draft: Sequence[int],
                            first_row: int = 0) -> int:
        """Masks for the K+1 positions of a K-token draft, in one call.

        Row `first_row + i` receives the mask after `draft[:i]` for i = 0..n, where n is the
        length of the draft's longest legal prefix; rows first_row+n+1 .. first_row+K are
        zeroed (no position after an illegal draft token is ever verified). State unchanged.

        Args:
          bitmask: uint32 `[B, W]`, C-contiguous, with at least first_row + K + 1 rows.
          draft: the K proposed tokens, from this matcher's position.
          first_row: where the K+1 rows start.

        Returns:
          n, the number of draft tokens the grammar allows in a row.
        """
        draft = [int(t) for t in draft]
        if bitmask.ndim != 2 or first_row < 0 or bitmask.shape[0] < first_row + len(draft) + 1:
            raise ValueError(f"a {len(draft)}-token draft needs {len(draft) + 1} rows from row "
                             f"{first_row}; the bitmask has shape {bitmask.shape}")
        accepted = 0
        try:
            for i in range(len(draft) + 1):
                self.fill_next_token_bitmask(bitmask, first_row + i)
                if i == len(draft) or not self.accept_token(draft[i]):
                    break
                accepted += 1
        finally:
            self.rollback(accepted)
        bitmask[first_row + accepted + 1:first_row + len(draft) + 1] = 0
        return accepted

    def fill_next_token_bitmask(self, bitmask: np.ndarray, row: int = 0) -> None:
        """Writes the allowed next tokens into `bitmask[row]` (uint32 `[B, W]`, C-contiguous).

        Raises:
          ValueError: a bad bitmask (dtype, shape, layout, read-only, too narrow) or a row
            outside it. TypeError: a non-integer row.
        """
        if isinstance(row, bool):
            raise TypeError(f"row must be an int, got {row!r}")
        row = operator.index(row)
        if not -2**63 <= row < 2**63:
            raise ValueError(f"row {row} is outside the bitmask")
        self._idle().fill_next_token_bitmask(bitmask, row)

    @property
    def pending_prefix(self) -> bytes:
        """Bytes of `required_prefix` the output has not produced yet."""
        return self._idle().pending_prefix

    @property
    def error(self) -> str | None:
        """None, or why the matcher stopped (then only EOS is allowed)."""
        message = self._idle().error
        return message or None

    def _idle(self) -> _native.Matcher:
        """The native matcher, if no unfinished batch operation owns it."""
        native = self.native
        if _matcher_in_flight(native):
            raise MatcherBusyError(
                "this Matcher is in use by a batch operation that has not finished (a mask fill "
                "in flight?): wait for its BatchFillHandle before using the matcher")
        return native
