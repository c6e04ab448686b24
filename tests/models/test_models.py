"""Tests of the reference models (jaxguide/models): real SmolLM2 weights and tiny GGUF files.

The real-weight tests check the whole chain (GGUF dequantization, the llama.cpp Q/K row
permutation, the tokenizer and the chat template) against the known greedy answer, and the KV
cache contract (extend == one-token steps, ragged batches == single rows). The tiny-GGUF tests
compare the loader + model against an independent numpy forward pass that uses the GGUF weights
as llama.cpp does (rotating adjacent pairs), and check the loader's errors.
"""

from __future__ import annotations

import os

import gguf
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguide.models import KVCache, LlamaConfig, LlamaModel, gguf_llama, smollm2

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
MAX_LEN = 64


@pytest.fixture(scope="module")
def smol():
    return smollm2.load()


def _prefill_last(model: LlamaModel, rows: list[list[int]], max_len: int = MAX_LEN,
                  pad_id: int = 0) -> tuple[np.ndarray, KVCache]:
    """End-padded prefill of several rows from position 0; logits [B, V] at each row's end."""
    width = max(len(row) for row in rows)
    tokens = np.full((len(rows), width), pad_id, np.int32)
    for b, row in enumerate(rows):
        tokens[b, :len(row)] = row
    positions = np.broadcast_to(np.arange(width, dtype=np.int32), tokens.shape)
    last = np.asarray([len(row) - 1 for row in rows], np.int32)
    logits, cache = model.forward_last(jnp.asarray(tokens), jnp.asarray(positions),
                                       jnp.asarray(last), model.init_cache(len(rows), max_len))
    return np.asarray(logits), cache


def _greedy(model: LlamaModel, prompt: list[int], eos: frozenset[int],
            max_new_tokens: int) -> list[int]:
    logits, cache = _prefill_last(model, [prompt])
    generated: list[int] = []
    position = len(prompt)
    while True:
        token = int(np.argmax(logits[0]))
        generated.append(token)
        if token in eos or len(generated) == max_new_tokens:
            return generated
        step_logits, cache = model.forward(jnp.asarray([[token]], jnp.int32),
                                           jnp.asarray([[position]], jnp.int32), cache)
        logits = np.asarray(step_logits[:, -1])
        position += 1


# --------------------------------------------------------------------------- real weights


def test_greedy_chat_answer_is_paris(smol):
    model, tokenizer = smol
    prompt = smollm2.encode_prompt(tokenizer, smollm2.render_chat(QUESTION))
    generated = _greedy(model, prompt, tokenizer.eos_token_ids, max_new_tokens=16)
    assert tokenizer.decode_bytes(generated) == b"The capital of France is Paris."
    assert generated[-1] in tokenizer.eos_token_ids


def test_loaded_config_and_param_count(smol):
    model, tokenizer = smol
    config = model.config
    assert (config.n_layers, config.d_model, config.n_heads, config.n_kv_heads,
            config.head_dim, config.ffn_dim) == (30, 576, 9, 3, 64, 1536)
    assert config.vocab_size == tokenizer.vocab_size == 49152
    assert config.tie_embeddings and "lm_head" not in model.params
    assert config.rope_theta == 100000.0
    n_params = sum(leaf.size for leaf in jax.tree_util.tree_leaves(model.params))
    assert n_params == 134_515_008
    assert smollm2.load()[0] is model  # cached in-process


def test_extend_equals_one_token_steps(smol):
    model, tokenizer = smol
    ids = smollm2.encode_prompt(tokenizer, smollm2.render_chat(QUESTION))[:12]
    # A: a prefill of 8 tokens, then an extend of 4 tokens starting at position 8.
    cache = model.init_cache(1, MAX_LEN)
    first, cache = model.forward(jnp.asarray([ids[:8]], jnp.int32),
                                 jnp.arange(8, dtype=jnp.int32)[None], cache)
    second, cache = model.forward(jnp.asarray([ids[8:]], jnp.int32),
                                  jnp.arange(8, 12, dtype=jnp.int32)[None], cache)
    extended = np.concatenate([np.asarray(first[0]), np.asarray(second[0])])
    # B: twelve one-token steps.
    cache = model.init_cache(1, MAX_LEN)
    stepped = []
    for position, token in enumerate(ids):
        logits, cache = model.forward(jnp.asarray([[token]], jnp.int32),
                                      jnp.asarray([[position]], jnp.int32), cache)
        stepped.append(np.asarray(logits[0, 0]))
    # Different matmul shapes round differently over 30 float32 layers: logits span about
    # [-20, 30] and agree to ~2e-4; a wrong cache slot or mask moves them by whole units.
    np.testing.assert_allclose(extended, np.stack(stepped), rtol=0, atol=1e-3)


def test_ragged_batch_equals_single_rows(smol):
    model, tokenizer = smol
    chat = smollm2.encode_prompt(tokenizer, smollm2.render_chat(QUESTION))
    plain = smollm2.encode_prompt(tokenizer, "The capital of France is")
    assert plain == tokenizer.encode("The capital of France is")
    batch_logits, batch_cache = _prefill_last(model, [chat, plain])
    single = [_prefill_last(model, [row]) for row in (chat, plain)]
    for b in range(2):
        np.testing.assert_allclose(batch_logits[b], single[b][0][0], rtol=0, atol=1e-3)
    # One decode step at different positions per row: row 1 writes slot len(plain), over the
    # padding junk of the batched prefill, and must not see the junk beyond it.
    next_tokens = [int(np.argmax(batch_logits[b])) for b in range(2)]
    step_logits, _ = model.forward(jnp.asarray([[t] for t in next_tokens], jnp.int32),
                                   jnp.asarray([[len(chat)], [len(plain)]], jnp.int32),
                                   batch_cache)
    for b, row in enumerate((chat, plain)):
        alone, _ = model.forward(jnp.asarray([[next_tokens[b]]], jnp.int32),
                                 jnp.asarray([[len(row)]], jnp.int32), single[b][1])
        np.testing.assert_allclose(np.asarray(step_logits[b, 0]), np.asarray(alone[0, 0]),
                                   rtol=0, atol=1e-3)
    assert tokenizer.decode_bytes([next_tokens[1]]) == b" Paris"


def test_chat_template_renders_chatml():
    expected = (f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
                "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
                "<|im_start|>assistant\n")
    assert smollm2.render_chat(QUESTION) == expected
    conversation = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello."}]
    assert smollm2.render_chat(conversation, add_generation_prompt=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n")


def test_encode_prompt_maps_special_token_names(smol):
    _, tokenizer = smol
    ids = smollm2.encode_prompt(tokenizer, "<|im_start|>user\nHi<|im_end|>\n")
    assert ids == [1] + tokenizer.encode("user\nHi") + [2] + tokenizer.encode("\n")
    assert smollm2.encode_prompt(tokenizer, "") == []


# --------------------------------------------------------------------------- tiny GGUF files

TINY = dict(vocab=64, d=32, layers=2, heads=4, kv_heads=2, head_dim=8, ffn=48, theta=10000.0,
            eps=1e-5)
_TINY_KEYS = {
    "llama.block_count": ("uint32", TINY["layers"]),
    "llama.embedding_length": ("uint32", TINY["d"]),
    "llama.feed_forward_length": ("uint32", TINY["ffn"]),
    "llama.attention.head_count": ("uint32", TINY["heads"]),
    "llama.attention.head_count_kv": ("uint32", TINY["kv_heads"]),
    "llama.rope.freq_base": ("float32", TINY["theta"]),
    "llama.attention.layer_norm_rms_epsilon": ("float32", TINY["eps"]),
    "llama.vocab_size": ("uint32", TINY["vocab"]),
    "llama.context_length": ("uint32", 128),
}


def _tiny_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights named and shaped as in a GGUF file (numpy [out, in]), llama.cpp layout."""
    rng = np.random.default_rng(seed)
    d, q, kv, ffn = (TINY["d"], TINY["heads"] * TINY["head_dim"],
                     TINY["kv_heads"] * TINY["head_dim"], TINY["ffn"])
    shapes = {"token_embd.weight": (TINY["vocab"], d), "output_norm.weight": (d,),
              "output.weight": (TINY["vocab"], d)}
    for i in range(TINY["layers"]):
        shapes.update({
            f"blk.{i}.attn_norm.weight": (d,), f"blk.{i}.ffn_norm.weight": (d,),
            f"blk.{i}.attn_q.weight": (q, d), f"blk.{i}.attn_k.weight": (kv, d),
            f"blk.{i}.attn_v.weight": (kv, d), f"blk.{i}.attn_output.weight": (d, q),
            f"blk.{i}.ffn_gate.weight": (ffn, d), f"blk.{i}.ffn_up.weight": (ffn, d),
            f"blk.{i}.ffn_down.weight": (d, ffn)})
    weights = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    return weights


def _write_gguf(path: os.PathLike[str], weights: dict[str, np.ndarray], *,
                architecture: str = "llama", drop_key: str | None = None) -> str:
    writer = gguf.GGUFWriter(os.fspath(path), architecture)
    for key, (kind, value) in _TINY_KEYS.items():
        if key != drop_key:
            getattr(writer, f"add_{kind}")(key, value)
    for name, array in weights.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return os.fspath(path)


def _reference_logits(weights: dict[str, np.ndarray], tokens: list[int]) -> np.ndarray:
    """float64 forward pass on the GGUF weights as llama.cpp runs them: RoPE on adjacent
    pairs (2i, 2i+1) of the stored Q/K rows, KV heads repeated for grouped-query attention."""
    w = {name: array.astype(np.float64) for name, array in weights.items()}
    steps, hd = len(tokens), TINY["head_dim"]
    groups = TINY["heads"] // TINY["kv_heads"]
    angles = np.arange(steps)[:, None] * TINY["theta"] ** (-np.arange(0, hd, 2) / hd)

    def rms_norm(x, scale):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + TINY["eps"]) * scale

    def rope_adjacent(x):  # [T, N, hd]
        even, odd = x[..., 0::2], x[..., 1::2]
        cos, sin = np.cos(angles)[:, None], np.sin(angles)[:, None]
        out = np.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out

    x = w["token_embd.weight"][tokens]
    causal = np.tril(np.ones((steps, steps), bool))
    for i in range(TINY["layers"]):
        h = rms_norm(x, w[f"blk.{i}.attn_norm.weight"])
        q = rope_adjacent((h @ w[f"blk.{i}.attn_q.weight"].T).reshape(steps, -1, hd))
        k = rope_adjacent((h @ w[f"blk.{i}.attn_k.weight"].T).reshape(steps, -1, hd))
        v = (h @ w[f"blk.{i}.attn_v.weight"].T).reshape(steps, -1, hd)
        k, v = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)
        scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd)
        scores = np.where(causal, scores, -np.inf)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        attended = np.einsum("hts,shd->thd", probs, v).reshape(steps, -1)
        x = x + attended @ w[f"blk.{i}.attn_output.weight"].T
        h = rms_norm(x, w[f"blk.{i}.ffn_norm.weight"])
        gate = h @ w[f"blk.{i}.ffn_gate.weight"].T
        up = h @ w[f"blk.{i}.ffn_up.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[f"blk.{i}.ffn_down.weight"].T
    return rms_norm(x, w["output_norm.weight"]) @ w["output.weight"].T


def test_tiny_gguf_matches_llama_cpp_reference(tmp_path):
    weights = _tiny_weights()
    path = _write_gguf(tmp_path / "tiny.gguf", weights)
    model = gguf_llama.load_llama_gguf_model(path)
    config = model.config
    assert config == LlamaConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2,
                                 head_dim=8, ffn_dim=48, rope_theta=10000.0,
                                 rms_norm_eps=config.rms_norm_eps, tie_embeddings=False,
                                 context_length=128)
    assert config.rms_norm_eps == pytest.approx(1e-5)
    tokens = [5, 17, 3, 60, 42, 8, 8, 1, 33]
    logits, _ = model.forward(jnp.asarray([tokens], jnp.int32),
                              jnp.arange(len(tokens), dtype=jnp.int32)[None],
                              model.init_cache(1, 16))
    np.testing.assert_allclose(np.asarray(logits[0]), _reference_logits(weights, tokens),
                               rtol=1e-4, atol=1e-4)
    # bfloat16 parameters and compute: same model, looser agreement.
    bf16 = gguf_llama.load_llama_gguf_model(path, jnp.bfloat16)
    assert bf16.params["embed"].dtype == jnp.bfloat16
    bf16_logits, _ = bf16.forward(jnp.asarray([tokens], jnp.int32),
                                  jnp.arange(len(tokens), dtype=jnp.int32)[None],
                                  bf16.init_cache(1, 16))
    assert bf16_logits.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(bf16_logits[0]), np.asarray(logits[0]), atol=0.15)


def test_rotary_row_permutation_round_trips():
    weight = np.arange(2 * 8 * 3, dtype=np.float32).reshape(16, 3)
    permuted = gguf_llama.permute_rotary_rows(weight, n_heads=2)
    assert not np.array_equal(permuted, weight)
    # llama.cpp: GGUF row 2i + s of a head is Hugging Face row s * head_dim / 2 + i.
    np.testing.assert_array_equal(permuted[1], weight[4])
    np.testing.assert_array_equal(gguf_llama.unpermute_rotary_rows(permuted, 2), weight)


def test_non_llama_architecture_is_refused(tmp_path):
    path = _write_gguf(tmp_path / "gpt2.gguf", _tiny_weights(), architecture="gpt2")
    with pytest.raises(ValueError, match="general.architecture is 'gpt2'"):
        gguf_llama.load_llama_gguf(path)


def test_missing_tensor_is_named(tmp_path):
    weights = _tiny_weights()
    del weights["blk.1.ffn_up.weight"]
    path = _write_gguf(tmp_path / "missing.gguf", weights)
    with pytest.raises(ValueError, match="lacks the tensor 'blk.1.ffn_up.weight'"):
        gguf_llama.load_llama_gguf(path)


def test_missing_metadata_key_is_named(tmp_path):
    path = _write_gguf(tmp_path / "nokey.gguf", _tiny_weights(), drop_key="llama.block_count")
    with pytest.raises(ValueError, match="lacks the metadata key 'llama.block_count'"):
        gguf_llama.load_llama_gguf(path)


def test_wrong_tensor_shape_is_named(tmp_path):
    weights = _tiny_weights()
    weights["blk.0.attn_k.weight"] = weights["blk.0.attn_q.weight"]
    path = _write_gguf(tmp_path / "shape.gguf", weights)
    with pytest.raises(ValueError, match="'blk.0.attn_k.weight' has shape"):
        gguf_llama.load_llama_gguf(path)


def test_forward_checks_shapes():
    config = LlamaConfig(vocab_size=64, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1,
                         head_dim=8, ffn_dim=32, rope_theta=10000.0, rms_norm_eps=1e-5,
                         tie_embeddings=True)
    model = LlamaModel.init_random(config)
    tokens = jnp.zeros((2, 3), jnp.int32)
    with pytest.raises(ValueError, match="batch of 2 rows"):
        model.forward(tokens, tokens, model.init_cache(1, 8))
    with pytest.raises(ValueError, match="positions"):
        model.forward(tokens, tokens[:, :2], model.init_cache(2, 8))
    with pytest.raises(ValueError, match="last_index"):
        model.forward_last(tokens, tokens, jnp.zeros((3,), jnp.int32), model.init_cache(2, 8))
    logits, cache = model.forward(tokens, tokens + jnp.arange(3)[None], model.init_cache(2, 8))
    assert logits.shape == (2, 3, 64) and logits.dtype == jnp.float32
    assert cache.k.shape == (1, 2, 8, 1, 8) and cache.max_len == 8 and cache.batch_size == 2


def test_with_layers_equals_the_model_with_the_other_blocks_made_identity():
    # Oracle: a pre-norm block whose attention output and MLP down projections are zero adds
    # nothing to the residual stream, so "layers 0 and 2" == the full model with block 1 muted.
    config = LlamaConfig(vocab_size=64, d_model=16, n_layers=3, n_heads=2, n_kv_heads=1,
                         head_dim=8, ffn_dim=32, rope_theta=10000.0, rms_norm_eps=1e-5,
                         tie_embeddings=True)
    model = LlamaModel.init_random(config, seed=3)
    muted = jax.tree_util.tree_map(lambda leaf: leaf, model.params)
    for module, kernel in (("attention", "o_proj"), ("mlp", "down_proj")):
        weights = muted["layers"][module][kernel]["kernel"]
        muted["layers"][module][kernel]["kernel"] = weights.at[1].set(0.0)
    oracle = LlamaModel(config, muted)
    draft = model.with_layers([0, 2])
    assert draft.config.n_layers == 2 and model.config.n_layers == 3
    assert draft.params["embed"] is model.params["embed"]
    tokens = jnp.asarray([[5, 9, 1, 33], [7, 7, 2, 60]], jnp.int32)
    positions = jnp.broadcast_to(jnp.arange(4, dtype=jnp.int32), (2, 4))
    expected, _ = oracle.forward(tokens, positions, oracle.init_cache(2, 8))
    got, cache = draft.forward(tokens, positions, draft.init_cache(2, 8))
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=0, atol=1e-5)
    assert cache.k.shape[0] == 2
    whole, _ = model.forward(tokens, positions, model.init_cache(2, 8))
    assert not np.allclose(np.asarray(whole), np.asarray(expected), atol=1e-3)  # block 1 counts
    same, _ = model.with_layers(range(3)).forward(tokens, positions, model.init_cache(2, 8))
    np.testing.assert_array_equal(np.asarray(same), np.asarray(whole))
    for bad in ([], [3], [-1], [0.5], [True]):
        with pytest.raises(ValueError, match="layer"):
            model.with_layers(bad)
