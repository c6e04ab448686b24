"""TokenizerInfo: the exact byte string of every token id, from any common tokenizer format.

Design note. Every mask jaxguide computes is over bytes: a token is allowed iff the bytes so far
plus the token's bytes stay a prefix of the grammar's language. This module lowers each
tokenizer family to one `bytes` per token id, once, and hands the list to the native core, which
builds the token trie (see native/tokenizer/token_trie.h) that every grammar and thread shares.

Each tokenizer family is lowered by a loader of engine/tokenizer_loaders.py or, for GGUF,
engine/gguf_tokenizers.py (their design notes give the lowering rules); the `from_*`
constructors below are thin calls to those loaders.
Special tokens (BOS, EOS, control, unused, holes in the id space) have no bytes; their names
are kept in `special_token_names`.

The dummy prefix. SentencePiece models (and HF `Metaspace` tokenizers) usually prepend a space
to the text before encoding ("add_dummy_prefix"), so `encode("Hello")` yields the bytes
b" Hello". `dummy_prefix` holds what the tokenizer prepends (b" " or b""), detected by encoding
a probe text; the round-trip property is `bytes(encode(text)) == dummy_prefix + text.encode()`.

SentencePiece cannot represent U+2581 ("▁") in input text: it is its escaped space, so the
original tokenizer maps a literal "▁" to the bytes of a space, and so does TokenizerInfo.

EOS. `eos_token_ids` is a set: chat models end on several tokens (e.g. `<|im_end|>` and
`<|endoftext|>`). Each constructor takes it from the tokenizer's own metadata when it has any
(SentencePiece eos_id, GGUF eos/eot/eom ids, tokenizer_config.json next to a tokenizer.json)
and otherwise recognizes the usual end-of-text names; pass `eos_token_ids=` to override. EOS
tokens must be special (no bytes).

`logits_width` is the model's (padded) logits row, >= vocab_size; ids at or beyond vocab_size
are never allowed. The packed bitmask row has `bitmask_width = ceil(logits_width / 32)` words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from jaxguide.engine._core import _native
from jaxguide.engine.gguf_tokenizers import load_gguf
from jaxguide.engine.pre_tokenizers import (
    LLAMA3_PATTERN as LLAMA3_PATTERN,  # re-exported (models/assets.py, jaxguide.tokenizer)
)
from jaxguide.engine.tokenizer_loaders import (
    EncodeFn,
    LoadedVocabulary,
    load_hf_json,
    load_sentencepiece,
    load_tekken,
    load_tiktoken,
    load_token_bytes,
)
from jaxguide.engine.tokenizer_loaders import (
    gpt2_unicode_to_byte as gpt2_unicode_to_byte,  # re-exported (public since the flat layout)
)
from jaxguide.errors import TokenizerError

_PROBE_LETTERS = "xaeiou0123456789"
_C_SPACE = " \t\n\v\f\r"  # C isspace, which llama.cpp's strip flags use


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
      lstrip_token_ids, rstrip_token_ids: special tokens that take the whitespace on their left
        (right) in a prompt with special-token names (`encode_prompt`): llama.cpp's strip flags
        of GGUF vocabularies (Phi-3), a tokenizer.json's lstrip / rstrip; empty otherwise.
    """

    def __init__(self, token_bytes: Sequence[bytes], *, eos_token_ids: Iterable[int],
                 special_token_names: dict[int, str] | None = None,
                 logits_width: int | None = None, encode: EncodeFn | None = None,
                 kind: str = "bytes", regex_pre_tokenized: bool = False,
                 lstrip_token_ids: Iterable[int] = (), rstrip_token_ids: Iterable[int] = ()):
        """Low-level constructor; prefer the `from_*` constructors.

        Args:
          token_bytes: [vocab_size] bytes per id; b"" for special tokens.
          eos_token_ids: ids that end a sequence; each must have b"" bytes.
          special_token_names: optional names of special tokens, by id.
          logits_width: model logits width; defaults to vocab_size.
          encode: the original tokenizer's text -> ids function (no BOS/EOS added).
          kind: a short label of the tokenizer family.
          regex_pre_tokenized: `encode` splits text with a pre-tokenizer regex before BPE
            (byte-level BPE: tiktoken, tekken, ByteLevel tokenizer.json, GGUF gpt2); fast-forward
            then holds back the last pre-token of forced text where it may still change.
          lstrip_token_ids, rstrip_token_ids: see the class attributes.

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
        self.regex_pre_tokenized = bool(regex_pre_tokenized)
        self.special_token_names: dict[int, str] = dict(special_token_names or {})
        self.lstrip_token_ids = frozenset(int(i) for i in lstrip_token_ids)
        self.rstrip_token_ids = frozenset(int(i) for i in rstrip_token_ids)
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
        loaded = load_token_bytes(token_bytes, eos_token_ids, special_token_ids, encode)
        return cls._from_loaded(loaded, logits_width)

    @classmethod
    def from_sentencepiece(cls, model: str | os.PathLike[str] | bytes, *,
                           logits_width: int | None = None,
                           eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A SentencePiece model (`tokenizer.model`), as a path or the serialized proto bytes.

        `▁` becomes a space, byte-fallback pieces `<0xNN>` one byte; control, unknown and unused
        pieces are special. EOS defaults to the model's eos_id. See the module docstring for the
        dummy prefix.
        """
        return cls._from_loaded(load_sentencepiece(model, eos_token_ids), logits_width)

    @classmethod
    def from_hf_json(cls, path: str | os.PathLike[str], *, logits_width: int | None = None,
                     eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A Hugging Face `tokenizer.json` (byte-level BPE or SentencePiece-style).

        Byte-level vocabularies (a ByteLevel decoder or pre-tokenizer) use the GPT-2 byte map;
        SentencePiece-style ones (Metaspace, or a decoder replacing `▁`, with ByteFallback) use
        the SentencePiece rules. Added tokens marked special have no bytes; other added tokens
        stand for their text as the decoder writes it (Gemma's `▁▁` is two spaces). EOS comes
        from a `tokenizer_config.json` beside the file when there is one, else from the usual
        end-of-text names.

        Raises:
          TokenizerError: missing/corrupt file, or an unsupported model (e.g. WordPiece).
        """
        return cls._from_loaded(load_hf_json(path, eos_token_ids), logits_width)

    @classmethod
    def from_tiktoken(cls, encoding: Any, *, logits_width: int | None = None,
                      eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A `tiktoken.Encoding` (ranks are byte strings; special tokens have no bytes).

        Ids not used by the encoding are special holes. EOS defaults to the special tokens with
        the usual end-of-text names. `encode` is `encoding.encode_ordinary` (special-token names
        in text are plain text).
        """
        return cls._from_loaded(load_tiktoken(encoding, eos_token_ids), logits_width)

    @classmethod
    def from_tekken(cls, path: str | os.PathLike[str], *, logits_width: int | None = None,
                    eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """A Mistral Tekken `tekken.json` (byte-level BPE as tiktoken-style base64 ranks).

        The first `default_num_special_tokens` ids are special; rank r is id r + that number;
        only the first `default_vocab_size` ids are used. EOS defaults to id 2 (`</s>`).
        """
        return cls._from_loaded(load_tekken(path, eos_token_ids), logits_width)

    @classmethod
    def from_gguf(cls, path: str | os.PathLike[str], *, logits_width: int | None = None,
                  eos_token_ids: Iterable[int] | None = None) -> TokenizerInfo:
        """The vocabulary stored in a GGUF model file (`tokenizer.ggml.*`).

        Every tokenizer model llama.cpp ships vocabularies for: "gpt2" (byte-level BPE, split by
        the pre-tokenizer `tokenizer.ggml.pre` names: every name of llama.cpp's catalogue,
        engine/pre_tokenizers.py), "gemma4" (BPE with `▁` spaces and byte fallback), "llama"
        (SentencePiece BPE), "t5" (SentencePiece unigram) and "rwkv" (greedy byte matching).
        Token types follow llama.cpp: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
        6 byte. encode() rebuilds the tokenizer from the file and gives the ids llama.cpp's
        `tokenize(text, add_special=false, parse_special=false)` gives (engine/gguf_encoders.py).
        EOS defaults to the eos, eot and eom ids stored in the file.

        Raises:
          TokenizerError: not a GGUF file, corrupt, no vocabulary, an unknown pre-tokenizer
            name, or an unsupported model ("bert": WordPiece normalizes text, its tokens cannot
            spell it back).
        """
        return cls._from_loaded(load_gguf(path, eos_token_ids), logits_width)

    @classmethod
    def _from_loaded(cls, loaded: LoadedVocabulary, logits_width: int | None) -> TokenizerInfo:
        return cls(loaded.token_bytes, eos_token_ids=loaded.eos_token_ids,
                   special_token_names=loaded.special_token_names, logits_width=logits_width,
                   encode=loaded.encode, kind=loaded.kind,
                   regex_pre_tokenized=loaded.regex_pre_tokenized,
                   lstrip_token_ids=loaded.lstrip_token_ids,
                   rstrip_token_ids=loaded.rstrip_token_ids)

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

    @property
    def token_first_bytes(self) -> np.ndarray:
        """[vocab_size] int16: the first byte of every token, 256 for a token without bytes
        (special tokens). Built on first use."""
        first = getattr(self, "_token_first_bytes", None)
        if first is None:
            first = np.fromiter((b[0] if b else 256 for b in self.all_token_bytes()), np.int16,
                                count=self.vocab_size)
            first.flags.writeable = False
            self._token_first_bytes = first
        return first

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


def encode_prompt(tokenizer: TokenizerInfo, text: str) -> list[int]:
    """Token ids of a prompt whose special tokens are written as their names.

    Text between special-token names (e.g. "<|im_start|>", "<|im_end|>") is encoded with the
    tokenizer's own encoder; each name becomes its id. A plain-text prompt has no names and is
    encoded as a whole. No BOS is added. ASCII whitespace (C `isspace`) beside a name is
    dropped where the tokenizer says so (`lstrip_token_ids` / `rstrip_token_ids`: Phi-3's GGUF
    vocabulary strips it right of its specials, as llama.cpp's tokenizer does; a
    tokenizer.json's lstrip / rstrip, where Hugging Face also strips other Unicode spaces).

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
    pieces = pattern.split(text)
    ids: list[int] = []
    for index, piece in enumerate(pieces):
        if index % 2:  # a captured special-token name
            ids.append(name_to_id[piece])
            continue
        if index > 0 and name_to_id[pieces[index - 1]] in tokenizer.rstrip_token_ids:
            piece = piece.lstrip(_C_SPACE)
        if index + 1 < len(pieces) and name_to_id[pieces[index + 1]] in tokenizer.lstrip_token_ids:
            piece = piece.rstrip(_C_SPACE)
        if piece:
            ids.extend(tokenizer.encode(piece))
    return ids
