"""TokenizerInfo: the exact byte string of every token id, from any common tokenizer format.

Design note. Every mask jaxguide computes is over bytes: a token is allowed iff the bytes so far
plus the token's bytes stay a prefix of the grammar's language. This module lowers each
tokenizer family to one `bytes` per token id, once, and hands the list to the native core, which
builds the token trie (see native/tokenizer/token_trie.h) that every grammar and thread shares.

Lowering rules (tested against each original tokenizer: concatenating the bytes of the ids it
produces gives back the text's UTF-8, modulo the dummy prefix below):
  * SentencePiece: `▁` (U+2581) -> b" "; byte-fallback pieces `<0xNN>` -> that one byte;
    control, unknown and unused pieces -> no bytes (special).
  * Byte-level BPE (GPT-2, Llama-3, tiktoken, Tekken, DeepSeek): token strings use the GPT-2
    byte-to-unicode map; each character maps back to one byte. tiktoken/Tekken ranks are bytes.
  * Added / user-defined tokens that are not special: their literal text's UTF-8.
  * Special tokens (BOS, EOS, control, unused, holes in the id space) have no bytes; their names
    are kept in `special_token_names` (grammars may refer to them later).

The dummy prefix. SentencePiece models (and HF `Metaspace` tokenizers) usually prepend a space
to the text before encoding ("add_dummy_prefix"), so `encode("Hello")` yields the bytes
b" Hello". `dummy_prefix` holds what the tokenizer prepends (b" " or b""), detected by encoding
a probe text; the round-trip property is `bytes(encode(text)) == dummy_prefix + text.encode()`.

SentencePiece cannot represent U+2581 ("▁") in input text: it is its escaped space, so the
original tokenizer maps a literal "▁" to the bytes of a space, and so does TokenizerInfo.

EOS. `eos_token_ids` is a set: chat models end on several tokens (e.g. `<|im_end|>` and
`<|endoftext|>`). Each constructor takes it from the tokenizer's own metadata when it has any
(SentencePiece eos_id, GGUF eos/eot/eom ids, tokenizer_config.json next to a tokenizer.json)
and otherwise recognizes the usual end-of-text names (`_KNOWN_EOS_NAMES`); pass
`eos_token_ids=` to override. EOS tokens must be special (no bytes).

`logits_width` is the model's (padded) logits row, >= vocab_size; ids at or beyond vocab_size
are never allowed. The packed bitmask row has `bitmask_width = ceil(logits_width / 32)` words.
"""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from jaxguide.engine._core import _native
from jaxguide.engine.gguf_metadata import read_gguf_metadata
from jaxguide.errors import TokenizerError

EncodeFn = Callable[[str], list[int]]

# Names that end generation in widely used vocabularies; used only when a tokenizer's metadata
# does not say which ids are EOS.
_KNOWN_EOS_NAMES = frozenset({
    "</s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>",
    "<eos>", "<end_of_turn>", "<|end|>", "<｜end▁of▁sentence｜>", "<|return|>",
})
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_SPACE_MARK = "\u2581"  # SentencePiece's visible space
_PROBE_LETTERS = "xaeiou0123456789"

# Llama-3 / tiktoken-style pre-tokenizer pattern, used where a GGUF names it.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def gpt2_unicode_to_byte() -> dict[str, int]:
    """The inverse of GPT-2's byte-to-unicode map used by byte-level BPE vocabularies."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    mapping: dict[str, int] = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            mapping[chr(256 + extra)] = b
            extra += 1
    return mapping


_GPT2_DECODE = gpt2_unicode_to_byte()


def _byte_level_bytes(token: str, token_id: int) -> bytes:
    try:
        return bytes(_GPT2_DECODE[c] for c in token)
    except KeyError as e:
        raise TokenizerError(
            f"token {token_id} ({token!r}) has a character outside the byte-level BPE alphabet: "
            f"{e.args[0]!r}") from None


def _sentencepiece_piece_bytes(piece: str, byte_fallback: bool = True) -> bytes:
    if byte_fallback:
        match = _BYTE_PIECE.fullmatch(piece)
        if match:
            return bytes([int(match.group(1), 16)])
    return piece.replace(_SPACE_MARK, " ").encode("utf-8", "surrogateescape")


def _check_file(path: str | os.PathLike[str], what: str) -> str:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise TokenizerError(f"{what} not found: {path!r}")
    if not os.path.isfile(path):
        raise TokenizerError(f"{what} is not a file: {path!r}")
    return path


class TokenizerInfo:
    """The byte string of every token id of a model, its EOS ids and logits width.

    Build one with a `from_*` constructor; it is immutable and shared by every grammar compiled
    against it. The native half (`native`) holds the bytes and the token trie.

    Attributes:
      vocab_size: number of token ids (0 .. vocab_size - 1).
      logits_width: the model's logits row width (>= vocab_size).
      bitmask_width: uint32 words per mask row, ceil(logits_width / 32).
      eos_token_ids: ids that end a sequence.
      special_token_ids: ids with no bytes.
      special_token_names: name of each special token that has one (e.g. 2 -> "</s>").
      dummy_prefix: bytes the tokenizer prepends to a text before encoding (b" " or b"").
      kind: which constructor family built it ("sentencepiece", "hf_json", "tiktoken", ...).
    """

    def __init__(self, token_bytes: Sequence[bytes], *, eos_token_ids: Iterable[int],
                 special_token_names: dict[int, str] | None = None,
                 logits_width: int | None = None, encode: EncodeFn | None = None,
                 kind: str = "bytes"):
        """Low-level constructor; prefer the `from_*` constructors.

        Args:
          token_bytes: [vocab_size] bytes per id; b"" for special tokens.
          eos_token_ids: ids that end a sequence; each must have b"" bytes.
          special_token_names: optional names of special tokens, by id.
          logits_width: model logits width; defaults to vocab_size.
          encode: the original tokenizer's text -> ids function (no BOS/EOS added).
          kind: a short label of the tokenizer family.

        Raises:
          TokenizerError: inconsistent input (see the native checks).
        """
        vocab_size = len(token_bytes)
        width = vocab_size if logits_width is None else int(logits_width)
        if width < vocab_size:
            raise TokenizerError(
                f"logits_width {width} is below the vocabulary size {vocab_size}")
        eos = sorted({int(i) for i in eos_token_ids})
        for i in eos:
            if not 0 <= i < vocab_size:
                raise TokenizerError(
                    f"EOS token id {i} is outside the vocabulary of {vocab_size}")
        self.native = _native.TokenizerInfo(list(token_bytes), width, eos)
        # Byte length of every id (int32 [vocab_size]), for vectorized filters over token ids.
        self.token_byte_lengths = np.fromiter(map(len, token_bytes), np.int32, count=vocab_size)
        self.token_byte_lengths.flags.writeable = False
        self.kind = kind
        self.special_token_names: dict[int, str] = dict(special_token_names or {})
        self._encode = encode
        self.dummy_prefix = self._detect_dummy_prefix() if encode is not None else b""

    # ----------------------------------------------------------------- constructors

    @classmethod
    def from_token_bytes(cls, token_bytes: Sequence[bytes], *,
                         eos_token_ids: Iterable[int] = (),
                         special_token_ids: Iterable[int] = (),
                         logits_width: int | None = None,
                         encode: EncodeFn | None = None) -> TokenizerInfo:
        """A vocabulary given directly as bytes per id.

        Args:
          token_bytes: [vocab_size] bytes of each token.
          eos_token_ids: ids that end a sequence; they are made special.
          special_token_ids: ids whose entry in `token_bytes` is a name, not output bytes (the
            name is kept in `special_token_names`, the bytes become b"").
          logits_width: model logits width (>= vocab_size); defaults to vocab_size.
          encode: optional text -> ids function of the original tokenizer.
        """
        token_list = list(token_bytes)
        for i, b in enumerate(token_list):
            if not isinstance(b, (bytes, bytearray)):
                raise TokenizerError(f"token_bytes[{i}] is {type(b).__name__}, not bytes")
        eos = [int(i) for i in eos_token_ids]
        names: dict[int, str] = {}
        for i in set(eos) | {int(i) for i in special_token_ids}:
            if not 0 <= i < len(token_list):
                raise TokenizerError(
                    f"special/EOS token id {i} is outside the vocabulary of {len(token_list)}")
            if token_list[i]:
                names[i] = bytes(token_list[i]).decode("utf-8", "replace")
            token_list[i] = b""
        return cls([bytes(b) for b in token_list], eos_token_ids=eos, special_token_names=names,
                   logits_width=logits_width, encode=encode, kind="bytes")

    @classmethod
    def from_sentencepiece(cls, model: str | os.PathLike[str] | bytes, *,
                           logits_width: int | None = None,
                           eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A SentencePiece model (`tokenizer.model`), as a path or the serialized proto bytes.

        `▁` becomes a space, byte-fallback pieces `<0xNN>` one byte; control, unknown and unused
        pieces are special. EOS defaults to the model's eos_id. See the module docstring for the
        dummy prefix.
        """
        import sentencepiece as spm

        processor = spm.SentencePieceProcessor()
        try:
            if isinstance(model, (bytes, bytearray)):
                processor.LoadFromSerializedProto(bytes(model))
            else:
                processor.Load(_check_file(model, "SentencePiece model"))
        except (RuntimeError, OSError, TypeError) as e:
            raise TokenizerError(f"cannot load SentencePiece model: {e}") from e
        token_bytes: list[bytes] = []
        names: dict[int, str] = {}
        for i in range(processor.vocab_size()):
            piece = processor.id_to_piece(i)
            if processor.is_control(i) or processor.is_unknown(i) or processor.is_unused(i):
                token_bytes.append(b"")
                names[i] = piece
            elif processor.is_byte(i):
                match = _BYTE_PIECE.fullmatch(piece)
                if match is None:
                    raise TokenizerError(f"byte piece {i} has an unexpected form: {piece!r}")
                token_bytes.append(bytes([int(match.group(1), 16)]))
            else:
                token_bytes.append(_sentencepiece_piece_bytes(piece, byte_fallback=False))
        if eos_token_ids is None:
            eos_token_ids = [processor.eos_id()] if processor.eos_id() >= 0 else []

        def encode(text: str) -> list[int]:
            return list(processor.encode(text))

        return cls(token_bytes, eos_token_ids=eos_token_ids, special_token_names=names,
                   logits_width=logits_width, encode=encode, kind="sentencepiece")

    @classmethod
    def from_hf_json(cls, path: str | os.PathLike[str], *, logits_width: int | None = None,
                     eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A Hugging Face `tokenizer.json` (byte-level BPE or SentencePiece-style).

        Byte-level vocabularies (a ByteLevel decoder or pre-tokenizer) use the GPT-2 byte map;
        SentencePiece-style ones (Metaspace, or a decoder replacing `▁`, with ByteFallback) use
        the SentencePiece rules. Added tokens marked special have no bytes; other added tokens
        stand for their literal text. EOS comes from a `tokenizer_config.json` beside the file
        when there is one, else from the usual end-of-text names.

        Raises:
          TokenizerError: missing/corrupt file, or an unsupported model (e.g. WordPiece).
        """
        path = _check_file(path, "tokenizer.json")
        try:
            with open(path, encoding="utf-8") as f:
                spec = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise TokenizerError(f"{path!r} is not valid JSON: {e}") from e
        if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
            raise TokenizerError(f"{path!r} is not a tokenizer.json (no 'model' object)")
        model = spec["model"]
        model_type = model.get("type")
        style = _hf_style(spec)
        vocab: dict[str, int]
        if model_type in ("BPE", "WordLevel") and isinstance(model.get("vocab"), dict):
            vocab = model["vocab"]
        elif model_type == "Unigram" and isinstance(model.get("vocab"), list):
            vocab = {entry[0]: i for i, entry in enumerate(model["vocab"])}
        else:
            raise TokenizerError(
                f"unsupported tokenizer.json model type {model_type!r} in {path!r} "
                "(supported: byte-level or SentencePiece-style BPE/Unigram)")
        added = spec.get("added_tokens") or []
        ids = list(vocab.values()) + [int(t["id"]) for t in added]
        if not ids:
            raise TokenizerError(f"{path!r} has an empty vocabulary")
        if min(ids) < 0:
            raise TokenizerError(f"{path!r} has a negative token id")
        vocab_size = max(ids) + 1
        token_bytes: list[bytes] = [b""] * vocab_size
        byte_fallback = bool(model.get("byte_fallback", style == "sentencepiece"))
        added_ids = {int(t["id"]) for t in added}
        for token, i in vocab.items():
            if i in added_ids:  # an added token's entry wins over the model's (e.g. specials)
                continue
            if style == "byte_level":
                token_bytes[i] = _byte_level_bytes(token, i)
            else:
                token_bytes[i] = _sentencepiece_piece_bytes(token, byte_fallback)
        names: dict[int, str] = {}
        for t in added:
            i = int(t["id"])
            if t.get("special", False):
                token_bytes[i] = b""
                names[i] = t["content"]
            else:
                token_bytes[i] = t["content"].encode("utf-8")
        if eos_token_ids is None:
            eos_token_ids = _hf_config_eos(path, spec) or _guess_eos(names)

        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(path)
        except Exception as e:  # the Rust library raises a bare Exception
            raise TokenizerError(f"the tokenizers library cannot load {path!r}: {e}") from e
        tokenizer.encode_special_tokens = True  # special-token names in text are plain text

        def encode(text: str) -> list[int]:
            return tokenizer.encode(text, add_special_tokens=False).ids

        return cls(token_bytes, eos_token_ids=eos_token_ids, special_token_names=names,
                   logits_width=logits_width, encode=encode, kind="hf_json")

    @classmethod
    def from_tiktoken(cls, encoding: Any, *, logits_width: int | None = None,
                      eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A `tiktoken.Encoding` (ranks are byte strings; special tokens have no bytes).

        Ids not used by the encoding are special holes. EOS defaults to the special tokens with
        the usual end-of-text names. `encode` is `encoding.encode_ordinary` (special-token names
        in text are plain text).
        """
        try:
            ranks: dict[bytes, int] = encoding._mergeable_ranks
            specials: dict[str, int] = encoding._special_tokens
            n_vocab = int(encoding.n_vocab)
        except AttributeError as e:
            raise TokenizerError(f"not a tiktoken.Encoding: {type(encoding).__name__}") from e
        token_bytes: list[bytes] = [b""] * n_vocab
        for token, rank in ranks.items():
            token_bytes[rank] = token
        names = {i: name for name, i in specials.items()}
        if eos_token_ids is None:
            eos_token_ids = _guess_eos(names)
        return cls(token_bytes, eos_token_ids=eos_token_ids, special_token_names=names,
                   logits_width=logits_width, encode=encoding.encode_ordinary, kind="tiktoken")

    @classmethod
    def from_tekken(cls, path: str | os.PathLike[str], *, logits_width: int | None = None,
                    eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A Mistral Tekken `tekken.json` (byte-level BPE as tiktoken-style base64 ranks).

        The first `default_num_special_tokens` ids are special; rank r is id r + that number;
        only the first `default_vocab_size` ids are used. EOS defaults to id 2 (`</s>`).
        """
        import tiktoken

        path = _check_file(path, "tekken.json")
        try:
            with open(path, encoding="utf-8") as f:
                spec = json.load(f)
            config = spec["config"]
            num_special = int(config["default_num_special_tokens"])
            vocab_size = int(config["default_vocab_size"])
            pattern = config["pattern"]
            entries = spec["vocab"][:vocab_size - num_special]
            ranks = {base64.b64decode(e["token_bytes"]): int(e["rank"]) for e in entries}
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as e:
            raise TokenizerError(f"{path!r} is not a valid tekken.json: {e!r}") from e
        token_bytes = [b""] * num_special + [b""] * len(ranks)
        for token, rank in ranks.items():
            token_bytes[num_special + rank] = token
        listed = spec.get("special_tokens") or []
        names = {int(t["rank"]): t["token_str"] for t in listed if "rank" in t}
        for i, name in enumerate(("<unk>", "<s>", "</s>")):
            names.setdefault(i, name)
        core = tiktoken.Encoding(name=os.path.basename(path), pat_str=pattern,
                                 mergeable_ranks=ranks, special_tokens={})

        def encode(text: str) -> list[int]:
            return [num_special + r for r in core.encode_ordinary(text)]

        return cls(token_bytes, eos_token_ids=[2] if eos_token_ids is None else eos_token_ids,
                   special_token_names=names, logits_width=logits_width, encode=encode,
                   kind="tekken")

    @classmethod
    def from_gguf(cls, path: str | os.PathLike[str], *, logits_width: int | None = None,
                  eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """The vocabulary stored in a GGUF model file (`tokenizer.ggml.*`).

        Token types follow llama.cpp: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
        6 byte. `tokenizer.ggml.model` "gpt2" is byte-level BPE (encode() rebuilds the BPE from
        the stored merges and the pre-tokenizer named by `tokenizer.ggml.pre`); "llama" is
        SentencePiece BPE (encode() rebuilds a SentencePiece model from the pieces, scores and
        types, with `tokenizer.ggml.add_space_prefix` as its dummy prefix). EOS defaults to the
        eos, eot and eom ids stored in the file.

        Raises:
          TokenizerError: not a GGUF file, corrupt, no vocabulary, or an unsupported model.
        """
        path = _check_file(path, "GGUF file")
        meta = read_gguf_metadata(path)
        tokens = meta.get("tokenizer.ggml.tokens")
        if not tokens:
            raise TokenizerError(f"GGUF file {path!r} holds no vocabulary (tokenizer.ggml.tokens)")
        model = meta.get("tokenizer.ggml.model")
        if model not in ("gpt2", "llama"):
            raise TokenizerError(
                f"unsupported GGUF tokenizer model {model!r} in {path!r} (supported: gpt2, llama)")
        types = meta.get("tokenizer.ggml.token_type")
        if types is None:
            types = np.ones(len(tokens), dtype=np.int32)
        if len(types) != len(tokens):
            raise TokenizerError(f"GGUF file {path!r}: {len(tokens)} tokens but "
                                 f"{len(types)} token types")
        token_bytes: list[bytes] = []
        names: dict[int, str] = {}
        for i, (token, token_type) in enumerate(zip(tokens, types.tolist())):
            if token_type in (2, 3, 5):  # unknown, control, unused
                token_bytes.append(b"")
                names[i] = token
            elif token_type == 4:  # user-defined: literal text
                token_bytes.append(token.encode("utf-8", "surrogateescape"))
            elif token_type == 6:
                token_bytes.append(_sentencepiece_piece_bytes(token))
            elif model == "gpt2":
                token_bytes.append(_byte_level_bytes(token, i))
            else:
                token_bytes.append(_sentencepiece_piece_bytes(token, byte_fallback=False))
        if eos_token_ids is None:
            keys = ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                    "tokenizer.ggml.eom_token_id")
            eos_token_ids = [int(meta[k]) for k in keys if k in meta and int(meta[k]) >= 0]
            if not eos_token_ids:
                eos_token_ids = _guess_eos(names)
        if model == "gpt2":
            encode = _gguf_bpe_encoder(meta, path)
        else:
            encode = _gguf_sentencepiece_encoder(meta, types, path)
        return cls(token_bytes, eos_token_ids=eos_token_ids, special_token_names=names,
                   logits_width=logits_width, encode=encode, kind=f"gguf_{model}")

    # ----------------------------------------------------------------- accessors

    @property
    def vocab_size(self) -> int:
        return self.native.vocab_size

    @property
    def logits_width(self) -> int:
        return self.native.logits_width

    @property
    def bitmask_width(self) -> int:
        return self.native.bitmask_width

    @property
    def eos_token_ids(self) -> frozenset[int]:
        # Immutable after construction; cached (decode loops test every sampled token).
        cached = self.__dict__.get("_eos_token_ids")
        if cached is None:
            cached = self.__dict__["_eos_token_ids"] = frozenset(self.native.eos_token_ids)
        return cached

    @property
    def special_token_ids(self) -> frozenset[int]:
        return frozenset(self.native.special_token_ids.tolist())

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (b"" for special tokens). Raises IndexError if out of range."""
        return self.native.token_bytes(token_id)

    def all_token_bytes(self) -> list[bytes]:
        """[vocab_size] bytes of every token."""
        return [self.native.token_bytes(i) for i in range(self.vocab_size)]

    def decode_bytes(self, token_ids: Iterable[int]) -> bytes:
        """The concatenated bytes of `token_ids` (special tokens contribute nothing)."""
        return b"".join(self.native.token_bytes(int(i)) for i in token_ids)

    @property
    def can_encode(self) -> bool:
        return self._encode is not None

    def encode(self, text: str) -> list[int]:
        """Encodes `text` with the original tokenizer (no BOS/EOS; special names are text).

        Raises:
          TokenizerError: this TokenizerInfo was built without an encoder.
        """
        if self._encode is None:
            raise TokenizerError(
                f"this TokenizerInfo ({self.kind}) has no encoder: build it from the original "
                "tokenizer, or pass encode= to from_token_bytes")
        return [int(i) for i in self._encode(text)]

    def tokens_with_prefix(self, prefix: bytes) -> np.ndarray:
        """Sorted uint32 ids of all tokens whose bytes start with `prefix` (trie lookup)."""
        return self.native.tokens_with_prefix(bytes(prefix))

    def tokens_prefixing(self, text: bytes) -> np.ndarray:
        """Sorted uint32 ids of all tokens whose bytes are a non-empty prefix of `text`."""
        return self.native.tokens_prefixing(bytes(text))

    def __repr__(self) -> str:
        return (f"TokenizerInfo(kind={self.kind!r}, vocab_size={self.vocab_size}, "
                f"logits_width={self.logits_width}, eos_token_ids={sorted(self.eos_token_ids)})")

    def _detect_dummy_prefix(self) -> bytes:
        """Encodes a one-letter probe that is a token by itself and returns what precedes it."""
        # tokens_prefixing(c) lists exactly the tokens whose bytes are the one byte c.
        letters = [c for c in _PROBE_LETTERS if len(self.tokens_prefixing(c.encode())) > 0]
        if not letters:
            return b""  # nothing to probe with; such a vocabulary cannot spell a letter anyway
        probe = letters[0]
        produced = self.decode_bytes(self.encode(probe))
        if not produced.endswith(probe.encode()):
            raise TokenizerError(f"the tokenizer does not round-trip the probe text {probe!r}: "
                                 f"got {produced!r}; its token bytes cannot be trusted")
        return produced[:-len(probe)]


# --------------------------------------------------------------------- helpers


def _guess_eos(names: dict[int, str]) -> list[int]:
    return sorted(i for i, name in names.items() if name in _KNOWN_EOS_NAMES)


def _hf_style(spec: dict[str, Any]) -> str:
    """'byte_level' or 'sentencepiece' for a tokenizer.json, else TokenizerError."""

    def component_types(component: Any) -> list[str]:
        if not isinstance(component, dict):
            return []
        found = [component.get("type", "")]
        for key in ("decoders", "pretokenizers", "normalizers"):
            for child in component.get(key) or []:
                found += component_types(child)
        if component.get("type") == "Replace":
            pattern = component.get("pattern", {})
            if isinstance(pattern, dict) and pattern.get("String") == _SPACE_MARK:
                found.append("ReplaceSpaceMark")
        return found

    types = set(component_types(spec.get("decoder")) + component_types(spec.get("pre_tokenizer")))
    if "ByteLevel" in types:
        return "byte_level"
    if types & {"Metaspace", "ReplaceSpaceMark", "ByteFallback"}:
        return "sentencepiece"
    if "WordPiece" in types or spec["model"].get("type") == "WordPiece":
        raise TokenizerError("WordPiece tokenizers are not supported (a token's bytes depend on "
                             "its neighbours through '##' continuations)")
    raise TokenizerError("cannot tell how this tokenizer.json maps tokens to bytes: it has neither "
                         "a ByteLevel nor a Metaspace/ByteFallback decoder or pre-tokenizer")


def _hf_config_eos(path: str, spec: dict[str, Any]) -> list[int]:
    config_path = os.path.join(os.path.dirname(path), "tokenizer_config.json")
    if not os.path.isfile(config_path):
        return []
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return []
    eos = config.get("eos_token")
    if isinstance(eos, dict):
        eos = eos.get("content")
    if not isinstance(eos, str):
        return []
    by_name = {t["content"]: int(t["id"]) for t in spec.get("added_tokens") or []}
    return [by_name[eos]] if eos in by_name else []


def _gguf_bpe_encoder(meta: dict[str, Any], path: str) -> EncodeFn | None:
    """Rebuilds a GPT-2-style BPE encoder from a GGUF's tokens and merges (no BOS/EOS)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    merges = meta.get("tokenizer.ggml.merges")
    if not merges:
        return None
    tokens = meta["tokenizer.ggml.tokens"]
    vocab = {token: i for i, token in enumerate(tokens)}
    try:
        pairs = [tuple(m.split(" ", 1)) for m in merges]
        bpe = models.BPE(vocab=vocab, merges=pairs)
    except Exception as e:  # the Rust library raises a bare Exception
        raise TokenizerError(f"GGUF file {path!r}: invalid BPE merges: {e}") from e
    tokenizer = Tokenizer(bpe)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    pre = meta.get("tokenizer.ggml.pre", "default")
    if pre == "smollm":
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level])
    elif pre in ("llama-bpe", "llama3", "llama-v3"):
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        if pre not in ("default", "gpt-2", "gpt2"):
            warnings.warn(f"GGUF pre-tokenizer {pre!r} is not known to jaxguide; encode() uses "
                          "GPT-2's pre-tokenizer, which may split text differently", stacklevel=3)
        tokenizer.pre_tokenizer = byte_level

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False).ids

    return encode


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


def _gguf_sentencepiece_encoder(meta: dict[str, Any], types: np.ndarray,
                                path: str) -> EncodeFn:
    """Rebuilds a SentencePiece BPE model (a serialized ModelProto) from a llama-style GGUF.

    ModelProto fields used: pieces (1: piece 1, score 2, type 3), trainer_spec (2: model_type 3
    = BPE, byte_fallback 35, unk/bos/eos/pad ids 40-43), normalizer_spec (3: name 1 "identity",
    add_dummy_prefix 3, remove_extra_whitespaces 4 = false, escape_whitespaces 5 = true).
    """
    import sentencepiece as spm

    tokens = meta["tokenizer.ggml.tokens"]
    scores = meta.get("tokenizer.ggml.scores")
    if scores is None or len(scores) != len(tokens):
        scores = -np.arange(len(tokens), dtype=np.float32)  # earlier pieces win, as in llama.cpp
    type_list = types.tolist()
    pieces = b"".join(
        _protobuf_field(1, _protobuf_field(1, token.encode("utf-8", "surrogateescape"))
                        + _protobuf_field(2, float(score)) + _protobuf_field(3, int(kind)))
        for token, score, kind in zip(tokens, scores.tolist(), type_list))

    def special_id(key: str, default: int) -> int:
        value = meta.get(f"tokenizer.ggml.{key}_token_id")
        return int(value) if value is not None else default

    unk = type_list.index(2) if 2 in type_list else 0
    trainer = (_protobuf_field(3, 2) + _protobuf_field(35, 6 in type_list)
               + _protobuf_field(40, special_id("unknown", unk))
               + _protobuf_field(41, special_id("bos", -1))
               + _protobuf_field(42, special_id("eos", -1))
               + _protobuf_field(43, special_id("padding", -1)))
    normalizer = (_protobuf_field(1, b"identity")
                  + _protobuf_field(3, bool(meta.get("tokenizer.ggml.add_space_prefix", True)))
                  + _protobuf_field(4, False) + _protobuf_field(5, True))
    proto = pieces + _protobuf_field(2, trainer) + _protobuf_field(3, normalizer)
    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(proto)
    except RuntimeError as e:
        raise TokenizerError(f"GGUF file {path!r}: its SentencePiece vocabulary does not load: "
                             f"{e}") from e

    def encode(text: str) -> list[int]:
        return list(processor.encode(text))

    return encode


def encode_prompt(tokenizer: TokenizerInfo, text: str) -> list[int]:
    """Token ids of a prompt whose special tokens are written as their names.

    Text between special-token names (e.g. "<|im_start|>", "<|im_end|>") is encoded with the
    tokenizer's own encoder; each name becomes its id. A plain-text prompt has no names and is
    encoded as a whole. No BOS is added.

    Args:
      tokenizer: a TokenizerInfo with an encoder and special-token names.
      text: the prompt, e.g. from `render_chat`.

    Returns:
      The ids, a list of int.
    """
    name_to_id: dict[str, int] = {}
    for token_id, name in sorted(tokenizer.special_token_names.items()):
        if name:
            name_to_id.setdefault(name, token_id)
    if not name_to_id:
        return tokenizer.encode(text) if text else []
    # Longest names first so that a name containing another one wins.
    pattern = re.compile("(" + "|".join(
        re.escape(name) for name in sorted(name_to_id, key=len, reverse=True)) + ")")
    ids: list[int] = []
    for index, piece in enumerate(pattern.split(text)):
        if index % 2:  # a captured special-token name
            ids.append(name_to_id[piece])
        elif piece:
            ids.extend(tokenizer.encode(piece))
    return ids
