"""Fixtures of the tokenizer tests: llama.cpp's vocabulary suite, SmolLM2's GGUF vocabulary."""

from __future__ import annotations

import os

import pytest
from support.gguf_files import smollm2_vocabulary

from jaxguide.testing.gguf_conformance import REQUIRE_ENV, suite_dir, suite_missing


@pytest.fixture(scope="session")
def suite() -> str:
    """The folder of llama.cpp's vocabulary suite; skips (or fails, when required) without it."""
    missing = suite_missing()
    if missing:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{missing} ({REQUIRE_ENV}=1)")
        pytest.skip(missing)
    return suite_dir()


@pytest.fixture(scope="session")
def smollm2_parts():
    """(tokens, types, merges) of SmolLM2's vocabulary."""
    return smollm2_vocabulary()
