"""Prompt setup shared by both decode loops (`generate`, `generate_speculative`): prompt ids,
length buckets (a few static shapes, so a few compiles), the model's KV cache."""

from __future__ import annotations

from typing import Any

import jax

from jaxguide.decode.requests import Request
from jaxguide.device.distributed import BatchPlacement
from jaxguide.engine.tokenizer import TokenizerInfo, encode_prompt

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
