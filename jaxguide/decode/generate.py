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

import functools
import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide.decode.constrained_batch import ConstrainedBatch, results_of
from jaxguide.decode.prefill import MIN_PREFILL_BUCKET, bucket, init_cache, prompt_ids
from jaxguide.decode.requests import DecodeStats, Request, Result
from jaxguide.device.distributed import BatchPlacement
from jaxguide.device.sampling import (
    NO_ALLOWED_TOKEN,
    Greedy,
    SamplingConfig,
    Temperature,
    sample,
)
from jaxguide.engine.batch_matcher import BatchMatcher
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.errors import JaxguideError


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
            prompts.append(prompt_ids(model, tokenizer_info, request))
        except (ValueError, JaxguideError) as e:
            prompts.append([pad_token])
            prompt_errors[row] = f"{type(e).__name__}: {e}"
    limits = np.array([min(max_new_tokens, r.max_new_tokens or max_new_tokens)
                       for r in requests], np.int64)
    lengths = np.array([len(p) for p in prompts], np.int64)
    longest = int(placement.agree_max([lengths.max()])[0])
    prefill_len = bucket(longest, MIN_PREFILL_BUCKET)
    extend_max = bucket(1 + max_forced_per_step) if fast_forward else 1
    max_len = bucket(longest + max_new_tokens + extend_max, 128)
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
    cache = init_cache(model, placement, max_len)
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
            [len(finish) < batch, bucket(max((len(run) for run in runs.values()), default=1))])
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
