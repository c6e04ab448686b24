"""A real Gemma 3 vocabulary (the metadata chunk of a Gemma-3-270M GGUF on PyPI) through
`TokenizerInfo.from_gguf`: SentencePiece BPE with byte fallback, user-defined symbols and no
dummy prefix. (Gemma 4, a BPE "gemma4" vocabulary, is in llama.cpp's suite:
test_gguf_conformance.py.) No Gemma `tokenizer.model` or `tokenizer.json` ships in a PyPI
package we found, so there is no second implementation to compare ids with here; the
SentencePiece rebuild itself is compared with the sentencepiece library in
test_tokenizer_errors.py and test_gguf_tokenizers.py."""

from __future__ import annotations

import pytest

from jaxguide import TokenizerInfo, assets

TEXTS = ["Hello world", "  two  spaces\n\ttab\n\n\nx", "naïve 日本語テスト 🙂 ½", "<table><tr>",
         "{\"a\": [1, 2]}", "ﬁ ⑤ 𝟙 \U00020000 \U00013000", "   \n\n\n  x  ", ""]


@pytest.fixture(scope="module")
def gemma3() -> TokenizerInfo:
    return TokenizerInfo.from_gguf(assets.gemma3_gguf_head_path())


def test_loads_with_gemma_specials(gemma3):
    assert gemma3.vocab_size == 262144 and gemma3.kind == "gguf_llama"
    assert gemma3.eos_token_ids == {1} and gemma3.dummy_prefix == b""
    assert not gemma3.regex_pre_tokenized
    names = gemma3.special_token_names
    assert names[0] == "<pad>" and names[2] == "<bos>" and names[105] == "<start_of_turn>"
    assert names[106] == "<end_of_turn>" and gemma3.token_bytes(106) == b""


def test_round_trips_without_dummy_prefix(gemma3):
    for text in TEXTS:
        assert gemma3.decode_bytes(gemma3.encode(text)) == text.encode(), text


def test_user_defined_symbols_are_whole_tokens(gemma3):
    """Gemma's user-defined pieces (newline and space runs, HTML tags) stand for their text
    and are taken whole from text, as llama.cpp does."""
    assert gemma3.token_bytes(107) == b"\n" and gemma3.token_bytes(109) == b"\n\n\n"
    assert gemma3.token_bytes(138) == b"  " and gemma3.token_bytes(168) == b"<table>"
    assert gemma3.encode("\n\n\n") == [109]
    assert gemma3.encode("<table>") == [168]
    assert gemma3.encode("a\nb")[1] == 107


def test_byte_fallback(gemma3):
    """A character without a piece is its UTF-8 bytes, one byte-fallback piece each."""
    missing = [c for c in ("\U00020000", "\U00013000", "\U0001d11e", "\u2fd5")
               if not any(len(gemma3.token_bytes(int(t))) == len(c.encode())
                          for t in gemma3.tokens_prefixing(c.encode()))]
    assert missing
    for char in missing:
        byte_pieces = []
        for byte in char.encode():
            (piece,) = gemma3.tokens_prefixing(bytes([byte]))
            byte_pieces.append(int(piece))
        assert gemma3.encode(char) == byte_pieces
