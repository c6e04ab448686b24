"""The one import of the C++ core (`jaxguide._native`, built by CMake / Bazel into the package
root), with the Python exception classes the core raises registered on it. Every other engine
module reaches the core through here."""

from jaxguide import _native
from jaxguide.errors import (
    BudgetExceededError,
    GrammarError,
    MatcherBusyError,
    TokenizerError,
)

_native._register_error_classes(TokenizerError, BudgetExceededError, GrammarError)
_native._register_matcher_busy_error(MatcherBusyError)

__all__ = ["_native"]
