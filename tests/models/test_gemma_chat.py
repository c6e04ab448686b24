"""Gemma's chat format (jaxguide.models.gemma.render_chat) against Gemma 3's own chat template
(as it ships with Gemma-3-270M-it, rendered by jaxguide.models.chat_templates) and a hand-written
prompt; the prompt's ids through the Gemma 3 vocabulary; any GGUF's template rendered."""

from __future__ import annotations

import os

import pytest

from jaxguide import assets
from jaxguide.engine.tokenizer import encode_prompt
from jaxguide.models import gemma
from jaxguide.models.chat_templates import (
    gguf_chat_template,
    render_chat_template,
    render_gguf_chat,
)

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hi"}],
    "system_folded": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "  What is 2+2? \n"},
                      {"role": "assistant", "content": "4"},
                      {"role": "user", "content": "And 3+3?"}],
    "parts": [{"role": "user", "content": [{"type": "image"},
                                           {"type": "text", "text": " Describe it. "}]}],
    "system_only": [{"role": "system", "content": "S "}],
    "unicode": [{"role": "user", "content": "naïve 日本語 🙂\n\n"},
                {"role": "assistant", "content": " {\"a\": 1} "}],
}


@pytest.fixture(scope="module")
def template() -> str:
    with open(assets.gemma3_chat_template_path(), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
@pytest.mark.parametrize("generation_prompt", [True, False])
def test_equals_gemma3_template(template, name, generation_prompt):
    messages = CONVERSATIONS[name]
    expected = render_chat_template(template, messages, generation_prompt, bos_token="<bos>",
                                    eos_token="<eos>")
    assert gemma.render_chat(messages, generation_prompt) == expected
    assert gemma.render_chat(messages, generation_prompt, template=template) == expected


def test_hand_written_prompt():
    assert gemma.render_chat(CONVERSATIONS["system_folded"]) == (
        "<bos><start_of_turn>user\nBe brief.\n\nWhat is 2+2?<end_of_turn>\n"
        "<start_of_turn>model\n4<end_of_turn>\n"
        "<start_of_turn>user\nAnd 3+3?<end_of_turn>\n"
        "<start_of_turn>model\n")


def test_roles_must_alternate(template):
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    with pytest.raises(ValueError, match="must alternate"):
        gemma.render_chat(messages)
    with pytest.raises(ValueError, match="must alternate"):
        gemma.render_chat(messages, template=template)
    with pytest.raises(ValueError, match="Invalid content type"):
        gemma.render_chat([{"role": "user", "content": None}])


def test_prompt_ids():
    """`<bos>`, `<start_of_turn>` and `<end_of_turn>` are the special ids 2, 105 and 106; the
    text between them is encoded as text; the model's stop token is an EOS id."""
    info = gemma.tokenizer_info()
    ids = encode_prompt(info, gemma.render_chat(CONVERSATIONS["user"]))
    assert ids == [2, 105, *info.encode("user\nHi"), 106, *info.encode("\n"), 105,
                   *info.encode("model\n")]
    assert ids[:2] == [2, 105] and info.special_token_names[105] == "<start_of_turn>"
    assert 106 in info.eos_token_ids and 105 not in info.eos_token_ids
    assert info.decode_bytes(ids) == b"user\nHi\nmodel\n"


def test_gguf_templates():
    """SmolLM2's GGUF stores a template and renders with its BOS / EOS texts; the Gemma 3 GGUF
    asset stores none, which is a clear error."""
    assert gguf_chat_template(assets.gemma3_gguf_head_path()) is None
    with pytest.raises(ValueError, match="tokenizer.chat_template"):
        render_gguf_chat(assets.gemma3_gguf_head_path(), CONVERSATIONS["user"])
    text = render_gguf_chat(assets.smollm2_gguf_path(), CONVERSATIONS["user"])
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


def test_gemma4_gguf_template(suite):
    """Gemma 4's GGUF (llama.cpp's suite) carries its template: turns `<|turn>` ... `<turn|>`,
    the system message a turn of its own; every marker encodes to its special id."""
    from jaxguide import TokenizerInfo

    path = os.path.join(suite, "ggml-vocab-gemma-4.gguf")
    text = render_gguf_chat(path, CONVERSATIONS["system_folded"][:2])
    assert text.startswith("<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nWhat is 2+2?")
    info = TokenizerInfo.from_gguf(path)
    ids = encode_prompt(info, text)
    names = [info.special_token_names.get(i) for i in ids]
    assert names.count("<|turn>") == 3 and names.count("<turn|>") == 2 and ids[0] == 2
