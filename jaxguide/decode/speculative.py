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
model's cache. In the code, `_SpeculativeLoop.run` repeats `_build_drafts` (`_lead_draft` puts
the forced tokens and the predictor's proposals in each `_RowDraft`, `_DraftModelState.propose`
the draft model's), `_verify` and `_keep` (per row `_keep_row`, which `_append`s the kept tokens).

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
from jaxguide.decode.prefill import PromptBatch, bucket, prepare_prompts
from jaxguide.decode.requests import DecodeStats, Request, Result
from jaxguide.decode.tool_requests import add_tool_calls, grammars_of
from jaxguide.device.sampling import Greedy, sample
from jaxguide.engine.matcher import eos_only_row
from jaxguide.engine.tokenizer import TokenizerInfo


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

    def __init__(self, draft_model: Any, prompts: PromptBatch, max_len: int):
        batch = len(prompts.ids)
        self.model = draft_model
        self.pad = prompts.pad
        last = np.zeros(batch, np.int32)
        self.cache = draft_model.init_cache(batch, max_len)
        _, self.cache = draft_model.forward_last(
            jnp.asarray(prompts.prefill_tokens()), jnp.asarray(prompts.prefill_positions()),
            jnp.asarray(last), self.cache)
        self.valid = [len(ids) for ids in prompts.ids]
        self.pending: list[list[int]] = [[] for _ in prompts.ids]
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
    loop = _SpeculativeLoop(model, tokenizer_info, requests, predictor=predictor,
                            draft_model=draft_model, num_draft=num_draft,
                            max_new_tokens=max_new_tokens, fast_forward=fast_forward,
                            max_forced_per_step=max_forced_per_step, learn=learn,
                            stats=stats if stats is not None else SpeculationStats())
    return loop.run()


@dataclasses.dataclass
class _StepDrafts:
    """One step's drafts: per running row its draft and how many of its tokens were forced;
    `masks[row, j]` is the mask after draft.tokens[:j]."""

    drafts: dict[int, _RowDraft]
    forced_lengths: dict[int, int]
    masks: np.ndarray  # uint32 [B, draft_rows, W]
    constrained: np.ndarray  # bool [B]


class _SpeculativeLoop:
    """The state of one `generate_speculative` call. `run` repeats `_build_drafts` (drafts and
    their masks), `_verify` (one forward, the masked argmax after each position) and `_keep`
    (the agreed prefix plus the model's own token); the prefill's logits serve the first step,
    which has no proposals."""

    def __init__(self, model: Any, tokenizer_info: TokenizerInfo, requests: list[Request], *,
                 predictor: GrammarPredictor | None, draft_model: Any | None, num_draft: int,
                 max_new_tokens: int, fast_forward: bool, max_forced_per_step: int,
                 learn: bool, stats: SpeculationStats):
        self.start = time.perf_counter()
        self.model, self.tokenizer_info, self.stats = model, tokenizer_info, stats
        self.predictor, self.learn, self.num_draft = predictor, learn, num_draft
        self.fast_forward, self.max_forced_per_step = fast_forward, max_forced_per_step
        self.batch = batch = len(requests)
        self.width_words = (int(model.config.vocab_size) + 31) // 32
        self.eos = tokenizer_info.eos_token_ids
        self.outputs: list[list[int]] = [[] for _ in range(batch)]
        self.forced_counts = [0] * batch
        self.requests = requests
        grammars, grammar_errors = grammars_of(requests, model, tokenizer_info)
        self.matchers, self.errors = row_matchers(tokenizer_info, grammars)
        self.errors.update(grammar_errors)
        self.finish: dict[int, str] = {row: "error" for row in self.errors}
        self.eos_only = eos_only_row(tokenizer_info, self.width_words)
        self.prompts = prepare_prompts(model, tokenizer_info, requests, max_new_tokens)
        for row, message in self.prompts.errors.items():
            self.finish[row], self.errors[row] = "error", message
        # Draft rows per row and step: forced tokens (fast-forward) then proposals.
        self.draft_rows = 1 + num_draft + (max_forced_per_step if fast_forward else 0)
        widest = bucket(2 * self.draft_rows)  # a draft model's first feed: pending + forced
        max_len = self.prompts.max_len(max_new_tokens, widest)
        self.logits, self.cache = model.forward(
            jnp.asarray(self.prompts.prefill_tokens()),
            jnp.asarray(self.prompts.prefill_positions()), model.init_cache(batch, max_len))
        self.drafter = None
        if draft_model is not None and num_draft > 0:
            self.drafter = _DraftModelState(draft_model, self.prompts, max_len)
        self.next_pos = self.prompts.lengths.copy()
        # The "run" a step starts from: the tokens fed ahead of its draft (none at the first
        # step, whose logits come from column lengths - 1 of the prefill).
        self.runs: dict[int, list[int]] = {}
        stats.prefill_s = 0.0
        self.first = True

    def run(self) -> list[Result]:
        while True:
            step = self._build_drafts()
            if not step.drafts:
                break
            self._keep(step, self._verify(step))
            if len(self.finish) == self.batch:
                break
        results = results_of(self.tokenizer_info, self.outputs, self.finish, self.errors,
                             self.forced_counts, self.stats)
        add_tool_calls(results, self.requests, self.model, self.tokenizer_info)
        self.stats.total_s += time.perf_counter() - self.start
        return results

    def _build_drafts(self) -> _StepDrafts:
        """The drafts and their masks (positions 0..k after the tokens fed so far) of the
        running rows; no proposals at the first step, whose logits come from the prefill. Rows
        whose grammar has ended or whose matcher failed stop here."""
        limit = 0 if self.first else self.num_draft
        step = _StepDrafts({}, {}, np.zeros((self.batch, self.draft_rows, self.width_words),
                                            np.uint32), np.zeros(self.batch, bool))
        t0 = time.perf_counter()
        if self.drafter is not None:
            self.drafter.start_step()
        built: list[_RowDraft] = []
        try:
            for row in range(self.batch):
                if row in self.finish:
                    continue
                output, matcher = self.outputs[row], self.matchers[row]
                previous = output[-1] if output else int(self.prompts.ids[row][-1])
                step.constrained[row] = matcher is not None
                draft = _RowDraft(matcher, step.masks[row], previous, self.eos, self.eos_only,
                                  want_keys=self.predictor is not None)
                built.append(draft)
                if draft.ended:
                    self.finish[row] = "grammar_end"
                    continue
                step.forced_lengths[row] = self._lead_draft(row, draft, limit)
                step.drafts[row] = draft
            self.stats.host_s += time.perf_counter() - t0
            if self.drafter is not None and limit > 0 and step.drafts:
                self.drafter.propose(step.drafts, limit, self.stats)
        finally:
            for draft in built:
                draft.close()
        for row, matcher in enumerate(self.matchers):
            if matcher is not None and row not in self.finish and matcher.error:
                self.finish[row], self.errors[row] = "error", matcher.error
                step.drafts.pop(row, None)
        return step

    def _lead_draft(self, row: int, draft: _RowDraft, limit: int) -> int:
        """Puts the forced tokens, then up to `limit` predictor proposals, in the row's draft;
        returns how many were forced."""
        matcher = self.matchers[row]
        # Forced tokens lead the draft (legal by definition; verified like the rest).
        if matcher is not None and self.fast_forward and not self.first and \
                self.max_forced_per_step > 0:
            for token in matcher.compute_ff_tokens(
                    self.outputs[row][-4:])[:self.max_forced_per_step]:
                if not draft.push(token):
                    break
        forced = len(draft.tokens)
        if self.predictor is not None:
            for _ in range(limit):
                guess = self.predictor.predict(draft.keys[-1])
                if guess is None or not draft.push(guess):
                    break
        return forced

    def _verify(self, step: _StepDrafts) -> dict[int, list[int]]:
        """The masked argmax at the K+1 positions after each row's run: the prefill's last
        position at the first step, else one forward of [run + draft] per row."""
        t1 = time.perf_counter()
        if self.first:
            lengths = self.prompts.lengths
            index = np.broadcast_to((lengths - 1).astype(np.int32)[:, None],
                                    (self.batch, 1)).astype(np.int32)
            chosen = np.asarray(_verify(self.logits[:, :, :], jnp.asarray(index),
                                        jnp.asarray(step.masks[:, :1]),
                                        jnp.asarray(step.constrained)))
            self.first = False
            self.stats.prefill_s = time.perf_counter() - self.start
            chosen_rows = {row: [int(chosen[row, 0])] for row in step.drafts}
        else:
            chosen_rows = self._verify_drafts(step)
        self.stats.device_wait_s += time.perf_counter() - t1
        return chosen_rows

    def _verify_drafts(self, step: _StepDrafts) -> dict[int, list[int]]:
        drafts, runs = step.drafts, self.runs
        width = bucket(max(len(runs[row]) + len(drafts[row].tokens) for row in drafts))
        tokens = np.full((self.batch, width), self.prompts.pad, np.int32)
        index = np.zeros((self.batch, self.draft_rows), np.int32)
        for row, draft in drafts.items():
            fed = runs[row] + draft.tokens
            tokens[row, :len(fed)] = fed
            base = len(runs[row]) - 1
            index[row] = np.minimum(base + np.arange(self.draft_rows), len(fed) - 1)
        positions = self.next_pos[:, None].astype(np.int32) + np.arange(width, dtype=np.int32)
        self.logits, self.cache = self.model.forward(jnp.asarray(tokens), jnp.asarray(positions),
                                                     self.cache)
        chosen = np.asarray(_verify(self.logits, jnp.asarray(index), jnp.asarray(step.masks),
                                    jnp.asarray(step.constrained)))
        self.stats.steps += 1
        self.stats.extend_steps += width > 1
        return {row: [int(t) for t in chosen[row, :len(draft.tokens) + 1]]
                for row, draft in drafts.items()}

    def _keep(self, step: _StepDrafts, chosen_rows: dict[int, list[int]]) -> None:
        """Keeps each draft up to the first disagreement, plus the model's token there."""
        t2 = time.perf_counter()
        for row, draft in step.drafts.items():
            self._keep_row(row, draft, chosen_rows[row], step.forced_lengths[row],
                           step.masks[row])
        self.stats.host_s += time.perf_counter() - t2

    def _keep_row(self, row: int, draft: _RowDraft, picks: list[int], forced: int,
                  masks: np.ndarray) -> None:
        stats = self.stats
        if row in self.runs:
            self.next_pos[row] += len(self.runs[row])
        n = 0
        while n < len(draft.tokens) and picks[n] == draft.tokens[n]:
            n += 1
        stats.proposed += len(draft.tokens) - forced
        stats.accepted += max(0, n - forced)
        new_tokens = draft.tokens[:n] + [picks[n]]
        self.next_pos[row] += n  # the accepted draft tokens are in the cache now
        if self.drafter is not None:
            self.drafter.commit(row, draft.tokens, n, picks[n])
        if self.predictor is not None and self.learn:
            for key, token in zip(draft.keys, new_tokens):
                self.predictor.observe(key, token)
        if not self._append(row, new_tokens, masks):
            return
        self.forced_counts[row] += min(n, forced)
        stats.forced_tokens += min(n, forced)
        self.runs[row] = [new_tokens[-1]]

    def _append(self, row: int, new_tokens: list[int], masks: np.ndarray) -> bool:
        """Appends the kept tokens to the row's output (accepting them into its matcher)
        until one ends the row; whether the row still runs."""
        matcher = self.matchers[row]
        for j, token in enumerate(new_tokens):
            if token < 0:
                self.finish[row], self.errors[row] = "error", "no token can be sampled"
                break
            if token in self.eos:
                # As in generate: a complete sentence that only EOS can follow ends by the
                # grammar (there it saves the step; here it came with the others).
                ended = matcher is not None and ended_by_grammar(matcher, masks[j], self.eos_only)
                self.finish[row] = "grammar_end" if ended else "eos"
                break
            if matcher is not None and not matcher.accept_token(token):
                self.finish[row], self.errors[row] = "error", f"token {token} refused (internal)"
                break
            self.outputs[row].append(token)
            if len(self.outputs[row]) >= self.prompts.limits[row]:
                self.finish[row] = "max_tokens"
                break
        return row not in self.finish
