"""GGUF vocabularies: `tokenizer.ggml.*` lowered to the bytes of every token id, with an encoder.

Design note. `load_gguf` reads the metadata of a GGUF file (engine/gguf_metadata.py) and returns
a `LoadedVocabulary` (engine/tokenizer_loaders.py) for each tokenizer model that GGUF defines
and llama.cpp ships vocabularies for. Bytes per token follow llama.cpp's `token_to_piece`
(and, where the two differ, the original Hugging Face decoder), by token type: 1 normal, 2
unknown, 3 control, 4 user-defined, 5 unused, 6 byte.

  * Unknown, control and unused tokens, and types llama.cpp does not know, are special (no
    bytes). Types are first corrected by text as llama.cpp corrects them: a token named as an
    end of generation (`<|endoftext|>`, `<end_of_turn>`, ... its list) is made control ("its
    type will be overridden"), and so on (engine/gguf_special_tokens.py).
  * User-defined tokens stand for their literal text (UTF-8); byte tokens `<0xNN>` for that byte.
  * Normal tokens by model: "gpt2" byte-level BPE maps each character back through GPT-2's
    byte-to-unicode table; a token with a character outside that alphabet (Command-R's
    `\\u200d`) is the UTF-8 of its text, as Hugging Face's ByteLevel decoder does (llama.cpp
    writes a `[UNK_BYTE_...]` marker instead). "llama", "t5" and Gemma-4 style BPE ("gemma4")
    write a space as `▁`. "rwkv" texts are escaped byte strings. A "gpt2" vocabulary whose
    pre-tokenizer is Gemma-4 style or "whitespace" is not byte-level either (llama.cpp's
    `byte_encode = false`).

Refused, with the reason: "bert" (WordPiece): it lowercases, strips accents and splits
punctuation before encoding, and `##` continuations drop the space a word-start token adds,
so no bytes per token spell the text back; it is an encoder-only family anyway. Other models
(plamo2, hybriddna, ...) are refused as unsupported, naming the supported ones.

EOS defaults to llama.cpp's end-of-generation set (engine/gguf_special_tokens.py: the eos, eot
and eom ids, FIM pad / repo / file-separator ids, and tokens it ends generation at by text, e.g.
Gemma 3's `<end_of_turn>` beside `<eos>`), less any such token that has bytes (an EOS id must
have none); if none is left, the usual end-of-text names. Special tokens that llama.cpp strips
whitespace beside (Phi-3) are listed for `encode_prompt`. `regex_pre_tokenized` is true for
byte-level BPE ("gpt2" with a byte-level pre-tokenizer): its pre-tokenizer regexes cut the text
before BPE.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from jaxguide.engine.gguf_encoders import (
    SPACE_MARK,
    EncodeFn,
    bpe_encoder,
    rwkv_encoder,
    rwkv_token_bytes,
    sentencepiece_encoder,
)
from jaxguide.engine.gguf_metadata import read_gguf_metadata
from jaxguide.engine.gguf_special_tokens import special_tokens
from jaxguide.engine.pre_tokenizers import (
    GGUF_PRE_TOKENIZERS,
    PreTokenizer,
    gguf_pre_tokenizer,
)
from jaxguide.engine.tokenizer_loaders import (
    LoadedVocabulary,
    _check_file,
    _guess_eos,
    gpt2_unicode_to_byte,
)
from jaxguide.errors import TokenizerError

SUPPORTED_GGUF_MODELS = ("gemma4", "gpt2", "llama", "rwkv", "t5")
_REFUSED_GGUF_MODELS = {
    "bert": "WordPiece (BERT) lowercases, strips accents and splits punctuation before "
            "encoding, and its '##' continuations drop the space a word-start token adds, so no "
            "bytes per token spell the text back (an encoder-only family: nothing to generate)",
}
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_GPT2_DECODE = gpt2_unicode_to_byte()


def load_gguf(path: str | os.PathLike[str],
              eos_token_ids: Iterable[int] | None) -> LoadedVocabulary:
    """The `tokenizer.ggml.*` vocabulary of a GGUF file; EOS defaults to its eos/eot/eom ids.

    Raises:
      TokenizerError: not a GGUF file, corrupt, no vocabulary, an unsupported or refused
        tokenizer model, or an unknown pre-tokenizer name.
    """
    path = _check_file(path, "GGUF file")
    meta = read_gguf_metadata(path)
    tokens = meta.get("tokenizer.ggml.tokens")
    if not tokens:
        raise TokenizerError(f"GGUF file {path!r} holds no vocabulary (tokenizer.ggml.tokens)")
    model = meta.get("tokenizer.ggml.model")
    if model in _REFUSED_GGUF_MODELS:
        raise TokenizerError(f"unsupported GGUF tokenizer model {model!r} in {path!r}: "
                             f"{_REFUSED_GGUF_MODELS[model]}")
    if model not in SUPPORTED_GGUF_MODELS:
        raise TokenizerError(f"unsupported GGUF tokenizer model {model!r} in {path!r} "
                             f"(supported: {', '.join(SUPPORTED_GGUF_MODELS)})")
    special = special_tokens(meta, model, tokens, _token_types(meta, tokens, path))
    types = special.types
    pre = _pre_tokenizer(meta, model, path)
    style = pre.style if pre is not None else {"rwkv": "rwkv"}.get(model, "escaped_spaces")
    token_bytes, names = _token_bytes(tokens, types, style, path)
    if eos_token_ids is None:
        eos_token_ids = sorted(i for i in special.eog_ids if i in names) or _guess_eos(names)
    encode = _encoder(meta, model, pre, tokens, types, token_bytes, path)
    return LoadedVocabulary(token_bytes, eos_token_ids, names, encode, f"gguf_{model}",
                            regex_pre_tokenized=style == "byte_level",
                            lstrip_token_ids=special.lstrip_ids,
                            rstrip_token_ids=special.rstrip_ids)


def _pre_tokenizer(meta: dict[str, Any], model: str, path: str) -> PreTokenizer | None:
    """The BPE pre-tokenizer ("gpt2": the file's `tokenizer.ggml.pre`; "gemma4": Gemma-4's)."""
    if model == "gemma4":
        return GGUF_PRE_TOKENIZERS["gemma4"]
    if model == "gpt2":
        return gguf_pre_tokenizer(meta.get("tokenizer.ggml.pre"), path)
    return None


def _token_types(meta: dict[str, Any], tokens: Sequence[str], path: str) -> np.ndarray:
    """int32 [vocab] token types as the file stores them (all normal if it has none)."""
    types = meta.get("tokenizer.ggml.token_type")
    if types is None:
        types = np.ones(len(tokens), dtype=np.int32)
    if len(types) != len(tokens):
        raise TokenizerError(f"GGUF file {path!r}: {len(tokens)} tokens but "
                             f"{len(types)} token types")
    return np.array(types, dtype=np.int32)


def _byte_level_bytes(token: str) -> bytes:
    """GPT-2 byte-level text -> bytes; a character outside the alphabet: the text's UTF-8."""
    try:
        return bytes(_GPT2_DECODE[c] for c in token)
    except KeyError:
        return token.encode("utf-8", "surrogateescape")


def _normal_bytes(token: str, style: str) -> bytes:
    if style == "byte_level":
        return _byte_level_bytes(token)
    if style == "rwkv":
        return rwkv_token_bytes(token)
    if style == "escaped_spaces":
        token = token.replace(SPACE_MARK, " ")
    return token.encode("utf-8", "surrogateescape")


def _token_bytes(tokens: Sequence[str], types: np.ndarray, style: str,
                 path: str) -> tuple[list[bytes], dict[int, str]]:
    """(bytes per id, special-token names), by token type and the vocabulary's style."""
    token_bytes: list[bytes] = []
    names: dict[int, str] = {}
    for i, (token, token_type) in enumerate(zip(tokens, types.tolist())):
        if token_type == 1:
            token_bytes.append(_normal_bytes(token, style))
        elif token_type == 4:  # user-defined: literal text
            token_bytes.append(token.encode("utf-8", "surrogateescape"))
        elif token_type == 6:
            match = _BYTE_TOKEN.fullmatch(token)
            if match is None:
                raise TokenizerError(f"GGUF file {path!r}: byte token {i} has an unexpected "
                                     f"form: {token!r}")
            token_bytes.append(bytes([int(match.group(1), 16)]))
        else:  # unknown, control, unused, or a type llama.cpp treats like control
            token_bytes.append(b"")
            names[i] = token
    return token_bytes, names


def _encoder(meta: dict[str, Any], model: str, pre: PreTokenizer | None, tokens: Sequence[str],
             types: np.ndarray, token_bytes: list[bytes], path: str) -> EncodeFn | None:
    if pre is not None:
        merges = meta.get("tokenizer.ggml.merges")
        if not merges:
            return None
        return bpe_encoder(tokens, types.tolist(), merges, pre, path)
    if model in ("llama", "t5"):
        return sentencepiece_encoder(meta, types, path, unigram=model == "t5")
    unk = meta.get("tokenizer.ggml.unknown_token_id")
    return rwkv_encoder(tokens, token_bytes, types.tolist(), int(unk) if unk is not None else 0)
