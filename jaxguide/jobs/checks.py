"""The check of a generated output against its constraint, by a checker independent of
jaxguide's lowering: `jsonschema` (the validator of the schema's draft), Python's
`re.fullmatch`, the `lark` package's Earley parser, membership for a choice.

Design note. This is the one checker of `jaxguide.jobs.generation_job` (the `valid` field of a
result line) and of `python -m jaxguide` (its printed verdicts and exit status). It uses only the
package's own dependencies: the oracles of `jaxguide.testing` (jaxguide's JSON Schema dialect with
an ECMA-262 regex engine, time limits, an "undecided" verdict) need the `testing` extra, which a
generation job does not install.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import lark

from jaxguide.grammars.json_schema.dialect import import_jsonschema
from jaxguide.grammars.tool_calls import chosen_tools, parse_tools
from jaxguide.grammars.tool_formats import parse_tool_calls

CHECK_KINDS = ("json_schema", "regex", "lark", "choice", "tools", "none")


@functools.lru_cache(maxsize=64)
def _lark_parser(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="earley", lexer="dynamic")


def _schema_problem(schema: Any, value: Any) -> str | None:
    jsonschema = import_jsonschema()  # on first use: its import is slow
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    return None if error is None else f"{error.message} (at {error.json_path})"


def why_tool_calls_invalid(source: dict[str, Any], calls: list[dict[str, Any]] | None
                           ) -> str | None:
    """None if the parsed `calls` ({"name", "arguments"} each) fit the request's tools
    (`source`: {"tools", "tool_choice", "parallel_tool_calls"}): each names one of the tools
    `tool_choice` allows and its arguments validate against that tool's parameters
    (jsonschema); "required" or a named tool: at least one call; "none": no call; not
    parallel: at most one."""
    mode, allowed = chosen_tools(parse_tools(source["tools"]), source.get("tool_choice"))
    calls = calls or []
    if mode == "required" and not calls:
        return "no tool call, though tool_choice requires one"
    if mode == "none" and calls:
        return "a tool call, though tool_choice is none"
    if len(calls) > 1 and source.get("parallel_tool_calls") is False:
        return f"{len(calls)} tool calls, though parallel_tool_calls is false"
    by_name = {t.name: t for t in allowed}
    for k, call in enumerate(calls):
        tool = by_name.get(call.get("name"))
        if tool is None:
            return f"call {k} names {call.get('name')!r}, not one of {sorted(by_name)}"
        problem = _schema_problem(tool.parameters, call.get("arguments"))
        if problem:
            return f"call {k} ({tool.name}): {problem}"
    return None


def why_invalid(kind: str, source: Any, text: str) -> str | None:
    """None if `text` conforms to the constraint `source` of `kind` (one of CHECK_KINDS; "none"
    always conforms), else why not. For "tools" (`source` as `why_tool_calls_invalid`'s, with
    "format"), the calls parsed from the text are checked."""
    if kind == "none":
        return None
    if kind == "tools":
        return why_tool_calls_invalid(source, parse_tool_calls(text, source["format"]))
    if kind == "regex":
        return None if re.fullmatch(source, text) else f"does not match the regex {source!r}"
    if kind == "choice":
        return None if text in source else "not one of the choices"
    if kind == "json_schema":
        try:
            value = json.loads(text)
        except ValueError as e:
            return f"not JSON: {e}"
        return _schema_problem(source, value)
    if kind == "lark":
        try:
            _lark_parser(source).parse(text)
        except lark.exceptions.LarkError as e:
            first_line = next(iter(str(e).strip().splitlines()), "")
            return f"{type(e).__name__}: {first_line}"
        return None
    raise ValueError(f"kind must be one of {', '.join(CHECK_KINDS)}, got {kind!r}")


def check_output(kind: str, source: Any, text: str) -> bool | None:
    """Whether `text` conforms to the constraint (`why_invalid` is None); None for kind
    "none" (nothing to check)."""
    if kind == "none":
        return None
    return why_invalid(kind, source, text) is None
