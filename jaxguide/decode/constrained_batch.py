"""ConstrainedBatch: the grammar machinery of one batch as hooks for a decode loop someone else
owns (a MaxText-style `sampling()` call, a gemma-style sampler loop), and the per-row helpers
that `generate` shares with it.

The hooks: "start the masks for step t given the tokens sampled at step t-1" (`start_masks`),
"give me this step's device mask" (`masks`), "these tokens were sampled" (`tokens_sampled`);
see `jaxguide.decode.generate` for the step they make up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide.decode.requests import DecodeStats, Result
from jaxguide.device.mask_queue import MaskQueue, PendingMask
from jaxguide.device.sampling import SamplingConfig, sample
from jaxguide.engine.batch_matcher import BatchMatcher
from jaxguide.engine.compiled_grammar import CompiledGrammar, compile_grammar
from jaxguide.engine.matcher import Matcher, eos_only_row
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.errors import JaxguideError
from jaxguide.grammars.grammar import Grammar


class ConstrainedBatch:
    """Grammar state of a batch of B sequences for a decode loop: the hook API.

    Usage in a decode loop that owns the model and the sampler::

        constraint = ConstrainedBatch(tokenizer_info, [grammar_or_None, ...])
        constraint.start_masks()                      # step 0, while the prefill runs
        mask = constraint.masks()                     # jax uint32 [B, W] or None
        tokens = constraint.sample(logits, key, config)   # or jaxguide.sample(..., mask)
        while ...:
            logits = forward(tokens)                  # dispatched asynchronously
            constraint.start_masks(tokens)            # "tokens of step t-1": accept, fill
            tokens = constraint.sample(logits, key, config)

    Rows without a grammar are unconstrained (their mask row is ignored by the sampler). A row
    whose grammar failed, or ended (only EOS allowed after a complete sentence), is reported by
    `finished_rows()` with its reason; it is no longer filled.

    Not thread-safe: one decode loop drives it.
    """

    def __init__(self, tokenizer_info: TokenizerInfo,
                 grammars: Sequence[Grammar | CompiledGrammar | None], *,
                 logits_width: int | None = None, batch_matcher: BatchMatcher | None = None,
                 num_buffers: int = 2, sharding: jax.sharding.Sharding | None = None,
                 global_batch_size: int | None = None, mask_every_step: bool = False):
        """Compiles the grammars and allocates the mask queue.

        Args:
          tokenizer_info: the model's tokenizer.
          grammars: one per row: a Grammar, a CompiledGrammar (compiled against
            `tokenizer_info`) or None. A grammar that fails to compile fails only its row
            (see `errors`); equal Grammar objects are compiled once.
          logits_width: V of the logits (default `tokenizer_info.logits_width`).
          batch_matcher: the thread pool that fills masks (default: the shared pool).
          num_buffers: host buffers of the mask queue.
          sharding: sharding of the global `[B, W]` device masks (default: first local
            device). With a mesh over several processes, `grammars` are this process's rows
            (in global order) and `global_batch_size` is B.
          global_batch_size: B over all processes (default: len(grammars)).
          mask_every_step: `masks()` returns an array even when no row is constrained (a
            multi-process loop must run the same sampler program on every process).
        """
        self.tokenizer_info = tokenizer_info
        self.batch_size = len(grammars)
        if self.batch_size < 1:
            raise ValueError("ConstrainedBatch needs at least one row")
        self.logits_width = int(logits_width or tokenizer_info.logits_width)
        if self.logits_width < tokenizer_info.vocab_size:
            raise ValueError(f"logits_width {self.logits_width} is below the tokenizer's "
                             f"vocabulary of {tokenizer_info.vocab_size}")
        self.width = (self.logits_width + 31) // 32
        self.errors: dict[int, str] = {}
        self.finish_reasons: dict[int, str] = {}
        self.matchers, compile_errors = row_matchers(tokenizer_info, grammars)
        for row, message in compile_errors.items():
            self._finish(row, "error", message)
        self.batch_matcher = batch_matcher or BatchMatcher()
        self.global_batch_size = int(global_batch_size or self.batch_size)
        self.mask_every_step = mask_every_step
        self.queue = MaskQueue(self.global_batch_size, self.width, num_buffers=num_buffers,
                               sharding=sharding)
        if self.queue.local_batch_size != self.batch_size:
            raise ValueError(f"{self.batch_size} grammars but the sharding gives this process "
                             f"{self.queue.local_batch_size} of the {self.global_batch_size} rows")
        self._row_sharding = _row_sharding_of(sharding)
        self._eos_only = eos_only_row(tokenizer_info, self.width)
        self._pending: PendingMask | None = None
        self._pending_rows: np.ndarray = np.zeros(0, np.int64)
        self._constrained_host = np.zeros(self.batch_size, bool)
        self._constrained_device: jax.Array | None = None
        # Opportunistic masking: rows whose mask `start_masks` does not fill (the loop samples
        # them unconstrained, checks the token, and calls `fill_rows_now` if it is refused).
        self.deferred_rows: set[int] = set()

    # --------------------------------------------------------------------------- row state

    def _finish(self, row: int, reason: str, error: str | None = None) -> None:
        if row in self.finish_reasons:
            return
        self.finish_reasons[row] = reason
        if error is not None:
            self.errors[row] = error

    def active_constrained_rows(self) -> np.ndarray:
        """int64 `[n]`: rows with a grammar that have not finished, ascending."""
        return np.array([row for row, m in enumerate(self.matchers)
                         if m is not None and row not in self.finish_reasons], np.int64)

    def finished_rows(self) -> dict[int, str]:
        """{row: reason} of the rows whose grammar stopped them ("error", "grammar_end")."""
        return dict(self.finish_reasons)

    def stop_row(self, row: int, reason: str = "eos") -> None:
        """Marks a row as stopped by the loop (e.g. it sampled EOS): no more masks for it."""
        self._finish(int(row), reason)

    # --------------------------------------------------------------------------- tokens

    def tokens_sampled(self, tokens: Sequence[int] | np.ndarray,
                       rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Accepts `tokens[i]` into the matcher of row `rows[i]` (default: every active
        constrained row, `tokens` indexed by row). A refused token fails its row.

        Returns:
          bool `[len(rows)]`: whether each token was accepted.
        """
        self._wait_pending()
        tokens = np.asarray(tokens, np.int64)
        if rows is None:
            rows = self.active_constrained_rows()
            picked = tokens[rows]
        else:
            rows = np.asarray(rows, np.int64)
            picked = tokens
            if len(picked) != len(rows):
                raise ValueError(f"{len(picked)} tokens for {len(rows)} rows")
        if len(rows) == 0:
            return np.zeros(0, bool)
        ok = self.batch_matcher.accept_tokens([self.matchers[r] for r in rows], picked)
        for row, token, accepted in zip(rows, picked, ok):
            if not accepted:
                self._finish(int(row), "error", f"token {int(token)} is not allowed by the "
                             "grammar here")
        return ok

    def accept_forced(self, row: int, tokens: Sequence[int]) -> None:
        """Accepts fast-forward tokens (from `compute_ff_tokens`) into one row's matcher."""
        matcher = self.matchers[row]
        assert matcher is not None
        if tokens and matcher.accept_tokens(list(tokens)) != len(tokens):
            self._finish(row, "error", "a forced token was refused (internal error)")

    # --------------------------------------------------------------------------- masks

    def start_masks(self, sampled: Sequence[int] | np.ndarray | None = None) -> None:
        """Starts filling this step's masks on the host threads and returns at once.

        Args:
          sampled: optional int `[B]`, the tokens sampled at the previous step: accepted first
            (rows that are not active constrained rows ignore theirs).
        """
        self._wait_pending()
        rows = self.active_constrained_rows()
        if self.deferred_rows:
            rows = rows[~np.isin(rows, list(self.deferred_rows))]
        self._pending_rows = rows
        if len(rows) == 0:
            self._pending = None
            return
        tokens = None
        if sampled is not None:
            tokens = np.asarray(sampled, np.int64)[rows]
        self._pending = self.queue.fill_async(
            self.batch_matcher, [self.matchers[r] for r in rows], rows=rows, tokens=tokens)

    def masks(self) -> jax.Array | None:
        """Waits for the masks started by `start_masks`, starts their host-to-device copy.

        Rows whose grammar failed or ended are marked finished (see `finished_rows`).

        Returns:
          uint32 `jax.Array` `[B, W]` (rows of unconstrained or finished rows hold stale data:
          pass `constrained()` to the sampler), or None when no row is constrained.
        """
        pending = self._pending
        if pending is None:
            self._update_constrained(np.zeros(0, np.int64))
            if self.mask_every_step:  # contents unused: no row is constrained
                return self.queue.submit(self.queue.acquire())
            return None
        self._pending = None
        array = pending.submit()
        still = self._settle_filled_rows(self._pending_rows, pending.buffer, pending.errors)
        self._update_constrained(np.array(still, np.int64))
        return array

    def _settle_filled_rows(self, rows: np.ndarray, buffer: np.ndarray,
                            errors: Mapping[int, str] | None) -> list[int]:
        """After a fill of `rows` into `buffer`: finishes the rows that failed ("error") or
        whose grammar ended ("grammar_end"); returns the others, still running."""
        for row, message in (errors or {}).items():
            self._finish(int(row), "error", message)
        still = []
        for row in rows:
            row = int(row)
            if row in self.finish_reasons:
                continue
            if ended_by_grammar(self.matchers[row], buffer[row], self._eos_only):
                self._finish(row, "grammar_end")
                continue
            still.append(row)
        return still

    def constrained(self) -> jax.Array:
        """bool `[B]` on the device: the rows whose mask row the sampler must apply."""
        if self._constrained_device is None:
            self._constrained_device = self._put_rows(self._constrained_host)
        return self._constrained_device

    def _put_rows(self, host: np.ndarray) -> jax.Array:
        if self._row_sharding is None:
            return jnp.asarray(host)
        return jax.make_array_from_process_local_data(self._row_sharding, host,
                                                      (self.global_batch_size,))

    def fill_rows_now(self, rows: Sequence[int]) -> tuple[jax.Array, jax.Array]:
        """Fills the masks of `rows` now (opportunistic masking: their sampled token was
        refused) and starts the copy. Rows whose grammar failed or ended are marked finished.

        Returns:
          (uint32 `[B, W]` masks, bool `[B]` true on the given rows still running): the
          arguments of a second sampler call for those rows.
        """
        self._wait_pending()
        rows = np.array(sorted(int(r) for r in rows if int(r) not in self.finish_reasons),
                        np.int64)
        buffer = self.queue.acquire()
        errors = {}
        if len(rows):
            errors = self.batch_matcher.fill_next_token_bitmask(
                [self.matchers[r] for r in rows], buffer, rows=rows)
        array = self.queue.submit(buffer)
        running = np.zeros(self.batch_size, bool)
        running[self._settle_filled_rows(rows, buffer, errors)] = True
        return array, self._put_rows(running)

    def _update_constrained(self, rows: np.ndarray) -> None:
        mask = np.zeros(self.batch_size, bool)
        mask[rows] = True
        if self._constrained_device is None or not np.array_equal(mask, self._constrained_host):
            self._constrained_host = mask
            self._constrained_device = None

    def sample(self, logits: jax.Array, key: jax.Array | None, config: SamplingConfig, *,
               temperature: jax.Array | None = None) -> jax.Array:
        """`masks()` then `jaxguide.sample` with this step's masks: int32 `[B]` on device."""
        mask = self.masks()
        if mask is None:
            return sample(logits, None, key, config, temperature=temperature)
        return sample(logits, mask, key, config, temperature=temperature,
                      constrained=self.constrained())

    def _wait_pending(self) -> None:
        if self._pending is not None:
            # A fill nobody asked for (the loop moved on): finish it and return the buffer.
            self._pending.handle.wait()
            self.queue.release(self._pending.buffer)
            self._pending = None

    def close(self) -> None:
        """Finishes pending work and waits for in-flight transfers."""
        self._wait_pending()
        self.queue.drain()


def row_matchers(tokenizer_info: TokenizerInfo,
                 grammars: Sequence[Grammar | CompiledGrammar | None]
                 ) -> tuple[list[Matcher | None], dict[int, str]]:
    """One matcher per row (None for rows without a grammar), compiling each distinct Grammar
    object once; a grammar that fails to compile, or a CompiledGrammar for another tokenizer,
    gives its rows an error message instead."""
    matchers: list[Matcher | None] = [None] * len(grammars)
    errors: dict[int, str] = {}
    compiled_by_grammar: dict[int, CompiledGrammar | Exception] = {}
    for row, grammar in enumerate(grammars):
        if grammar is None:
            continue
        if isinstance(grammar, CompiledGrammar):
            compiled: CompiledGrammar | Exception = grammar
            if grammar.tokenizer_info is not tokenizer_info:
                compiled = ValueError("the CompiledGrammar was compiled against another "
                                      "TokenizerInfo")
        else:
            if id(grammar) not in compiled_by_grammar:
                try:
                    compiled_by_grammar[id(grammar)] = compile_grammar(grammar, tokenizer_info)
                except (JaxguideError, ValueError) as e:
                    compiled_by_grammar[id(grammar)] = e
            compiled = compiled_by_grammar[id(grammar)]
        if isinstance(compiled, Exception):
            errors[row] = f"{type(compiled).__name__}: {compiled}"
        else:
            matchers[row] = Matcher(compiled)
    return matchers, errors


def ended_by_grammar(matcher: Matcher, mask_row: np.ndarray, eos_only: np.ndarray) -> bool:
    """A complete sentence that only EOS may follow: the row ends by its grammar."""
    return matcher.is_accepting() and bool(np.array_equal(mask_row, eos_only))


def results_of(tokenizer_info: TokenizerInfo, outputs: Sequence[list[int]],
               finish: Mapping[int, str], errors: Mapping[int, str],
               forced_counts: Sequence[int], stats: DecodeStats) -> list[Result]:
    """The Results of a finished batch (counting its tokens into `stats`)."""
    results = []
    for row, ids in enumerate(outputs):
        text = tokenizer_info.decode_bytes(ids).decode("utf-8", errors="replace")
        results.append(Result(text=text, token_ids=ids, finish_reason=finish.get(row, "eos"),
                              error=errors.get(row), forced_tokens=int(forced_counts[row])))
        stats.tokens += len(ids)
    return results


def _row_sharding_of(sharding: jax.sharding.Sharding | None) -> jax.sharding.Sharding | None:
    """The sharding of a `[B]` vector laid out like the rows of a `[B, W]` mask sharding."""
    if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return sharding
    if isinstance(sharding, jax.sharding.NamedSharding):
        spec = tuple(sharding.spec)
        return jax.sharding.NamedSharding(sharding.mesh,
                                          jax.sharding.PartitionSpec(spec[0] if spec else None))
    raise TypeError(f"unsupported mask sharding {sharding!r}: use a NamedSharding")
