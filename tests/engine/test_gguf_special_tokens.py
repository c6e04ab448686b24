"""llama.cpp's special-token rules for GGUF vocabularies (engine/gguf_special_tokens.py): the
end-of-generation (EOG) set that `from_gguf` takes as its EOS ids, type corrections by text and
the strip flags `encode_prompt` applies, on the real vocabularies of llama.cpp's suite, the Gemma 3
asset, and small GGUF files written from SmolLM2's real vocabulary."""

from __future__ import annotations

import os

import pytest
from support.gguf_files import write_gguf

from jaxguide import TokenizerInfo, assets
from jaxguide.engine.gguf_metadata import read_gguf_metadata
from jaxguide.engine.tokenizer import encode_prompt

# EOG ids per vocabulary by the rule of the module docstring, with the reason for each id:
# eos = the file's eos id, name = a text of llama.cpp's EOG list, fim = a FIM pad / repo text.
SUITE_EOG = {
    "aquila": {0: "eos, name <|endoftext|>", 100007: "name </s>"},
    "baichuan": {2: "eos, name </s>"},
    "command-r": {0: "fim pad <PAD>", 255001: "eos"},
    "deepseek-coder": {32014: "eos, name <｜end▁of▁sentence｜>"},
    "deepseek-llm": {100001: "eos, name <｜end▁of▁sentence｜>"},
    "falcon": {11: "eos, name <|endoftext|>"},
    "gemma-4": {1: "eos, name <eos>", 50: "name <|tool_response>", 106: "name <turn|>"},
    "gpt-2": {50256: "eos, name <|endoftext|>"},
    "gpt-neox": {0: "eos, name <|endoftext|>"},
    "llama-bpe": {128001: "eos, name <|end_of_text|>", 128009: "name <|eot_id|>"},
    "llama-spm": {2: "eos, name </s>"},
    "mpt": {0: "eos, name <|endoftext|>"},
    "nomic-bert-moe": {2: "eos, name </s>"},
    "phi-3": {2: "name </s>", 32000: "eos, name <|endoftext|>", 32007: "name <|end|>"},
    "qwen2": {128247: "name </s>", 151643: "eos, name <|endoftext|>", 151645: "name <|im_end|>"},
    "qwen35": {128247: "name </s>", 151643: "eos, name <|endoftext|>",
               151645: "name <|im_end|>"},
    "refact": {0: "eos, name <|endoftext|>", 4: "fim pad <fim_pad>", 18: "fim repo <reponame>"},
    "starcoder": {0: "eos, name <|endoftext|>", 4: "fim pad <fim_pad>"},
}


@pytest.mark.parametrize("name", sorted(SUITE_EOG))
def test_suite_end_of_generation(suite, name):
    """Each suite vocabulary's EOS ids are llama.cpp's EOG set; every EOG id is special."""
    path = os.path.join(suite, f"ggml-vocab-{name}.gguf")
    info = TokenizerInfo.from_gguf(path)
    tokens = read_gguf_metadata(path)["tokenizer.ggml.tokens"]
    assert info.eos_token_ids == set(SUITE_EOG[name])
    for token_id, why in SUITE_EOG[name].items():
        assert info.token_bytes(token_id) == b""
        assert info.special_token_names[token_id] == tokens[token_id]
        if "name" in why or "fim" in why:
            assert why.endswith(" " + tokens[token_id])


def test_gemma3_end_of_generation():
    """Gemma 3 ends at `<end_of_turn>` as at `<eos>`; its `</s>` (a plain piece in Gemma's
    tokenizer.model) is an EOG name too, made control as llama.cpp does."""
    gemma3 = TokenizerInfo.from_gguf(assets.gemma3_gguf_head_path())
    names = gemma3.special_token_names
    assert gemma3.eos_token_ids == {1, 106, 212}
    assert (names[1], names[106], names[212]) == ("<eos>", "<end_of_turn>", "</s>")
    assert 105 not in gemma3.eos_token_ids and names[105] == "<start_of_turn>"
    assert not gemma3.lstrip_token_ids and not gemma3.rstrip_token_ids


def test_explicit_eos_ids_win():
    gemma3 = TokenizerInfo.from_gguf(assets.gemma3_gguf_head_path(), eos_token_ids=[106])
    assert gemma3.eos_token_ids == {106}


def test_gemma4_keeps_a_normal_closing_s(suite):
    """With `<|tool_response>` in EOG, Gemma 4's `</s>` is a normal token (its text)."""
    info = TokenizerInfo.from_gguf(os.path.join(suite, "ggml-vocab-gemma-4.gguf"))
    assert info.token_bytes(212) == b"</s>" and 212 not in info.eos_token_ids


def test_smollm2_fim_repo_and_end_of_text():
    """SmolLM2 ends at `<|im_end|>` (its eos), `<|endoftext|>` (a name) and `<reponame>` (a FIM
    repo name), not at `<repo_name>` (not in llama.cpp's list)."""
    info = TokenizerInfo.from_gguf(assets.smollm2_gguf_path())
    assert info.eos_token_ids == {0, 2, 4}
    assert info.special_token_names[3] == "<repo_name>"


def _renamed(tmp_path, parts, renames, **fields):
    """SmolLM2's vocabulary as a GGUF file, with control tokens 6.. renamed."""
    tokens, types, merges = parts
    tokens = list(tokens)
    for offset, name in enumerate(renames):
        tokens[6 + offset] = name
    return TokenizerInfo.from_gguf(write_gguf(tmp_path / "v.gguf", "gpt2", tokens, types,
                                              token_merges=merges, **fields))


def test_harmony_end_is_not_end_of_generation(tmp_path, smollm2_parts):
    """gpt-oss: with `<|return|>` and `<|call|>`, `<|end|>` leaves EOG and stands for its text;
    `<|channel|>` / `<|message|>` are always user-defined (their text)."""
    info = _renamed(tmp_path, smollm2_parts,
                    ["<|return|>", "<|call|>", "<|end|>", "<|channel|>", "<|message|>"],
                    eos_token_id=2)
    assert info.eos_token_ids == {0, 2, 4, 6, 7}
    assert info.token_bytes(8) == b"<|end|>" and info.token_bytes(9) == b"<|channel|>"
    assert info.token_bytes(10) == b"<|message|>"
    assert info.encode("a<|end|>b")[1] == 8
    without_call = _renamed(tmp_path, smollm2_parts, ["<|return|>", "<|end|>"], eos_token_id=2)
    assert without_call.eos_token_ids == {0, 2, 4, 6, 7}
    assert without_call.token_bytes(7) == b""


def test_default_eos(tmp_path, smollm2_parts, suite):
    """No eos key: llama.cpp's "gpt2" default eos is id 11. In SmolLM2's vocabulary that is a
    control token, so an EOS id; in GPT-2's it is ",", which has bytes, so not (an EOS id has
    none) and only the EOG names remain."""
    assert _renamed(tmp_path, smollm2_parts, []).eos_token_ids == {0, 2, 4, 11}
    meta = read_gguf_metadata(os.path.join(suite, "ggml-vocab-gpt-2.gguf"))
    info = TokenizerInfo.from_gguf(write_gguf(
        tmp_path / "g.gguf", "gpt2", meta["tokenizer.ggml.tokens"],
        [int(t) for t in meta["tokenizer.ggml.token_type"]],
        token_merges=meta["tokenizer.ggml.merges"], tokenizer_pre="gpt-2"))
    assert info.token_bytes(11) == b"," and info.eos_token_ids == {50256}


def test_eot_key_and_names(tmp_path, smollm2_parts):
    """A file's eot id is EOG; a normal-typed `<end_of_turn>` is made control and EOG."""
    tokens, types, merges = smollm2_parts
    end = len(tokens)
    info = TokenizerInfo.from_gguf(write_gguf(tmp_path / "t.gguf", "gpt2",
                                              [*tokens, "<end_of_turn>"], [*types, 1],
                                              token_merges=merges, eos_token_id=2,
                                              eot_token_id=15))
    assert info.eos_token_ids == {0, 2, 4, 15, end} and info.token_bytes(end) == b""


def test_fim_names(tmp_path, smollm2_parts):
    """Without FIM ids in the file, FIM texts are found by name and made control; only pad,
    repo and file-separator end generation."""
    tokens, types, merges = smollm2_parts
    extra = ["<fim_prefix>", "<|fim_pad|>", "<|file_sep|>", "<MID>"]
    info = TokenizerInfo.from_gguf(write_gguf(tmp_path / "f.gguf", "gpt2", [*tokens, *extra],
                                              [*types, 1, 1, 1, 1], token_merges=merges,
                                              eos_token_id=2))
    first = len(tokens)
    assert all(info.token_bytes(first + k) == b"" for k in range(4))
    assert info.eos_token_ids == {0, 2, 4, first + 1, first + 2}


def test_phi3_strips_whitespace_right_of_specials(suite):
    """Phi-3 (general.name "Phi3"): llama.cpp drops the whitespace right of its specials in
    text with special tokens, but not after `<s>`, `<unk>` or `<|endoftext|>`."""
    info = TokenizerInfo.from_gguf(os.path.join(suite, "ggml-vocab-phi-3.gguf"))
    hello = info.encode("Hello")
    assert encode_prompt(info, "<|user|>\nHello<|end|>\n<|assistant|>\n") == [
        32010, *hello, 32007, 32001]
    assert encode_prompt(info, "<|endoftext|> \nHello") == [32000, *info.encode(" \nHello")]
    assert {32001, 32007, 32010, 2} <= info.rstrip_token_ids
    assert not {0, 1, 32000} & info.rstrip_token_ids and not info.lstrip_token_ids
    llama = TokenizerInfo.from_gguf(os.path.join(suite, "ggml-vocab-llama-spm.gguf"))
    assert encode_prompt(llama, "</s>\nHello") == [2, *llama.encode("\nHello")]


def test_mask_strips_whitespace_on_its_left(suite):
    """nomic-bert-moe's `<mask>` takes the whitespace left of it (llama.cpp's LSTRIP)."""
    info = TokenizerInfo.from_gguf(os.path.join(suite, "ggml-vocab-nomic-bert-moe.gguf"))
    assert info.lstrip_token_ids == {250001}
    assert encode_prompt(info, "Hello \n<mask>") == [*info.encode("Hello"), 250001]
