"""TokenizerInfo against the real tokenizers: exact bytes, EOS/special ids, widths, errors.

Oracle: the original tokenizer itself. For random texts, concatenating `token_bytes` of the ids
the original tokenizer produces must give back exactly the text's UTF-8 (after the documented
dummy prefix).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

from jaxguide import TokenizerError, TokenizerInfo

_PIECES = [
    "hello", "World", " the", "  ", "\t", "\n", "\n\n", "\r\n", "    ", "{", "}", "[", "]", "\"",
    ":", ",", "0", "42", "3.14159", "-1e-10", "true", "null", "def ", "return", "(x)", "==",
    "=>", "->", "::", "//", "#", "@", "naïve", "café", "日本語", "中文", "Ελληνικά", "русский",
    "עברית", "العربية", "🙂", "👩‍💻", "∑", "≤", "\u00a0", "\u200b", "ﬁ", "Å", "ß", "İ", "ǅ",
    "<|im_end|>", "</s>", "[INST]", "<0x41>", "▁", "Ġ", "\\u1234", "\\", "'", "`", "~", "%",
    "x" * 40, " " * 17, "-" * 33, "0" * 12,
]


def random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        n = rng.randint(1, 25)
        parts = []
        for _ in range(n):
            roll = rng.random()
            if roll < 0.7:
                parts.append(rng.choice(_PIECES))
            elif roll < 0.85:
                parts.append(chr(rng.randint(0x20, 0x7E)))
            else:  # a Unicode scalar value: mostly BMP, some supplementary, some anywhere
                top = rng.choices([0xFFFF, 0x3FFFF, 0x10FFFF], weights=[85, 10, 5])[0]
                cp = rng.randint(0, top)
                parts.append(chr(cp) if not 0xD800 <= cp <= 0xDFFF else "?")
        texts.append("".join(parts))
    return texts


def missing_single_bytes(info: TokenizerInfo) -> set[int]:
    """Bytes that no token of the vocabulary is by itself (SmolLM2 lacks 0xF1, 0xF2, ...)."""
    present = {info.token_bytes(i) for i in range(info.vocab_size)}
    return {b for b in range(256) if bytes([b]) not in present}


def assert_round_trip(info: TokenizerInfo, text: str) -> bool:
    """Checks the round trip; returns False (checking nothing) for unrepresentable texts."""
    if info.kind in ("sentencepiece", "gguf_llama"):
        # SentencePiece itself cannot represent U+2581 in text: it is its escaped space, and the
        # original tokenizer decodes it as " " too (documented in jaxguide/tokenizer.py).
        text = text.replace("\u2581", " ")
    if not missing_single_bytes_cached(info).isdisjoint(text.encode("utf-8")):
        return False  # the original tokenizer cannot encode such a text either
    ids = info.encode(text)
    got = info.decode_bytes(ids)
    assert got == info.dummy_prefix + text.encode("utf-8"), (text, ids)
    return True


_MISSING: dict[int, set[int]] = {}


def missing_single_bytes_cached(info: TokenizerInfo) -> set[int]:
    if id(info) not in _MISSING:
        _MISSING[id(info)] = missing_single_bytes(info)
    return _MISSING[id(info)]


def test_round_trip_1000_random_texts(tokenizer_name):
    info = real_tokenizer(tokenizer_name)
    checked = sum(assert_round_trip(info, text) for text in random_texts(1000, seed=5))
    assert checked >= 900  # only texts with bytes the vocabulary lacks are left out


def test_unrepresentable_bytes_are_only_those_the_vocabulary_lacks():
    # SmolLM2's byte-level vocabulary has no token for the UTF-8 lead byte 0xF1, so neither its
    # tokenizer nor any mask can produce U+40000..U+7FFFF; every other vocabulary is complete.
    assert {0xF1, 0xF2} <= missing_single_bytes(real_tokenizer("smollm2_gguf"))
    for name in ("mistral_sp_v1", "tekken", "llama3_tiktoken", "deepseek_hf_json"):
        assert missing_single_bytes(real_tokenizer(name)) <= set(range(0xF5, 0x100)) | {0xC0, 0xC1}


@settings(max_examples=150, deadline=None)
@given(text=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=60))
def test_round_trip_arbitrary_unicode(text):
    for name in ("mistral_sp_v1", "llama3_tiktoken", "smollm2_gguf"):
        assert_round_trip(real_tokenizer(name), text)


EXPECTED = {
    # name: (vocab_size, EOS ids, dummy prefix)
    "mistral_sp_v1": (32000, {2}, b" "),
    "mistral_sp_v3": (32768, {2}, b" "),
    "tekken": (131072, {2}, b""),
    "llama3_tiktoken": (128256, {128001, 128009}, b""),
    "deepseek_hf_json": (129280, {1}, b""),
    # llama.cpp's end-of-generation set: <|im_end|>, <|endoftext|>, <reponame> (FIM repo)
    "smollm2_gguf": (49152, {0, 2, 4}, b""),
    "gemma3_gguf": (262144, {1, 106, 212}, b""),  # <eos>, <end_of_turn>, </s>
}


def test_vocabulary_facts(tokenizer_name):
    info = real_tokenizer(tokenizer_name)
    vocab_size, eos, prefix = EXPECTED[tokenizer_name]
    assert info.vocab_size == vocab_size
    assert info.logits_width == vocab_size
    assert info.bitmask_width == (vocab_size + 31) // 32
    assert info.eos_token_ids == eos
    assert info.dummy_prefix == prefix
    specials = info.special_token_ids
    assert eos <= specials
    assert all(info.token_bytes(i) == b"" for i in specials)
    # Every single byte is representable (byte fallback or byte-level alphabet), except bytes
    # that can never occur in UTF-8 text in vocabularies without byte fallback.
    single = {info.token_bytes(i) for i in range(info.vocab_size) if len(info.token_bytes(i)) == 1}
    assert {bytes([b]) for b in range(0x20, 0x7F)} <= single


def test_known_token_bytes():
    sp = real_tokenizer("mistral_sp_v1")
    assert sp.token_bytes(sp.encode("Hello")[0]) == b" Hello"
    assert sp.token_bytes(3 + 0x41) == b"A"  # <0x41> byte-fallback piece
    assert sp.special_token_names[1] == "<s>"
    llama = real_tokenizer("llama3_tiktoken")
    assert llama.encode("Hello world") == [9906, 1917]
    assert llama.token_bytes(1917) == b" world"
    assert llama.special_token_names[128009] == "<|eot_id|>"
    smol = real_tokenizer("smollm2_gguf")
    assert smol.special_token_names[1] == "<|im_start|>"
    assert smol.special_token_names[2] == "<|im_end|>"
    tekken = real_tokenizer("tekken")
    assert tekken.token_bytes(1000) == b"\x00"  # rank 0 is id 1000
    deepseek = real_tokenizer("deepseek_hf_json")
    assert deepseek.special_token_names[1] == "<｜end▁of▁sentence｜>"


def test_token_bytes_out_of_range():
    info = real_tokenizer("smollm2_gguf")
    with pytest.raises(IndexError):
        info.token_bytes(info.vocab_size)
    with pytest.raises(IndexError):
        info.token_bytes(-1)


# ------------------------------------------------------------------ from_token_bytes


def test_from_token_bytes_specials_eos_and_width():
    info = TokenizerInfo.from_token_bytes(
        [b"a", b"<eos>", b"ab", b"b", b"<pad>"], eos_token_ids=[1], special_token_ids=[4],
        logits_width=70)
    assert info.vocab_size == 5
    assert info.logits_width == 70
    assert info.bitmask_width == 3
    assert info.eos_token_ids == {1}
    assert info.special_token_ids == {1, 4}
    assert info.special_token_names == {1: "<eos>", 4: "<pad>"}
    assert info.token_bytes(1) == b""
    assert list(info.tokens_with_prefix(b"a")) == [0, 2]
    assert list(info.tokens_prefixing(b"abc")) == [0, 2]
    with pytest.raises(TokenizerError, match="no encoder"):
        info.encode("a")


@pytest.mark.parametrize("kwargs, message", [
    ({"logits_width": 3}, "below the vocabulary size"),
    ({"eos_token_ids": [9]}, "outside the vocabulary"),
    ({"special_token_ids": [-1]}, "outside the vocabulary"),
])
def test_from_token_bytes_rejects_bad_arguments(kwargs, message):
    with pytest.raises(TokenizerError, match=message):
        TokenizerInfo.from_token_bytes([b"a", b"b", b"c", b"d"], **kwargs)


def test_from_token_bytes_rejects_non_bytes_and_empty():
    with pytest.raises(TokenizerError, match="not bytes"):
        TokenizerInfo.from_token_bytes([b"a", "b"])  # type: ignore[list-item]
    with pytest.raises(TokenizerError, match="empty"):
        TokenizerInfo.from_token_bytes([])


def test_eos_with_bytes_is_rejected_natively():
    with pytest.raises(TokenizerError, match="must be special"):
        TokenizerInfo([b"a", b"b"], eos_token_ids=[0])


@pytest.mark.parametrize("name", ["llama3_tiktoken", "mistral_sp_v1"])
def test_logits_width_padding(name):
    base = real_tokenizer(name)
    with pytest.raises(TokenizerError, match="below the vocabulary size"):
        TokenizerInfo.from_token_bytes(base.all_token_bytes(), logits_width=base.vocab_size - 1)
    padded = TokenizerInfo.from_token_bytes(base.all_token_bytes(),
                                            logits_width=base.vocab_size + 100)
    assert padded.bitmask_width == (base.vocab_size + 100 + 31) // 32
