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

In the code, `_DecodeLoop` holds a call's state (prompts from prefill.py, the ConstrainedBatch,
outputs, positions, cache, logits) and `run` is the loop: `_sample_step` waits for the masks and
samples (step 4; it also makes the early dispatch and the opportunistic redraws),
`_advance_rows` is step 1 (`_accept_sampled`, then `_fast_forward` per row, stopping rows),
`_next_input` step 2, and `ConstrainedBatch.start_masks` after it starts the fill of step 3.

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
processes (`mesh=`: data parallel, see `jaxguide.device.distributed`).

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
from jaxguide.decode.prefill import bucket, init_cache, prepare_prompts
from jaxguide.decode.requests import DecodeStats, Request, Result
from jaxguide.decode.tool_requests import add_tool_calls, grammars_of
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
    _check_arguments(max_new_tokens, max_forced_per_step, seed)
    requests = list(requests)
    if not requests:
        return []
    modes = _row_modes(requests, opportunistic, sampling)
    loop = _DecodeLoop(model, tokenizer_info, requests, modes, sampling=sampling,
                       max_new_tokens=max_new_tokens, seed=seed, fast_forward=fast_forward,
                       max_forced_per_step=max_forced_per_step, batch_matcher=batch_matcher,
                       stats=stats if stats is not None else DecodeStats(), mesh=mesh)
    results = loop.run()
    add_tool_calls(results, requests, model, tokenizer_info)
    return results


def _check_arguments(max_new_tokens: Any, max_forced_per_step: int, seed: Any) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or \
            max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    if max_forced_per_step < 0:
        raise ValueError("max_forced_per_step must be >= 0")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
            not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an int in [0, 2**32), got {seed!r}")


def _row_modes(requests: list[Request], opportunistic: str,
               sampling: SamplingConfig) -> list[str]:
    """Each row's opportunistic-masking mode ("off" | "always" | "auto"): its Request's choice,
    else the call's; "auto" is off for truncating samplers, asking for more raises."""
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
    return modes


class _DecodeLoop:
    """The state of one `generate` call and its step (see the module note): `run` prefills,
    then repeats `_sample_step` (step 4, and the early dispatch of step 2), `_advance_rows`
    (step 1) and `_next_input` (step 2), starting each step's mask fill (step 3) after it."""

    def __init__(self, model: Any, tokenizer_info: TokenizerInfo, requests: list[Request],
                 modes: list[str], *, sampling: SamplingConfig, max_new_tokens: int, seed: int,
                 fast_forward: bool, max_forced_per_step: int,
                 batch_matcher: BatchMatcher | None, stats: DecodeStats,
                 mesh: jax.sharding.Mesh | None):
        self.start_time = time.perf_counter()
        self.model, self.tokenizer_info, self.modes = model, tokenizer_info, modes
        self.sampling, self.stats = sampling, stats
        self.fast_forward, self.max_forced_per_step = fast_forward, max_forced_per_step
        self.batch = batch = len(requests)
        self.placement = placement = BatchPlacement(mesh, batch)
        if mesh is not None:
            model.params = placement.place_params(model.params)
        self.prompts = prepare_prompts(model, tokenizer_info, requests, max_new_tokens,
                                       placement)
        self.pad_token = self.prompts.pad
        grammars, grammar_errors = grammars_of(requests, model, tokenizer_info)
        self.prompts.errors.update(grammar_errors)
        self.constraint = ConstrainedBatch(
            tokenizer_info, grammars,
            logits_width=int(model.config.vocab_size), batch_matcher=batch_matcher,
            sharding=placement.sharding(2), global_batch_size=placement.global_batch,
            mask_every_step=placement.multi_process)
        for row, message in self.prompts.errors.items():
            self.constraint.stop_row(row, "error")
            self.constraint.errors[row] = message
        self.outputs: list[list[int]] = [[] for _ in range(batch)]
        self.forced_counts = np.zeros(batch, np.int64)
        self.finish: dict[int, str] = {}
        self.errors: dict[int, str] = {}
        self._stop_finished_rows()
        self._prefill(requests, seed, max_new_tokens)
        self.next_pos = self.prompts.lengths.copy()
        self.auto = _AutoOpportunism(batch)
        self.auto_deferred = False  # whether this step's masks of the auto rows were deferred
        self.step = 0

    def _prefill(self, requests: list[Request], seed: int, max_new_tokens: int) -> None:
        """Dispatches the prefill (asynchronously: the first masks fill meanwhile) and puts the
        rows' seeds and salts on the device."""
        placement, prompts = self.placement, self.prompts
        extend_max = bucket(1 + self.max_forced_per_step) if self.fast_forward else 1
        cache = init_cache(self.model, placement, prompts.max_len(max_new_tokens, extend_max))
        self.logits, self.cache = self.model.forward_last(
            placement.put(prompts.prefill_tokens()), placement.put(prompts.prefill_positions()),
            placement.put((prompts.lengths - 1).astype(np.int32)), cache)
        self.row_seeds = placement.put(np.array(
            [seed if r.seed is None else r.seed for r in requests], np.uint32))
        self.row_salts = placement.put(np.array(
            [g if r.seed is None else 0 for r, g in zip(requests, placement.global_rows)],
            np.uint32))

    def run(self) -> list[Result]:
        stats = self.stats
        self._choose_deferred()
        self.constraint.start_masks()
        while True:
            sampled, early_logits = self._sample_step()
            t_host = time.perf_counter()
            runs = self._advance_rows(sampled)
            # Every process launches the same programs: agree on going on and on the width.
            running, width = self.placement.agree_max(
                [len(self.finish) < self.batch,
                 bucket(max((len(run) for run in runs.values()), default=1))])
            if not running:
                stats.host_s += time.perf_counter() - t_host
                break
            width = int(width)
            self._next_input(runs, width, early_logits)
            stats.steps += 1
            stats.extend_steps += width > 1
            self._choose_deferred()
            self.constraint.start_masks()
            stats.host_s += time.perf_counter() - t_host
        self.constraint.close()
        results = results_of(self.tokenizer_info, self.outputs, self.finish, self.errors,
                             self.forced_counts, stats)
        stats.total_s += time.perf_counter() - self.start_time
        return results

    def _stop(self, row: int, reason: str, error: str | None = None) -> None:
        if row not in self.finish:
            self.finish[row] = reason
            if error is not None:
                self.errors[row] = error
            self.constraint.stop_row(row, reason)

    def _stop_finished_rows(self) -> None:
        """Stops the rows the constraint ended (grammar_end, matcher errors)."""
        for row, reason in self.constraint.finished_rows().items():
            self._stop(row, reason, self.constraint.errors.get(row))

    def _choose_deferred(self) -> None:
        """Which running constrained rows skip this step's mask (opportunistic masking)."""
        running = [row for row, mode in enumerate(self.modes) if mode != "off" and
                   row not in self.finish and self.constraint.matchers[row] is not None]
        auto_rows = [row for row in running if self.modes[row] == "auto"]
        self.auto_deferred = self.auto.defer(auto_rows)
        self.constraint.deferred_rows = {row for row in running
                                         if self.modes[row] == "always" or self.auto_deferred}

    def _sample_step(self) -> tuple[np.ndarray, jax.Array | None]:
        """Waits for this step's masks and samples; dispatches the next forward at once where
        it can (early dispatch), and redraws the refused tokens of deferred rows. Returns the
        sampled tokens on the host and the early-dispatched forward's logits (else None)."""
        stats, constraint = self.stats, self.constraint
        t0 = time.perf_counter()
        mask = constraint.masks()
        t1 = time.perf_counter()
        stats.mask_wait_s += t1 - t0
        if not self.auto_deferred:
            self.auto.saw_mask_wait(t1 - t0)
        self._stop_finished_rows()
        keys = None if isinstance(self.sampling, Greedy) else _row_keys(
            self.row_seeds, self.row_salts, jnp.int32(self.step))
        if mask is None:
            sampled_device = sample(self.logits, None, keys, self.sampling)
        else:
            sampled_device = sample(self.logits, mask, keys, self.sampling,
                                    constrained=constraint.constrained())
        deferred = [row for row in sorted(constraint.deferred_rows)
                    if row not in self.finish and row not in constraint.finish_reasons]
        # Early dispatch: without fast-forward (every row feeds exactly its sampled token) and
        # without a possible redraw, the next forward takes the sampled tokens on the device
        # and is dispatched now, so the host work after it (reading the tokens, accepting
        # them, filling the next masks) overlaps it instead of leaving the device idle. Rows
        # that end at this step feed one junk token at their end slot, which nothing reads.
        early_logits = None
        if not self.fast_forward and not deferred and not self.placement.multi_process:
            early_logits, self.cache = self.model.forward_last(
                _next_step_tokens(sampled_device, self.pad_token),
                self.placement.put(self.next_pos[:, None].astype(np.int32)),
                self.placement.put(np.zeros(self.batch, np.int32)), self.cache)
        sampled = np.array(self.placement.local(sampled_device))
        if deferred or self.placement.multi_process:
            self._redraw_refused(sampled, deferred, keys)
        t2 = time.perf_counter()
        stats.device_wait_s += t2 - t1
        if self.step == 0:
            stats.prefill_s = t2 - self.start_time
        self.step += 1
        return sampled, early_logits

    def _redraw_refused(self, sampled: np.ndarray, deferred: list[int],
                        keys: jax.Array | None) -> None:
        """Checks the deferred rows' unconstrained draws; the refused ones are drawn again under
        their mask (filled now), into `sampled`. Every process takes part in the redraw if any
        needs one."""
        constraint, stats = self.constraint, self.stats
        refused = [row for row in deferred
                   if not constraint.matchers[row].is_token_allowed(int(sampled[row]))]
        stats.deferred_masks += len(deferred)
        stats.resampled += len(refused)
        self.auto.saw_tokens(deferred, refused)
        redraw_start = time.perf_counter()
        if self.placement.agree_max([len(refused) > 0])[0]:
            mask, running = constraint.fill_rows_now(refused)
            redraw_keys = None if keys is None else _redraw_keys(keys)
            redrawn = self.placement.local(sample(self.logits, mask, redraw_keys, self.sampling,
                                                  constrained=running))
            for row in refused:
                sampled[row] = redrawn[row]
            self._stop_finished_rows()
            self.auto.saw_redraw(time.perf_counter() - redraw_start)

    def _advance_rows(self, sampled: np.ndarray) -> dict[int, list[int]]:
        """Step 1: accepts the sampled tokens, stops rows (EOS, errors, limits, grammar end)
        and takes the tokens the grammar forces next. Returns each running row's run, the
        tokens the next forward feeds it: [sampled, forced...]."""
        runs = self._accept_sampled(sampled)
        for row in list(runs):
            constraint = self.constraint
            if row in constraint.finish_reasons and row not in self.finish:
                self._stop(row, constraint.finish_reasons[row], constraint.errors.get(row))
            if row in self.finish:
                runs.pop(row)
                continue
            room = int(self.prompts.limits[row]) - len(self.outputs[row])
            if room <= 0:
                self._stop(row, "max_tokens")
                runs.pop(row)
                continue
            if self.fast_forward and constraint.matchers[row] is not None and \
                    self.max_forced_per_step > 0 and self._fast_forward(row, room, runs[row]):
                runs.pop(row)
        return runs

    def _accept_sampled(self, sampled: np.ndarray) -> dict[int, list[int]]:
        """Appends each running row's sampled token (or stops the row on EOS / no token) and
        accepts them into the matchers in one batched call."""
        runs: dict[int, list[int]] = {}
        accept_rows, accept_tokens = [], []
        for row in range(self.batch):
            if row in self.finish:
                continue
            token = int(sampled[row])
            if token == NO_ALLOWED_TOKEN:
                self._stop(row, "error", "no token can be sampled (every allowed logit is -inf)")
                continue
            if token in self.tokenizer_info.eos_token_ids:
                self._stop(row, "eos")
                continue
            self.outputs[row].append(token)
            runs[row] = [token]
            if self.constraint.matchers[row] is not None:
                accept_rows.append(row)
                accept_tokens.append(token)
        if accept_rows:
            self.constraint.tokens_sampled(np.array(accept_tokens, np.int64),
                                           rows=np.array(accept_rows, np.int64))
        return runs

    def _fast_forward(self, row: int, room: int, run: list[int]) -> bool:
        """Accepts the tokens the grammar forces after the row's output (at most `room` and
        max_forced_per_step) and appends them to `run`; True if that reached its limit."""
        forced = self.constraint.matchers[row].compute_ff_tokens(self.outputs[row][-4:])
        forced = forced[:min(room, self.max_forced_per_step)]
        if not forced:
            return False
        self.constraint.accept_forced(row, forced)
        self.outputs[row].extend(forced)
        run.extend(forced)
        self.forced_counts[row] += len(forced)
        self.stats.forced_tokens += len(forced)
        if len(self.outputs[row]) >= self.prompts.limits[row]:
            self._stop(row, "max_tokens")
            return True
        return False

    def _next_input(self, runs: dict[int, list[int]], width: int,
                    early_logits: jax.Array | None) -> None:
        """Step 2: dispatches the next forward (one token per row, or an extend step of
        `width` for forced runs) unless it went out early, and moves the rows' positions."""
        if early_logits is not None:
            self.logits = early_logits
        else:
            tokens = np.full((self.batch, width), self.pad_token, np.int32)
            last_index = np.zeros(self.batch, np.int32)
            for row, run in runs.items():
                tokens[row, :len(run)] = run
                last_index[row] = len(run) - 1
            # Stopped rows keep their position (junk written past their end is never read).
            positions = self.next_pos[:, None].astype(np.int32) + np.arange(width,
                                                                            dtype=np.int32)
            put = self.placement.put
            self.logits, self.cache = self.model.forward_last(
                put(tokens), put(positions), put(last_index), self.cache)
        for row, run in runs.items():
            self.next_pos[row] += len(run)
