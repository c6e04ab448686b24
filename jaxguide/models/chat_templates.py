"""Chat templates: the Jinja2 templates models ship (`tokenizer.chat_template` in a GGUF file, or
`chat_template` in a Hugging Face tokenizer config), rendered as Hugging Face transformers does.

Design note. `render_chat_template` renders any template in transformers' environment: an
immutable Jinja2 sandbox with `trim_blocks`, `lstrip_blocks`, the loop-controls extension, a
`tojson` filter that keeps non-ASCII text, and `raise_exception` (a ValueError here). Compiled
templates are cached per text. `render_gguf_chat` takes the template and the BOS / EOS token
texts from a GGUF file's metadata. The rendered text names special tokens by their text
("<|im_start|>", "<start_of_turn>"); `encode_prompt` (engine/tokenizer.py) maps those names to
ids. Nothing here runs model code, and a template cannot reach Python objects beyond the
sandbox's.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from jaxguide.engine.gguf_metadata import read_gguf_metadata

GGUF_TEMPLATE_KEY = "tokenizer.chat_template"


def _raise_template_error(message: str) -> None:
    raise ValueError(f"chat template error: {message}")


@functools.lru_cache(maxsize=16)
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


def render_chat_template(template: str, messages: list[dict[str, Any]],
                         add_generation_prompt: bool = True, *, bos_token: str = "",
                         eos_token: str = "", **variables: Any) -> str:
    """Renders chat messages with a Jinja2 chat template, as transformers' apply_chat_template.

    Args:
      template: the template text.
      messages: [{"role": ..., "content": ...}, ...], as the template expects them.
      add_generation_prompt: end with the header of the assistant's turn.
      bos_token, eos_token: the texts the template writes for `bos_token` / `eos_token`.
      variables: more template variables (e.g. tools=...).

    Returns:
      The prompt text, special tokens written as their names.

    Raises:
      ValueError: the template raised (e.g. roles that do not alternate).
    """
    return _compiled_template(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=bos_token,
        eos_token=eos_token, **variables)


def gguf_chat_template(path: str | os.PathLike[str]) -> str | None:
    """The chat template a GGUF file stores (`tokenizer.chat_template`), or None."""
    template = _metadata(os.fspath(path)).get(GGUF_TEMPLATE_KEY)
    return template if isinstance(template, str) else None


def render_gguf_chat(path: str | os.PathLike[str], messages: list[dict[str, Any]],
                     add_generation_prompt: bool = True, *, template: str | None = None,
                     **variables: Any) -> str:
    """Renders chat messages with a GGUF file's chat template and its BOS / EOS token texts.

    Args:
      path: the GGUF file.
      messages, add_generation_prompt, variables: as for `render_chat_template`.
      template: a template to use instead of the file's.

    Raises:
      ValueError: the file stores no chat template (and none is given), or the template raised.
    """
    meta = _metadata(os.fspath(path))
    if template is None:
        template = gguf_chat_template(path)
        if template is None:
            raise ValueError(f"GGUF file {os.fspath(path)!r} lacks the metadata key "
                             f"{GGUF_TEMPLATE_KEY!r}")
    tokens = meta.get("tokenizer.ggml.tokens") or []

    def token_text(key: str) -> str:
        index = meta.get(key)
        return tokens[int(index)] if index is not None and 0 <= int(index) < len(tokens) else ""

    return render_chat_template(template, messages, add_generation_prompt,
                                bos_token=token_text("tokenizer.ggml.bos_token_id"),
                                eos_token=token_text("tokenizer.ggml.eos_token_id"), **variables)


@functools.lru_cache(maxsize=8)
def _metadata(path: str) -> dict[str, Any]:
    return read_gguf_metadata(path)
