"""The engine: a grammar compiled against a tokenizer, per-sequence matchers that fill packed
token bitmasks, batch fills on native threads, fast-forward and speculation helpers. Over the C++
core (`jaxguide._native`, reached only through `engine._core`). Never imports JAX."""

from jaxguide.engine.batch_matcher import BatchFillHandle, BatchMatcher
from jaxguide.engine.compiled_grammar import (
    CompiledGrammar,
    clear_caches,
    compile_grammar,
)
from jaxguide.engine.matcher import Matcher, allocate_token_bitmask, eos_only_row
from jaxguide.engine.token_boundaries import heal_prompt
from jaxguide.engine.tokenizer import TokenizerInfo

__all__ = ["BatchFillHandle", "BatchMatcher", "CompiledGrammar", "Matcher", "TokenizerInfo",
           "allocate_token_bitmask", "clear_caches", "compile_grammar", "eos_only_row",
           "heal_prompt"]
