"""Tokenizer loaders: each common tokenizer format lowered to the bytes of every token id.

Design note. `TokenizerInfo` (engine/tokenizer.py) takes one `bytes` per token id, the EOS ids,
the names of special tokens, the original encoder and a family label. Each `load_*` function
here reads one format and returns exactly that, as a `LoadedVocabulary`; the `from_*`
constructors of `TokenizerInfo` are thin calls to them. This module does not import
tokenizer.py (the data flows one way: format -> LoadedVocabulary -> TokenizerInfo).

Lowering rules (tested against each original tokenizer: concatenating the bytes of the ids it
produces gives back the text's UTF-8, modulo the dummy prefix of tokenizer.py):
  * SentencePiece: `▁` (U+2581) -> b" "; byte-fallback pieces `<0xNN>` -> that one byte;
    control, unknown and unused pieces -> no bytes (special).
  * Byte-level BPE (GPT-2, Llama-3, tiktoken, Tekken, DeepSeek): token strings use the GPT-2
    byte-to-unicode map; each character maps back to one byte. tiktoken/Tekken ranks are bytes.
  * Added / user-defined tokens that are not special: their literal text's UTF-8.
  * Special tokens (BOS, EOS, control, unused, holes in the id space) have no bytes; their names
    are kept in `special_token_names` (grammars may refer to them later).

EOS comes from the tokenizer's own metadata when it has any (SentencePiece eos_id, GGUF
eos/eot/eom ids, tokenizer_config.json next to a tokenizer.json), otherwise from the usual
end-of-text names (`_KNOWN_EOS_NAMES`); a caller's `eos_token_ids` (not None) wins.

GGUF files are read by engine/gguf_tokenizers.py (which uses the helpers here). Third-party
tokenizer libraries are imported only by the loader that needs them.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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



@dataclass(frozen=True)
class LoadedVocabulary:
    """What the `TokenizerInfo` constructor takes, read from one tokenizer format.

    Attributes:
      token_bytes: [vocab_size] bytes per id; b"" for special tokens.
      eos_token_ids: ids that end a sequence.
      special_token_names: names of special tokens, by id.
      encode: the original tokenizer's text -> ids function (no BOS/EOS), or None.
      kind: a short label of the tokenizer family ("sentencepiece", "hf_json", ...).
      regex_pre_tokenized: the encoder splits text with a pre-tokenizer regex before BPE
        (GPT-2 / Llama-3 style byte-level BPE), so no token crosses a pre-token.
      lstrip_token_ids, rstrip_token_ids: special tokens that take the whitespace left (right)
        of them in a prompt with special-token names (llama.cpp's strip flags of a GGUF, the
        lstrip / rstrip of a tokenizer.json's special added tokens).
    """

    token_bytes: list[bytes]
    eos_token_ids: Iterable[int]
    special_token_names: dict[int, str]
    encode: EncodeFn | None
    kind: str
    regex_pre_tokenized: bool = False
    lstrip_token_ids: frozenset[int] = frozenset()
    rstrip_token_ids: frozenset[int] = frozenset()


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


def _guess_eos(names: dict[int, str]) -> list[int]:
    return sorted(i for i, name in names.items() if name in _KNOWN_EOS_NAMES)


# --------------------------------------------------------------------- bytes, SentencePiece


def load_token_bytes(token_bytes: Sequence[bytes], eos_token_ids: Iterable[int],
                     special_token_ids: Iterable[int],
                     encode: EncodeFn | None) -> LoadedVocabulary:
    """A vocabulary given as bytes per id; EOS and special ids lose their bytes (kept as names).

    Raises:
      TokenizerError: an entry is not bytes, or a special/EOS id is outside the vocabulary.
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
    return LoadedVocabulary([bytes(b) for b in token_list], eos, names, encode, "bytes")


def load_sentencepiece(model: str | os.PathLike[str] | bytes,
                       eos_token_ids: Iterable[int] | None) -> LoadedVocabulary:
    """A SentencePiece model, as a path or serialized proto bytes; EOS defaults to its eos_id.

    Raises:
      TokenizerError: the model does not load, or a byte piece is malformed.
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

    return LoadedVocabulary(token_bytes, eos_token_ids, names, encode, "sentencepiece")


# --------------------------------------------------------------------- tokenizer.json


def load_hf_json(path: str | os.PathLike[str],
                 eos_token_ids: Iterable[int] | None) -> LoadedVocabulary:
    """A Hugging Face `tokenizer.json`; EOS from a tokenizer_config.json beside it, else names.

    Raises:
      TokenizerError: missing/corrupt file, or an unsupported model (e.g. WordPiece).
    """
    path = _check_file(path, "tokenizer.json")
    spec = _read_hf_json(path)
    token_bytes, names = _hf_token_bytes(spec, path)
    if eos_token_ids is None:
        eos_token_ids = _hf_config_eos(path, spec) or _guess_eos(names)
    added = [t for t in spec.get("added_tokens") or [] if t.get("special", False)]
    return LoadedVocabulary(token_bytes, eos_token_ids, names, _hf_encoder(path), "hf_json",
                            regex_pre_tokenized=_hf_style(spec) == "byte_level",
                            lstrip_token_ids=frozenset(int(t["id"]) for t in added
                                                       if t.get("lstrip")),
                            rstrip_token_ids=frozenset(int(t["id"]) for t in added
                                                       if t.get("rstrip")))


def _read_hf_json(path: str) -> dict[str, Any]:
    """The parsed tokenizer.json, checked to hold a 'model' object."""
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TokenizerError(f"{path!r} is not valid JSON: {e}") from e
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise TokenizerError(f"{path!r} is not a tokenizer.json (no 'model' object)")
    return spec


def _hf_token_bytes(spec: dict[str, Any], path: str) -> tuple[list[bytes], dict[int, str]]:
    """(bytes per id, special-token names) of a tokenizer.json's model vocab and added tokens."""
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
    token_bytes: list[bytes] = [b""] * (max(ids) + 1)
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
        elif style == "sentencepiece":  # the decoder (`▁` -> space, byte fallback) applies
            token_bytes[i] = _sentencepiece_piece_bytes(t["content"], byte_fallback)
        else:
            token_bytes[i] = t["content"].encode("utf-8")
    return token_bytes, names


def _hf_encoder(path: str) -> EncodeFn:
    """The `tokenizers` library's encoder of the file (special-token names in text are text)."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as e:  # the Rust library raises a bare Exception
        raise TokenizerError(f"the tokenizers library cannot load {path!r}: {e}") from e
    tokenizer.encode_special_tokens = True  # special-token names in text are plain text

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False).ids

    return encode


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


# --------------------------------------------------------------------- tiktoken, Tekken


def load_tiktoken(encoding: Any, eos_token_ids: Iterable[int] | None) -> LoadedVocabulary:
    """A `tiktoken.Encoding`: ranks are bytes, unused ids are special holes.

    Raises:
      TokenizerError: `encoding` is not a tiktoken.Encoding.
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
    return LoadedVocabulary(token_bytes, eos_token_ids, names, encoding.encode_ordinary,
                            "tiktoken", regex_pre_tokenized=True)


def load_tekken(path: str | os.PathLike[str],
                eos_token_ids: Iterable[int] | None) -> LoadedVocabulary:
    """A Mistral `tekken.json`: rank r is id r + default_num_special_tokens; EOS defaults to 2.

    Raises:
      TokenizerError: missing file or not a valid tekken.json.
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

    return LoadedVocabulary(token_bytes, [2] if eos_token_ids is None else eos_token_ids, names,
                            encode, "tekken", regex_pre_tokenized=True)
