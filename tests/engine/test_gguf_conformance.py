"""llama.cpp's own tokenizer tests through `TokenizerInfo.from_gguf` (jaxguide.testing
.gguf_conformance): every vocabulary of the suite loads, or is refused with its reason, and every
test pair is byte-exact and id-exact.

The suite is fetched by `python tools/llama_cpp_vocab/fetch.py` (README, Test). Without it these
tests skip, saying so; with JAXGUIDE_REQUIRE_LLAMA_CPP_VOCABS=1 (set by .ci/run) they fail.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import tarfile

import pytest

from jaxguide.testing.gguf_conformance import (
    SUITE_ENV,
    VOCABULARIES,
    read_pairs,
    run_vocabulary,
    suite_dir,
    suite_missing,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
# What from_gguf refuses, and why (fewer than three of the 19).
REFUSED = {"bert-bge": "WordPiece"}
# Pairs per vocabulary in the 0.3.36 suite (the others have none).
PAIRS = {name: 46 for name in ("command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4",
                               "gpt-2", "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2",
                               "refact", "starcoder", "bert-bge")}
PAIRS["qwen35"] = 50


@pytest.mark.parametrize("name", VOCABULARIES)
def test_vocabulary_conforms(suite, name):
    result = run_vocabulary(suite, name)
    pairs = read_pairs(os.path.join(suite, f"ggml-vocab-{name}.gguf")) or []
    assert len(pairs) == PAIRS.get(name, 0)
    if name in REFUSED:
        assert not result.loaded and REFUSED[name] in result.refusal
        return
    assert result.loaded, result.refusal
    assert result.pairs == len(pairs)
    assert result.bytes_exact == result.pairs, result.failures
    assert result.ids_exact == result.pairs, result.failures


def test_fewer_than_three_refused():
    assert len(REFUSED) < 3 and set(REFUSED) <= set(VOCABULARIES)


def test_fetch_tool_and_tests_agree_on_the_folder(monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "fetch_llama_cpp_vocab", ROOT / "tools" / "llama_cpp_vocab" / "fetch.py")
    fetch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetch)
    monkeypatch.delenv(SUITE_ENV, raising=False)
    assert fetch.default_dir() == suite_dir()
    monkeypatch.setenv(SUITE_ENV, "/somewhere/else")
    assert fetch.default_dir() == suite_dir() == "/somewhere/else"
    assert suite_missing("/somewhere/else").startswith("llama.cpp's vocabulary suite is not in")


def test_pairs_format(tmp_path):
    """The .inp/.out reading of llama.cpp's test-tokenizer-0: texts end with the separator line,
    texts may be empty or hold newlines, one id line per text."""
    path = tmp_path / "ggml-vocab-x.gguf"
    (tmp_path / "ggml-vocab-x.gguf.inp").write_text(
        "a b\n__ggml_vocab_test__\n\n__ggml_vocab_test__\n\n\n__ggml_vocab_test__\n",
        encoding="utf-8")
    (tmp_path / "ggml-vocab-x.gguf.out").write_text(" 1 2\n\n 7\n", encoding="utf-8")
    assert read_pairs(str(path)) == [("a b", [1, 2]), ("", []), ("\n", [7])]
    (tmp_path / "ggml-vocab-x.gguf.out").write_text(" 1 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="3 texts but 1 id lines"):
        read_pairs(str(path))


def test_fetch_tool_extracts_only_the_vocabularies(tmp_path):
    """The fetch tool's unpacking (offline): from an sdist-shaped archive it copies the
    ggml-vocab-* files and llama.cpp's LICENSE, flat, and nothing else."""
    spec = importlib.util.spec_from_file_location(
        "fetch_llama_cpp_vocab", ROOT / "tools" / "llama_cpp_vocab" / "fetch.py")
    fetch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetch)
    source = tmp_path / "src" / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"
    (source / "models").mkdir(parents=True)
    for name in ("ggml-vocab-a.gguf", "ggml-vocab-a.gguf.inp", "other.gguf"):
        (source / "models" / name).write_bytes(name.encode())
    (source / "LICENSE").write_text("MIT")
    (source / "setup.py").write_text("")
    sdist = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(tmp_path / "src" / "llama_cpp_python-0.3.36", "llama_cpp_python-0.3.36")
    target = tmp_path / "out"
    target.mkdir()
    assert fetch._extract(str(sdist), str(target)) == 1
    assert sorted(p.name for p in target.iterdir()) == [
        "LICENSE.llama.cpp", "ggml-vocab-a.gguf", "ggml-vocab-a.gguf.inp"]
    assert (target / "ggml-vocab-a.gguf").read_bytes() == b"ggml-vocab-a.gguf"
