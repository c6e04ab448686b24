"""Reference Flax models for demos, tests and benchmarks of jaxguide decode loops.

`LlamaModel` (llama.py) is a Llama-architecture decoder with a KV cache and one jitted forward
for prefill, decode and extend steps; `gguf_llama` loads llama.cpp GGUF files into it and
`smollm2` loads the SmolLM2-135M-Instruct asset with its tokenizer and chat template.
Importing this package needs flax (and jax); loading GGUF weights needs `gguf`.
"""

from jaxguide.models import gguf_llama, smollm2
from jaxguide.models.llama import KVCache, LlamaConfig, LlamaModel

__all__ = ["KVCache", "LlamaConfig", "LlamaModel", "gguf_llama", "smollm2"]
