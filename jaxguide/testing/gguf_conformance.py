"""llama.cpp's tokenizer conformance suite, run against `TokenizerInfo.from_gguf`.

Design note. llama.cpp ships small GGUF files that hold only a vocabulary
(`models/ggml-vocab-<name>.gguf`) and, for most of them, test pairs: `<file>.inp` holds texts
separated by the line `__ggml_vocab_test__` (each text followed by "\\n__ggml_vocab_test__\\n"),
`<file>.out` one line per text with the ids the original (Hugging Face) tokenizer gives it,
space-separated, no BOS/EOS (llama.cpp's `tests/test-tokenizer-0.cpp` reads them so and checks
`common_tokenize(ctx, text, add_special=false, parse_special=false)` against them).

For each vocabulary `run_vocabulary` loads it with `TokenizerInfo.from_gguf` and, for every
pair, checks both directions: the bytes of the expected ids are the text's UTF-8 (after the
tokenizer's dummy prefix, for a non-empty text: SentencePiece's `▁`), and `encode(text)` is the
expected ids. A vocabulary `from_gguf` refuses is reported with the reason.

The files come from the llama-cpp-python 0.3.36 sdist (`tools/llama_cpp_vocab/fetch.py` puts
them in `suite_dir()`: `$JAXGUIDE_LLAMA_CPP_VOCABS`, by default
`~/.cache/jaxguide/llama-cpp-python-0.3.36/models`).
"""

from __future__ import annotations

import glob
import os
import time
from dataclasses import asdict, dataclass, field

from jaxguide.engine.gguf_metadata import read_gguf_metadata
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.errors import TokenizerError

SUITE_VERSION = "0.3.36"  # llama-cpp-python sdist the suite comes from
SUITE_ENV = "JAXGUIDE_LLAMA_CPP_VOCABS"
REQUIRE_ENV = "JAXGUIDE_REQUIRE_LLAMA_CPP_VOCABS"  # "1": a missing suite fails the tests
SEPARATOR = "\n__ggml_vocab_test__\n"
# The 19 vocabularies of the 0.3.36 sdist (15 with pairs).
VOCABULARIES = ("aquila", "baichuan", "bert-bge", "command-r", "deepseek-coder", "deepseek-llm",
                "falcon", "gemma-4", "gpt-2", "gpt-neox", "llama-bpe", "llama-spm", "mpt",
                "nomic-bert-moe", "phi-3", "qwen2", "qwen35", "refact", "starcoder")


def suite_dir() -> str:
    """Where the suite is: `$JAXGUIDE_LLAMA_CPP_VOCABS` or the default cache folder."""
    return os.environ.get(SUITE_ENV) or os.path.join(
        os.path.expanduser("~"), ".cache", "jaxguide", f"llama-cpp-python-{SUITE_VERSION}",
        "models")


def suite_missing(directory: str | None = None) -> str | None:
    """None when every vocabulary file is in `directory`, else what is missing."""
    directory = directory or suite_dir()
    missing = [name for name in VOCABULARIES
               if not os.path.isfile(os.path.join(directory, f"ggml-vocab-{name}.gguf"))]
    if missing:
        return (f"llama.cpp's vocabulary suite is not in {directory!r} (missing: "
                f"{', '.join(missing)}); run `python tools/llama_cpp_vocab/fetch.py` "
                f"(or set {SUITE_ENV})")
    return None


def read_pairs(gguf_path: str) -> list[tuple[str, list[int]]] | None:
    """The (text, ids) pairs of a vocabulary, or None when it has none.

    Raises:
      ValueError: the .inp and .out files do not have the same number of texts.
    """
    if not os.path.isfile(gguf_path + ".inp"):
        return None
    with open(gguf_path + ".inp", encoding="utf-8", newline="") as f:
        raw = f.read()
    with open(gguf_path + ".out", encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    texts = raw.split(SEPARATOR)
    if texts and texts[-1] == "":  # the file ends with a separator
        texts.pop()
    if lines and lines[-1] == "":
        lines.pop()
    if len(texts) != len(lines):
        raise ValueError(f"{gguf_path}: {len(texts)} texts but {len(lines)} id lines")
    return [(text, [int(i) for i in line.split()]) for text, line in zip(texts, lines)]


@dataclass
class VocabularyResult:
    """One vocabulary's row of the conformance table."""

    name: str
    model: str | None = None
    pre: str | None = None
    loaded: bool = False
    refusal: str | None = None
    pairs: int = 0
    bytes_exact: int = 0
    ids_exact: int = 0
    load_seconds: float = 0.0
    failures: list[dict] = field(default_factory=list)


def run_vocabulary(directory: str, name: str, max_failures: int = 5) -> VocabularyResult:
    """Loads one vocabulary and checks every pair of it (see the module docstring)."""
    path = os.path.join(directory, f"ggml-vocab-{name}.gguf")
    meta = read_gguf_metadata(path)
    result = VocabularyResult(name, meta.get("tokenizer.ggml.model"),
                              meta.get("tokenizer.ggml.pre"))
    start = time.perf_counter()
    try:
        info = TokenizerInfo.from_gguf(path)
    except TokenizerError as e:
        result.refusal = str(e).replace(path, os.path.basename(path))
        return result
    result.load_seconds = time.perf_counter() - start
    result.loaded = True
    for text, expected in read_pairs(path) or []:
        want = info.dummy_prefix + text.encode("utf-8") if text else b""
        got_bytes = info.decode_bytes(expected)
        got_ids = info.encode(text)
        result.pairs += 1
        result.bytes_exact += got_bytes == want
        result.ids_exact += got_ids == expected
        if (got_bytes != want or got_ids != expected) and len(result.failures) < max_failures:
            result.failures.append({"text": text, "expected": expected, "encoded": got_ids,
                                    "expected_bytes": got_bytes.decode("utf-8", "replace")})
    return result


def run_suite(directory: str | None = None) -> list[VocabularyResult]:
    """Every vocabulary file of `directory` (the shipped 19 and any other `ggml-vocab-*`)."""
    directory = directory or suite_dir()
    names = sorted(os.path.basename(p)[len("ggml-vocab-"):-len(".gguf")]
                   for p in glob.glob(os.path.join(directory, "ggml-vocab-*.gguf")))
    return [run_vocabulary(directory, name) for name in names]


def as_json(results: list[VocabularyResult]) -> list[dict]:
    return [asdict(r) for r in results]
