"""Encoders rebuilt from GGUF vocabularies: text -> ids as llama.cpp's tokenizers give them.

Design note. A GGUF file holds no tokenizer object, only the vocabulary (`tokenizer.ggml.*`:
token texts, types, scores, merges, flags). Each encoder here rebuilds the model's tokenizer
from it, following llama.cpp's `llama_vocab::impl::tokenize` with `add_special=false,
parse_special=false` (what llama.cpp's tokenizer tests run and what a grammar engine needs:
no BOS/EOS added, special-token names in text are text):

  * User-defined tokens (type 4) found in the text are those tokens, before anything else
    (`UserDefinedSplitter`: llama.cpp's `tokenizer_st_partition`, longest token text first,
    leftmost occurrences); the model encodes what lies between them, piece by piece.
  * "gpt2" / "gemma4" (BPE): the pre-tokenizer's regexes (engine/pre_tokenizers.py) cut the text,
    then a `tokenizers` BPE model with the file's merges encodes each piece. Byte-level
    vocabularies map bytes to GPT-2's alphabet first; Gemma-4 style ones write spaces as `▁`,
    cut only at newline runs (a run of newlines that is a token is that token, as llama.cpp's
    Gemma-4 fix does) and fall back to `<0xNN>` byte tokens.
  * "llama" (SentencePiece BPE) and "t5" (SentencePiece unigram, UGM): a SentencePiece
    ModelProto is serialized here from the pieces, scores and types and loaded by the
    `sentencepiece` library. A text fragment gets the dummy prefix when the file asks for one.
    SentencePiece takes one unknown piece: the file's unknown_token_id (or its first unknown
    token) is that piece, other unknown-typed tokens (Phi-3's `[PAD...]`) become control pieces,
    which SentencePiece never produces from text, as llama.cpp never does.
  * "rwkv": greedy longest match over the bytes of the (escaped) token texts.

Cost: building the BPE model is linear in the merges (about a second for 500,000); encoding is
the `tokenizers` / `sentencepiece` libraries' own, plus one regex search for user-defined
tokens per call.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxguide.engine.pre_tokenizers import PreTokenizer
from jaxguide.errors import TokenizerError

EncodeFn = Callable[[str], list[int]]
SPACE_MARK = "\u2581"  # SentencePiece's (and Gemma-4's) visible space


class UserDefinedSplitter:
    """Cuts text at user-defined tokens: [str | int], raw text pieces and token ids."""

    def __init__(self, tokens: Sequence[str], types: Sequence[int]):
        found = {token: i for i, (token, kind) in enumerate(zip(tokens, types))
                 if kind == 4 and token}
        # llama.cpp sorts by byte length, longest first; ties by id here (its sort is unstable).
        self._tokens = sorted(found.items(),
                              key=lambda item: (-len(item[0].encode("utf-8", "surrogateescape")),
                                                item[1]))
        self._any = (re.compile("|".join(re.escape(t) for t, _ in self._tokens))
                     if self._tokens else None)

    def split(self, text: str) -> list[str | int]:
        if self._any is None or self._any.search(text) is None:
            return [text] if text else []
        fragments: list[str | int] = [text]
        for token, token_id in self._tokens:
            if not any(isinstance(f, str) and token in f for f in fragments):
                continue
            cut: list[str | int] = []
            for fragment in fragments:
                if isinstance(fragment, int) or token not in fragment:
                    cut.append(fragment)
                    continue
                for index, part in enumerate(fragment.split(token)):
                    if index:
                        cut.append(token_id)
                    if part:
                        cut.append(part)
            fragments = cut
        return fragments


def _with_user_defined(splitter: UserDefinedSplitter, encode_raw: EncodeFn) -> EncodeFn:
    def encode(text: str) -> list[int]:
        ids: list[int] = []
        for fragment in splitter.split(text):
            if isinstance(fragment, int):
                ids.append(fragment)
            else:
                ids.extend(encode_raw(fragment))
        return ids

    return encode


# ------------------------------------------------------------- BPE ("gpt2", "gemma4")


def _merge_pairs(merges: Sequence[str], path: str) -> list[tuple[str, str]]:
    """llama.cpp's reading of a merge: split at the first space after the first character."""
    pairs = []
    for index, merge in enumerate(merges):
        cut = merge.find(" ", 1)
        if cut < 0:
            raise TokenizerError(f"GGUF file {path!r}: merge {index} ({merge!r}) is not two "
                                 "tokens separated by a space")
        pairs.append((merge[:cut], merge[cut + 1:]))
    return pairs


def bpe_encoder(tokens: Sequence[str], types: Sequence[int], merges: Sequence[str],
                pre: PreTokenizer, path: str) -> EncodeFn:
    """A BPE encoder from a GGUF's tokens and merges, cutting text with `pre`."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    vocab = {token: i for i, token in enumerate(tokens)}
    try:
        bpe = models.BPE(vocab=vocab, merges=_merge_pairs(merges, path),
                         ignore_merges=pre.ignore_merges,
                         byte_fallback=pre.style != "byte_level")
    except Exception as e:  # the Rust library raises a bare Exception
        raise TokenizerError(f"GGUF file {path!r}: invalid BPE merges: {e}") from e
    tokenizer = Tokenizer(bpe)
    splits = [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in pre.regexes]
    if pre.style == "byte_level":
        splits.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
    splitter = UserDefinedSplitter(tokens, types)
    if pre.style != "escaped_spaces":
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(splits)

        def encode_raw(text: str) -> list[int]:
            return tokenizer.encode(text, add_special_tokens=False).ids

        return _with_user_defined(splitter, encode_raw)
    # Gemma-4 style: spaces are ▁; cut at newline runs (a newline run that is a token is it).
    tokenizer.normalizer = normalizers.Replace(" ", SPACE_MARK)
    newline_runs = re.compile(r"(\n+)")

    def encode_escaped(text: str) -> list[int]:
        ids: list[int] = []
        for index, piece in enumerate(newline_runs.split(text)):
            if index % 2 and piece in vocab:
                ids.append(vocab[piece])
            elif piece:
                ids.extend(tokenizer.encode(piece, add_special_tokens=False).ids)
        return ids

    return _with_user_defined(splitter, encode_escaped)


# ------------------------------------------------------------- SentencePiece ("llama", "t5")


def _protobuf_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _protobuf_field(number: int, value: int | bytes | float) -> bytes:
    """One protobuf field: ints as varints, bytes length-delimited, floats as fixed32."""
    if isinstance(value, (bool, int)):  # negative int32 values are 64-bit two's complement
        return _protobuf_varint(number << 3) + _protobuf_varint(int(value) & (2**64 - 1))
    if isinstance(value, float):
        return _protobuf_varint((number << 3) | 5) + struct.pack("<f", value)
    return _protobuf_varint((number << 3) | 2) + _protobuf_varint(len(value)) + value


def _special_id(meta: dict[str, Any], key: str, default: int) -> int:
    value = meta.get(f"tokenizer.ggml.{key}_token_id")
    return int(value) if value is not None else default


def sentencepiece_encoder(meta: dict[str, Any], types: np.ndarray, path: str, *,
                          unigram: bool) -> EncodeFn:
    """Rebuilds a SentencePiece model (a serialized ModelProto) from a "llama" or "t5" GGUF.

    ModelProto fields used: pieces (1: piece 1, score 2, type 3), trainer_spec (2: model_type 3
    = UNIGRAM 1 / BPE 2, byte_fallback 35, unk/bos/eos/pad ids 40-43), normalizer_spec (3: name
    1, precompiled_charsmap 2, add_dummy_prefix 3, remove_extra_whitespaces 4,
    escape_whitespaces 5).
    """
    import sentencepiece as spm

    tokens = meta["tokenizer.ggml.tokens"]
    scores = meta.get("tokenizer.ggml.scores")
    if scores is None or len(scores) != len(tokens):
        scores = -np.arange(len(tokens), dtype=np.float32)  # earlier pieces win, as in llama.cpp
    type_list = [t if t in (1, 2, 3, 4, 5, 6) else 3 for t in types.tolist()]
    unk = _special_id(meta, "unknown", type_list.index(2) if 2 in type_list else 0)
    if not 0 <= unk < len(tokens):
        raise TokenizerError(f"GGUF file {path!r}: unknown_token_id {unk} is outside the "
                             f"vocabulary of {len(tokens)}")
    # One unknown piece (SentencePiece's rule); other unknown-typed tokens become control.
    type_list = [3 if kind == 2 else kind for kind in type_list]
    type_list[unk] = 2
    pieces = b"".join(
        _protobuf_field(1, _protobuf_field(1, token.encode("utf-8", "surrogateescape"))
                        + _protobuf_field(2, float(score)) + _protobuf_field(3, int(kind)))
        for token, score, kind in zip(tokens, scores.tolist(), type_list))
    trainer = (_protobuf_field(3, 1 if unigram else 2) + _protobuf_field(35, 6 in type_list)
               + _protobuf_field(40, unk)
               + _protobuf_field(41, _special_id(meta, "bos", -1))
               + _protobuf_field(42, _special_id(meta, "eos", -1))
               + _protobuf_field(43, _special_id(meta, "padding", -1)))
    charsmap = meta.get("tokenizer.ggml.precompiled_charsmap")
    normalizer = _protobuf_field(1, b"identity")
    if unigram and charsmap is not None and len(charsmap):
        normalizer = (_protobuf_field(1, b"nmt_nfkc")
                      + _protobuf_field(2, np.asarray(charsmap, dtype=np.uint8).tobytes()))
    remove_spaces = unigram and bool(meta.get("tokenizer.ggml.remove_extra_whitespaces", False))
    normalizer += (_protobuf_field(3, bool(meta.get("tokenizer.ggml.add_space_prefix", True)))
                   + _protobuf_field(4, remove_spaces) + _protobuf_field(5, True))
    proto = pieces + _protobuf_field(2, trainer) + _protobuf_field(3, normalizer)
    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(proto)
    except RuntimeError as e:
        raise TokenizerError(f"GGUF file {path!r}: its SentencePiece vocabulary does not load: "
                             f"{e}") from e

    def encode_raw(text: str) -> list[int]:
        return list(processor.encode(text))

    return _with_user_defined(UserDefinedSplitter(tokens, types.tolist()), encode_raw)


# --------------------------------------------------------------------- RWKV


def rwkv_token_bytes(escaped: str) -> bytes:
    """llama.cpp's `llama_unescape_rwkv_token`: `\\t \\n \\r \\xNN` escapes, `\\c` is c."""
    out = bytearray()
    i = 0
    raw = escaped.encode("utf-8", "surrogateescape")
    while i < len(raw):
        c = raw[i]
        if c != 0x5C or i + 1 >= len(raw):  # not a backslash (a final lone one is kept)
            out.append(c)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == ord("x") and re.fullmatch(rb"[0-9a-fA-F]{2}", raw[i + 2:i + 4]):
            out.append(int(raw[i + 2:i + 4], 16))
            i += 4
            continue
        out.append({ord("t"): 9, ord("n"): 10, ord("r"): 13}.get(nxt, nxt))
        i += 2
    return bytes(out)


def rwkv_encoder(tokens: Sequence[str], token_bytes: Sequence[bytes], types: Sequence[int],
                 unk: int) -> EncodeFn:
    """Greedy longest match over bytes (llama.cpp's `llm_tokenizer_rwkv_session`; of tokens with
    the same bytes the last wins, as in its trie); a byte no token starts with becomes `unk`."""
    by_bytes: dict[bytes, int] = {}
    for i, (data, kind) in enumerate(zip(token_bytes, types)):
        if data and kind in (1, 4, 6):
            by_bytes[data] = i
    longest = max((len(b) for b in by_bytes), default=1)

    def encode(text: str) -> list[int]:
        data = text.encode("utf-8")
        ids: list[int] = []
        position = 0
        while position < len(data):
            for length in range(min(longest, len(data) - position), 0, -1):
                token = by_bytes.get(data[position:position + length])
                if token is not None:
                    ids.append(token)
                    position += length
                    break
            else:
                ids.append(unk)
                position += 1
        return ids

    return _with_user_defined(UserDefinedSplitter(tokens, types), encode)
