"""Constrained generation: the overlapped decode loop, and hooks for existing decode loops.

Design note
-----------
What. `generate(model, tokenizer_info, requests)` decodes a batch of requests, each with its own
grammar or none, and `ConstrainedBatch` is the same grammar machinery as hooks for a decode loop
someone else owns (a MaxText-style `sampling()` call, a gemma-style sampler loop): "start the
masks for step t given the tokens sampled at step t-1", "give me this step's device mask", and
"these tokens were sampled".

The step (DESIGN.md's picture). With the sampled tokens of step t-1 on the host:
  1. accept them into the matchers (C++ pool, GIL released) and, with fast-forward, take the
     tokens the grammar forces next (`Matcher.compute_ff_tokens`: canonical tokenization,
     held back where a longer token could still span the end) and accept those too;
  2. dispatch the forward pass: one token per row, or a short multi-token extend step
     [sampled, forced...] for rows with forced tokens (one pass instead of one per token);
  3. while the device runs it, host threads fill the rows of this step's bitmask in a buffer of
     the double-buffered `MaskQueue` (only the rows that still run under a grammar);
  4. submit the buffer (host-to-device copy starts) and call the jitted sampler on (logits,
     mask): two programs, so the forward never waits for the mask.
The only host work between two device programs is step 1 and building the next input; without
fast-forward (and with no opportunistic redraw pending) not even that: the next forward takes the
sampled tokens straight from the device and is dispatched as soon as the sampler is (early
dispatch), so step 1 and the mask fill of step 3 both run while it computes.

Stopping. A row stops on EOS (`finish_reason="eos"`), when its grammar allows nothing but EOS
after a complete sentence (`"grammar_end"`: one forward pass saved per request), after
`max_new_tokens` generated tokens including forced ones (`"max_tokens"`), or on an error (a
grammar that fails to compile, a matcher error such as an exceeded work budget, a row in which
nothing can be sampled: `"error"` with the message in `Result.error`). A stopped row stays in
the batch (static shapes: no recompiles) and is fed a pad token (after an early dispatch,
once, its last sampled token) that no one reads.

Randomness. Each row draws with its own key, `fold_in(fold_in(key(seed), row), step)`, or
`fold_in(fold_in(key(request.seed), 0), step)` with a per-request seed, so a request's output
does not depend on the rest of the batch or on how the batch is split over devices and
processes (`mesh=`: data parallel, see `jaxguide.distributed`).

Cost per step: one forward of [B, T] (T = 1, or the power of two holding the longest
[sampled + forced] run), one mask fill (overlapped), one B x ceil(V/32) x 4 byte copy, one
sampler call; host work O(B) plus the fast-forward check of each constrained row.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide.batch_matcher import BatchMatcher, PendingMask
from jaxguide.distributed import BatchPlacement
from jaxguide.errors import JaxguideError
from jaxguide.grammar import Grammar
from jaxguide.mask_queue import MaskQueue
from jaxguide.matcher import CompiledGrammar, Matcher, compile_grammar, eos_only_row
from jaxguide.sampling import NO_ALLOWED_TOKEN, Greedy, SamplingConfig, Temperature, sample
from jaxguide.tokenizer import TokenizerInfo, encode_prompt

FINISH_REASONS = ("eos", "grammar_end", "max_tokens", "error")


@dataclasses.dataclass(frozen=True)
class Request:
    """One generation request.

    Attributes:
      prompt: plain prompt text (special-token names such as `<|im_start|>` in it are those
        tokens), or None when `messages` is given.
      messages: chat messages `[{"role": ..., "content": ...}]`, rendered with the model's chat
        template (`model.render_chat`), or None when `prompt` is given.
      grammar: a `Grammar` (compiled against the tokenizer), a `CompiledGrammar`, or None for
        unconstrained output.
      max_new_tokens: optional per-request cap (at most `generate`'s `max_new_tokens`).
      seed: optional per-request PRNG seed: the row draws from `key(seed)` whatever its place
        in the batch (default: `fold_in(key(generate's seed), row)`).
      opportunistic: opportunistic masking for this row (True / False), or None to follow
        `generate`'s `opportunistic=` policy.
    """

    prompt: str | None = None
    messages: Sequence[Mapping[str, str]] | None = None
    grammar: Grammar | CompiledGrammar | None = None
    max_new_tokens: int | None = None
    seed: int | None = None
    opportunistic: bool | None = None

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("a Request needs exactly one of prompt= and messages=")
        if self.prompt is not None and not isinstance(self.prompt, str):
            raise TypeError(f"prompt must be a str, got {type(self.prompt).__name__}")
        if self.grammar is not None and not isinstance(self.grammar, (Grammar, CompiledGrammar)):
            raise TypeError("grammar must be a jaxguide.Grammar, a CompiledGrammar or None, got "
                            f"{type(self.grammar).__name__}")
        if self.max_new_tokens is not None and (isinstance(self.max_new_tokens, bool) or
                                                not isinstance(self.max_new_tokens, int) or
                                                self.max_new_tokens < 1):
            raise ValueError(f"max_new_tokens must be an int >= 1, got {self.max_new_tokens!r}")
        if self.opportunistic not in (None, True, False):
            raise ValueError(f"opportunistic must be None, True or False, got "
                             f"{self.opportunistic!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or
                                      not isinstance(self.seed, int) or
                                      not 0 <= self.seed < 2**32):
            raise ValueError(f"seed must be an int in [0, 2**32), got {self.seed!r}")


@dataclasses.dataclass
class Result:
    """What one request produced.

    Attributes:
      text: the generated text (UTF-8, undecodable bytes replaced), without the EOS token.
      token_ids: the generated token ids (sampled and forced), without the EOS token.
      finish_reason: "eos", "grammar_end", "max_tokens" or "error".
      error: None, or why the request failed.
      forced_tokens: how many of `token_ids` were fast-forwarded (not sampled).
    """

    text: str
    token_ids: list[int]
    finish_reason: str
    error: str | None = None
    forced_tokens: int = 0


@dataclasses.dataclass
class DecodeStats:
    """Where the time of a `generate` call went (seconds, wall clock on the host).

    `host_s`: accepting tokens, fast-forward, building inputs; `mask_wait_s`: waiting for mask
    rows after the forward was dispatched (zero when the fill hides behind the forward);
    `device_wait_s`: waiting for the sampled tokens (the forward and sampler still running).
    Opportunistic masking: `deferred_masks` counts (row, step) masks not filled in advance,
    `resampled` those whose unconstrained token was refused (mask filled then, second draw).
    """

    prefill_s: float = 0.0
    host_s: float = 0.0
    mask_wait_s: float = 0.0
    device_wait_s: float = 0.0
    total_s: float = 0.0
    steps: int = 0
    extend_steps: int = 0
    tokens: int = 0
    forced_tokens: int = 0
    deferred_masks: int = 0
    resampled: int = 0

    def as_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


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
        self._pending = self.batch_matcher.fill_queue_buffer_async(
            [self.matchers[r] for r in rows], self.queue, rows=rows, tokens=tokens)

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


# ------------------------------------------------------------------------------- generate

_MIN_PREFILL_BUCKET = 16


def _bucket(n: int, minimum: int = 1) -> int:
    """The power of two >= max(n, minimum)."""
    size = max(1, minimum)
    while size < n:
        size *= 2
    return size


class _AutoOpportunism:
    """The "auto" opportunistic-masking policy, measured while the loop runs.

    The masks of the auto rows are deferred at a step iff the expected cost of deferring,
    P(some deferred row's token is refused) x the measured time of a redraw (synchronous fill
    plus a second sampler call), is below the measured time the loop waits for masks (what
    deferring saves; zero when the fill hides behind the forward). It starts with masks (to
    measure that wait), and defers one probe step every PROBE_EVERY steps to measure the rows'
    refusal rates and the redraw time. Rates and times are exponential averages.
    """

    PROBE_EVERY = 16

    def __init__(self, batch: int):
        self.refusal = np.full(batch, 0.5)
        self.mask_wait: float | None = None
        self.redraw: float | None = None
        self.since_probe = 0

    @staticmethod
    def _average(old: float | None, new: float) -> float:
        return new if old is None else 0.8 * old + 0.2 * new

    def defer(self, rows: list[int]) -> bool:
        if not rows:
            return False
        self.since_probe += 1
        if self.mask_wait is None:
            return False
        if self.redraw is None or self.since_probe >= self.PROBE_EVERY:
            self.since_probe = 0
            return True
        p_refused = 1.0 - float(np.prod(1.0 - self.refusal[rows]))
        return p_refused * self.redraw < self.mask_wait

    def saw_mask_wait(self, seconds: float) -> None:
        self.mask_wait = self._average(self.mask_wait, seconds)

    def saw_tokens(self, rows: list[int], refused: list[int]) -> None:
        for row in rows:
            self.refusal[row] = 0.8 * self.refusal[row] + 0.2 * (row in refused)

    def saw_redraw(self, seconds: float) -> None:
        self.redraw = self._average(self.redraw, seconds)


@jax.jit
def _redraw_keys(keys: jax.Array) -> jax.Array:
    """Keys for a second, independent draw of the same rows."""
    return jax.vmap(lambda k: jax.random.fold_in(k, 0x5EED))(keys)


@functools.partial(jax.jit, static_argnums=1)
def _next_step_tokens(sampled: jax.Array, pad_token: int) -> jax.Array:
    """The sampled tokens `[B]` as the next step's `[B, 1]` input (NO_ALLOWED_TOKEN -> pad)."""
    return jnp.where(sampled < 0, pad_token, sampled).astype(jnp.int32)[:, None]


@jax.jit
def _row_keys(seeds: jax.Array, salts: jax.Array, step: jax.Array) -> jax.Array:
    """Row r's key at `step`: fold_in(fold_in(key(seeds[r]), salts[r]), step)."""
    return jax.vmap(lambda seed, salt: jax.random.fold_in(
        jax.random.fold_in(jax.random.key(seed), salt), step))(seeds, salts)


def _init_cache(model: Any, placement: BatchPlacement, max_len: int) -> Any:
    """The model's zero cache for the global batch; with a mesh, created sharded on it (its
    leaves are `[layers, B, ...]`: batch on dimension 1)."""
    if placement.mesh is None:
        return model.init_cache(placement.global_batch, max_len)
    shapes = jax.eval_shape(lambda: model.init_cache(placement.global_batch, max_len))
    shardings = jax.tree_util.tree_map(lambda leaf: placement.sharding(leaf.ndim, 1), shapes)
    return jax.jit(lambda: model.init_cache(placement.global_batch, max_len),
                   out_shardings=shardings)()


def _prompt_ids(model: Any, tokenizer_info: TokenizerInfo, request: Request) -> list[int]:
    if request.messages is not None:
        render = getattr(model, "render_chat", None)
        if render is None:  # e.g. a LlamaModel built without a chat template
            raise ValueError("messages= needs a model with a chat template (model.render_chat)")
        text = render(list(request.messages))
    else:
        text = request.prompt
    ids = encode_prompt(tokenizer_info, text)
    if not ids:
        raise ValueError("the prompt encodes to no tokens")
    return ids


def generate(model: Any, tokenizer_info: TokenizerInfo, requests: Sequence[Request], *,
             sampling: SamplingConfig = Greedy(), max_new_tokens: int = 256, seed: int = 0,
             fast_forward: bool = True, max_forced_per_step: int = 15,
             batch_matcher: BatchMatcher | None = None,
             stats: DecodeStats | None = None,
             mesh: jax.sharding.Mesh | None = None,
             opportunistic: str = "off") -> list[Result]:
    """Generates for a batch of requests with the overlapped constrained decode loop.

    Args:
      model: a `jaxguide.models.LlamaModel` (or anything with `init_cache(batch, max_len)`,
        `forward_last(tokens, positions, last_index, cache)`, `config.vocab_size`, and
        `render_chat(messages)` for chat requests).
      tokenizer_info: the model's tokenizer (`jaxguide.models.smollm2.load()` returns both).
      requests: the batch; each with its own grammar or none.
      sampling: `Greedy()`, `Temperature(t)`, `TopK`, `TopP` or `MinP`.
      max_new_tokens: cap on generated tokens per request (forced ones included).
      seed: PRNG seed in [0, 2**32) (row i draws from fold_in(key(seed), i)).
      fast_forward: feed the tokens a grammar forces as one extend step instead of sampling
        them one by one (same text: forced tokens are the canonical tokenization).
      max_forced_per_step: at most this many forced tokens per extend step.
      batch_matcher: the mask-filling thread pool (default: the process-wide one).
      stats: optional `DecodeStats`, filled with the time breakdown.
      mesh: shard the batch over every device of this mesh (data parallel; the model's
        parameters are replicated on it, once, and stored back in `model.params`). With a
        mesh over several processes (`jax.distributed`), every process calls `generate` with
        its own rows, the same number on each, and gets their results; greedy outputs are the
        same as in one process. See `jaxguide.distributed`.
      opportunistic: opportunistic masking policy for rows whose Request does not choose:
        "off" (masks filled every step, overlapped with the forward), "always" (sample the row
        unconstrained, check the token with `is_token_allowed`, and only when it is refused
        fill its mask and draw again), or "auto" (a measured policy: defer while the expected
        redraw cost, P(a refusal) x the measured redraw time, is below the measured wait for
        masks; see `_AutoOpportunism`). Exact:
        greedy outputs are those of masked decoding, and with `Temperature` a refused draw
        redrawn under the mask gives exactly the renormalized distribution; not available
        with top-k / top-p / min-p (their truncation would apply before the mask).

    Returns:
      One `Result` per request, in order. A failing request (bad grammar, matcher error) gets
      `finish_reason="error"` and the others complete.
    """
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or \
            max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    if max_forced_per_step < 0:
        raise ValueError("max_forced_per_step must be >= 0")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
            not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an int in [0, 2**32), got {seed!r}")
    requests = list(requests)
    if not requests:
        return []
    for request in requests:
        if not isinstance(request, Request):
            raise TypeError(f"requests must be jaxguide.Request objects, got "
                            f"{type(request).__name__}")
    if opportunistic not in ("off", "always", "auto"):
        raise ValueError(f"opportunistic must be 'off', 'always' or 'auto', got "
                         f"{opportunistic!r}")
    exact_redraw = isinstance(sampling, (Greedy, Temperature))
    modes = []
    for request in requests:
        mode = opportunistic if request.opportunistic is None else (
            "always" if request.opportunistic else "off")
        if mode != "off" and not exact_redraw:
            if request.opportunistic or opportunistic == "always":
                raise ValueError("opportunistic masking is exact only with Greedy or "
                                 f"Temperature sampling, not {type(sampling).__name__}")
            mode = "off"
        modes.append(mode)
    stats = stats if stats is not None else DecodeStats()
    start_time = time.perf_counter()
    batch = len(requests)
    placement = BatchPlacement(mesh, batch)
    if mesh is not None:
        model.params = placement.place_params(model.params)
    vocab = int(model.config.vocab_size)
    eos_ids = np.array(sorted(tokenizer_info.eos_token_ids), np.int64)
    pad_token = int(eos_ids[0]) if len(eos_ids) else 0

    prompts: list[list[int]] = []
    prompt_errors: dict[int, str] = {}
    for row, request in enumerate(requests):
        try:
            prompts.append(_prompt_ids(model, tokenizer_info, request))
        except (ValueError, JaxguideError) as e:
            prompts.append([pad_token])
            prompt_errors[row] = f"{type(e).__name__}: {e}"
    limits = np.array([min(max_new_tokens, r.max_new_tokens or max_new_tokens)
                       for r in requests], np.int64)
    lengths = np.array([len(p) for p in prompts], np.int64)
    longest = int(placement.agree_max([lengths.max()])[0])
    prefill_len = _bucket(longest, _MIN_PREFILL_BUCKET)
    extend_max = _bucket(1 + max_forced_per_step) if fast_forward else 1
    max_len = _bucket(longest + max_new_tokens + extend_max, 128)
    max_len = max(max_len, prefill_len)

    constraint = ConstrainedBatch(tokenizer_info, [r.grammar for r in requests],
                                  logits_width=vocab, batch_matcher=batch_matcher,
                                  sharding=placement.sharding(2),
                                  global_batch_size=placement.global_batch,
                                  mask_every_step=placement.multi_process)
    for row, message in prompt_errors.items():
        constraint.stop_row(row, "error")
        constraint.errors[row] = message
    outputs: list[list[int]] = [[] for _ in range(batch)]
    forced_counts = np.zeros(batch, np.int64)
    finish: dict[int, str] = {}
    errors: dict[int, str] = {}

    def stop(row: int, reason: str, error: str | None = None) -> None:
        if row not in finish:
            finish[row] = reason
            if error is not None:
                errors[row] = error
            constraint.stop_row(row, reason)

    for row, reason in constraint.finished_rows().items():
        stop(row, reason, constraint.errors.get(row))

    # Prefill (dispatched asynchronously), the first masks fill meanwhile.
    tokens = np.full((batch, prefill_len), pad_token, np.int32)
    for row, ids in enumerate(prompts):
        tokens[row, :len(ids)] = ids
    positions = np.broadcast_to(np.arange(prefill_len, dtype=np.int32), (batch, prefill_len))
    cache = _init_cache(model, placement, max_len)
    logits, cache = model.forward_last(placement.put(tokens), placement.put(positions),
                                       placement.put((lengths - 1).astype(np.int32)), cache)
    row_seeds = placement.put(np.array(
        [seed if r.seed is None else r.seed for r in requests], np.uint32))
    row_salts = placement.put(np.array(
        [g if r.seed is None else 0 for r, g in zip(requests, placement.global_rows)],
        np.uint32))
    next_pos = lengths.copy()
    auto = _AutoOpportunism(batch)
    auto_deferred = False  # whether this step's masks of the auto rows were deferred

    def choose_deferred() -> None:
        nonlocal auto_deferred
        running = [row for row, mode in enumerate(modes) if mode != "off" and
                   row not in finish and constraint.matchers[row] is not None]
        auto_rows = [row for row in running if modes[row] == "auto"]
        auto_deferred = auto.defer(auto_rows)
        constraint.deferred_rows = {row for row in running
                                    if modes[row] == "always" or auto_deferred}

    choose_deferred()
    constraint.start_masks()
    step = 0
    prefill_done = False
    while True:
        t0 = time.perf_counter()
        mask = constraint.masks()
        t1 = time.perf_counter()
        stats.mask_wait_s += t1 - t0
        if not auto_deferred:
            auto.saw_mask_wait(t1 - t0)
        for row, reason in constraint.finished_rows().items():
            stop(row, reason, constraint.errors.get(row))
        keys = None if isinstance(sampling, Greedy) else _row_keys(row_seeds, row_salts,
                                                                    jnp.int32(step))
        if mask is None:
            sampled_device = sample(logits, None, keys, sampling)
        else:
            sampled_device = sample(logits, mask, keys, sampling,
                                    constrained=constraint.constrained())
        deferred = [row for row in sorted(constraint.deferred_rows)
                    if row not in finish and row not in constraint.finish_reasons]
        # Early dispatch: without fast-forward (every row feeds exactly its sampled token) and
        # without a possible redraw, the next forward takes the sampled tokens on the device
        # and is dispatched now, so the host work below (reading the tokens, accepting them,
        # filling the next masks) overlaps it instead of leaving the device idle. Rows that end
        # at this step feed one junk token at their end slot, which nothing reads.
        early = not fast_forward and not deferred and not placement.multi_process
        if early:
            next_logits, cache = model.forward_last(
                _next_step_tokens(sampled_device, pad_token),
                placement.put(next_pos[:, None].astype(np.int32)),
                placement.put(np.zeros(batch, np.int32)), cache)
        sampled = np.array(placement.local(sampled_device))
        if deferred or placement.multi_process:
            refused = [row for row in deferred
                       if not constraint.matchers[row].is_token_allowed(int(sampled[row]))]
            stats.deferred_masks += len(deferred)
            stats.resampled += len(refused)
            auto.saw_tokens(deferred, refused)
            redraw_start = time.perf_counter()
            if placement.agree_max([len(refused) > 0])[0]:
                mask2, running = constraint.fill_rows_now(refused)
                keys2 = None if keys is None else _redraw_keys(keys)
                redrawn = placement.local(sample(logits, mask2, keys2, sampling,
                                                 constrained=running))
                for row in refused:
                    sampled[row] = redrawn[row]
                for row, reason in constraint.finished_rows().items():
                    stop(row, reason, constraint.errors.get(row))
                auto.saw_redraw(time.perf_counter() - redraw_start)
        t2 = time.perf_counter()
        stats.device_wait_s += t2 - t1
        if not prefill_done:
            stats.prefill_s = t2 - start_time
            prefill_done = True
        step += 1

        # Host: take the sampled tokens, accept them, fast-forward.
        runs: dict[int, list[int]] = {}
        accept_rows, accept_tokens = [], []
        for row in range(batch):
            if row in finish:
                continue
            token = int(sampled[row])
            if token == NO_ALLOWED_TOKEN:
                stop(row, "error", "no token can be sampled (every allowed logit is -inf)")
                continue
            if token in tokenizer_info.eos_token_ids:
                stop(row, "eos")
                continue
            outputs[row].append(token)
            runs[row] = [token]
            if constraint.matchers[row] is not None:
                accept_rows.append(row)
                accept_tokens.append(token)
        if accept_rows:
            constraint.tokens_sampled(np.array(accept_tokens, np.int64),
                                      rows=np.array(accept_rows, np.int64))
        for row in list(runs):
            matcher = constraint.matchers[row]
            if row in constraint.finish_reasons and row not in finish:
                stop(row, constraint.finish_reasons[row], constraint.errors.get(row))
            if row in finish:
                runs.pop(row)
                continue
            room = int(limits[row]) - len(outputs[row])
            if room <= 0:
                stop(row, "max_tokens")
                runs.pop(row)
                continue
            if fast_forward and matcher is not None and max_forced_per_step > 0:
                forced = matcher.compute_ff_tokens(outputs[row][-4:])
                forced = forced[:min(room, max_forced_per_step)]
                if forced:
                    constraint.accept_forced(row, forced)
                    outputs[row].extend(forced)
                    runs[row].extend(forced)
                    forced_counts[row] += len(forced)
                    stats.forced_tokens += len(forced)
                    if len(outputs[row]) >= limits[row]:
                        stop(row, "max_tokens")
                        runs.pop(row)
        # Every process launches the same programs: agree on going on and on the width.
        running, width = placement.agree_max(
            [len(finish) < batch, _bucket(max((len(run) for run in runs.values()), default=1))])
        if not running:
            stats.host_s += time.perf_counter() - t2
            break

        # The next forward: one token per row, or an extend step for forced runs.
        width = int(width)
        if early:
            logits = next_logits
        else:
            tokens = np.full((batch, width), pad_token, np.int32)
            last_index = np.zeros(batch, np.int32)
            for row, run in runs.items():
                tokens[row, :len(run)] = run
                last_index[row] = len(run) - 1
            # Stopped rows keep their position (junk written past their end is never read).
            positions = next_pos[:, None].astype(np.int32) + np.arange(width, dtype=np.int32)
            logits, cache = model.forward_last(placement.put(tokens), placement.put(positions),
                                               placement.put(last_index), cache)
        for row, run in runs.items():
            next_pos[row] += len(run)
        stats.steps += 1
        stats.extend_steps += width > 1
        choose_deferred()
        constraint.start_masks()
        stats.host_s += time.perf_counter() - t2

    constraint.close()
    results = results_of(tokenizer_info, outputs, finish, errors, forced_counts, stats)
    stats.total_s += time.perf_counter() - start_time
    return results
