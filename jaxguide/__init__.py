"""jaxguide: grammar-constrained sampling for JAX on TPU and GPU, over a C++17 core."""

from jaxguide import _native
from jaxguide.errors import (AssetNotFoundError, BudgetExceededError, GrammarError,
                             JaxguideError, TokenizerError)
from jaxguide.grammar import Grammar
from jaxguide.tokenizer import TokenizerInfo

_native._register_error_classes(TokenizerError, BudgetExceededError)

__version__ = "0.1.0"

__all__ = [
    "AssetNotFoundError",
    "BudgetExceededError",
    "Grammar",
    "GrammarError",
    "JaxguideError",
    "TokenizerError",
    "TokenizerInfo",
]
