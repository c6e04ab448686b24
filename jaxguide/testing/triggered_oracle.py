"""An independent oracle for triggered grammars and tool calls: split a text at its triggers and
check each body on its own.

Design note. The language of `Grammar.triggered` is read here straight from its definition,
sharing nothing with the lowering (no automata, no grammar): scan the free text for the first
trigger occurrence (the earliest end; triggers are never substrings of each other), hand the
rest to that trigger's body check, which returns every place a body may end (a JSON value is
cut with `json.JSONDecoder.raw_decode` and validated by `JsonSchemaOracle`, then its closing tag
must follow), and go on from each. Only string triggers can be seen in text; special-token
triggers are tested at the token level. Cost: linear in the text per body ending tried.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jaxguide.grammars.tool_calls import chosen_tools, parse_tools
from jaxguide.grammars.tool_formats import tool_format
from jaxguide.testing.oracles import JsonSchemaOracle

# body check: (text, where the body starts) -> [(where it may end, None)] or [(-1, why not)]
BodyCheck = Callable[[str, int], Iterable[tuple[int, str | None]]]


def json_body(schema: Any, end: str = "", prefix: str = "", pad: str = "") -> BodyCheck:
    """The body `prefix`, a JSON value valid for `schema`, then `end` (exact strings), with an
    optional `pad` right before and right after the JSON value."""
    oracle = JsonSchemaOracle(schema)
    decoder = json.JSONDecoder()

    def check(text: str, start: int):
        if not text.startswith(prefix, start):
            return [(-1, f"expected {prefix!r} at {start}")]
        start += len(prefix)
        if pad and text.startswith(pad, start) and not text.startswith(pad, start + len(pad)):
            start += len(pad)
        try:
            _, stop = decoder.raw_decode(text, start)
        except ValueError as e:
            return [(-1, f"no JSON value at {start}: {e}")]
        reason = oracle.check(text[start:stop])
        if reason is not None:
            return [(-1, f"call {text[start:stop]!r}: {reason}")]
        if pad and text.startswith(pad + end, stop):
            stop += len(pad)
        if not text.startswith(end, stop):
            return [(-1, f"expected {end!r} after the JSON value at {stop}")]
        return [(stop + len(end), None)]

    return check


def choice_body(strings: Iterable[str]) -> BodyCheck:
    """A body that is exactly one of `strings`."""
    strings = list(strings)

    def check(text: str, start: int):
        ends = [(start + len(s), None) for s in strings if text.startswith(s, start)]
        return ends or [(-1, f"none of {strings!r} at {start}")]

    return check


class TriggeredOracle:
    """Checks texts of a triggered grammar (see the module note).

    Args:
      bodies: trigger string -> its body check.
      after: "free" or "stop", as `Grammar.triggered`.
      at_least_one: the text must start with a trigger.
      source: a description for reports.
    """

    kind = "triggered"

    def __init__(self, bodies: Mapping[str, BodyCheck], *, after: str = "free",
                 at_least_one: bool = False, source: str = ""):
        self.bodies = dict(bodies)
        self.after = after
        self.at_least_one = at_least_one
        self.source = source or json.dumps(sorted(self.bodies))
        self.note: str | None = None

    def first_trigger(self, text: str, start: int) -> tuple[int, str] | None:
        """(where the earliest-ending trigger occurrence after `start` ends, the trigger)."""
        best = None
        for trigger in self.bodies:
            at = text.find(trigger, start)
            if at >= 0 and (best is None or at + len(trigger) < best[0]):
                best = (at + len(trigger), trigger)
        return best

    def check(self, text: str) -> str | None:
        self.note = None
        if self.at_least_one and not any(text.startswith(t) for t in self.bodies):
            return "the text does not start with a trigger"
        return self._check_from(text, 0, 0)

    def _check_from(self, text: str, start: int, calls: int) -> str | None:
        found = self.first_trigger(text, start)
        if found is None:
            if calls and self.after == "stop" and start < len(text):
                return f"text after the call: {text[start:]!r}"
            return None
        if calls and self.after == "stop":
            return f"text after the call: {text[start:]!r}"
        end, trigger = found
        reasons = []
        for stop, reason in self.bodies[trigger](text, end):
            if reason is not None:
                reasons.append(reason)
                continue
            reason = self._check_from(text, stop, calls + 1)
            if reason is None:
                return None
            reasons.append(reason)
        return f"after {trigger!r} at {end}: " + "; ".join(reasons)


class PythonCallsOracle:
    """Gemma's Python-style call lists, read with Python's own parser (`ast`): the text is a
    list of keyword-only calls of the allowed tools whose literal arguments validate against the
    tools' parameters (jsonschema), or, unless `required`, text that does not start with `[`."""

    kind = "python_calls"

    def __init__(self, tools: Mapping[str, Any], *, required: bool, parallel: bool = True):
        self.tools = {name: JsonSchemaOracle(schema) for name, schema in tools.items()}
        self.required, self.parallel = required, parallel
        self.source = json.dumps({"python_calls": sorted(tools), "required": required})
        self.note: str | None = None

    def check(self, text: str) -> str | None:
        if not text.startswith("["):
            return "no call list" if self.required else None
        try:
            tree = ast.parse(text, mode="eval").body
        except SyntaxError as e:
            return f"not Python: {e}"
        if not isinstance(tree, ast.List) or not tree.elts:
            return "not a non-empty list"
        if len(tree.elts) > 1 and not self.parallel:
            return "several calls"
        for node in tree.elts:
            if not isinstance(node, ast.Call) or node.args or not isinstance(node.func, ast.Name):
                return f"not a keyword-only call: {ast.unparse(node)}"
            oracle = self.tools.get(node.func.id)
            if oracle is None:
                return f"unknown tool {node.func.id}"
            try:
                arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
            except ValueError as e:
                return f"{node.func.id}: not a literal: {e}"
            reason = oracle.check(json.dumps(arguments))
            if reason is not None:
                return f"{node.func.id}: {reason}"
        return None


def tool_call_oracle(tools: Any, tool_choice: Any = "auto", format: str = "hermes",
                     parallel: bool = True):
    """The independent oracle of `jaxguide.tool_call_grammar(tools, tool_choice, format=...,
    parallel=...)` for texts in which string triggers appear as text: calls split at the
    trigger, each JSON value validated by jsonschema against the union of the allowed tools'
    call schemas (Python-style lists: `PythonCallsOracle`)."""
    form = tool_format(format)
    mode, allowed = chosen_tools(parse_tools(tools), tool_choice)
    required = mode == "required"
    if form.python_calls:
        return PythonCallsOracle({t.name: t.parameters for t in allowed}, required=required,
                                 parallel=parallel)
    one = {"anyOf": [form.call_schema(t) for t in allowed]}
    schema: Any = one
    if form.array:
        schema = {"type": "array", "items": one, "minItems": int(required)}
        if not parallel:
            schema["maxItems"] = 1
    return TriggeredOracle({form.trigger: json_body(schema, end=form.end, pad=form.pad)},
                           after="free" if parallel and form.parallel_blocks else "stop",
                           at_least_one=required)
