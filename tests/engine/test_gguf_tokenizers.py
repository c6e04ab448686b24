"""GGUF tokenizer models and pre-tokenizers (engine/gguf_tokenizers.py, gguf_encoders.py,
pre_tokenizers.py) on small real GGUF files written with the `gguf` package, checked against
independent oracles: the `sentencepiece` library, the Python `regex` engine, and the
accept/refuse tables of llama.cpp's rules. The full vocabularies of llama.cpp's suite are in
test_gguf_conformance.py."""

from __future__ import annotations

import pytest
import regex
import sentencepiece as spm
from support.gguf_files import sentencepiece_vocab, write_gguf
from tokenizers import Regex, pre_tokenizers

from jaxguide import TokenizerError, TokenizerInfo, assets
from jaxguide.engine.gguf_encoders import UserDefinedSplitter, rwkv_token_bytes
from jaxguide.engine.pre_tokenizers import _TYPES, GGUF_PRE_TOKENIZERS

TEXTS = ["Hello world", "  two  spaces\n\ttab\r\n", "naïve 日本語テスト 🙂 ½ ١٢٣٤ 𝟙𝟚",
         "x1234567y 12 IMGIMGABZ <sentinel:12>", "A\u0301b\u0308 ক্ষ don't I'LL", "{\"a\": [1, 2]}",
         "   \n\n\n  x  ", "Cửa Việt's 3333333 ...!!! 'll", "中文字符 가나다 ア・イ", ""]


def python_regex_split(regexes, text):
    """llama.cpp's unicode_regex_split with the `regex` module: each regex isolates its
    matches (and the gaps between them) in every piece."""
    pieces = [text]
    for expression in regexes:
        pattern = regex.compile(expression, regex.V1)
        cut = []
        for piece in pieces:
            position = 0
            for match in pattern.finditer(piece):
                if match.start() > position:
                    cut.append(piece[position:match.start()])
                if match.end() > match.start():
                    cut.append(match.group())
                position = match.end()
            if position < len(piece):
                cut.append(piece[position:])
        pieces = cut
    return pieces


@pytest.mark.parametrize("type_name", sorted(_TYPES))
def test_pre_tokenizer_splits_agree_with_python_regex(type_name):
    """The Oniguruma splits jaxguide runs (tokenizers' Split) equal the `regex` module's."""
    regexes = _TYPES[type_name]
    chain = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in regexes])
    for text in TEXTS:
        assert [w for w, _ in chain.pre_tokenize_str(text)] == python_regex_split(regexes, text)


def test_catalogue_names_and_flags():
    assert len(GGUF_PRE_TOKENIZERS) >= 90
    for name in ("llama-bpe", "qwen2", "qwen35", "deepseek-llm", "deepseek-coder", "deepseek-v3",
                 "falcon", "mpt", "starcoder", "gpt-2", "refact", "command-r", "stablelm2",
                 "olmo", "dbrx", "smaug-bpe", "poro-chat", "jais", "chatglm-bpe", "viking",
                 "tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone",
                 "chameleon", "minerva-7b", "gpt-4o", "superbpe", "trillion", "bailingmoe",
                 "seed-coder", "kimi-k2", "hunyuan", "grok-2", "gemma4", "afmoe", "laguna"):
        assert name in GGUF_PRE_TOKENIZERS, name
    assert GGUF_PRE_TOKENIZERS["llama-bpe"].ignore_merges
    assert GGUF_PRE_TOKENIZERS["tekken"].ignore_merges
    assert not GGUF_PRE_TOKENIZERS["qwen2"].ignore_merges
    assert GGUF_PRE_TOKENIZERS["gemma4"].style == "escaped_spaces"


def test_unknown_pre_tokenizer_is_an_error(tmp_path, smollm2_parts):
    tokens, types, merges = smollm2_parts
    path = write_gguf(tmp_path / "x.gguf", "gpt2", tokens, types, token_merges=merges,
                      tokenizer_pre="no-such-pre")
    with pytest.raises(TokenizerError, match="unknown pre-tokenizer.*'no-such-pre'.*llama-bpe"):
        TokenizerInfo.from_gguf(path)


def smollm2_hf_tokenizer(tokens, merges):
    """SmolLM2's tokenizer as its tokenizer.json defines it (Digits + ByteLevel), built with
    the tokenizers library from the GGUF's vocabulary: the oracle of the "smollm" name."""
    from tokenizers import Tokenizer, models

    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)},
                                     merges=[tuple(m.split(" ", 1)) for m in merges]))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return tokenizer


@pytest.mark.parametrize("pre", [None, "smollm", "starcoder", "qwen2", "llama-bpe", "gpt-4o",
                                 "deepseek-v3", "kimi-k2", "bloom"])
def test_any_pre_tokenizer_round_trips(tmp_path, smollm2_parts, pre):
    """The same byte-level vocabulary under several pre-tokenizers: every text round-trips, and
    under SmolLM2's own one the ids are those of SmolLM2's tokenizer.json recipe."""
    tokens, types, merges = smollm2_parts
    extra = {"token_merges": merges} | ({"tokenizer_pre": pre} if pre else {})
    info = TokenizerInfo.from_gguf(write_gguf(tmp_path / "v.gguf", "gpt2", tokens, types, **extra))
    assert info.regex_pre_tokenized and info.kind == "gguf_gpt2"
    reference = smollm2_hf_tokenizer(tokens, merges)
    for text in TEXTS:
        assert info.decode_bytes(info.encode(text)) == text.encode()
        if pre == "smollm":
            assert info.encode(text) == reference.encode(text, add_special_tokens=False).ids


def test_user_defined_tokens_split_first():
    """llama.cpp's tokenizer_st_partition: user-defined tokens (type 4) only, longest first,
    leftmost occurrences; control tokens in text stay text."""
    splitter = UserDefinedSplitter(["<a>", "<ab>", "x", "<c>", "ab"], [4, 4, 1, 3, 4])
    assert splitter.split("1<ab>2<a>3<c>") == ["1", 1, "2", 0, "3<c>"]
    assert splitter.split("<a><a>") == [0, 0]
    assert splitter.split("ab<ab>") == [4, 1]
    assert splitter.split("") == []
    assert splitter.split("plain") == ["plain"]


def test_end_of_generation_names_become_control(tmp_path, smollm2_parts):
    """As llama.cpp: a normal-typed `<|endoftext|>` used as EOS (Aquila, GPT-NeoX) is control."""
    tokens, types, merges = smollm2_parts
    types = list(types)
    types[0] = 1  # <|endoftext|>
    info = TokenizerInfo.from_gguf(write_gguf(tmp_path / "e.gguf", "gpt2", tokens, types,
                                              token_merges=merges, eos_token_id=0))
    # EOS: llama.cpp's end-of-generation set (eos, <|im_end|>, <reponame>: test_gguf_special_tokens)
    assert info.eos_token_ids == {0, 2, 4} and info.token_bytes(0) == b""
    assert info.special_token_names[0] == "<|endoftext|>"


def sentencepiece_gguf(path, processor, model, extra_unknowns=0, **extra):
    tokens, types, scores = sentencepiece_vocab(processor)
    tokens += [f"[PAD{i}]" for i in range(extra_unknowns)]
    types += [2] * extra_unknowns
    scores += [0.0] * extra_unknowns
    return write_gguf(path, model, tokens, types, token_scores=scores,
                      eos_token_id=processor.eos_id(), **extra)


def test_phi3_style_unknown_pads_load(tmp_path):
    """Phi-3's GGUF types 53 `[PAD...]` tokens unknown; SentencePiece takes one unknown piece,
    so the others become control pieces: encode() is still the original tokenizer's."""
    path = assets.mistral_sentencepiece_path("v1")
    processor = spm.SentencePieceProcessor(model_file=path)
    info = TokenizerInfo.from_gguf(
        sentencepiece_gguf(tmp_path / "phi.gguf", processor, "llama", extra_unknowns=5,
                           unk_token_id=0))
    assert info.vocab_size == processor.vocab_size() + 5
    assert all(info.token_bytes(i) == b"" for i in range(processor.vocab_size(), info.vocab_size))
    for text in TEXTS + ["[PAD1] stays text"]:
        assert info.encode(text) == processor.encode(text), text


def protobuf_fields(data: bytes) -> dict[int, int | bytes]:
    """The last value of each top-level field of a serialized protobuf message (varints and
    length-delimited fields; fixed32/64 skipped)."""
    fields: dict[int, int | bytes] = {}
    position = 0

    def varint() -> int:
        nonlocal position
        value = shift = 0
        while True:
            byte = data[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while position < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            fields[number] = varint()
        elif wire == 2:
            length = varint()
            fields[number] = data[position:position + length]
            position += length
        else:
            position += 4 if wire == 5 else 8
    return fields


def test_t5_unigram_equals_sentencepiece(tmp_path):
    """A "t5" (UGM) GGUF: a unigram model trained here by sentencepiece, written to GGUF and
    read back, encodes as sentencepiece does (its normalizer included)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS[:-1] * 3 + ["the quick brown fox jumps over the lazy dog",
                                                  "unigram language models split words"] * 20),
                      encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "u"),
                                   model_type="unigram", vocab_size=400, byte_fallback=True,
                                   hard_vocab_limit=False, character_coverage=1.0,
                                   minloglevel=2)
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "u.model"))
    normalizer = protobuf_fields(protobuf_fields(processor.serialized_model_proto())[3])
    assert len(normalizer[2]) > 1000  # the trained model's NFKC charsmap
    info = TokenizerInfo.from_gguf(sentencepiece_gguf(
        tmp_path / "t5.gguf", processor, "t5", add_space_prefix=True,
        remove_extra_whitespaces=bool(normalizer.get(4, 1)), precompiled_charsmap=normalizer[2]))
    assert info.kind == "gguf_t5" and not info.regex_pre_tokenized
    for text in TEXTS + ["the  lazy   fox"]:
        assert info.encode(text) == processor.encode(text), text


def test_rwkv_greedy_longest_match(tmp_path):
    tokens = ["<s>", "a", "ab", "abc", "b", "c", "\\n", "\\x41\\\\", "\\t", "\\xe6\\x97", "\\xa5"]
    types = [3] + [1] * (len(tokens) - 1)
    info = TokenizerInfo.from_gguf(write_gguf(tmp_path / "r.gguf", "rwkv", tokens, types))
    assert info.all_token_bytes() == [b"", b"a", b"ab", b"abc", b"b", b"c", b"\n", b"A\\", b"\t",
                                      b"\xe6\x97", b"\xa5"]
    assert info.encode("abcab\n\tA\\b") == [3, 2, 6, 8, 7, 4]
    assert info.encode("日") == [9, 10]
    assert rwkv_token_bytes("\\'q") == b"'q"


def test_bert_is_refused_with_its_reason(tmp_path):
    path = write_gguf(tmp_path / "b.gguf", "bert", ["[PAD]", "hello", "##lo"], [3, 1, 1])
    with pytest.raises(TokenizerError, match="unsupported GGUF tokenizer model 'bert'.*WordPiece"):
        TokenizerInfo.from_gguf(path)


def test_other_models_are_unsupported(tmp_path):
    path = write_gguf(tmp_path / "p.gguf", "plamo2", ["a"], [1])
    with pytest.raises(TokenizerError, match="'plamo2'.*supported: gemma4, gpt2, llama, rwkv, t5"):
        TokenizerInfo.from_gguf(path)
