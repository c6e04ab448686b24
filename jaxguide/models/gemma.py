"""Gemma 3: its tokenizer (the Gemma 3 GGUF asset's vocabulary) and its chat format.

Design note. A Gemma chat is a sequence of turns `<start_of_turn>{role}\\n{text}<end_of_turn>\\n`,
role "user" or "model" (an "assistant" message is the model's turn), the text stripped of
surrounding whitespace. A system message has no turn of its own: its text and a blank line open
the first user turn. The prompt starts with `<bos>` and, to generate, ends with
`<start_of_turn>model\\n`; after the system message the roles must alternate user, model, user,
... (a ValueError otherwise). Content may also be a list of parts, `{"type": "text", "text": ...}`
(each stripped) and `{"type": "image"}` (written `<start_of_image>`). This is what the chat
template of Gemma 3's instruction-tuned models writes (the tests render the template as it
ships with Gemma-3-270M-it beside `render_chat`). The Gemma 3 GGUF asset stores no template, so
`render_chat` writes the format in Python, or renders a template it is given
(jaxguide.models.chat_templates). Encode the text with `encode_prompt`: `<bos>`,
`<start_of_turn>` (105) and `<end_of_turn>` (106) become their ids; the model stops at
`<end_of_turn>`, one of `tokenizer_info()`'s EOS ids (llama.cpp's end-of-generation set).
"""

from __future__ import annotations

import functools
from typing import Any

from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.models import assets
from jaxguide.models.chat_templates import render_chat_template

BOS = "<bos>"
START_OF_TURN = "<start_of_turn>"  # id 105
END_OF_TURN = "<end_of_turn>"  # id 106, an EOS id
IMAGE = "<start_of_image>"


@functools.lru_cache(maxsize=1)
def tokenizer_info() -> TokenizerInfo:
    """Gemma 3's TokenizerInfo from the GGUF asset (262,144 ids; EOS <eos>, <end_of_turn>)."""
    return TokenizerInfo.from_gguf(assets.gemma3_gguf_head_path())


def _content_text(content: Any) -> str:
    """A message's text, stripped: a string, or the text (and image) parts of a list."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [IMAGE if part.get("type") == "image" else part.get("text", "").strip()
                 for part in content if part.get("type") in ("image", "text")]
        return "".join(parts)
    raise ValueError(f"chat template error: Invalid content type {type(content).__name__}")


def render_chat(messages: list[dict[str, Any]], add_generation_prompt: bool = True, *,
                template: str | None = None, bos_token: str = BOS) -> str:
    """Renders chat messages in Gemma's chat format (see the module docstring).

    Args:
      messages: [{"role": "system" | "user" | "assistant", "content": str | parts}, ...].
      add_generation_prompt: end with the model's turn header ("<start_of_turn>model\\n").
      template: a Jinja2 chat template to render instead (e.g. a GGUF's
        `tokenizer.chat_template`).
      bos_token: the text written first (the template's `bos_token`).

    Returns:
      The prompt text; special tokens appear as their names (encode with `encode_prompt`).

    Raises:
      ValueError: roles that do not alternate user / model after the system message, or
        content that is neither a string nor a list of parts.
    """
    if template is not None:
        return render_chat_template(template, messages, add_generation_prompt,
                                    bos_token=bos_token, eos_token="<eos>")
    prefix, turns = "", list(messages)
    if turns and turns[0]["role"] == "system":
        content = turns.pop(0)["content"]
        system = content if isinstance(content, str) else content[0]["text"]
        prefix = system + "\n\n"
    out = [bos_token]
    for index, message in enumerate(turns):
        if (message["role"] == "user") != (index % 2 == 0):
            raise ValueError("chat template error: Conversation roles must alternate "
                             "user/assistant/user/assistant/...")
        role = "model" if message["role"] == "assistant" else message["role"]
        out.append(f"{START_OF_TURN}{role}\n{prefix if index == 0 else ''}")
        out.append(_content_text(message["content"]) + f"{END_OF_TURN}\n")
    if add_generation_prompt:
        out.append(f"{START_OF_TURN}model\n")
    return "".join(out)
