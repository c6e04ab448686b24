"""Grammar-constrained decoding in MaxText's own engine (`MaxEngine`), without patching MaxText.

Design note
-----------
What MaxText does. `MaxEngine` (maxtext 0.2.5, `maxtext.inference.maxengine.maxengine`) keeps a
batch of decode slots in a dict, the decode state: the KV cache, `next_pos`, `tokens` int32
`[B, 1]` (the token the next `generate` call feeds the model) and `logits` f32 `[B, 1, V]` (the
logits that token was drawn from). `prefill` + `insert` put a prompt's last logits and its first
token into a slot; each `generate(params, decode_state)` is one jitted program that runs the
forward pass on `decode_state["tokens"]`, draws the next token from the new logits with
`inference_utils.sampling` and returns both in the new state. MaxText's `decode.py` is this loop
(prefill, insert, generate until `max_target_length`).

The hook. The draw is inside the jitted program, right after the forward (the `sampler=`
argument of `generate` is unused in 0.2.5), so a mask cannot reach it without patching MaxText.
But the state between two calls holds exactly what a constrained draw needs: the step's logits,
and the slot the next call reads its input token from. `MaxEngineConstraint.constrain(state)`
draws the token again from `state["logits"]` under the step's grammar masks (`jaxguide.sample`
over the packed uint32 `[B, ceil(V/32)]` bitmask of a `ConstrainedBatch`) and writes it into
`state["tokens"]`; the next `generate` feeds the model the constrained token, so every token
that enters the KV cache (and every token of the output) is the constrained one. The same goes
after `insert` for the first token. MaxText's own draw is computed and thrown away (one argmax,
or one sort for top-p, over V per step; `generate`'s `ResultTokens` and `token_logp` describe
that draw: read the outputs from `results()` instead). Any jaxguide sampling config works
(`Greedy`, `Temperature`, `TopK`, `TopP`, `MinP`: truncation after masking).

Overlap. One step of the loop::

    state, _ = engine.generate(params, state)   # dispatched: forward of the last token (async)
    constraint.start_masks()                    # host: accept the last token, fill the masks
    state = constraint.constrain(state)         # wait for masks, copy, masked draw (async)

`start_masks` fetches the previous step's tokens to the host after `generate` is dispatched: the
device computed them before that forward (program order), so the fetch waits only for the small
sampling program, and the host threads fill this step's masks (GIL released) while the device
runs the forward. `constrain` then waits for the fill, starts the copy of the mask and
dispatches the masked draw; the next `generate` is dispatched behind it. The device idles only
where the fill takes longer than the forward, plus the draw itself (a program of its own, as in
`jaxguide.generate`; it does not wait for the host). Step 0's masks are filled while the
prefills run. Not overlapped: accepting the sampled tokens (O(B) matcher steps, cheap) and
building the next input, as in any host-driven loop.

Limits. The constraint covers the slots of one batch started together (as `decode.py` does);
slots beyond the given grammars are left alone. One process: the masks are replicated over
the engine's mesh, like its logits (a multi-host engine would need each host's rows). No
fast-forward: forced tokens are drawn one per step (MaxEngine's `generate` feeds one token per
slot). The loop must stop before `next_pos` reaches MaxText's `max_target_length` (the default
`max_new_tokens` sees to it). Without JetStream installed, MaxText's stand-in
`ResultTokens` is a plain class that `jax.jit` cannot return, which makes `prefill` and
`generate` fail; `MaxEngineConstraint` registers it as a pytree (as JetStream's own
`ResultTokens`, a flax struct dataclass, is) and touches nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxguide.decode.constrained_batch import ConstrainedBatch, results_of
from jaxguide.decode.requests import DecodeStats, Result
from jaxguide.device.sampling import Greedy, SamplingConfig
from jaxguide.engine.batch_matcher import BatchMatcher
from jaxguide.engine.compiled_grammar import CompiledGrammar
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.grammars.grammar import Grammar

_STATE_KEYS = ("logits", "tokens")


def register_result_tokens_pytree() -> bool:
    """Makes MaxText's stand-in `ResultTokens` (used when JetStream is not installed) a pytree,
    as JetStream's own is, so that `MaxEngine.prefill` / `generate` can return it from `jit`.

    Returns:
      True if it registered the class now; False if JetStream is installed or it was done.
    """
    # MaxText is optional for jaxguide: imported only here.
    from maxtext.inference.maxengine import maxengine

    cls = maxengine.engine_api.ResultTokens
    if not getattr(maxengine.engine_api, "_IS_STUB", False) or \
            getattr(cls, "_jaxguide_pytree", False):
        return False

    def flatten(r: Any) -> tuple[tuple[Any, Any], tuple[Any, ...]]:
        return (r.data, r.log_prob), (r.tokens_idx, r.valid_idx, r.length_idx,
                                      r.samples_per_slot)

    def unflatten(aux: tuple[Any, ...], children: tuple[Any, Any]) -> Any:
        return cls(data=children[0], log_prob=children[1], tokens_idx=aux[0],
                   valid_idx=aux[1], length_idx=aux[2], samples_per_slot=aux[3])

    jax.tree_util.register_pytree_node(cls, flatten, unflatten)
    cls._jaxguide_pytree = True
    return True


@functools.partial(jax.jit, static_argnums=1)
def _state_tokens(tokens: jax.Array, pad_token: int) -> jax.Array:
    """Sampled tokens `[B]` as MaxEngine's `tokens` int32 `[B, 1]` (NO_ALLOWED_TOKEN -> pad)."""
    return jnp.where(tokens < 0, pad_token, tokens).astype(jnp.int32)[:, None]


class MaxEngineConstraint:
    """Grammar constraints on the slots of a MaxText `MaxEngine` decode loop.

    Usage (see the module note for the overlap)::

        constraint = MaxEngineConstraint(engine, tokenizer_info, [grammar, None, ...])
        constraint.start_masks()                  # step 0 masks, filled during the prefills
        state = engine.init_decode_state()
        for slot, ids in enumerate(prompts):      # MaxText's prefill and insert, as is
            prefix, _ = engine.prefill(params=params, padded_tokens=..., true_length=len(ids))
            state = engine.insert(prefix, state, slot=slot)
        state = constraint.constrain(state)       # the first token, under the grammar
        while not constraint.done():
            state, _ = engine.generate(params, state)
            constraint.start_masks()
            state = constraint.constrain(state)
        results = constraint.results()            # jaxguide.Result per given slot

    Slot i follows `grammars[i]` (None: unconstrained) and stops on EOS, when its grammar
    allows nothing else ("grammar_end"), or after `max_new_tokens` tokens. `done()` reads the
    tokens processed by the last `start_masks` (it never waits for the device), so the loop runs
    one `generate` more than needed. Not thread-safe: one loop drives it.
    """

    def __init__(self, engine: Any, tokenizer_info: TokenizerInfo,
                 grammars: Sequence[Grammar | CompiledGrammar | None], *,
                 sampling: SamplingConfig = Greedy(), max_new_tokens: int | None = None,
                 seed: int = 0, pad_token: int = 0,
                 batch_matcher: BatchMatcher | None = None):
        """Compiles the grammars against `tokenizer_info` and sets up the batch's masks.

        Args:
          engine: a `MaxEngine`; its `max_concurrent_decodes` slots and `config.vocab_size`
            (V of the logits, at least the tokenizer's vocabulary) are read.
          tokenizer_info: the tokenizer of the engine's model.
          grammars: one per slot in use, from slot 0; None leaves a slot unconstrained.
          sampling: the jaxguide sampling config of the masked draw.
          max_new_tokens: tokens per slot after which it stops ("max_tokens"); default
            MaxText's `max_target_length - max_prefill_predict_length` (decode.py's steps),
            which keeps every position inside the engine's KV cache.
          seed: the draw of step t uses fold_in(key(seed), t) (unused by Greedy).
          pad_token: written into the state for a slot where nothing can be drawn.
          batch_matcher: the mask-filling thread pool (default: the process-wide one).

        Raises:
          ValueError: more grammars than slots, a vocabulary larger than the logits, or bad
            counts.
        """
        slots = int(engine.max_concurrent_decodes)
        if not 1 <= len(grammars) <= slots:
            raise ValueError(f"{len(grammars)} grammars for an engine with {slots} slots: give "
                             f"1 to {slots}")
        if max_new_tokens is None:
            max_new_tokens = int(engine.config.max_target_length) - \
                int(engine.config.max_prefill_predict_length)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or \
                max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
        register_result_tokens_pytree()
        self.tokenizer_info = tokenizer_info
        self.sampling = sampling
        self.max_new_tokens = max_new_tokens
        self.pad_token = int(pad_token)
        self.rows = len(grammars)
        self.batch = ConstrainedBatch(
            tokenizer_info, list(grammars) + [None] * (slots - self.rows),
            logits_width=int(engine.config.vocab_size), batch_matcher=batch_matcher,
            sharding=getattr(engine, "replicated_sharding", None))   # laid out as the logits
        self.outputs: list[list[int]] = [[] for _ in range(self.rows)]
        self.stopped: dict[int, str] = {}
        self._eos = frozenset(int(t) for t in tokenizer_info.eos_token_ids)
        self._key = jax.random.key(seed)
        self._step = 0
        self._last: jax.Array | None = None  # the tokens of the last constrain, not yet read

    def start_masks(self) -> None:
        """Reads the tokens of the last `constrain` (waiting only for that draw), records them,
        accepts them into the matchers and starts filling this step's masks on host threads.
        Call it right after dispatching `prefill` (step 0) or `generate`."""
        self._read_last()
        self.batch.start_masks(self._sampled)

    def _read_last(self) -> None:
        self._sampled = None
        if self._last is None:
            return
        sampled = np.asarray(self._last)
        self._last = None
        finished = self.batch.finished_rows()
        for row in range(self.rows):
            if row in self.stopped:
                continue
            token = int(sampled[row])
            if row in finished:
                self._stop(row, finished[row])
            elif token in self._eos or token < 0:
                self._stop(row, "eos" if token >= 0 else "error")
            else:
                self.outputs[row].append(token)
                if len(self.outputs[row]) >= self.max_new_tokens:
                    self._stop(row, "max_tokens")
        self._sampled = sampled

    def _stop(self, row: int, reason: str) -> None:
        self.stopped[row] = reason
        self.batch.stop_row(row, reason)

    def constrain(self, decode_state: dict[str, Any]) -> dict[str, Any]:
        """Draws this step's tokens from `decode_state["logits"]` under the grammar masks and
        writes them into `decode_state["tokens"]` (dispatched; nothing waits for the device).

        Args:
          decode_state: MaxEngine's decode state after `insert` or `generate`.

        Returns:
          The state to pass to the next `generate` (a new dict; the arrays are shared).
        """
        missing = [k for k in _STATE_KEYS if k not in decode_state]
        if missing:
            raise ValueError(f"not a MaxEngine decode state: no {missing}")
        logits = decode_state["logits"]
        if logits.ndim != 3 or logits.shape[1] != 1 or \
                logits.shape[0] != self.batch.batch_size:
            raise ValueError(f"decode_state['logits'] has shape {logits.shape}, expected "
                             f"[{self.batch.batch_size}, 1, V]")
        key = jax.random.fold_in(self._key, self._step)
        tokens = self.batch.sample(logits[:, 0, :], key, self.sampling)
        self._step += 1
        self._last = tokens
        state = dict(decode_state)
        state["tokens"] = _state_tokens(tokens, self.pad_token)
        return state

    def done(self) -> bool:
        """Whether every given slot has stopped, as of the last `start_masks`."""
        return len(self.stopped) == self.rows

    def results(self) -> list[Result]:
        """Reads the last draw, stops the remaining slots ("max_tokens") and returns one
        `jaxguide.Result` per given slot (text, token ids, finish reason, error)."""
        self._read_last()
        for row in range(self.rows):
            if row not in self.stopped:
                self._stop(row, "max_tokens")
        self.batch.close()
        errors = {row: message for row, message in self.batch.errors.items() if row < self.rows}
        return results_of(self.tokenizer_info, self.outputs, self.stopped, errors,
                          [0] * self.rows, DecodeStats())
