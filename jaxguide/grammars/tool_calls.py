"""Tool calls: structural tags (begin / JSON Schema / end) and ready formats for chat templates,
compiled to triggered grammars; the calls parsed back out of the text.

Design note. A `StructuralTag` says "after `begin`, a JSON value valid for `schema`, then
`end`". `structural_tags_grammar` groups tags under the trigger that prefixes their `begin` and
lowers each group to one body (the alternatives `begin[len(trigger):] JSON end`) inside
`Grammar.triggered`: free text until a trigger, then one of its tags. Hundreds of tools must
cost little (issue #25: time to first mask), so every tag schema is lowered straight into one
JSON Schema emitter shared by the whole grammar (`EmitterBuilder`, `json_schema.emit_into`: per
schema its own root, memo and budgets, the errors of `json_schema_to_ir`; terminals shared), and
`triggered_ir` adds its rules to that same emitter: no per-schema IR is built, copied and
renumbered. A call object (`{"name": <const>, "arguments": <parameters>}`, closed, both
required) is lowered as the one sequence it is (`_closed_object`), its parameters by the
emitter. What each schema added is kept (`json_schema.fragments`) and spliced into a later
grammar with that schema; leaf schemas seen before come from `json_schema.leaf_recipes`. Tool
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

Cost: linear in the number of tools plus what their schemas cost to lower (each schema once,
then spliced from the cache).
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
from jaxguide.grammars.ir_compose import RuleShorthands
from jaxguide.grammars.json_schema import emit_into, gc_paused, shared_emitter
from jaxguide.grammars.json_schema.emit import Emitter
from jaxguide.grammars.json_schema.fragments import fragment_of, splice
from jaxguide.grammars.json_schema.limits import LITERAL_TRIE_CHARS
from jaxguide.grammars.json_schema.normalize import ptr_escape
from jaxguide.grammars.json_schema.units import literal_units
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


# The lowered rules of each tag schema (a tool's call object) are kept for the next request
# with that tool (`Fragment`s spliced in): a tool set of hundreds lowers only its new tools
# (more entries than from_json_schema's cache, which hundreds of tools would cycle through).
TAG_SCHEMA_CACHE_ENTRIES = 4096
_tag_schema_cache = LruCache(TAG_SCHEMA_CACHE_ENTRIES)


def clear_tool_caches() -> None:
    _tag_schema_cache.clear()


def _schema_key(schema: Any) -> str | None:
    try:
        return json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


# The root keys of a call object lowered as one sequence (`_closed_object`).
_CALL_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties",
                               "$schema", "$defs", "definitions", "title", "description"})


def _closed_members(schema: Any) -> list[tuple[str, Any]] | None:
    """The (name, schema) members of a root that is a closed object whose declared
    properties are all required (`{"type": "object", "properties": {...}, "required": [every
    name], "additionalProperties": false}`, root keys aside: every tool's call object), in
    their order; None for any other schema."""
    if not isinstance(schema, dict) or not set(schema) <= _CALL_OBJECT_KEYS or \
            schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        return None
    properties, required = schema.get("properties"), schema.get("required")
    if not isinstance(properties, dict) or not properties or not isinstance(required, list) \
            or len(required) != len(properties) or set(required) != set(properties) or \
            not all(isinstance(name, str) for name in required):
        return None
    if not isinstance(schema.get("$schema", ""), str) or not all(
            isinstance(schema.get(k, {}), dict) for k in ("$defs", "definitions")):
        return None
    return list(properties.items())


def _closed_object(emitter: Emitter, schema: Any) -> int:
    """Lowers a tag schema's root (`emit_into`'s `lower_root`): a closed object of required
    members (`_closed_members`) as the one sequence `{ k1: v1, ..., kn: vn }`, the language
    that `Emitter.object_in_order` gives it, without normalizing the root; a member
    `{"const": "<text>"}` (the tool's name) as its literal terminal. Any other root:
    `emitter.value`."""
    members = _closed_members(schema)
    if members is None:
        return emitter.value(schema, "", 0)
    emitter.normalizer.check_shapes(schema, "")  # the root's own checks (`definitions`)
    layout = emitter.layout
    rhs = [emitter.term(layout.open("{", 0))]
    for i, (name, member) in enumerate(members):
        if i:
            rhs.append(emitter.term(layout.comma(0)))
        rhs.append(emitter.key_terminal(literal_units(name)))
        if isinstance(member, dict) and set(member) == {"const"} and \
                isinstance(member["const"], str) and len(member["const"]) < LITERAL_TRIE_CHARS:
            rhs.append(emitter.term('"' + literal_units(member["const"]) + '"'))
        else:
            rhs.append(emitter.value(member, "/properties/" + ptr_escape(name), 1))
    rhs.append(emitter.term(layout.close("}", 0)))
    call = emitter.new_nt("call_object")
    emitter.rule(call, rhs)
    return call


class EmitterBuilder(RuleShorthands):
    """`IrBuilder`'s methods (for `triggered_ir`) over one JSON Schema emitter that every tag
    schema of the grammar is lowered straight into (`schema_value`): no per-schema IR is built
    and copied, and their terminals are shared. Symbols are the emitter's ints (terminal ~i,
    nonterminal i); a terminal without lexing flags is keyed by its regex, as JSON's are."""

    def __init__(self) -> None:
        self.emitter = shared_emitter()
        self.lowered: list[tuple[str, tuple[int, int], tuple[int, int], int]] = []

    def terminal(self, terminal: TerminalIR) -> int:
        plain = terminal == TerminalIR(terminal.name, terminal.regex)
        return self.emitter.term(terminal.regex if plain else terminal)

    def nonterminal(self, name: str) -> int:
        return self.emitter.new_nt(name)

    def rule(self, lhs: int, rhs) -> None:
        self.emitter.rules.append((lhs, tuple(rhs)))

    def schema_value(self, schema: Any, key: str | None = None) -> int:
        """The nonterminal of a tag schema's values: its cached fragment spliced in, or the
        schema lowered here (`emit_into`: the errors and budgets of `json_schema_to_ir`).
        `key` identifies the schema in the cache (default: its JSON text)."""
        key = _schema_key(schema) if key is None else key
        fragment = _tag_schema_cache.get(key) if key is not None else None
        if fragment is not None:
            return splice(self.emitter, fragment)
        emitter = self.emitter
        first_rule, first_nonterminal = len(emitter.rules), len(emitter.nonterminals)
        start = emit_into(emitter, schema, _closed_object)
        if key is not None:
            self.lowered.append((key, (first_rule, len(emitter.rules)),
                                 (first_nonterminal, len(emitter.nonterminals)), start))
        return start

    def build(self, start: int) -> GrammarIR:
        """The IR; the fragments of the schemas lowered here go to the cache."""
        ir = self.emitter.finish(start)
        for key, rules, nonterminals, value in self.lowered:
            _tag_schema_cache.put(key, fragment_of(self.emitter, rules, nonterminals, value))
        return ir


@dataclasses.dataclass(frozen=True)
class StructuralTag:
    """After `begin` (text, or a SpecialToken when the trigger is one), a JSON value valid for
    `schema`, then `end`."""

    begin: str | SpecialToken
    schema: Any
    end: str = ""
    # A text that identifies `schema` for the cache of lowered schemas (None: its JSON text),
    # from a caller that already has one (`tool_call_grammar`: the tool's JSON text).
    schema_key: str | None = dataclasses.field(default=None, compare=False, repr=False)


def _literal(builder: EmitterBuilder, text: str) -> list:
    return [builder.terminal(TerminalIR(f"LIT_{len(text)}", re.escape(text)))] if text else []


def _tags_body(builder: EmitterBuilder, tags: Sequence[tuple[str, StructuralTag, str]],
               pad: str = "") -> int:
    """Adds the alternatives `rest pad? JSON pad? end` (rest/end literal, JSON a schema's
    values) to `builder`; returns their nonterminal."""
    start = builder.nonterminal("tags")
    padding = []
    if pad:
        padding = [builder.optional(builder.terminal(TerminalIR("PAD", re.escape(pad))), "pad")]
    for rest, tag, end in tags:
        value = builder.schema_value(tag.schema, tag.schema_key)
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
    groups: dict[Any, list[tuple[str, StructuralTag, str]]] = {t: [] for t in triggers}
    for tag in tags:
        if isinstance(tag.begin, SpecialToken):
            trigger = tag.begin if tag.begin in groups else None
        else:
            trigger = next((t for t in triggers if isinstance(t, str) and
                            tag.begin.startswith(t)), None)
        if trigger is None:
            raise GrammarError(f"no trigger starts the tag {tag.begin!r}")
        rest = "" if isinstance(trigger, SpecialToken) else tag.begin[len(trigger):]
        groups[trigger].append((rest, tag, tag.end))
    bodies = [(t, functools.partial(_tags_body, tags=group, pad=pad))
              for t, group in groups.items() if group]
    if not bodies:
        raise GrammarError("structural tags need at least one tag")
    with gc_paused():
        ir = triggered_ir(bodies, after="stop" if stop_after_first else "free",
                          at_least_one=at_least_one, builder=EmitterBuilder())
    return Grammar(ir, source=json.dumps({"structural_tags": [str(t.begin) for t in tags]}))
