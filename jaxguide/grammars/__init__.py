"""Grammar front-ends: Lark text, JSON Schema, regexes and string choices lowered to the grammar
IR that the engine compiles. Never imports JAX."""

from jaxguide.grammars.grammar import Grammar
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema import JsonSchemaError

__all__ = ["Grammar", "GrammarIR", "JsonSchemaError", "TerminalIR"]
