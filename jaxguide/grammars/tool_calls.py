"""Tool calls: structural tags (begin / JSON Schema / end) and ready formats for chat templates,
compiled to triggered grammars; the calls parsed back out of the text.

Design note. A `StructuralTag` says "after `begin`, a JSON value valid for `schema`, then
`end`". `structural_tags_grammar` groups tags under the trigger that prefixes their `begin` and
lowers each group to one body (the alternatives `begin[len(trigger):] JSON end`, each schema
lowered once by the JSON Schema front-end and embedded by `ir_compose`, identical terminals
shared) inside `Grammar.triggered`: free text until a trigger, then one of its tags. Tool
definitions are taken in the OpenAI function format as they are (`{"type": "function",
"function": {"name", "description", "parameters"}}`, or the inner object alone). A `ToolFormat`
is how a model family writes calls; `tool_call_grammar` builds the grammar of a request's tools
and `tool_choice` in it:

  "auto"       free text, calls wherever the trigger appears (none at all is fine);
  "required"   the output starts with a call (parallel calls allowed when `parallel`);
  a name, or {"type": "function", "function": {"name": ...}}: like "required", that tool only;
  "none"       free text in which the trigger never appears.

Formats (`FORMATS`), each from the model family's documented convention:

  hermes   Qwen2.5 / Qwen3 / Hermes chat templates: `<tool_call>\\n{"name": ..., "arguments":
           {...}}\\n</tool_call>`, one block per call (parallel: several blocks).
  smollm2  SmolLM2's function-calling prompt (its model card; the tool template Ollama ships):
           `<tool_call>[{"name": ..., "arguments": {...}}, ...]</tool_call>`, calls in one
           JSON array ("[]" when no call is needed).
  mistral  Mistral's `[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]` (a special token in
           v3+ tokenizers, matched by id there, else text).
  llama3   Llama 3.1 / 3.2 JSON tool calls after `<|python_tag|>`: `{"name": ..., "parameters":
           {...}}` (special token, by id).
  gemma    Gemma's documented function-calling prompt: a Python-style list `[f(a=1), g(b="x")]`
           as the whole answer (`python_calls`; no trigger token: with "auto", free text that
           does not start with `[` or such a list).

Cost: linear in the number of tools plus what their schemas cost to lower (each schema once).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jaxguide.errors import GrammarError
from jaxguide.grammars.grammar import Grammar
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.ir_compose import IrBuilder, Sym
from jaxguide.grammars.json_schema import json_schema_to_ir
from jaxguide.grammars.lru import LruCache
from jaxguide.grammars.triggered import SpecialToken, triggered_ir

TOOL_CHOICES = ("auto", "required", "none")
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


@dataclasses.dataclass(frozen=True)
class Tool:
    """One tool: its name, description and parameters schema (an object schema)."""

    name: str
    description: str = ""
    parameters: Any = dataclasses.field(default_factory=lambda: {"type": "object"})

    def as_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name,
                                                 "description": self.description,
                                                 "parameters": self.parameters}}


def parse_tools(tools: Any) -> tuple[Tool, ...]:
    """Tools in the OpenAI function format (or their inner `function` objects) -> `Tool`s.

    Raises:
      GrammarError: not a list, a tool that is not an object, a missing or bad name, a repeated
        name, parameters that are not a schema object / boolean.
    """
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise GrammarError(f"tools must be a list of tool objects, got {type(tools).__name__}")
    if not tools:
        raise GrammarError("tools is empty")
    out, seen = [], set()
    for k, tool in enumerate(tools):
        if isinstance(tool, Tool):
            out.append(tool)
            continue
        if not isinstance(tool, Mapping):
            raise GrammarError(f"tools[{k}] must be an object, got {type(tool).__name__}")
        if "type" in tool and tool["type"] != "function":
            raise GrammarError(f"tools[{k}]: type must be 'function', got {tool['type']!r}")
        if "function" in tool:
            tool = tool.get("function")
            if not isinstance(tool, Mapping):
                raise GrammarError(f"tools[{k}].function must be an object")
        name = tool.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise GrammarError(f"tools[{k}]: name must be 1-128 characters of letters, digits, "
                               f"_ . : -, got {name!r}")
        if name in seen:
            raise GrammarError(f"tools[{k}]: repeated tool name {name!r}")
        seen.add(name)
        parameters = tool.get("parameters", {"type": "object"})
        if not isinstance(parameters, (Mapping, bool)):
            raise GrammarError(f"tools[{k}] ({name}): parameters must be a JSON Schema object")
        description = tool.get("description") or ""
        out.append(Tool(name, str(description), parameters))
    return tuple(out)


def chosen_tools(tools: Sequence[Tool], tool_choice: Any) -> tuple[str, tuple[Tool, ...]]:
    """(mode "auto" | "required" | "none", the tools a call may use) for a `tool_choice`.

    Raises:
      GrammarError: an unknown choice, or a name that is not one of the tools.
    """
    if tool_choice is None:
        tool_choice = "auto"
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        if tool_choice.get("type") != "function" or not isinstance(function, Mapping):
            raise GrammarError('tool_choice must be "auto", "required", "none", a tool name '
                               'or {"type": "function", "function": {"name": ...}}, got '
                               f"{tool_choice!r}")
        tool_choice = function.get("name")
        if not isinstance(tool_choice, str):
            raise GrammarError("tool_choice.function.name must be a string")
    elif not isinstance(tool_choice, str):
        raise GrammarError(f"tool_choice must be a string or an object, got "
                           f"{type(tool_choice).__name__}")
    if tool_choice in TOOL_CHOICES:
        return tool_choice, tuple(tools)
    named = [t for t in tools if t.name == tool_choice]
    if not named:
        raise GrammarError(f"tool_choice names {tool_choice!r}, which is not one of the tools "
                           f"({', '.join(t.name for t in tools)})")
    return "required", tuple(named)


# The IR of each tag schema (a tool's call object) is kept for the next request with that tool:
# a tool set of hundreds lowers only its new tools (more entries than from_json_schema's cache,
# which hundreds of tools would cycle through).
TAG_SCHEMA_CACHE_ENTRIES = 4096
_tag_schema_cache = LruCache(TAG_SCHEMA_CACHE_ENTRIES)


def tag_schema_ir(schema: Any) -> GrammarIR:
    """`json_schema_to_ir(schema)` (front-end defaults), memoized by the schema's JSON text."""
    try:
        key = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return json_schema_to_ir(schema)
    ir = _tag_schema_cache.get(key)
    if ir is None:
        ir = json_schema_to_ir(schema)
        _tag_schema_cache.put(key, ir)
    return ir


def clear_tool_caches() -> None:
    _tag_schema_cache.clear()


@dataclasses.dataclass(frozen=True)
class StructuralTag:
    """After `begin` (text, or a SpecialToken when the trigger is one), a JSON value valid for
    `schema`, then `end`."""

    begin: str | SpecialToken
    schema: Any
    end: str = ""


def _literal(builder: IrBuilder, text: str) -> list:
    return [builder.terminal(TerminalIR(f"LIT_{len(text)}", re.escape(text)))] if text else []


def _tags_body(builder: IrBuilder, tags: Sequence[tuple[str, GrammarIR, str]],
               pad: str = "") -> Sym:
    """Adds the alternatives `rest pad? JSON pad? end` (rest/end literal, JSON an IR) to
    `builder`; returns their nonterminal."""
    start = builder.nonterminal("tags")
    padding = []
    if pad:
        padding = [builder.optional(builder.terminal(TerminalIR("PAD", re.escape(pad))), "pad")]
    for k, (rest, ir, end) in enumerate(tags):
        value = builder.embed(ir, f"tag{k}:")
        builder.rule(start, _literal(builder, rest) + padding + [value] + padding
                     + _literal(builder, end))
    return start


def structural_tags_grammar(tags: Sequence[StructuralTag],
                            triggers: Sequence[str | SpecialToken], *,
                            at_least_one: bool = False, stop_after_first: bool = False,
                            pad: str = "") -> Grammar:
    """Free text in which each trigger starts one of the tags whose `begin` it prefixes.

    Args:
      tags: the tags; each `begin` must start with one of `triggers` (a SpecialToken begin
        must be a trigger itself).
      triggers: as in `Grammar.triggered`.
      at_least_one: the output starts with a tag.
      stop_after_first: the output ends after the first tag (else free text and more tags).
      pad: an optional string allowed around each JSON value (e.g. "\\n").

    Raises:
      GrammarError: a tag no trigger starts, a bad schema, bad triggers.
    """
    groups: dict[Any, list[tuple[str, GrammarIR, str]]] = {t: [] for t in triggers}
    for tag in tags:
        if isinstance(tag.begin, SpecialToken):
            trigger = tag.begin if tag.begin in groups else None
        else:
            trigger = next((t for t in triggers if isinstance(t, str) and
                            tag.begin.startswith(t)), None)
        if trigger is None:
            raise GrammarError(f"no trigger starts the tag {tag.begin!r}")
        rest = "" if isinstance(trigger, SpecialToken) else tag.begin[len(trigger):]
        groups[trigger].append((rest, tag_schema_ir(tag.schema), tag.end))
    bodies = [(t, functools.partial(_tags_body, tags=group, pad=pad))
              for t, group in groups.items() if group]
    if not bodies:
        raise GrammarError("structural tags need at least one tag")
    ir = triggered_ir(bodies, after="stop" if stop_after_first else "free",
                      at_least_one=at_least_one)
    return Grammar(ir, source=json.dumps({"structural_tags": [str(t.begin) for t in tags]}))
