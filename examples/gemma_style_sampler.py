"""A grammar-constrained sampler loop in the style of google-deepmind/gemma's `Sampler`.

Design note
-----------
gemma's sampler (`gemma/gm/text/_sampler_loop.py`) carries a `SamplingState` (a flax struct
dataclass: step, done, last token and its position, KV cache, rng) through a jitted step and
streams: a host loop calls the step, reads the state and stops at the end tokens. This is that
loop with jaxguide's grammar masks, over the reference SmolLM2-135M-Instruct on CPU:

* the step is two jitted functions, `_forward` (the model on the last token: logits `[B, V]` and
  the new cache) and `_sample` (logits -> a draw under the packed uint32 `[B, ceil(V/32)]`
  bitmask with `jaxguide.sample`, inlined -> the next state). Two programs, so the host can fill
  the masks of a step while the device runs its forward: the mask of step t depends on the
  token of step t-1, which one fused forward+sample program would hand back only at its end;
* `jaxguide.ConstrainedBatch` holds one matcher per row: `start_masks(tokens)` right after
  `_forward` is dispatched accepts the previous step's tokens and fills this step's masks on
  host threads (GIL released) while the forward runs; `masks()` waits for them and starts the
  host-to-device copy; `constrained()` says which rows apply their mask; `finished_rows()`
  names the rows whose grammar ended (only EOS allowed after a complete sentence), which
  `_sample` then marks done, as it does rows that drew an end token.

Per step the host waits only for `_sample`'s tokens (the forward behind it keeps running) and
for masks that took longer than the forward. Run it:

    python examples/gemma_style_sampler.py [--max-new-tokens 48] [--temperature 0]

It prints each output, its finish reason and whether it validates against the schema
(`jsonschema`); the exit status is 1 if an output does not.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys

import flax
import jax
import jax.numpy as jnp
import jsonschema
import numpy as np

import jaxguide
from jaxguide.decode import results_of
from jaxguide.engine.tokenizer import encode_prompt
from jaxguide.models import smollm2
from jaxguide.models.llama import LlamaModel

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "age"],
          "properties": {"name": {"type": "string", "maxLength": 20},
                         "age": {"type": "integer", "minimum": 18, "maximum": 99}}}
PROMPTS = ["Describe a chef as JSON.", "Describe a pilot as JSON."]


@flax.struct.dataclass
class SamplingState:
    """What the step carries (the shapes are static: one compiled program per batch shape).

    Attributes:
      step: int32 `[]`, steps taken.
      done: bool `[B]`, rows that drew an end token or whose grammar ended.
      last_token: int32 `[B]`, the model's next input (the pad token once a row is done).
      last_token_pos: int32 `[B]`, its position.
      rng: the key of the next draw.
    """

    step: jax.Array
    done: jax.Array
    last_token: jax.Array
    last_token_pos: jax.Array
    rng: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class ConstrainedSamplerLoop:
    """A gemma-style sampling loop with jaxguide masks (hashable: `self` is static under jit)."""

    model: LlamaModel
    tokenizer_info: jaxguide.TokenizerInfo
    sampling: jaxguide.SamplingConfig = jaxguide.Greedy()

    @property
    def end_tokens(self) -> tuple[int, ...]:
        return tuple(sorted(self.tokenizer_info.eos_token_ids))

    @functools.partial(jax.jit, static_argnames=("self",), donate_argnames=("cache",))
    def _forward(self, params, last_token, last_token_pos, cache):
        """The model on each row's last token: (logits f32 `[B, V]`, the new cache)."""
        batch = last_token.shape[0]
        return self.model.apply(params, last_token[:, None], last_token_pos[:, None], cache,
                                last_index=jnp.zeros(batch, jnp.int32))

    @functools.partial(jax.jit, static_argnames=("self",))
    def _sample(self, state, logits, bitmask, constrained, ended):
        """Draws each row's next token under its mask (rows with `constrained` False ignore
        theirs) and advances the state; rows `ended` by their grammar become done."""
        rng, draw_rng = jax.random.split(state.rng)
        token = jaxguide.sample(logits, bitmask, draw_rng, self.sampling,
                                constrained=constrained)
        done = state.done | ended | (token < 0) | jnp.isin(token, jnp.array(self.end_tokens))
        pad = jnp.int32(self.end_tokens[0])
        return SamplingState(step=state.step + 1, done=done,
                             last_token=jnp.where(done, pad, token),
                             last_token_pos=state.last_token_pos + ~state.done, rng=rng)

    def _prefill(self, prompts: list[list[int]], cache_length: int):
        """Runs the prompts (end-padded into one [B, T] batch): (logits of each prompt's last
        token, cache, the initial state)."""
        width = max(len(p) for p in prompts)
        tokens = np.zeros((len(prompts), width), np.int32)
        for row, ids in enumerate(prompts):
            tokens[row, :len(ids)] = ids
        lengths = np.array([len(p) for p in prompts], np.int32)
        positions = jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), tokens.shape)
        cache = self.model.init_cache(len(prompts), cache_length)
        logits, cache = self.model.forward_last(jnp.asarray(tokens), positions,
                                                jnp.asarray(lengths - 1), cache)
        state = SamplingState(step=jnp.int32(0), done=jnp.zeros(len(prompts), bool),
                              last_token=jnp.asarray(tokens[np.arange(len(prompts)), lengths - 1]),
                              last_token_pos=jnp.asarray(lengths - 1), rng=jax.random.key(0))
        return logits, cache, state

    def sample(self, prompts: list[list[int]], grammars: list, max_new_tokens: int,
               seed: int = 0) -> list[jaxguide.Result]:
        """Generates for a batch of prompt ids, row i under `grammars[i]` (None: free)."""
        if len(prompts) != len(grammars) or not prompts:
            raise ValueError(f"{len(prompts)} prompts for {len(grammars)} grammars")
        logits, cache, state = self._prefill(prompts, max(map(len, prompts)) + max_new_tokens)
        state = state.replace(rng=jax.random.key(seed))
        constraint = jaxguide.ConstrainedBatch(self.tokenizer_info, grammars,
                                               logits_width=logits.shape[-1],
                                               mask_every_step=True)
        constraint.start_masks()                     # step 0's masks, while the prefill runs
        state = self._masked_step(constraint, state, logits)
        outputs: list[list[int]] = [[] for _ in prompts]
        stopped: dict[int, str] = {}
        for _ in range(max_new_tokens):
            logits, cache = self._forward(self.model.params, state.last_token,
                                          state.last_token_pos, cache)      # dispatched
            tokens, done = np.asarray(state.last_token), np.asarray(state.done)
            self._record(constraint, tokens, done, outputs, stopped, max_new_tokens)
            if len(stopped) == len(prompts):
                break
            constraint.start_masks(tokens)           # filled while the forward runs
            state = self._masked_step(constraint, state, logits)
        constraint.close()
        return results_of(self.tokenizer_info, outputs, stopped, constraint.errors,
                          [0] * len(prompts), jaxguide.DecodeStats())

    def _masked_step(self, constraint, state, logits):
        mask = constraint.masks()                    # waits for the fill, starts the copy
        finished = constraint.finished_rows()
        ended = np.array([row in finished for row in range(constraint.batch_size)])
        return self._sample(state, logits, mask, constraint.constrained(), jnp.asarray(ended))

    def _record(self, constraint, tokens, done, outputs, stopped, max_new_tokens):
        """Appends each running row's token; stops rows that are done or out of tokens."""
        finished = constraint.finished_rows()
        for row, token in enumerate(tokens):
            if row in stopped:
                continue
            if done[row]:
                stopped[row] = finished.get(row, "eos")
                constraint.stop_row(row, stopped[row])
                continue
            outputs[row].append(int(token))
            if len(outputs[row]) >= max_new_tokens:
                stopped[row] = "max_tokens"
                constraint.stop_row(row, "max_tokens")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0: greedy; > 0: sampling at that temperature")
    args = parser.parse_args(argv)
    if args.max_new_tokens < 1 or args.temperature < 0:
        parser.error("--max-new-tokens must be >= 1 and --temperature >= 0")
    model, info = smollm2.load()
    sampling = jaxguide.Temperature(args.temperature) if args.temperature else jaxguide.Greedy()
    loop = ConstrainedSamplerLoop(model, info, sampling)
    grammar = jaxguide.Grammar.from_json_schema(SCHEMA, whitespace="compact")
    prompts = [encode_prompt(info, model.render_chat([{"role": "user", "content": p}]))
               for p in PROMPTS]
    results = loop.sample(prompts, [grammar] * len(prompts), args.max_new_tokens)
    all_valid = True
    for prompt, result in zip(PROMPTS, results):
        try:
            jsonschema.validate(json.loads(result.text), SCHEMA)
            valid = True
        except (ValueError, jsonschema.ValidationError):
            valid = False
        all_valid &= valid
        print(f"{prompt!r} -> {result.text!r} ({result.finish_reason}, valid: {valid})")
    return 0 if all_valid else 1


if __name__ == "__main__":
    sys.exit(main())
