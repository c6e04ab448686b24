"""Matcher: the grammar state of one sequence, and the packed token bitmask it fills.

A `CompiledGrammar` (from `compile_grammar`) is immutable and shared by any number of
`Matcher`s, one per sequence, on any threads. A Matcher accepts tokens, rolls back, and writes
the set of allowed next tokens into a row of a uint32 bitmask `[B, W]` (token t is bit t % 32
of word t // 32, W >= ceil(logits_width / 32)). Matchers never raise while decoding: a work
budget exceeded or an internal fault puts the matcher in an error state (`error` says why) in
which only EOS is allowed, so a batch keeps running.

While a batch operation (`jaxguide.BatchMatcher`) owns a matcher, e.g. a mask fill in flight
on the thread pool, every Matcher method raises `MatcherBusyError` instead of racing it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from jaxguide import _native
from jaxguide.errors import GrammarError, MatcherBusyError
from jaxguide.grammar import Grammar
from jaxguide.tokenizer import TokenizerInfo


def allocate_token_bitmask(batch: int, logits_width: int) -> np.ndarray:
    """A zeroed uint32 bitmask `[batch, ceil(logits_width / 32)]`."""
    if batch < 0 or logits_width <= 0:
        raise ValueError(f"bad bitmask shape: batch={batch}, logits_width={logits_width}")
    return np.zeros((batch, (logits_width + 31) // 32), dtype=np.uint32)


class CompiledGrammar:
    """A grammar compiled against a tokenizer: immutable, thread-safe, shared by matchers."""

    def __init__(self, grammar: Grammar, tokenizer_info: TokenizerInfo):
        ir = grammar.ir
        self.grammar = grammar
        self.tokenizer_info = tokenizer_info
        self.native = _native.CompiledGrammar(
            [(t.name, t.regex, t.lazy) for t in ir.terminals],
            list(ir.nonterminals),
            [(lhs, list(rhs)) for lhs, rhs in ir.rules],
            ir.start,
            list(ir.ignore),
            tokenizer_info.native,
        )

    def __repr__(self) -> str:
        return f"CompiledGrammar({self.grammar!r}, {self.tokenizer_info!r})"


def compile_grammar(grammar: Grammar | str, tokenizer_info: TokenizerInfo) -> CompiledGrammar:
    """Compiles a grammar (a `Grammar`, or Lark text) against a tokenizer.

    Raises:
      GrammarError: the grammar is invalid, uses an unsupported regex feature, or generates no
        string.
    """
    if isinstance(grammar, str):
        grammar = Grammar.from_lark(grammar)
    if not isinstance(grammar, Grammar):
        raise GrammarError(f"expected a jaxguide.Grammar or Lark text, got {type(grammar).__name__}")
    return CompiledGrammar(grammar, tokenizer_info)


_matcher_in_flight = _native._matcher_in_flight


class Matcher:
    """The grammar state of one sequence (not thread-safe; one per sequence)."""

    def __init__(self, compiled: CompiledGrammar, *, mask_step_budget: int | None = None):
        """A fresh matcher at the start of the grammar.

        Args:
          compiled: from `compile_grammar`.
          mask_step_budget: work budget of one mask computation, in lexer steps (one byte
            through one lexing hypothesis); default 5e7. Exceeding it puts the matcher in its
            error state (EOS-only masks, `error` says why).
        """
        self.compiled = compiled
        if mask_step_budget is None:
            self.native = _native.Matcher(compiled.native)
        else:
            if mask_step_budget <= 0:
                raise ValueError(f"mask_step_budget must be positive, got {mask_step_budget}")
            self.native = _native.Matcher(compiled.native, mask_step_budget)

    def accept_token(self, token_id: int) -> bool:
        """Advances by one token; False (state unchanged) if the token is not allowed."""
        return self._idle().accept_token(int(token_id))

    def accept_tokens(self, token_ids: Iterable[int]) -> int:
        """Accepts tokens until one is not allowed; returns how many were accepted."""
        native = self._idle()
        accepted = 0
        for token_id in token_ids:
            if not native.accept_token(int(token_id)):
                break
            accepted += 1
        return accepted

    def accept_bytes(self, data: bytes) -> bool:
        """Advances by raw bytes (all or nothing); counts as one step for rollback."""
        return self._idle().accept_bytes(bytes(data))

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last `num_tokens` accepted steps."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        self._idle().rollback(num_tokens)

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

    def is_terminated(self) -> bool:
        """Whether EOS was accepted."""
        return self._idle().is_terminated()

    def is_token_allowed(self, token_id: int) -> bool:
        """Whether one token is allowed now (no full mask computed)."""
        return self._idle().is_token_allowed(int(token_id))

    def fill_next_token_bitmask(self, bitmask: np.ndarray, row: int = 0) -> None:
        """Writes the allowed next tokens into `bitmask[row]` (uint32 `[B, W]`, C-contiguous)."""
        self._idle().fill_next_token_bitmask(bitmask, row)

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
