"""Shared fixtures: the real tokenizers of ASSETS.md (see real_tokenizers.py)."""

from __future__ import annotations

import pytest

from real_tokenizers import TOKENIZER_BUILDERS


@pytest.fixture(params=sorted(TOKENIZER_BUILDERS), scope="session")
def tokenizer_name(request) -> str:
    return request.param
