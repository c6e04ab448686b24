"""A Llama-architecture decoder in Flax (linen) with a KV cache, for prefill, decode and extend.

Design note. One jit-compiled function serves every way a decode loop calls a model: prefill of
a prompt, one-token decode steps, and multi-token "extend" steps that feed grammar-forced
tokens. Each call takes tokens [B, T] with their absolute positions [B, T] (row b holds
start_b .. start_b + T - 1) and writes the T new keys/values of each row at cache slots equal to
their positions; every query attends to all slots 0 .. its own position of its row. So rows may
start anywhere (ragged batches), slot index == position, and junk written past a row's real
length (end padding) is hidden by the causal mask until a later write overwrites it.

Layers run under `nn.scan` with parameters stacked on a leading layer axis: one compiled layer
body instead of n_layers copies, which keeps compile time low (seconds on CPU). The whole cache
[n_layers, B, max_len, n_kv_heads, head_dim] rides in the scan carry and each layer scatters its
T new rows into it in place, so with the cache donated no copy of it is made per call.

Layouts: rotary embedding uses the Hugging Face "half split" pairing (dimension i rotates with
i + head_dim / 2); loaders of llama.cpp weights un-permute Q/K rows to it (gguf_llama.py).
Grouped-query attention: query head h reads KV head h // (n_heads / n_kv_heads).

Cost per call: O(B * T * d_model * params-per-token) for the projections plus
O(B * T * max_len * n_heads * head_dim) for attention, which reads the full cache row (no paged
or length-bucketed attention: this is a reference model). Memory: the parameters, the cache
(2 * n_layers * B * max_len * n_kv_heads * head_dim elements of `dtype`) and activations of
one layer, including attention scores [B, n_heads, T, max_len] in float32.

Shapes are static under jit: each new (B, T, max_len) compiles once. Callers should bucket T
(e.g. powers of two, padding at the end of rows) and keep B and max_len fixed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp

Params = Any  # a nested dict of arrays (the linen "params" collection)

_MASKED_SCORE = -1e30  # large and finite: a fully masked row still yields finite softmax values


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """Hyper-parameters of a Llama-architecture decoder (hashable, usable as a static argument).

    Attributes:
      vocab_size: number of token ids, also the logits width V.
      d_model: width of the residual stream D.
      n_layers: number of decoder blocks.
      n_heads: query heads H.
      n_kv_heads: key/value heads (H must be a multiple; grouped-query attention).
      head_dim: width of one head (rotary dimension too: partial rotary is not supported).
      ffn_dim: hidden width of the gated (SwiGLU) MLP.
      rope_theta: rotary base frequency.
      rms_norm_eps: epsilon of the RMS norms.
      tie_embeddings: the output head reuses the token embedding matrix.
      dtype: parameter, cache and compute dtype (norms, softmax and logits are float32).
      context_length: the trained context length, informative only (None if unknown).
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    rope_theta: float
    rms_norm_eps: float
    tie_embeddings: bool
    dtype: Any = jnp.float32
    context_length: int | None = None

    def __post_init__(self) -> None:
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) is not a multiple of n_kv_heads "
                             f"({self.n_kv_heads})")
        if self.head_dim % 2:
            raise ValueError(f"head_dim ({self.head_dim}) must be even for rotary embeddings")


@flax.struct.dataclass
class KVCache:
    """Keys and values of every layer, one row per sequence, slot index == token position.

    Attributes:
      k: [n_layers, B, max_len, n_kv_heads, head_dim] rotated keys.
      v: [n_layers, B, max_len, n_kv_heads, head_dim] values.
    """

    k: jax.Array
    v: jax.Array

    @property
    def batch_size(self) -> int:
        return self.k.shape[1]

    @property
    def max_len(self) -> int:
        return self.k.shape[2]


# --------------------------------------------------------------------------- layers


class RMSNorm(nn.Module):
    """x / rms(x) * scale, computed in float32 and returned in `dtype`."""

    eps: float
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],), self.dtype)
        x32 = x.astype(jnp.float32)
        normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        return (normed.astype(self.dtype) * scale).astype(self.dtype)


def rotary_cos_sin(positions: jax.Array, head_dim: int,
                   theta: float) -> tuple[jax.Array, jax.Array]:
    """Rotary angles of each position.

    Args:
      positions: int32 [B, T] absolute positions.
      head_dim: head width (even).
      theta: base frequency.

    Returns:
      (cos, sin), each float32 [B, T, head_dim / 2]; frequency i is theta^(-2i / head_dim).
    """
    exponents = jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim
    inverse_frequencies = 1.0 / (theta ** exponents)
    angles = positions.astype(jnp.float32)[..., None] * inverse_frequencies
    return jnp.cos(angles), jnp.sin(angles)


def apply_rotary(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """Rotates pairs (i, i + head_dim / 2) of each head (Hugging Face "half split" layout).

    Args:
      x: [B, T, N, head_dim] queries or keys.
      cos, sin: float32 [B, T, head_dim / 2] from `rotary_cos_sin`.

    Returns:
      [B, T, N, head_dim] in x's dtype.
    """
    half = x.shape[-1] // 2
    x32 = x.astype(jnp.float32)
    first, second = x32[..., :half], x32[..., half:]
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    rotated = jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)
    return rotated.astype(x.dtype)


def _dense(features: int, dtype: Any, name: str) -> nn.Dense:
    return nn.Dense(features, use_bias=False, dtype=dtype, param_dtype=dtype, name=name)


class Attention(nn.Module):
    """Grouped-query self-attention over a KV cache shared by all layers (scan carry)."""

    config: LlamaConfig

    @nn.compact
    def __call__(self, x: jax.Array, cos: jax.Array, sin: jax.Array, positions: jax.Array,
                 visible: jax.Array, cache_k: jax.Array, cache_v: jax.Array,
                 layer: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Attention of T new tokens per row; writes their K/V into the cache first.

        Args:
          x: [B, T, D] normed hidden states.
          cos, sin: float32 [B, T, head_dim / 2] rotary angles.
          positions: int32 [B, T] positions, also the cache slots written.
          visible: bool [B, T, max_len], slot s visible to query t iff s <= positions[b, t].
          cache_k, cache_v: [n_layers, B, max_len, n_kv_heads, head_dim] all layers' cache.
          layer: int32 scalar, this layer's index into the cache.

        Returns:
          (output [B, T, D], updated cache_k, updated cache_v).
        """
        config = self.config
        batch, steps, _ = x.shape
        groups = config.n_heads // config.n_kv_heads
        queries = _dense(config.n_heads * config.head_dim, config.dtype, "q_proj")(x)
        keys = _dense(config.n_kv_heads * config.head_dim, config.dtype, "k_proj")(x)
        values = _dense(config.n_kv_heads * config.head_dim, config.dtype, "v_proj")(x)
        queries = queries.reshape(batch, steps, config.n_heads, config.head_dim)
        keys = keys.reshape(batch, steps, config.n_kv_heads, config.head_dim)
        values = values.reshape(batch, steps, config.n_kv_heads, config.head_dim)
        queries = apply_rotary(queries, cos, sin)
        keys = apply_rotary(keys, cos, sin)

        # Scatter row b's T new entries to slots positions[b]; out-of-range slots are dropped.
        rows = jnp.arange(batch)[:, None]
        cache_k = cache_k.at[layer, rows, positions].set(keys.astype(cache_k.dtype), mode="drop")
        cache_v = cache_v.at[layer, rows, positions].set(values.astype(cache_v.dtype), mode="drop")
        all_keys = cache_k[layer]  # [B, S, KV, hd]
        all_values = cache_v[layer]

        grouped = queries.reshape(batch, steps, config.n_kv_heads, groups, config.head_dim)
        scores = jnp.einsum("btkgd,bskd->bkgts", grouped, all_keys,
                            preferred_element_type=jnp.float32)
        scores = scores * (config.head_dim ** -0.5)
        scores = jnp.where(visible[:, None, None, :, :], scores, _MASKED_SCORE)
        weights = jax.nn.softmax(scores, axis=-1).astype(config.dtype)
        attended = jnp.einsum("bkgts,bskd->btkgd", weights, all_values)
        attended = attended.reshape(batch, steps, config.n_heads * config.head_dim)
        output = _dense(config.d_model, config.dtype, "o_proj")(attended)
        return output, cache_k, cache_v


class GatedMLP(nn.Module):
    """down(silu(gate(x)) * up(x))."""

    config: LlamaConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        config = self.config
        gate = _dense(config.ffn_dim, config.dtype, "gate_proj")(x)
        up = _dense(config.ffn_dim, config.dtype, "up_proj")(x)
        return _dense(config.d_model, config.dtype, "down_proj")(nn.silu(gate) * up)


class DecoderBlock(nn.Module):
    """Pre-norm block: x + attn(norm(x)), then x + mlp(norm(x)). Scanned over layers."""

    config: LlamaConfig

    @nn.compact
    def __call__(self, carry: tuple[jax.Array, jax.Array, jax.Array, jax.Array],
                 cos: jax.Array, sin: jax.Array, positions: jax.Array,
                 visible: jax.Array) -> tuple[tuple[jax.Array, ...], None]:
        """One layer. carry = (hidden [B, T, D], cache_k, cache_v, layer index int32 [])."""
        hidden, cache_k, cache_v, layer = carry
        config = self.config
        normed = RMSNorm(config.rms_norm_eps, config.dtype, name="attention_norm")(hidden)
        attended, cache_k, cache_v = Attention(config, name="attention")(
            normed, cos, sin, positions, visible, cache_k, cache_v, layer)
        hidden = hidden + attended
        normed = RMSNorm(config.rms_norm_eps, config.dtype, name="mlp_norm")(hidden)
        hidden = hidden + GatedMLP(config, name="mlp")(normed)
        return (hidden, cache_k, cache_v, layer + 1), None


class LlamaTransformer(nn.Module):
    """Embedding, n_layers scanned decoder blocks, final norm and output head."""

    config: LlamaConfig

    @nn.compact
    def __call__(self, tokens: jax.Array, positions: jax.Array, cache: KVCache,
                 last_index: jax.Array | None = None) -> tuple[jax.Array, KVCache]:
        """Runs T tokens per row through the model, writing their K/V into the cache.

        Args:
          tokens: int32 [B, T].
          positions: int32 [B, T], positions[b] = start_b + arange(T).
          cache: the KV cache, [n_layers, B, max_len, n_kv_heads, head_dim] each.
          last_index: optional int32 [B]: return only the logits of column last_index[b].

        Returns:
          (logits float32 [B, T, V], or [B, V] with last_index; the updated cache).
        """
        config = self.config
        embed = self.param("embed", nn.initializers.normal(0.02),
                           (config.vocab_size, config.d_model), config.dtype)
        hidden = jnp.take(embed, tokens, axis=0).astype(config.dtype)
        cos, sin = rotary_cos_sin(positions, config.head_dim, config.rope_theta)
        slots = jnp.arange(cache.max_len, dtype=positions.dtype)
        visible = slots[None, None, :] <= positions[:, :, None]  # [B, T, S]

        layers = nn.scan(DecoderBlock, variable_axes={"params": 0}, split_rngs={"params": True},
                         in_axes=(nn.broadcast, nn.broadcast, nn.broadcast, nn.broadcast),
                         length=config.n_layers)
        carry = (hidden, cache.k, cache.v, jnp.zeros((), jnp.int32))
        (hidden, cache_k, cache_v, _), _ = layers(config, name="layers")(
            carry, cos, sin, positions, visible)
        hidden = RMSNorm(config.rms_norm_eps, config.dtype, name="final_norm")(hidden)
        if last_index is not None:
            hidden = jnp.take_along_axis(hidden, last_index[:, None, None], axis=1)[:, 0]
        if config.tie_embeddings:
            head = embed.T
        else:
            head = self.param("lm_head", nn.initializers.normal(0.02),
                              (config.d_model, config.vocab_size), config.dtype)
        logits = jnp.einsum("...d,dv->...v", hidden, head, preferred_element_type=jnp.float32)
        return logits, KVCache(k=cache_k, v=cache_v)


# --------------------------------------------------------------------------- wrapper


def _check_step_shapes(tokens: Any, positions: Any, cache: KVCache) -> None:
    if len(tokens.shape) != 2:
        raise ValueError(f"tokens must be [B, T], got shape {tuple(tokens.shape)}")
    if tuple(positions.shape) != tuple(tokens.shape):
        raise ValueError(f"positions {tuple(positions.shape)} must have the shape of tokens "
                         f"{tuple(tokens.shape)}")
    if tokens.shape[0] != cache.batch_size:
        raise ValueError(f"batch of {tokens.shape[0]} rows but the cache has "
                         f"{cache.batch_size}")
    if tokens.shape[1] > cache.max_len:
        raise ValueError(f"{tokens.shape[1]} tokens per row exceed the cache length "
                         f"{cache.max_len}")


class LlamaModel:
    """A Llama decoder's module, parameters and jit-compiled forward passes.

    One forward serves prefill, one-token decode and multi-token extend (see the module note):

        cache = model.init_cache(batch_size=B, max_len=S)
        logits, cache = model.forward(tokens, positions, cache)           # [B, T, V]
        last, cache = model.forward_last(tokens, positions, last, cache)  # [B, V]

    Contract: positions[b] = start_b + arange(T) with start_b + T <= max_len (not checked on
    device: writes beyond the cache are dropped and those tokens' logits are garbage). Padding at
    the end of a row writes junk K/V beyond the row's real length; ignore its logits. The cache
    argument is donated: do not use the passed-in cache after the call, use the returned one.
    Each new (B, T, max_len) compiles once; bucket T (e.g. powers of two) to bound recompiles.

    Attributes:
      config: the LlamaConfig.
      module: the flax linen LlamaTransformer.
      params: its parameter tree ({"embed", "layers", "final_norm"[, "lm_head"]}).
      render_chat: None, or messages -> prompt text with the model's chat template (set by
        loaders that know it, e.g. smollm2.load(); used by jaxguide.generate for messages=).
    """

    def __init__(self, config: LlamaConfig, params: Params, *,
                 render_chat: Callable[[list[dict[str, Any]]], str] | None = None):
        """Wraps loaded parameters (see gguf_llama.py or `init_random`)."""
        self.config = config
        self.render_chat = render_chat
        self.module = LlamaTransformer(config)
        self.params = params
        self._forward_jit = jax.jit(functools.partial(self.apply, last_index=None),
                                    donate_argnames=("cache",))
        self._forward_last_jit = jax.jit(self.apply, donate_argnames=("cache",))

    @classmethod
    def init_random(cls, config: LlamaConfig, seed: int = 0) -> LlamaModel:
        """A model with random weights (for tests of decode loops; shapes as `config`)."""
        module = LlamaTransformer(config)
        dummy_cache = KVCache(
            k=jnp.zeros((config.n_layers, 1, 1, config.n_kv_heads, config.head_dim),
                        config.dtype),
            v=jnp.zeros((config.n_layers, 1, 1, config.n_kv_heads, config.head_dim),
                        config.dtype))
        dummy_tokens = jnp.zeros((1, 1), jnp.int32)
        variables = jax.jit(module.init)(jax.random.PRNGKey(seed), dummy_tokens, dummy_tokens,
                                         dummy_cache)
        return cls(config, variables["params"])

    def with_layers(self, layers: Sequence[int]) -> LlamaModel:
        """A model made of some of this model's decoder blocks, in the given order, with its
        embedding, final norm and output head: a self-speculative draft model (early exit:
        `range(k)`; layer skipping: any subset). The embedding/norm/head arrays are shared; the
        chosen blocks are copied (len(layers) / n_layers of their memory). The draft needs its
        own cache (`init_cache` of the returned model).

        Raises:
          ValueError: no layers, a non-int, or an index outside 0 .. n_layers - 1.
        """
        indices = list(layers)
        if not indices:
            raise ValueError("with_layers needs at least one layer")
        for index in indices:
            if isinstance(index, bool) or not isinstance(index, int) or \
                    not 0 <= index < self.config.n_layers:
                raise ValueError(f"layer {index!r} is not an index in 0 .. "
                                 f"{self.config.n_layers - 1}")
        chosen = jnp.asarray(indices, jnp.int32)
        params = dict(self.params)
        params["layers"] = jax.tree_util.tree_map(lambda leaf: jnp.take(leaf, chosen, axis=0),
                                                  self.params["layers"])
        config = dataclasses.replace(self.config, n_layers=len(indices))
        return LlamaModel(config, params, render_chat=self.render_chat)

    def init_cache(self, batch_size: int, max_len: int) -> KVCache:
        """A zero cache: k and v [n_layers, batch_size, max_len, n_kv_heads, head_dim]."""
        config = self.config
        shape = (config.n_layers, batch_size, max_len, config.n_kv_heads, config.head_dim)
        return KVCache(k=jnp.zeros(shape, config.dtype), v=jnp.zeros(shape, config.dtype))

    def apply(self, params: Params, tokens: jax.Array, positions: jax.Array, cache: KVCache,
              last_index: jax.Array | None = None) -> tuple[jax.Array, KVCache]:
        """The pure (not jitted) forward, for use inside a caller's own jit.

        Args:
          params: the parameter tree (usually `self.params`).
          tokens: int32 [B, T].
          positions: int32 [B, T], positions[b] = start_b + arange(T).
          cache: KVCache [n_layers, B, max_len, n_kv_heads, head_dim].
          last_index: optional int32 [B].

        Returns:
          (logits float32 [B, T, V] or [B, V] with last_index, updated cache).
        """
        return self.module.apply({"params": params}, tokens, positions, cache, last_index)

    def forward(self, tokens: jax.Array, positions: jax.Array,
                cache: KVCache) -> tuple[jax.Array, KVCache]:
        """Prefill / decode / extend step (jitted, cache donated).

        Args:
          tokens: int32 [B, T].
          positions: int32 [B, T], positions[b] = start_b + arange(T), start_b + T <= max_len.
          cache: KVCache with batch B; donated.

        Returns:
          (logits float32 [B, T, vocab_size], updated cache).
        """
        _check_step_shapes(tokens, positions, cache)
        return self._forward_jit(self.params, tokens, positions, cache)

    def forward_last(self, tokens: jax.Array, positions: jax.Array, last_index: jax.Array,
                     cache: KVCache) -> tuple[jax.Array, KVCache]:
        """Like `forward` but returns only the logits of column last_index[b] of each row.

        Args:
          tokens: int32 [B, T].
          positions: int32 [B, T].
          last_index: int32 [B], e.g. the real length of each end-padded row minus one.
          cache: KVCache with batch B; donated.

        Returns:
          (logits float32 [B, vocab_size], updated cache).
        """
        _check_step_shapes(tokens, positions, cache)
        if tuple(last_index.shape) != (tokens.shape[0],):
            raise ValueError(f"last_index must be [B] = [{tokens.shape[0]}], got shape "
                             f"{tuple(last_index.shape)}")
        return self._forward_last_jit(self.params, tokens, positions, cache, last_index)

    def param_bytes(self) -> int:
        """Total bytes of the parameters."""
        return sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(self.params))
