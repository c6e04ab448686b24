"""Speculative decoding under a grammar, greedy and exact: grammar-driven proposals (DOMINO
section 3.6) or a draft model.

Design note
-----------
What. `generate_speculative(model, info, requests, predictor=... | draft_model=...)` decodes like
`jaxguide.generate(..., sampling=Greedy(), fast_forward=False)` and returns the same tokens, but
each forward pass also scores a draft: the tokens the grammar forces (fast-forward) followed by
up to `num_draft` proposed tokens; the tokens the model agrees with are taken at once, so a step
can yield several tokens for one forward. Forced tokens are verified like proposals: where the
model would have written the forced text with other tokens than the canonical ones (`,` then
`"` rather than `,"`), its own tokens win, so unlike `generate`'s fast-forward this never
changes the output.

Proposals come from one of two sources:
- `GrammarPredictor`, count based and conditioned on the grammar state: its key is (a hash of
  the allowed-token mask at the position, the previous token) — the mask is what the lexer and
  parser state looks like from the model's side (inside a string, expecting a key after `{`,
  after a value...) — and its value is a count of the tokens the model produced there. It
  learns online from every verified token and from warm-up requests. Unconstrained rows use the
  previous token alone as the key (a bigram model). Host only, no forward pass.
- a draft model (a smaller model with the same vocabulary, or the same model with fewer layers:
  `LlamaModel.with_layers`), greedy under the grammar's masks: one batched forward per proposal
  round, the first of which also feeds the row's committed tokens the draft cache lacks and the
  forced tokens at the head of the draft (`_DraftModelState` keeps, per row, how many cache slots
  hold committed tokens). Its proposals are grammar-legal by construction.
Either way a proposal is kept in the draft only if the grammar allows it at its position.

The step, per row: the last token is followed by the draft; the matcher accepts each draft token
and fills the mask of the next position (the masks of all K+1 positions, as
`fill_draft_bitmasks` gives them), then rolls back. One forward of [run + draft] returns the
logits of every position; the jitted verifier takes the masked argmax at the K+1 positions that
follow the run; the row keeps the draft up to the first disagreement plus the model's own token
there. Exactness: every kept token is the masked argmax of the logits after exactly the tokens
before it, which is what the non-speculative greedy loop computes (up to the floating-point
differences between a one-token and a multi-token forward, which the tests show do not change
the argmax here). KV entries of rejected draft tokens sit past the row's length and are
overwritten by the next step (the model's causal mask hides them); the same holds for the draft
model's cache.

Cost per step: one forward of [B, T] with T = the bucketed longest (run + draft), K+1 mask rows
per constrained row filled synchronously on the host (no overlap with the forward in this loop),
one host round trip for the verified tokens; with a draft model also up to K draft forwards of
[B, 1] (the first one wider), each followed by a host round trip and one mask fill per row.
The draft model pays off only where its proposals are accepted often enough to cover that:
early-exit drafts of an untrained model agree rarely (see the bench_speculation figures).
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide.decode.constrained_batch import ended_by_grammar, results_of, row_matchers
from jaxguide.decode.prefill import bucket, prompt_ids
from jaxguide.decode.requests import DecodeStats, Request, Result
from jaxguide.device.sampling import Greedy, sample
from jaxguide.engine.matcher import eos_only_row
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.errors import JaxguideError


class GrammarPredictor:
    """Counts of the next token per (grammar-state key, previous token); proposes the most
    frequent legal one. Keys of unconstrained rows have no grammar part."""

    def __init__(self, min_count: int = 1):
        if min_count < 1:
            raise ValueError("min_count must be >= 1")
        self.min_count = min_count
        self._counts: dict[tuple[int, int], collections.Counter] = {}

    @staticmethod
    def key(mask_row: np.ndarray | None, previous: int) -> tuple[int, int]:
        state = 0 if mask_row is None else hash(mask_row.tobytes())
        return (state, int(previous))

    def observe(self, key: tuple[int, int], token: int) -> None:
        self._counts.setdefault(key, collections.Counter())[int(token)] += 1

    def predict(self, key: tuple[int, int]) -> int | None:
        counter = self._counts.get(key)
        if not counter:
            return None
        token, count = counter.most_common(1)[0]
        return token if count >= self.min_count else None

    def __len__(self) -> int:
        return len(self._counts)


@dataclasses.dataclass
class SpeculationStats(DecodeStats):
    """DecodeStats plus what speculation did."""

    proposed: int = 0  # proposals (of the predictor or the draft model), forced tokens apart
    accepted: int = 0  # proposals the model agreed with
    draft_forwards: int = 0  # forward passes of the draft model
    draft_s: float = 0.0  # time in them (dispatch to proposals on the host)


def _allowed(mask_row: np.ndarray, token: int) -> bool:
    return bool((int(mask_row[token >> 5]) >> (token & 31)) & 1)


@jax.jit
def _verify(logits: jax.Array, index: jax.Array, masks: jax.Array,
            constrained: jax.Array) -> jax.Array:
    """Masked argmax at positions index[b, j] of each row: int32 [B, K+1]."""
    picked = jnp.take_along_axis(logits, index[:, :, None], axis=1)  # [B, K+1, V]
    batch, width, vocab = picked.shape
    flat = sample(picked.reshape(batch * width, vocab), masks.reshape(batch * width, -1), None,
                  Greedy(), constrained=jnp.repeat(constrained, width))
    return flat.reshape(batch, width)


@jax.jit
def _propose(logits: jax.Array, masks: jax.Array, constrained: jax.Array) -> jax.Array:
    """The draft model's proposal: masked argmax per row, int32 [B]."""
    return sample(logits, masks, None, Greedy(), constrained=constrained)


class _RowDraft:
    """One row's draft while it is built: its tokens, its matcher advanced over them (`close`
    rolls the matcher back), the mask at each draft position (filled into `masks` as the draft
    grows: row j = the mask after tokens[:j]) and the predictor key of each position."""

    def __init__(self, matcher: Any, masks: np.ndarray, previous: int, eos: frozenset[int],
                 eos_only: np.ndarray, want_keys: bool):
        self.matcher = matcher
        self.masks = masks  # [draft_rows, W], this row's slice of the step's masks
        self.previous = previous
        self.eos = eos
        self.want_keys = want_keys
        self.tokens: list[int] = []
        self.keys: list[tuple[int, int]] = []
        self.open = True
        self._fill()
        # A complete sentence that only EOS may follow: the row ends by its grammar.
        self.ended = matcher is not None and ended_by_grammar(matcher, masks[0], eos_only)
        self.open = not self.ended

    def _fill(self) -> None:
        position = len(self.tokens)
        if self.matcher is not None:
            self.matcher.fill_next_token_bitmask(self.masks, position)
        if self.want_keys:
            mask_row = self.masks[position] if self.matcher is not None else None
            self.keys.append(GrammarPredictor.key(mask_row, self.previous))

    def mask(self) -> np.ndarray:
        """The mask at the next draft position."""
        return self.masks[len(self.tokens)]

    def push(self, token: int) -> bool:
        """Appends `token` if it may come next (not EOS, allowed by the grammar, room left);
        otherwise closes the draft and returns False."""
        if not self.open:
            return False
        if token < 0 or token in self.eos or len(self.tokens) + 1 >= len(self.masks) or (
                self.matcher is not None and (not _allowed(self.mask(), token)
                                              or not self.matcher.accept_token(token))):
            self.open = False
            return False
        self.tokens.append(token)
        self.previous = token
        self._fill()
        return True

    def close(self) -> None:
        if self.matcher is not None:
            self.matcher.rollback(len(self.tokens))


class _DraftModelState:
    """The draft model's KV cache and which committed tokens it holds.

    Per row: `valid` slots hold the row's first `valid` committed tokens (prompt + output);
    `pending` are the committed tokens after them, fed at the head of the row's next draft.
    During a step `fed` counts the draft tokens fed so far (after the pending ones), so the next
    free slot is valid + len(pending) + fed. Slots past it may hold junk from rejected drafts or
    padding: every call writes all slots from the first one it reads past `valid`, so junk is
    overwritten before any query can see it (the model's causal mask hides later slots).
    """

    def __init__(self, draft_model: Any, prompts: list[list[int]], prefill_len: int,
                 max_len: int, pad: int):
        batch = len(prompts)
        self.model = draft_model
        self.pad = pad
        tokens = np.full((batch, prefill_len), pad, np.int32)
        for row, ids in enumerate(prompts):
            tokens[row, :len(ids)] = ids
        positions = np.broadcast_to(np.arange(prefill_len, dtype=np.int32), (batch, prefill_len))
        last = np.zeros(batch, np.int32)
        self.cache = draft_model.init_cache(batch, max_len)
        _, self.cache = draft_model.forward_last(jnp.asarray(tokens), jnp.asarray(positions),
                                                 jnp.asarray(last), self.cache)
        self.valid = [len(ids) for ids in prompts]
        self.pending: list[list[int]] = [[] for _ in prompts]
        self.fed = [0] * batch
        self.pending_fed = [False] * batch

    def start_step(self) -> None:
        """Called before each step's drafts are built: nothing of them is fed yet."""
        self.fed = [0] * len(self.valid)
        self.pending_fed = [False] * len(self.valid)

    def propose(self, drafts: dict[int, _RowDraft], rounds: int,
                stats: SpeculationStats) -> None:
        """Extends the open drafts by up to `rounds` masked-greedy proposals of the draft model
        (one batched forward per round; the first also feeds each row's pending tokens and the
        forced tokens already in its draft)."""
        batch = len(self.valid)
        feeds = {row: self.pending[row] + draft.tokens for row, draft in drafts.items()
                 if draft.open}
        width_words = next(iter(drafts.values())).masks.shape[1] if drafts else 0
        for _ in range(rounds):
            active = [row for row in feeds if drafts[row].open]
            if not active:
                break
            t0 = time.perf_counter()
            width = bucket(max(len(feeds[row]) for row in active))
            tokens = np.full((batch, width), self.pad, np.int32)
            starts = np.array([self.valid[row] + self.fed[row] +
                               (len(self.pending[row]) if self.pending_fed[row] else 0)
                               for row in range(batch)], np.int32)
            last = np.zeros(batch, np.int32)
            masks = np.zeros((batch, width_words), np.uint32)
            constrained = np.zeros(batch, bool)
            for row in active:
                tokens[row, :len(feeds[row])] = feeds[row]
                last[row] = len(feeds[row]) - 1
                if drafts[row].matcher is not None:
                    masks[row] = drafts[row].mask()
                    constrained[row] = True
            positions = starts[:, None] + np.arange(width, dtype=np.int32)
            logits, self.cache = self.model.forward_last(
                jnp.asarray(tokens), jnp.asarray(positions), jnp.asarray(last), self.cache)
            picks = np.asarray(_propose(logits, jnp.asarray(masks), jnp.asarray(constrained)))
            stats.draft_forwards += 1
            stats.draft_s += time.perf_counter() - t0
            for row in active:
                if self.pending_fed[row]:
                    self.fed[row] += len(feeds[row])
                else:
                    self.pending_fed[row] = True
                    self.fed[row] += len(feeds[row]) - len(self.pending[row])
                if drafts[row].push(int(picks[row])):
                    feeds[row] = [drafts[row].tokens[-1]]

    def commit(self, row: int, draft_tokens: list[int], accepted: int, bonus: int) -> None:
        """The target kept draft_tokens[:accepted] and then its own `bonus` token."""
        if self.pending_fed[row]:
            kept = min(accepted, self.fed[row])
            self.valid[row] += len(self.pending[row]) + kept
            self.pending[row] = draft_tokens[kept:accepted] + [bonus]
        else:
            self.pending[row] = self.pending[row] + draft_tokens[:accepted] + [bonus]


def generate_speculative(model: Any, tokenizer_info: TokenizerInfo,
                         requests: Sequence[Request], *,
                         predictor: GrammarPredictor | None = None,
                         draft_model: Any | None = None,
                         num_draft: int = 4, max_new_tokens: int = 256,
                         fast_forward: bool = True, max_forced_per_step: int = 15,
                         learn: bool = True,
                         stats: SpeculationStats | None = None) -> list[Result]:
    """Greedy constrained generation with speculation (see the module note).

    Args:
      model, tokenizer_info, requests, max_new_tokens: as for `jaxguide.generate` (greedy
        only: the output equals `generate(..., Greedy(), fast_forward=False)`); the model also
        needs `forward(tokens, positions, cache)` returning the logits of every position.
      predictor: grammar-driven proposals (DOMINO 3.6); updated with every verified token when
        `learn`.
      draft_model: or proposals from a draft model with the same vocabulary (greedy under the
        grammar's masks), e.g. `model.with_layers(range(8))` (self-drafting); it needs
        `init_cache(batch, max_len)`, `forward_last(tokens, positions, last_index, cache)` and
        `config.vocab_size`. At most one of predictor / draft_model; with neither, only the
        forced tokens are speculated.
      num_draft: at most this many proposals per row and step (0: no proposals).
      fast_forward: put the tokens the grammar forces (at most `max_forced_per_step`) at the
        head of each draft.
      stats: optional SpeculationStats to fill.
    """
    if num_draft < 0:
        raise ValueError("num_draft must be >= 0")
    if predictor is not None and draft_model is not None:
        raise ValueError("give a predictor or a draft_model, not both")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or \
            max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    requests = list(requests)
    if not requests:
        return []
    vocab = int(model.config.vocab_size)
    if draft_model is not None and int(draft_model.config.vocab_size) != vocab:
        raise ValueError(f"the draft model's vocabulary ({draft_model.config.vocab_size}) is "
                         f"not the model's ({vocab})")
    stats = stats if stats is not None else SpeculationStats()
    start = time.perf_counter()
    batch = len(requests)
    width_words = (vocab + 31) // 32
    eos = tokenizer_info.eos_token_ids
    pad = min(eos) if eos else 0
    outputs: list[list[int]] = [[] for _ in range(batch)]
    forced_counts = [0] * batch
    matchers, errors = row_matchers(tokenizer_info, [r.grammar for r in requests])
    finish: dict[int, str] = {row: "error" for row in errors}
    eos_only = eos_only_row(tokenizer_info, width_words)
    prompts: list[list[int]] = []
    for row, request in enumerate(requests):
        try:
            prompts.append(prompt_ids(model, tokenizer_info, request))
        except (ValueError, JaxguideError) as e:
            prompts.append([pad])
            finish[row], errors[row] = "error", f"{type(e).__name__}: {e}"
    limits = [min(max_new_tokens, r.max_new_tokens or max_new_tokens) for r in requests]
    lengths = np.array([len(p) for p in prompts], np.int64)
    prefill_len = bucket(int(lengths.max()), 16)
    # Draft rows per row and step: forced tokens (fast-forward) then proposals.
    draft_rows = 1 + num_draft + (max_forced_per_step if fast_forward else 0)
    widest = bucket(2 * draft_rows)  # a draft model's first feed: pending + forced tokens
    max_len = max(bucket(int(lengths.max()) + max_new_tokens + widest, 128), prefill_len)

    tokens = np.full((batch, prefill_len), pad, np.int32)
    for row, ids in enumerate(prompts):
        tokens[row, :len(ids)] = ids
    positions = np.broadcast_to(np.arange(prefill_len, dtype=np.int32), (batch, prefill_len))
    cache = model.init_cache(batch, max_len)
    logits, cache = model.forward(jnp.asarray(tokens), jnp.asarray(positions), cache)
    drafter = None
    if draft_model is not None and num_draft > 0:
        drafter = _DraftModelState(draft_model, prompts, prefill_len, max_len, pad)
    # The "run" a step starts from: its logits come from column last[row] of this forward.
    last = (lengths - 1).astype(np.int32)
    next_pos = lengths.copy()
    runs: dict[int, list[int]] = {}
    stats.prefill_s = 0.0
    first = True
    while True:
        # The drafts and their masks (positions 0..k after the tokens fed so far); no
        # proposals at the first step, whose logits come from the prefill.
        limit = 0 if first else num_draft
        drafts: dict[int, _RowDraft] = {}
        forced_lengths: dict[int, int] = {}
        masks = np.zeros((batch, draft_rows, width_words), np.uint32)
        constrained = np.zeros(batch, bool)
        t0 = time.perf_counter()
        if drafter is not None:
            drafter.start_step()
        built: list[_RowDraft] = []
        try:
            for row in range(batch):
                if row in finish:
                    continue
                previous = outputs[row][-1] if outputs[row] else int(prompts[row][-1])
                matcher = matchers[row]
                constrained[row] = matcher is not None
                draft = _RowDraft(matcher, masks[row], previous, eos, eos_only,
                                  want_keys=predictor is not None)
                built.append(draft)
                if draft.ended:
                    finish[row] = "grammar_end"
                    continue
                # Forced tokens lead the draft (legal by definition; verified like the rest).
                if matcher is not None and fast_forward and not first and \
                        max_forced_per_step > 0:
                    for token in matcher.compute_ff_tokens(
                            outputs[row][-4:])[:max_forced_per_step]:
                        if not draft.push(token):
                            break
                forced_lengths[row] = len(draft.tokens)
                if predictor is not None:
                    for _ in range(limit):
                        guess = predictor.predict(draft.keys[-1])
                        if guess is None or not draft.push(guess):
                            break
                drafts[row] = draft
            stats.host_s += time.perf_counter() - t0
            if drafter is not None and limit > 0 and drafts:
                drafter.propose(drafts, limit, stats)
        finally:
            for draft in built:
                draft.close()
        for row, matcher in enumerate(matchers):
            if matcher is not None and row not in finish and matcher.error:
                finish[row], errors[row] = "error", matcher.error
                drafts.pop(row, None)
        if not drafts:
            break

        # Verify: the masked argmax at the K+1 positions after each row's run.
        t1 = time.perf_counter()
        if first:
            index = np.broadcast_to(last[:, None], (batch, 1)).astype(np.int32)
            chosen = np.asarray(_verify(logits[:, :, :], jnp.asarray(index),
                                        jnp.asarray(masks[:, :1]), jnp.asarray(constrained)))
            first = False
            stats.prefill_s = time.perf_counter() - start
            chosen_rows = {row: [int(chosen[row, 0])] for row in drafts}
        else:
            width = bucket(max(len(runs[row]) + len(drafts[row].tokens) for row in drafts))
            tokens = np.full((batch, width), pad, np.int32)
            index = np.zeros((batch, draft_rows), np.int32)
            for row, draft in drafts.items():
                fed = runs[row] + draft.tokens
                tokens[row, :len(fed)] = fed
                base = len(runs[row]) - 1
                index[row] = np.minimum(base + np.arange(draft_rows), len(fed) - 1)
            positions = next_pos[:, None].astype(np.int32) + np.arange(width, dtype=np.int32)
            logits, cache = model.forward(jnp.asarray(tokens), jnp.asarray(positions), cache)
            chosen = np.asarray(_verify(logits, jnp.asarray(index), jnp.asarray(masks),
                                        jnp.asarray(constrained)))
            stats.steps += 1
            stats.extend_steps += width > 1
            chosen_rows = {row: [int(t) for t in chosen[row, :len(draft.tokens) + 1]]
                           for row, draft in drafts.items()}
        stats.device_wait_s += time.perf_counter() - t1

        # Keep the draft up to the first disagreement, plus the model's token there.
        t2 = time.perf_counter()
        for row, draft in drafts.items():
            if row in runs:
                next_pos[row] += len(runs[row])
            picks = chosen_rows[row]
            n = 0
            while n < len(draft.tokens) and picks[n] == draft.tokens[n]:
                n += 1
            proposed = len(draft.tokens) - forced_lengths[row]
            stats.proposed += proposed
            stats.accepted += max(0, n - forced_lengths[row])
            new_tokens = draft.tokens[:n] + [picks[n]]
            next_pos[row] += n  # the accepted draft tokens are in the cache now
            if drafter is not None:
                drafter.commit(row, draft.tokens, n, picks[n])
            if predictor is not None and learn:
                for key, token in zip(draft.keys, new_tokens):
                    predictor.observe(key, token)
            matcher = matchers[row]
            for j, token in enumerate(new_tokens):
                if token < 0:
                    finish[row], errors[row] = "error", "no token can be sampled"
                    break
                if token in eos:
                    # As in generate: a complete sentence that only EOS can follow ends by
                    # the grammar (there it saves the step; here it came with the others).
                    ended = matcher is not None and \
                        ended_by_grammar(matcher, masks[row, j], eos_only)
                    finish[row] = "grammar_end" if ended else "eos"
                    break
                if matcher is not None and not matcher.accept_token(token):
                    finish[row], errors[row] = "error", f"token {token} refused (internal)"
                    break
                outputs[row].append(token)
                if len(outputs[row]) >= limits[row]:
                    finish[row] = "max_tokens"
                    break
            if row in finish:
                continue
            forced_counts[row] += min(n, forced_lengths[row])
            stats.forced_tokens += min(n, forced_lengths[row])
            runs[row] = [new_tokens[-1]]
        stats.host_s += time.perf_counter() - t2
        if len(finish) == batch:
            break

    results = results_of(tokenizer_info, outputs, finish, errors, forced_counts, stats)
    stats.total_s += time.perf_counter() - start
    return results
