"""Shared fixtures: the real tokenizers of ASSETS.md (see real_tokenizers.py), llama.cpp's
vocabulary suite."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings
from support.real_tokenizers import TOKENIZER_BUILDERS

from jaxguide.testing.gguf_conformance import REQUIRE_ENV, suite_dir, suite_missing

# Property tests draw the same examples on every run by default, so a clean checkout passes or
# fails reproducibly (CI gates landing on it). Set JAXGUIDE_HYPOTHESIS=explore to draw fresh
# random examples (and use the example database) when hunting for new counterexamples.
settings.register_profile("reproducible", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(
    "explore" if os.environ.get("JAXGUIDE_HYPOTHESIS") == "explore" else "reproducible")


@pytest.fixture(params=sorted(TOKENIZER_BUILDERS), scope="session")
def tokenizer_name(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def suite() -> str:
    """The folder of llama.cpp's vocabulary suite; skips (or fails, when required) without it."""
    missing = suite_missing()
    if missing:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{missing} ({REQUIRE_ENV}=1)")
        pytest.skip(missing)
    return suite_dir()
