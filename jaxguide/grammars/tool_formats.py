"""Ready tool-call formats of current chat templates: the grammar of a request's tools and
`tool_choice`, the calls parsed back out of the output, and the system prompt that lists the
tools for templates that do not render them.

Design note. A `ToolFormat` is data: the trigger that opens a call (a special token of the
tokenizer where it has one of that name, else text), the key of the arguments, whether calls are
one JSON array or one object per call, the text that closes a call. `tool_call_grammar` turns
it into structural tags (`tool_calls.structural_tags_grammar`): one tag per tool whose schema is
`{"name": <const>, <arguments key>: <the tool's parameters>}`, or one tag whose schema is an
array of those. The formats and their sources are listed in `tool_calls`' module note.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from jaxguide.errors import GrammarError
from jaxguide.grammars.grammar import Grammar
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema import gc_paused
from jaxguide.grammars.lru import LruCache
from jaxguide.grammars.python_calls import parse_python_calls, python_calls_grammar
from jaxguide.grammars.tool_calls import (
    StructuralTag,
    Tool,
    chosen_tools,
    parse_tools,
    structural_tags_grammar,
)
from jaxguide.grammars.triggered import SpecialToken, free_text_regex


@dataclasses.dataclass(frozen=True)
class ToolFormat:
    """How a model family writes tool calls (see `tool_calls`' module note).

    Attributes:
      name: the format's name in `FORMATS`.
      trigger: the text (or special token name) that opens a call.
      special_trigger: the trigger is a special token where the tokenizer has one by that name.
      arguments_key: "arguments" or "parameters".
      array: the calls are one JSON array after one trigger (else one object per trigger).
      end: the text that closes a call (or the array).
      pad: optional text allowed around the JSON (e.g. a newline).
      parallel_blocks: several triggered blocks may follow each other (else the output ends
        after the first).
      prompt: the system prompt that lists the tools ({tools}: their JSON, one per line).
      python_calls: calls are a Python-style list `[f(a=1), ...]` (`python_calls`), and the
        fields above about JSON and triggers do not apply.
    """

    name: str
    trigger: str
    special_trigger: bool
    arguments_key: str
    array: bool
    end: str
    pad: str
    parallel_blocks: bool
    prompt: str
    python_calls: bool = False

    def call_schema(self, tool: Tool, has_refs: bool = True, at: str = "#") -> dict[str, Any]:
        """The schema of one call object: {"name": <const>, <arguments key>: parameters}.
        The parameters' definitions (and `$schema`) move to the call object, and their local
        `$ref`s are rewritten, so they resolve as they did in the tool's own schema once the
        call object sits at `at` in the root (an array format's item: `#/items/anyOf/i`;
        `has_refs` False: the caller knows there is no `$ref`, and nothing is rewritten)."""
        key = self.arguments_key
        parameters, root = _rebased(tool.parameters, f"{at}/properties/{key}", has_refs, at)
        return {**root, "type": "object",
                "properties": {"name": {"const": tool.name}, key: parameters},
                "required": ["name", key], "additionalProperties": False}

    def trigger_for(self, special_token_names: Iterable[str]) -> str | SpecialToken:
        if self.special_trigger and self.trigger in set(special_token_names):
            return SpecialToken(self.trigger)
        return self.trigger


_LIST_FORMAT_PROMPT = (
    "You can call functions. Here they are, one JSON object each:\n<tools>\n{tools}\n</tools>\n"
    "If a function helps to answer, call it by writing {example} and nothing else. Give every "
    "required argument, with the right type. If no function fits, answer in plain text.")

FORMATS: dict[str, ToolFormat] = {
    "hermes": ToolFormat(
        "hermes", "<tool_call>", False, "arguments", array=False, end="</tool_call>", pad="\n",
        parallel_blocks=True, prompt=_LIST_FORMAT_PROMPT.replace(
            "{example}", '<tool_call>\n{{"name": <function name>, "arguments": <arguments as a '
            'JSON object>}}\n</tool_call> (one block per call)')),
    "smollm2": ToolFormat(
        "smollm2", "<tool_call>", False, "arguments", array=True, end="</tool_call>", pad="",
        parallel_blocks=False, prompt=(
            "You are an expert in composing functions. You are given a question and a set of "
            "possible functions. Make one or more function calls to achieve the purpose of the "
            "question. If none of the functions can be used, or parameters are missing, say "
            "so.\nYou have access to the following tools:\n<tools>{tools}</tools>\nTo call "
            "functions, reply only with this format, a list of calls:\n<tool_call>[\n"
            '{{"name": "func_name1", "arguments": {{"argument1": "value1"}}}},\n... (more '
            "calls as required)\n]</tool_call>\nMake sure each parameter has the right type. "
            "If no function call is needed, make the list empty: '[]'.")),
    "mistral": ToolFormat(
        "mistral", "[TOOL_CALLS]", True, "arguments", array=True, end="", pad="",
        parallel_blocks=False, prompt=_LIST_FORMAT_PROMPT.replace(
            "{example}", '[TOOL_CALLS][{{"name": <function name>, "arguments": {{...}}}}, ...]')),
    "llama3": ToolFormat(
        "llama3", "<|python_tag|>", True, "parameters", array=False, end="", pad="",
        parallel_blocks=False, prompt=_LIST_FORMAT_PROMPT.replace(
            "{example}", '<|python_tag|>{{"name": <function name>, "parameters": {{...}}}}')),
}
FORMATS["qwen"] = dataclasses.replace(FORMATS["hermes"], name="qwen")
FORMATS["gemma"] = ToolFormat(
    "gemma", "[", False, "arguments", array=True, end="", pad="", parallel_blocks=False,
    python_calls=True, prompt=(
        "You have access to functions. If you decide to call one or more of them, your whole "
        "reply MUST be the calls, in this format:\n[func_name1(params_name1=params_value1, "
        "params_name2=params_value2...), func_name2(params)]\nDo not write any other text "
        "when you call a function. The functions:\n{tools}"))


def _rebased(schema: Any, where: str, has_refs: bool = True,
             definitions_at: str = "#") -> tuple[Any, dict[str, Any]]:
    """(schema without its root keywords, those keywords: `definitions`, `$defs`, `$schema`)
    with each local `$ref` that does not point into the definitions made to point under
    `where` (the schema's place in the new root), and each one into them under
    `definitions_at` (where the keywords go; without `has_refs`, no `$ref` is looked for)."""
    if not isinstance(schema, dict):
        return schema, {}
    hoisted = ("definitions", "$defs", "$schema")
    root = {k: schema[k] for k in hoisted if k in schema}
    if not has_refs:
        return {k: v for k, v in schema.items() if k not in hoisted}, root

    def rewrite(node: Any) -> Any:
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: rewrite(v) for k, v in node.items()}
        ref = node.get("$ref")
        if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
            into_definitions = ref.startswith(("#/definitions/", "#/$defs/"))
            if not into_definitions:
                out["$ref"] = where + ref[1:]
            elif definitions_at != "#":
                out["$ref"] = definitions_at + ref[1:]
        return out

    body = rewrite({k: v for k, v in schema.items() if k not in hoisted})
    return body, rewrite(root)


def tool_format(name: str | ToolFormat) -> ToolFormat:
    """The format of that name (GrammarError listing the known ones if none)."""
    if isinstance(name, ToolFormat):
        return name
    if name not in FORMATS:
        raise GrammarError(f"unknown tool format {name!r} (known: {', '.join(sorted(FORMATS))})")
    return FORMATS[name]


# tool_call_grammar keeps the Grammar of this many recent (tools, choice, format, ...).
TOOL_GRAMMAR_CACHE_ENTRIES = 64
_grammar_cache = LruCache(TOOL_GRAMMAR_CACHE_ENTRIES)


def clear_tool_grammar_cache() -> None:
    _grammar_cache.clear()


def _no_call_grammar(trigger: str | SpecialToken) -> Grammar:
    """Free text in which the trigger never appears (tool_choice="none")."""
    texts = [trigger] if isinstance(trigger, str) else []
    ir = GrammarIR(terminals=(TerminalIR("FREE_TEXT", free_text_regex(texts)),),
                   nonterminals=("start",), rules=((0, ()), (0, (0,))), start=0)
    return Grammar(ir, source=json.dumps({"tool_choice": "none"}))


def tool_call_grammar(tools: Any, tool_choice: Any = "auto", *, format: str | ToolFormat =
                      "hermes", parallel: bool = True,
                      special_token_names: Iterable[str] = ()) -> Grammar:
    """The grammar of an answer that may (or must) call `tools` in `format`.

    Args:
      tools: tool definitions in the OpenAI function format (see `parse_tools`).
      tool_choice: "auto", "required", "none", a tool name, or {"type": "function",
        "function": {"name": ...}} (see `tool_calls`' module note).
      format: a name of `FORMATS` (or a ToolFormat).
      parallel: several calls may be made (several blocks, or an array of several).
      special_token_names: the tokenizer's special-token names (a format whose trigger is one
        of them matches it by id).

    Raises:
      GrammarError: malformed tools, an unknown choice or format, a schema that cannot be
        compiled.
    """
    fmt = tool_format(format)
    trigger = fmt.trigger_for(special_token_names)
    # A request with the tools of an earlier one gets its Grammar (and compiled grammar): the
    # key is the request's options and each tool's JSON text (which also keys the tool's
    # lowered call schema, and tells whether it has a `$ref` to rewrite: `call_schema`).
    texts = _tool_texts(tools)
    try:
        key = json.dumps([tool_choice, repr(fmt), bool(parallel),
                          isinstance(trigger, SpecialToken)], allow_nan=False)
        key += "".join("\n" + text for text in texts) if texts is not None else \
            "\n" + json.dumps(tools, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        key = None
    grammar = _grammar_cache.get(key) if key is not None else None
    if grammar is None:
        with gc_paused():  # many small objects, no cycles: see json_schema's _gc_paused
            grammar = _tool_call_grammar(tools, tool_choice, fmt, parallel, trigger, texts)
        if key is not None:
            _grammar_cache.put(key, grammar)
    return grammar


def _tool_texts(tools: Any) -> list[str] | None:
    """The JSON text of each tool of a list (JSON texts hold no line break); None when
    `tools` is not a list of JSON values."""
    if not isinstance(tools, (list, tuple)):
        return None
    try:
        return [json.dumps(tool, allow_nan=False) for tool in tools]
    except (TypeError, ValueError, RecursionError):
        return None


def _tool_call_grammar(tools: Any, tool_choice: Any, fmt: ToolFormat, parallel: bool,
                       trigger: str | SpecialToken, texts: list[str] | None) -> Grammar:
    parsed = parse_tools(tools)
    mode, allowed = chosen_tools(parsed, tool_choice)
    if mode == "none":
        if fmt.python_calls:  # free text that does not start like a call list
            return Grammar.from_regex(r"(?s:(?:[^\[].*)?)")
        return _no_call_grammar(trigger)
    required = mode == "required"
    if fmt.python_calls:
        return python_calls_grammar(allowed, required=required, parallel=parallel)
    if fmt.array:
        items = {"anyOf": [fmt.call_schema(t, at=f"#/items/anyOf/{i}")
                           for i, t in enumerate(allowed)]}
        schema = {"type": "array", "items": items, "minItems": 1 if required else 0}
        if not parallel:
            schema["maxItems"] = 1
        tags = [StructuralTag(trigger, schema, fmt.end)]
    else:
        text_of = dict(zip((t.name for t in parsed), texts)) if texts is not None else {}
        tags = [_call_tag(fmt, trigger, tool, text_of.get(tool.name)) for tool in allowed]
    return structural_tags_grammar(tags, [trigger], at_least_one=required,
                                   stop_after_first=not (parallel and fmt.parallel_blocks),
                                   pad=fmt.pad)


def _call_tag(fmt: ToolFormat, trigger: str | SpecialToken, tool: Tool,
              text: str | None) -> StructuralTag:
    """The tag of one tool's calls; with the tool's JSON text, its call schema is keyed by
    it (the schema is a function of the text and the format's arguments key) and built
    without looking for `$ref`s where the text has none."""
    if text is None:
        return StructuralTag(trigger, fmt.call_schema(tool), fmt.end)
    return StructuralTag(trigger, fmt.call_schema(tool, has_refs='"$ref"' in text), fmt.end,
                         schema_key=f"call {fmt.arguments_key}\n{text}")


def parse_tool_calls(text: str, format: str | ToolFormat = "hermes") -> list[dict[str, Any]]:
    """The complete calls in `text` (special tokens written by name), in order, as
    {"name": str, "arguments": value}; a call cut off (or not JSON) is left out."""
    fmt = tool_format(format)
    if fmt.python_calls:
        return parse_python_calls(text)
    decoder = json.JSONDecoder()
    calls: list[dict[str, Any]] = []
    for match in re.finditer(re.escape(fmt.trigger), text):
        start = match.end()
        while start < len(text) and text[start] in " \t\r\n":
            start += 1
        try:
            value, stop = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if fmt.end and not text[stop:].lstrip(" \t\r\n").startswith(fmt.end):
            continue
        for call in value if fmt.array and isinstance(value, list) else [value]:
            if isinstance(call, dict) and isinstance(call.get("name"), str) and \
                    fmt.arguments_key in call:
                calls.append({"name": call["name"], "arguments": call[fmt.arguments_key]})
    return calls


def tool_system_prompt(tools: Any, format: str | ToolFormat = "hermes") -> str:
    """The system prompt that lists `tools` and asks for calls in `format`."""
    fmt = tool_format(format)
    listed = "\n".join(json.dumps(t.as_openai(), ensure_ascii=False) for t in parse_tools(tools))
    return fmt.prompt.replace("{{", "{").replace("}}", "}").replace("{tools}", listed)
