"""Fixtures of the tokenizer tests: SmolLM2's GGUF vocabulary."""

from __future__ import annotations

import pytest
from support.gguf_files import smollm2_vocabulary


@pytest.fixture(scope="session")
def smollm2_parts():
    """(tokens, types, merges) of SmolLM2's vocabulary."""
    return smollm2_vocabulary()
