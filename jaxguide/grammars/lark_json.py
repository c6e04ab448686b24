"""`%json { schema }` in Lark text: a JSON Schema as a rule body.

Design note. lark's loader knows no `%json`, so the text is rewritten before lark reads it:
each `%json` in a rule body (outside strings, regexes and comments) followed by a JSON object
(braces balanced, braces inside JSON strings skipped) is replaced by a placeholder terminal
`JAXGUIDE_JSON_<k>` defined at the end of the text. After lowering, `embed_schemas` lowers each
schema with the JSON Schema front-end (its defaults: flexible whitespace, formats asserted) and
copies its IR in under fresh names (`ir_compose`), the placeholder replaced by the schema's start
symbol. The Lark grammar's `%ignore` terminals are first written into its own rules
(`localize_ignore`), so they apply between the Lark grammar's terminals and never inside the
JSON. A JSON value is one unit: `%json` may appear wherever a rule name may in a rule body, not
inside a terminal definition. Linear in the text; the schemas cost what `from_json_schema` costs.
"""

from __future__ import annotations

import json

from jaxguide.errors import GrammarError
from jaxguide.grammars.ir import GrammarIR
from jaxguide.grammars.ir_compose import IrBuilder, localize_ignore
from jaxguide.grammars.json_schema import json_schema_to_ir

PLACEHOLDER_PREFIX = "JAXGUIDE_JSON_"


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _skip_literal(text: str, i: int) -> int:
    """The index after a Lark string or regex literal starting at i (ends at its line's end)."""
    quote, n, j = text[i], len(text), i + 1
    while j < n and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _json_object_end(text: str, start: int, where: tuple[int, int]) -> int:
    """The index after the balanced JSON object that starts at `start` (a `{`)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise GrammarError("%json: unbalanced braces (the JSON object is not closed)", *where)


def _read_schema(text: str, at: int) -> tuple[object, int]:
    """The schema of the `%json` at index `at`, and the index after it."""
    where = _position(text, at)
    i = at + len("%json")
    while i < len(text) and text[i] in " \t":
        i += 1
    if not text.startswith("{", i):
        raise GrammarError("%json must be followed by a JSON object (`%json { ... }`)", *where)
    end = _json_object_end(text, i, where)
    try:
        schema = json.loads(text[i:end])
    except ValueError as e:
        line, column = _position(text, i + getattr(e, "pos", 0))
        raise GrammarError(f"%json: invalid JSON: {getattr(e, 'msg', e)}", line,
                           column) from None
    return schema, end


def extract_json_schemas(text: str) -> tuple[str, list[object], list[tuple[int, int]]]:
    """Replaces each `%json {...}` by a placeholder terminal (defined at the end of the text).

    Returns (the new text, the schemas in order, [(line in the new text, lines removed)] for
    mapping line numbers of later errors back).

    Raises:
      GrammarError: `%json` without an object, unbalanced braces, invalid JSON (line/column).
    """
    if "%json" not in text:
        return text, [], []
    out, schemas, shifts, i, n, new_line = [], [], [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == '"' or (c == "/" and text[i + 1:i + 2] != "/"):
            j = _skip_literal(text, i)
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("%json", i) and not (text[i + 5:i + 6].isalnum()
                                                  or text[i + 5:i + 6] == "_"):
            schema, j = _read_schema(text, i)
            out.append(f" {PLACEHOLDER_PREFIX}{len(schemas)} ")
            removed = text.count("\n", i, j)
            if removed:
                shifts.append((new_line, removed))
            schemas.append(schema)
            i = j
            continue
        else:
            j = i + 1
        out.append(text[i:j])
        new_line += text.count("\n", i, j)
        i = j
    if PLACEHOLDER_PREFIX in text:
        raise GrammarError(f"names starting with {PLACEHOLDER_PREFIX} are reserved")
    definitions = "".join(f'\n{PLACEHOLDER_PREFIX}{k}: "\\x00json{k}"'
                          for k in range(len(schemas)))
    return "".join(out) + definitions + "\n", schemas, shifts


def original_line(line: int | None, shifts: list[tuple[int, int]]) -> int | None:
    """A line number of the rewritten text mapped back to the original text."""
    if line is None:
        return None
    return line + sum(removed for at, removed in shifts if at < line)


def embed_schemas(ir: GrammarIR, schemas: list[object]) -> GrammarIR:
    """The Lark IR with each placeholder terminal replaced by its schema's grammar."""
    placeholders = {t.name: i for i, t in enumerate(ir.terminals)
                    if t.name.startswith(PLACEHOLDER_PREFIX)}
    builder = IrBuilder()
    substitute = {}
    for k, schema in enumerate(schemas):
        name = f"{PLACEHOLDER_PREFIX}{k}"
        if name not in placeholders:
            raise GrammarError("%json may only be used in rule bodies, not inside a terminal "
                               "definition")
        substitute[placeholders[name]] = builder.embed(json_schema_to_ir(schema), f"json{k}:")
    start = builder.embed(localize_ignore(ir), "", substitute)
    return builder.build(start)
