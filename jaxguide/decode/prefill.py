"""Prompt setup shared by both decode loops (`generate`, `generate_speculative`): prompt ids
with per-row errors, per-row token limits, length buckets (a few static shapes, so a few
compiles), the prefill's input, the model's KV cache."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxguide.decode.requests import Request
from jaxguide.decode.tool_requests import messages_with_tools
from jaxguide.device.distributed import BatchPlacement
from jaxguide.engine.tokenizer import TokenizerInfo, encode_prompt
from jaxguide.errors import JaxguideError

MIN_PREFILL_BUCKET = 16


def bucket(n: int, minimum: int = 1) -> int:
    """The power of two >= max(n, minimum)."""
    size = max(1, minimum)
    while size < n:
        size *= 2
    return size


def init_cache(model: Any, placement: BatchPlacement, max_len: int) -> Any:
    """The model's zero cache for the global batch; with a mesh, created sharded on it (its
    leaves are `[layers, B, ...]`: batch on dimension 1)."""
    if placement.mesh is None:
        return model.init_cache(placement.global_batch, max_len)
    shapes = jax.eval_shape(lambda: model.init_cache(placement.global_batch, max_len))
    shardings = jax.tree_util.tree_map(lambda leaf: placement.sharding(leaf.ndim, 1), shapes)
    return jax.jit(lambda: model.init_cache(placement.global_batch, max_len),
                   out_shardings=shardings)()


def prompt_ids(model: Any, tokenizer_info: TokenizerInfo, request: Request) -> list[int]:
    """The request's prompt (or its chat messages rendered by the model's template) as ids."""
    if request.messages is not None:
        render = getattr(model, "render_chat", None)
        if render is None:  # e.g. a LlamaModel built without a chat template
            raise ValueError("messages= needs a model with a chat template (model.render_chat)")
        text = render(messages_with_tools(request, model))
    else:
        text = request.prompt
    ids = encode_prompt(tokenizer_info, text)
    if not ids:
        raise ValueError("the prompt encodes to no tokens")
    return ids


def pad_token(tokenizer_info: TokenizerInfo) -> int:
    """The token fed where nothing is read (padding, stopped rows): the smallest EOS id."""
    return min(tokenizer_info.eos_token_ids, default=0)


@dataclasses.dataclass
class PromptBatch:
    """The prompt side of a batch of requests (`prepare_prompts`).

    Attributes:
      ids: each row's prompt ids; a row whose prompt failed holds `[pad]`.
      errors: row -> "ErrorType: message" for the rows whose prompt failed (they end in error).
      limits: int64 [B], each row's cap on new tokens (its request's, within the call's).
      lengths: int64 [B], the prompt lengths.
      longest: the longest prompt (over all processes of a multi-process batch).
      prefill_len: the prefill's width, `bucket(longest, MIN_PREFILL_BUCKET)`.
      pad: the pad token.
    """

    ids: list[list[int]]
    errors: dict[int, str]
    limits: np.ndarray
    lengths: np.ndarray
    longest: int
    prefill_len: int
    pad: int

    def max_len(self, max_new_tokens: int, extend: int) -> int:
        """The cache length for `max_new_tokens` more tokens and an input up to `extend` wide."""
        return max(bucket(self.longest + max_new_tokens + extend, 128), self.prefill_len)

    def prefill_tokens(self) -> np.ndarray:
        """int32 [B, prefill_len]: the prompts, padded on the right."""
        tokens = np.full((len(self.ids), self.prefill_len), self.pad, np.int32)
        for row, ids in enumerate(self.ids):
            tokens[row, :len(ids)] = ids
        return tokens

    def prefill_positions(self) -> np.ndarray:
        """int32 [B, prefill_len]: 0..prefill_len-1 on every row."""
        return np.broadcast_to(np.arange(self.prefill_len, dtype=np.int32),
                               (len(self.ids), self.prefill_len))


def prepare_prompts(model: Any, tokenizer_info: TokenizerInfo, requests: Sequence[Request],
                    max_new_tokens: int, placement: BatchPlacement | None = None) -> PromptBatch:
    """The prompts of `requests` and their shapes; a prompt that fails (no chat template, no
    tokens) fails only its row. With a multi-process `placement`, every process agrees on the
    longest prompt (so all build the same shapes)."""
    pad = pad_token(tokenizer_info)
    ids: list[list[int]] = []
    errors: dict[int, str] = {}
    for row, request in enumerate(requests):
        try:
            ids.append(prompt_ids(model, tokenizer_info, request))
        except (ValueError, JaxguideError) as e:
            ids.append([pad])
            errors[row] = f"{type(e).__name__}: {e}"
    limits = np.array([min(max_new_tokens, r.max_new_tokens or max_new_tokens)
                       for r in requests], np.int64)
    lengths = np.array([len(p) for p in ids], np.int64)
    longest = int(lengths.max())
    if placement is not None:
        longest = int(placement.agree_max([longest])[0])
    return PromptBatch(ids, errors, limits, lengths, longest,
                       bucket(longest, MIN_PREFILL_BUCKET), pad)
