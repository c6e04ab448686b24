"""Python-style call lists (`[get_weather(city="Paris", days=3), ...]`), the tool-call format of
Gemma's documented function-calling prompt (ai.google.dev/gemma/docs/capabilities/
function-calling: "[func_name1(params_name1=params_value1, ...), func_name2(params)]", and no
other text when a function is called; Gemma emits no tool tokens).

Design note. A call is `name(` keyword arguments `)`, the arguments in the order the tool's
`parameters.properties` declares them (every required one, any optional one; Python accepts
any order, the grammar picks this one), each value a Python literal of the property's schema.
JSON strings, numbers, arrays and objects are Python literals already (`ast.literal_eval` reads
them), so a value is lowered with the JSON Schema front-end, except a plain boolean property
(`True|False`); schemas that could hold a JSON `true` / `false` / `null` anywhere else (an
untyped or boolean subschema, a `boolean` / `null` type, such a constant, an object that allows
undeclared members, an array without `items`) are refused with a GrammarError naming the
property. The list is `[` calls separated by `, ` `]`; with tool_choice "auto" the output is
either such a list or free text that does not start with `[` (nothing marks a call but its
start). Parsing uses `ast` (`ast.literal_eval` per value). Linear in the tools' schemas.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jaxguide.errors import GrammarError
from jaxguide.grammars.grammar import Grammar
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.ir_compose import IrBuilder, Sym
from jaxguide.grammars.json_schema import json_schema_to_ir
from jaxguide.grammars.tool_calls import Tool

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _has_json_constant(value: Any) -> bool:
    if isinstance(value, (bool, type(None))):
        return True
    if isinstance(value, list):
        return any(_has_json_constant(v) for v in value)
    if isinstance(value, dict):
        return any(_has_json_constant(v) for v in value.values())
    return False


def _python_literal_problem(schema: Any) -> str | None:
    """Why values of `schema` might not be Python literals as JSON writes them, or None."""
    if not isinstance(schema, Mapping):
        return "a boolean schema (any JSON value)"
    if _has_json_constant(schema.get("enum", [])) or ("const" in schema and
                                                      _has_json_constant(schema["const"])):
        return "a true / false / null constant"
    types = schema.get("type")
    types = [types] if isinstance(types, str) else types
    if types is None and "enum" not in schema and "const" not in schema and not any(
            k in schema for k in _SUBSCHEMA_LISTS):
        return "no type (any JSON value)"
    if types and {"boolean", "null"} & set(types):
        return "a boolean or null type"
    if types and "object" in types and not isinstance(schema.get("additionalProperties"),
                                                      Mapping) \
            and schema.get("additionalProperties") is not False:
        return "an object that allows undeclared members (additionalProperties)"
    if types and "array" in types and "items" not in schema:
        return "an array without items"
    children = list((schema.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            children.append(schema[key])
    for key in _SUBSCHEMA_LISTS:
        children.extend(schema.get(key) or [])
    for child in children:
        problem = _python_literal_problem(child)
        if problem:
            return problem
    return None


def _parameters(tool: Tool) -> tuple[list[tuple[str, Any]], set[str]]:
    """(declared properties in order, required names) of a tool's object schema."""
    schema = tool.parameters
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise GrammarError(f"tool {tool.name}: Python-style calls need an object schema "
                           "with properties as parameters")
    properties = list((schema.get("properties") or {}).items())
    for name, _ in properties:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise GrammarError(f"tool {tool.name}: parameter {name!r} is not a Python name")
    return properties, set(schema.get("required") or [])


def _value(builder: IrBuilder, tool: Tool, name: str, schema: Any, k: int) -> Sym:
    if isinstance(schema, Mapping) and schema.get("type") == "boolean" and not (
            {"enum", "const"} & set(schema)):
        return builder.terminal(TerminalIR("PY_BOOL", "True|False"))
    problem = _python_literal_problem(schema)
    if problem:
        raise GrammarError(f"tool {tool.name}, parameter {name}: {problem} cannot be written "
                           "as a Python literal in Python-style calls")
    return builder.embed(json_schema_to_ir(schema), f"{tool.name}.{name}{k}:")


def _call(builder: IrBuilder, tool: Tool, sep: Sym) -> Sym:
    """`name(` the keyword arguments `)` of one tool."""
    properties, required = _parameters(tool)
    n = len(properties)
    first = [builder.nonterminal(f"{tool.name}_args{j}") for j in range(n + 1)]
    rest = [builder.nonterminal(f"{tool.name}_more{j}") for j in range(n + 1)]
    builder.rule(first[n], [])
    builder.rule(rest[n], [])
    for j in range(n - 1, -1, -1):
        name, schema = properties[j]
        key = builder.terminal(TerminalIR(f"KW_{name}", re.escape(f"{name}=")))
        value = _value(builder, tool, name, schema, j)
        builder.rule(first[j], [key, value, rest[j + 1]])
        builder.rule(rest[j], [sep, key, value, rest[j + 1]])
        if name not in required:
            builder.rule(first[j], [first[j + 1]])
            builder.rule(rest[j], [rest[j + 1]])
    call = builder.nonterminal(f"call_{tool.name}")
    builder.rule(call, [builder.terminal(TerminalIR(f"CALL_{tool.name}",
                                                    re.escape(f"{tool.name}("))),
                        first[0], builder.terminal(TerminalIR("RPAREN", r"\)"))])
    return call


def python_calls_grammar(tools: Sequence[Tool], *, required: bool, parallel: bool) -> Grammar:
    """`[call, ...]` of `tools`; unless `required`, also free text not starting with `[`."""
    for tool in tools:
        if not tool.name.isidentifier():
            raise GrammarError(f"tool {tool.name!r}: Python-style calls need a Python name")
    builder = IrBuilder()
    sep = builder.terminal(TerminalIR("SEP", ", ?"))
    one = builder.nonterminal("call")
    for tool in tools:
        builder.rule(one, [_call(builder, tool, sep)])
    calls = builder.nonterminal("calls")
    builder.rule(calls, [one])
    if parallel:
        builder.rule(calls, [calls, sep, one])
    start = builder.nonterminal("start")
    builder.rule(start, [builder.terminal(TerminalIR("LBRACKET", r"\[")), calls,
                         builder.terminal(TerminalIR("RBRACKET", r"\]"))])
    if not required:
        builder.rule(start, [])
        builder.rule(start, [builder.terminal(TerminalIR("TEXT", r"(?s:[^\[].*)"))])
    ir: GrammarIR = builder.build(start)
    return Grammar(ir, source=json.dumps({"python_calls": [t.name for t in tools]}))


def parse_python_calls(text: str) -> list[dict[str, Any]]:
    """The calls of a `[f(a=1), ...]` text (leading/trailing whitespace allowed), as
    {"name", "arguments"}; [] when the text is not such a list."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return []
    if not isinstance(tree, ast.List):
        return []
    calls = []
    for node in tree.elts:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)) or node.args:
            return []
        try:
            arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        except (ValueError, SyntaxError):
            return []
        if None in arguments:
            return []
        calls.append({"name": node.func.id, "arguments": arguments})
    return calls
