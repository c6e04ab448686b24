"""jaxguide: grammar-constrained sampling for JAX on TPU and GPU, over a C++17 core."""

import atexit

from jaxguide import _native
from jaxguide.batch_matcher import BatchFillHandle, BatchMatcher, PendingMask, _shutdown_pools
from jaxguide.errors import (AssetNotFoundError, BudgetExceededError, GrammarError,
                             JaxguideError, MatcherBusyError, TokenizerError)
from jaxguide.grammar import Grammar
from jaxguide.matcher import (CompiledGrammar, Matcher, allocate_token_bitmask,
                              compile_grammar, heal_prompt)
from jaxguide.tokenizer import TokenizerInfo

# The JAX half (sampling, the mask queue, the decode loop) is imported on first use, so that
# tokenizer and grammar work does not pay for importing JAX.
_LAZY_EXPORTS = {
    "sampling": ("sample", "sampling_logits", "apply_token_bitmask", "unpack_token_bitmask",
                 "Greedy", "Temperature", "TopK", "TopP", "MinP", "SamplingConfig",
                 "NO_ALLOWED_TOKEN"),
    "mask_queue": ("MaskQueue",),
    "decode": ("generate", "Request", "Result", "ConstrainedBatch", "DecodeStats"),
}


def __getattr__(name: str):
    import importlib

    for module, names in _LAZY_EXPORTS.items():
        if name in names:
            return getattr(importlib.import_module(f"jaxguide.{module}"), name)
    raise AttributeError(f"module 'jaxguide' has no attribute {name!r}")


_native._register_error_classes(TokenizerError, BudgetExceededError, GrammarError)
_native._register_matcher_busy_error(MatcherBusyError)
# Join the batch thread pools before the interpreter tears down (pending fills finish first).
atexit.register(_shutdown_pools)

__version__ = "0.1.0"

__all__ = [
    "AssetNotFoundError",
    "BatchFillHandle",
    "BatchMatcher",
    "BudgetExceededError",
    "CompiledGrammar",
    "Grammar",
    "GrammarError",
    "JaxguideError",
    "Matcher",
    "MatcherBusyError",
    "PendingMask",
    "TokenizerError",
    "TokenizerInfo",
    "allocate_token_bitmask",
    "compile_grammar",
    "heal_prompt",
    *(name for names in _LAZY_EXPORTS.values() for name in names),
]
