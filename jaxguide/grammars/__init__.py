"""Grammar front-ends: Lark text, JSON Schema, regexes and string choices lowered to the grammar
IR that the engine compiles. Never imports JAX."""

from jaxguide.grammars.grammar import Grammar, clear_schema_cache
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema import JsonSchemaError, clear_json_schema_caches
from jaxguide.grammars.lark import cached_lark_to_ir
from jaxguide.grammars.tool_calls import (
    StructuralTag,
    clear_tool_caches,
    structural_tags_grammar,
)
from jaxguide.grammars.tool_formats import (
    clear_tool_grammar_cache,
    parse_tool_calls,
    tool_call_grammar,
)
from jaxguide.grammars.triggered import SpecialToken


def clear_front_end_caches() -> None:
    """Empties the memos of the front-ends: schema -> IR, Lark text -> IR, and the JSON Schema
    compiler's regex pieces."""
    clear_schema_cache()
    cached_lark_to_ir.cache_clear()
    clear_json_schema_caches()
    clear_tool_caches()
    clear_tool_grammar_cache()


__all__ = ["Grammar", "GrammarIR", "JsonSchemaError", "SpecialToken", "StructuralTag",
           "TerminalIR", "clear_front_end_caches", "parse_tool_calls", "structural_tags_grammar",
           "tool_call_grammar"]
