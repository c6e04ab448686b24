"""Loads a llama-architecture GGUF file (llama.cpp format) into LlamaConfig and Flax parameters.

Design note. The configuration comes from the GGUF metadata (`llama.*` keys, read with
jaxguide's strict header reader); the tensors are read with `gguf.GGUFReader` (a memory map) and
dequantized to float32 with `gguf.quants.dequantize` (F32, F16, Q8_0, Q4_1, K-quants, ...), one
tensor at a time, then cast to the requested dtype and stacked on a leading layer axis for the
scanned layers of llama.py.

Layout conversions:
  * A GGUF matrix of shape [ne0=in, ne1=out] is a numpy [out, in] array (PyTorch Linear layout);
    Flax Dense kernels are [in, out], so matrices are transposed.
  * llama.cpp's converter permutes the rows of Q and K within each head so that its "normal"
    rotary mode (rotating adjacent pairs 2i, 2i+1) equals Hugging Face's "half split" rotation
    (pairs i, i + head_dim/2): GGUF row 2i + s of a head is Hugging Face row s * head_dim/2 + i.
    `unpermute_rotary_rows` undoes this, so llama.py rotates in the Hugging Face layout.
  * Tied embeddings: a file without `output.weight` reuses `token_embd.weight` as the head.

Unsupported features (rotary scaling, per-frequency factors `rope_freqs.weight`, experts,
partial rotary dimensions) raise ValueError rather than producing a silently wrong model.

Cost: one pass over the file; peak host memory about twice the float32 parameters (one layer
stack being filled plus the tensor being dequantized) before the arrays move to the device.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxguide.engine.gguf_metadata import read_gguf_metadata
from jaxguide.models.llama import LlamaConfig, LlamaModel, Params

# Per-layer GGUF tensor name suffix -> (path in the scanned layer params, is a matrix,
# rotary permutation applied by llama.cpp: "q", "k" or None).
_LAYER_TENSORS: dict[str, tuple[tuple[str, ...], bool, str | None]] = {
    "attn_norm.weight": (("attention_norm", "scale"), False, None),
    "attn_q.weight": (("attention", "q_proj", "kernel"), True, "q"),
    "attn_k.weight": (("attention", "k_proj", "kernel"), True, "k"),
    "attn_v.weight": (("attention", "v_proj", "kernel"), True, None),
    "attn_output.weight": (("attention", "o_proj", "kernel"), True, None),
    "ffn_norm.weight": (("mlp_norm", "scale"), False, None),
    "ffn_gate.weight": (("mlp", "gate_proj", "kernel"), True, None),
    "ffn_up.weight": (("mlp", "up_proj", "kernel"), True, None),
    "ffn_down.weight": (("mlp", "down_proj", "kernel"), True, None),
}


def _required(meta: dict[str, Any], key: str, path: str) -> Any:
    if key not in meta:
        raise ValueError(f"GGUF file {path!r} lacks the metadata key {key!r}")
    return meta[key]


def llama_config_from_metadata(meta: dict[str, Any], path: str = "<gguf>",
                               dtype: Any = jnp.float32) -> LlamaConfig:
    """The LlamaConfig described by GGUF metadata.

    Args:
      meta: the GGUF key/value metadata (see jaxguide.gguf_metadata.read_gguf_metadata).
      path: the file name, for error messages.
      dtype: compute dtype of the config.

    Raises:
      ValueError: not a llama architecture, a required key is missing, or a feature that this
        model does not implement is used; the message names the key.
    """
    architecture = meta.get("general.architecture")
    if architecture != "llama":
        raise ValueError(f"GGUF file {path!r}: general.architecture is {architecture!r}, "
                         "only 'llama' is supported")
    d_model = int(_required(meta, "llama.embedding_length", path))
    n_heads = int(_required(meta, "llama.attention.head_count", path))
    n_kv_heads = int(meta.get("llama.attention.head_count_kv", n_heads))
    head_dim = int(meta.get("llama.attention.key_length", d_model // n_heads))
    value_dim = int(meta.get("llama.attention.value_length", head_dim))
    if value_dim != head_dim:
        raise ValueError(f"GGUF file {path!r}: llama.attention.value_length {value_dim} differs "
                         f"from the key length {head_dim} (not supported)")
    rotary_dim = int(meta.get("llama.rope.dimension_count", head_dim))
    if rotary_dim != head_dim:
        raise ValueError(f"GGUF file {path!r}: llama.rope.dimension_count {rotary_dim} is not "
                         f"the head dimension {head_dim} (partial rotary is not supported)")
    scaling = meta.get("llama.rope.scaling.type", "none")
    if scaling not in ("none", ""):
        raise ValueError(f"GGUF file {path!r}: llama.rope.scaling.type {scaling!r} is not "
                         "supported")
    if int(meta.get("llama.expert_count", 0)) > 0:
        raise ValueError(f"GGUF file {path!r}: llama.expert_count > 0 (mixture of experts) is "
                         "not supported")
    vocab_size = meta.get("llama.vocab_size")
    if vocab_size is None:
        tokens = meta.get("tokenizer.ggml.tokens")
        if tokens is None:
            raise ValueError(f"GGUF file {path!r} lacks the metadata key 'llama.vocab_size' "
                             "(and has no tokenizer.ggml.tokens to count)")
        vocab_size = len(tokens)
    context_length = meta.get("llama.context_length")
    return LlamaConfig(
        vocab_size=int(vocab_size),
        d_model=d_model,
        n_layers=int(_required(meta, "llama.block_count", path)),
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        ffn_dim=int(_required(meta, "llama.feed_forward_length", path)),
        rope_theta=float(meta.get("llama.rope.freq_base", 10000.0)),
        rms_norm_eps=float(_required(meta, "llama.attention.layer_norm_rms_epsilon", path)),
        tie_embeddings=True,  # decided by the presence of output.weight in load_llama_gguf
        dtype=dtype,
        context_length=None if context_length is None else int(context_length),
    )


def unpermute_rotary_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """Undoes llama.cpp's row permutation of a Q or K projection.

    Args:
      weight: [n_heads * head_dim, d_in] rows as stored in the GGUF (within each head, row
        2i + s holds Hugging Face row s * head_dim / 2 + i).
      n_heads: heads of this projection (n_heads for Q, n_kv_heads for K).

    Returns:
      [n_heads * head_dim, d_in] in the Hugging Face half-split layout.
    """
    rows, d_in = weight.shape
    head_dim = rows // n_heads
    split = weight.reshape(n_heads, head_dim // 2, 2, d_in)
    return split.swapaxes(1, 2).reshape(rows, d_in)


def permute_rotary_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's permutation (Hugging Face layout -> GGUF layout); inverse of the above."""
    rows, d_in = weight.shape
    head_dim = rows // n_heads
    split = weight.reshape(n_heads, 2, head_dim // 2, d_in)
    return split.swapaxes(1, 2).reshape(rows, d_in)


class _TensorTable:
    """Name -> GGUF tensor, dequantized to float32 numpy in [ne_last, ..., ne0] order."""

    def __init__(self, path: str):
        import gguf  # imported here: only loading GGUF weights needs it

        self._dequantize = gguf.quants.dequantize
        self.path = path
        self.reader = gguf.GGUFReader(path)
        self.tensors = {tensor.name: tensor for tensor in self.reader.tensors}

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def get(self, name: str, expected_shape: tuple[int, ...]) -> np.ndarray:
        """The tensor as float32 [out, in] (numpy order), checked against expected_shape."""
        tensor = self.tensors.get(name)
        if tensor is None:
            raise ValueError(f"GGUF file {self.path!r} lacks the tensor {name!r}")
        shape = tuple(int(n) for n in reversed(tensor.shape))
        if shape != expected_shape:
            raise ValueError(f"GGUF file {self.path!r}: tensor {name!r} has shape {shape}, "
                             f"expected {expected_shape} from the metadata")
        values = self._dequantize(tensor.data, tensor.tensor_type)
        return np.asarray(values, dtype=np.float32).reshape(shape)


def load_llama_gguf(path: str | os.PathLike[str],
                    dtype: Any = jnp.float32) -> tuple[LlamaConfig, Params]:
    """Reads a llama-architecture GGUF into a config and a parameter tree for llama.py.

    Args:
      path: the .gguf file.
      dtype: parameter dtype (and the config's compute dtype).

    Returns:
      (LlamaConfig, params) with params = {"embed": [V, D], "final_norm": {"scale": [D]},
      "layers": {...stacked on a leading [n_layers] axis...}[, "lm_head": [D, V]]}.

    Raises:
      ValueError: not a GGUF llama model, a missing metadata key or tensor (named), a shape
        that disagrees with the metadata, or an unsupported feature.
    """
    path = os.fspath(path)
    meta = read_gguf_metadata(path)  # TokenizerError (a ValueError) for a non-GGUF file
    config = llama_config_from_metadata(meta, path, dtype)
    table = _TensorTable(path)
    if "rope_freqs.weight" in table:
        raise ValueError(f"GGUF file {path!r} has the tensor 'rope_freqs.weight' (rotary "
                         "frequency factors, Llama 3.1 style): not supported")
    np_dtype = jnp.dtype(dtype)
    d, q_width = config.d_model, config.n_heads * config.head_dim
    kv_width = config.n_kv_heads * config.head_dim
    # GGUF [out, in] shape of each per-layer tensor.
    shapes = {
        "attn_norm.weight": (d,), "ffn_norm.weight": (d,),
        "attn_q.weight": (q_width, d), "attn_k.weight": (kv_width, d),
        "attn_v.weight": (kv_width, d), "attn_output.weight": (d, q_width),
        "ffn_gate.weight": (config.ffn_dim, d), "ffn_up.weight": (config.ffn_dim, d),
        "ffn_down.weight": (d, config.ffn_dim),
    }
    layers: dict[str, Any] = {}
    for suffix, (param_path, is_matrix, rotary) in _LAYER_TENSORS.items():
        shape = shapes[suffix]
        stacked = np.empty((config.n_layers,) + tuple(reversed(shape)), dtype=np_dtype)
        for layer in range(config.n_layers):
            values = table.get(f"blk.{layer}.{suffix}", shape)
            if rotary == "q":
                values = unpermute_rotary_rows(values, config.n_heads)
            elif rotary == "k":
                values = unpermute_rotary_rows(values, config.n_kv_heads)
            stacked[layer] = values.T if is_matrix else values
        node = layers
        for key in param_path[:-1]:
            node = node.setdefault(key, {})
        node[param_path[-1]] = jnp.asarray(stacked)
        del stacked
    params: Params = {
        "embed": jnp.asarray(table.get("token_embd.weight", (config.vocab_size, d)), np_dtype),
        "final_norm": {"scale": jnp.asarray(table.get("output_norm.weight", (d,)), np_dtype)},
        "layers": layers,
    }
    if "output.weight" in table:
        head = table.get("output.weight", (config.vocab_size, d))
        params["lm_head"] = jnp.asarray(head.T, np_dtype)
        config = dataclasses.replace(config, tie_embeddings=False)
    return config, params


def load_llama_gguf_model(path: str | os.PathLike[str], dtype: Any = jnp.float32) -> LlamaModel:
    """`load_llama_gguf` wrapped in a LlamaModel."""
    config, params = load_llama_gguf(path, dtype)
    return LlamaModel(config, params)
