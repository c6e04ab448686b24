"""jaxguide: grammar-constrained sampling for JAX on TPU and GPU, over a C++17 core.

Layout (one subpackage per stage, imports only go down this list):
  grammars/  Lark, JSON Schema, regex and choice front-ends -> the grammar IR (no JAX)
  engine/    the C++ core's compiled grammars, matchers, batch fills, tokenizers (no JAX)
  device/    mask queue, jitted samplers, multi-device placement (JAX)
  decode/    the decode loops and the hooks for other loops (JAX)
  integrations/  adapters to loops others own: maxtext (MaxText's MaxEngine; imported on use)
  models/    reference Flax models and the asset locator
  jobs/      YAML configs and the JSONL batch job behind tpu_scripts/generate.py
  testing/   the soundness checker: seeded mask walks judged by independent oracles
`limits.py` lists every work budget of the Python and C++ code in one table.
"""

import importlib

from jaxguide import _moved
from jaxguide.engine import (
    BatchFillHandle,
    BatchMatcher,
    CompiledGrammar,
    Matcher,
    TokenizerInfo,
    allocate_token_bitmask,
    clear_caches,
    compile_grammar,
    heal_prompt,
)
from jaxguide.errors import (
    AssetNotFoundError,
    BudgetExceededError,
    GrammarError,
    JaxguideError,
    MatcherBusyError,
    TokenizerError,
)
from jaxguide.grammars import (
    Grammar,
    SpecialToken,
    StructuralTag,
    parse_tool_calls,
    structural_tags_grammar,
    tool_call_grammar,
)

# The JAX half (sampling, the mask queue, the decode loop) is imported on first use, so that
# tokenizer and grammar work does not pay for importing JAX (nor need it installed).
_LAZY_EXPORTS = {
    "device.sampling": ("sample", "sampling_logits", "apply_token_bitmask",
                        "unpack_token_bitmask", "Greedy", "Temperature", "TopK", "TopP", "MinP",
                        "SamplingConfig", "NO_ALLOWED_TOKEN"),
    "device.mask_queue": ("MaskQueue", "PendingMask"),
    "decode": ("generate", "Request", "Result", "ConstrainedBatch", "DecodeStats"),
}


def __getattr__(name: str):
    for module, names in _LAZY_EXPORTS.items():
        if name in names:
            return getattr(importlib.import_module(f"jaxguide.{module}"), name)
    raise AttributeError(f"module 'jaxguide' has no attribute {name!r}")


_moved.install()

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
    "SpecialToken",
    "StructuralTag",
    "TokenizerError",
    "TokenizerInfo",
    "allocate_token_bitmask",
    "clear_caches",
    "compile_grammar",
    "heal_prompt",
    "parse_tool_calls",
    "structural_tags_grammar",
    "tool_call_grammar",
    *(name for names in _LAZY_EXPORTS.values() for name in names),
]
