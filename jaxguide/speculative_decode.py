"""Grammar-driven speculative decoding (DOMINO section 3.6), greedy and exact.

Design note
-----------
What. `generate_speculative(model, info, requests, predictor=...)` decodes like
`jaxguide.generate(..., sampling=Greedy(), fast_forward=False)` and returns the same tokens, but
each forward pass also scores a draft: the tokens the grammar forces (fast-forward) followed by
up to `num_draft` tokens proposed by a cheap predictor; the tokens the model agrees with are
taken at once, so a step can yield several tokens for one forward. Forced tokens are verified
like proposals: where the model would have written the forced text with other tokens than the
canonical ones (`,` then `"` rather than `,"`), its own tokens win, so unlike `generate`'s
fast-forward this never changes the output.

The predictor (`GrammarPredictor`) is count based and conditioned on the grammar state: its key
is (a hash of the allowed-token mask at the position, the previous token) — the mask is what the
lexer and parser state looks like from the model's side (inside a string, expecting a key after
`{`, after a value...) — and its value is a count of the tokens the model produced there. It
learns online from every verified token and from warm-up requests, and proposes only
grammar-legal tokens (each proposal is checked against the mask at its position). Unconstrained
rows use the previous token alone as the key (a bigram model).

The step, per row: the last token is followed by the draft; its masks come from `fill_draft_bitmasks`-style walking (the
matcher accepts a proposal, fills the next row, ..., then rolls back), which also gives the keys
for the next proposal. One forward of [run + draft] returns the logits of every position; the
jitted verifier takes the masked argmax at the K+1 positions that follow the run; the row keeps
the proposals up to the first disagreement plus the model's own token there. Exactness: every
kept token is the masked argmax of the logits after exactly the tokens before it, which is what
the non-speculative greedy loop computes (up to the floating-point differences between a
one-token and a multi-token forward, which the tests show do not change the argmax here).
KV entries of rejected proposals sit past the row's length and are overwritten by the next
step (the model's causal mask hides them).

Cost per step: one forward of [B, T] with T = the bucketed longest (run + draft), K+1 mask rows
per constrained row filled synchronously on the host (no overlap with the forward in this loop),
one host round trip for the verified tokens.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide.decode import DecodeStats, Request, Result, _bucket, _prompt_ids
from jaxguide.errors import JaxguideError
from jaxguide.matcher import CompiledGrammar, Matcher, compile_grammar
from jaxguide.sampling import Greedy, sample
from jaxguide.tokenizer import TokenizerInfo


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

    proposed: int = 0
    accepted: int = 0


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


def generate_speculative(model: Any, tokenizer_info: TokenizerInfo,
                         requests: Sequence[Request], *, predictor: GrammarPredictor,
                         num_draft: int = 4, max_new_tokens: int = 256,
                         fast_forward: bool = True, max_forced_per_step: int = 15,
                         learn: bool = True,
                         stats: SpeculationStats | None = None) -> list[Result]:
    """Greedy constrained generation with grammar-driven speculation (see the module note).

    Args:
      model, tokenizer_info, requests, max_new_tokens: as for `jaxguide.generate` (greedy
        only: the output equals `generate(..., Greedy(), fast_forward=False)`); the model also
        needs `forward(tokens, positions, cache)` returning the logits of every position.
      fast_forward: put the tokens the grammar forces (at most `max_forced_per_step`) at the
        head of each draft.
      predictor: the proposal model; updated with every verified token when `learn`.
      num_draft: at most this many proposals per row and step (0: no speculation).
      stats: optional SpeculationStats to fill.
    """
    if num_draft < 0:
        raise ValueError("num_draft must be >= 0")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or \
            max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    requests = list(requests)
    if not requests:
        return []
    stats = stats if stats is not None else SpeculationStats()
    start = time.perf_counter()
    batch = len(requests)
    vocab = int(model.config.vocab_size)
    width_words = (vocab + 31) // 32
    eos = tokenizer_info.eos_token_ids
    pad = min(eos) if eos else 0
    outputs: list[list[int]] = [[] for _ in range(batch)]
    forced_counts = [0] * batch
    finish: dict[int, str] = {}
    errors: dict[int, str] = {}
    matchers: list[Matcher | None] = [None] * batch
    prompts: list[list[int]] = []
    compiled_cache: dict[int, CompiledGrammar | Exception] = {}
    for row, request in enumerate(requests):
        prompts.append([pad])
        try:
            prompts[row] = _prompt_ids(model, tokenizer_info, request)
            grammar = request.grammar
            if isinstance(grammar, CompiledGrammar):
                matchers[row] = Matcher(grammar)
            elif grammar is not None:
                if id(grammar) not in compiled_cache:
                    try:
                        compiled_cache[id(grammar)] = compile_grammar(grammar, tokenizer_info)
                    except (JaxguideError, ValueError) as e:
                        compiled_cache[id(grammar)] = e
                compiled = compiled_cache[id(grammar)]
                if isinstance(compiled, Exception):
                    raise compiled
                matchers[row] = Matcher(compiled)
        except (ValueError, JaxguideError) as e:
            finish[row], errors[row] = "error", f"{type(e).__name__}: {e}"
    limits = [min(max_new_tokens, r.max_new_tokens or max_new_tokens) for r in requests]
    lengths = np.array([len(p) for p in prompts], np.int64)
    prefill_len = _bucket(int(lengths.max()), 16)
    # Draft rows per row and step: forced tokens (fast-forward) then predictor proposals.
    draft_rows = 1 + num_draft + (max_forced_per_step if fast_forward else 0)
    widest = _bucket(draft_rows)
    max_len = max(_bucket(int(lengths.max()) + max_new_tokens + widest, 128), prefill_len)

    tokens = np.full((batch, prefill_len), pad, np.int32)
    for row, ids in enumerate(prompts):
        tokens[row, :len(ids)] = ids
    positions = np.broadcast_to(np.arange(prefill_len, dtype=np.int32), (batch, prefill_len))
    cache = model.init_cache(batch, max_len)
    logits, cache = model.forward(jnp.asarray(tokens), jnp.asarray(positions), cache)
    # The "run" a step starts from: its logits come from column last[row] of this forward.
    last = (lengths - 1).astype(np.int32)
    next_pos = lengths.copy()
    runs: dict[int, list[int]] = {}
    stats.prefill_s = 0.0
    first = True
    while True:
        # Proposals and their masks (positions 0..k after the tokens fed so far); none at the
        # first step, whose logits come from the prefill.
        limit = 0 if first else num_draft
        drafts: dict[int, list[int]] = {}
        forced_lengths: dict[int, int] = {}
        keys: dict[int, list[tuple[int, int]]] = {}
        masks = np.zeros((batch, draft_rows, width_words), np.uint32)
        constrained = np.zeros(batch, bool)
        t0 = time.perf_counter()
        for row in range(batch):
            if row in finish:
                continue
            previous = outputs[row][-1] if outputs[row] else int(prompts[row][-1])
            matcher = matchers[row]
            draft: list[int] = []
            row_keys: list[tuple[int, int]] = []
            if matcher is None:
                for _ in range(limit + 1):
                    row_keys.append(predictor.key(None, previous))
                    if len(draft) == limit:
                        break
                    guess = predictor.predict(row_keys[-1])
                    if guess is None or guess in eos:
                        break
                    draft.append(guess)
                    previous = guess
            else:
                constrained[row] = True
                # Forced tokens lead the draft (legal by definition; verified like the rest).
                forced = []
                if fast_forward and not first and max_forced_per_step > 0:
                    forced = matcher.compute_ff_tokens(outputs[row][-4:])[:max_forced_per_step]
                row_limit = len(forced) + limit
                accepted = 0
                try:
                    for j in range(row_limit + 1):
                        matcher.fill_next_token_bitmask(masks[row], j)
                        if j == 0 and matcher.is_accepting() and _eos_only(masks[row, 0], eos):
                            finish[row] = "grammar_end"
                            break
                        row_keys.append(predictor.key(masks[row, j], previous))
                        if j == row_limit:
                            break
                        guess = forced[j] if j < len(forced) else \
                            predictor.predict(row_keys[-1])
                        if guess is None or guess in eos or not _allowed(masks[row, j], guess) \
                                or not matcher.accept_token(guess):
                            break
                        accepted += 1
                        draft.append(guess)
                        previous = guess
                finally:
                    matcher.rollback(accepted)
                if matcher.error:
                    finish[row], errors[row] = "error", matcher.error
                if row in finish:
                    continue
            drafts[row], keys[row] = draft, row_keys
            forced_lengths[row] = len(forced) if matcher is not None else 0
        stats.host_s += time.perf_counter() - t0
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
            width = _bucket(max(len(runs[row]) + len(drafts[row]) for row in drafts))
            tokens = np.full((batch, width), pad, np.int32)
            index = np.zeros((batch, draft_rows), np.int32)
            for row in drafts:
                fed = runs[row] + drafts[row]
                tokens[row, :len(fed)] = fed
                base = len(runs[row]) - 1
                index[row] = np.minimum(base + np.arange(draft_rows), len(fed) - 1)
            positions = next_pos[:, None].astype(np.int32) + np.arange(width, dtype=np.int32)
            logits, cache = model.forward(jnp.asarray(tokens), jnp.asarray(positions), cache)
            chosen = np.asarray(_verify(logits, jnp.asarray(index), jnp.asarray(masks),
                                        jnp.asarray(constrained)))
            stats.steps += 1
            stats.extend_steps += width > 1
            chosen_rows = {row: [int(t) for t in chosen[row, :len(drafts[row]) + 1]]
                           for row in drafts}
        stats.device_wait_s += time.perf_counter() - t1

        # Keep proposals up to the first disagreement, plus the model's token there.
        t2 = time.perf_counter()
        for row, draft in drafts.items():
            if row in runs:
                next_pos[row] += len(runs[row])
            picks = chosen_rows[row]
            n = 0
            while n < len(draft) and picks[n] == draft[n]:
                n += 1
            stats.proposed += len(draft)
            stats.accepted += n
            new_tokens = draft[:n] + [picks[n]]
            next_pos[row] += n  # the accepted proposals are in the cache now
            if learn:
                for j, token in enumerate(new_tokens):
                    if j < len(keys[row]):
                        predictor.observe(keys[row][j], token)
            matcher = matchers[row]
            for j, token in enumerate(new_tokens):
                if token < 0:
                    finish[row], errors[row] = "error", "no token can be sampled"
                    break
                if token in eos:
                    # As in generate: a complete sentence that only EOS can follow ends by
                    # the grammar (there it saves the step; here it came with the others).
                    ended = matcher is not None and _eos_only(masks[row, j], eos) \
                        and matcher.is_accepting()
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
            forced_counts[row] += min(n, forced_lengths.get(row, 0))
            stats.forced_tokens += min(n, forced_lengths.get(row, 0))
            runs[row] = [new_tokens[-1]]
        stats.host_s += time.perf_counter() - t2
        if len(finish) == batch:
            break

    results = []
    for row in range(batch):
        ids = outputs[row]
        text = tokenizer_info.decode_bytes(ids).decode("utf-8", errors="replace")
        results.append(Result(text=text, token_ids=ids, finish_reason=finish.get(row, "eos"),
                              error=errors.get(row), forced_tokens=forced_counts[row]))
        stats.tokens += len(ids)
    stats.total_s += time.perf_counter() - start
    return results


def _eos_only(mask_row: np.ndarray, eos: frozenset[int]) -> bool:
    expected = np.zeros_like(mask_row)
    for token in eos:
        expected[token >> 5] |= np.uint32(1 << (token & 31))
    return bool(np.array_equal(mask_row, expected))
