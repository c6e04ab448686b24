"""jaxguide: grammar-constrained sampling for JAX on TPU and GPU, over a C++17 core."""

from jaxguide import _native
from jaxguide.errors import (AssetNotFoundError, BudgetExceededError, GrammarError,
                             JaxguideError, TokenizerError)
from jaxguide.grammar import Grammar
from jaxguide.matcher import (CompiledGrammar, Matcher, allocate_token_bitmask,
                              compile_grammar, heal_prompt)
from jaxguide.tokenizer import TokenizerInfo

# The JAX half (sampling, the host-to-device mask queue) is imported on first use, so that
# tokenizer and grammar work does not pay for importing JAX.
_LAZY_EXPORTS = {
    "sampling": ("sample", "sampling_logits", "apply_token_bitmask", "unpack_token_bitmask",
                 "Greedy", "Temperature", "TopK", "TopP", "MinP", "SamplingConfig",
                 "NO_ALLOWED_TOKEN"),
    "mask_queue": ("MaskQueue",),
}


def __getattr__(name: str):
    import importlib

    for module, names in _LAZY_EXPORTS.items():
        if name in names:
            return getattr(importlib.import_module(f"jaxguide.{module}"), name)
    raise AttributeError(f"module 'jaxguide' has no attribute {name!r}")


_native._register_error_classes(TokenizerError, BudgetExceededError, GrammarError)

__version__ = "0.1.0"

__all__ = [
    "AssetNotFoundError",
    "BudgetExceededError",
    "CompiledGrammar",
    "Grammar",
    "GrammarError",
    "JaxguideError",
    "Matcher",
    "TokenizerError",
    "TokenizerInfo",
    "allocate_token_bitmask",
    "compile_grammar",
    "heal_prompt",
    *(name for names in _LAZY_EXPORTS.values() for name in names),
]
