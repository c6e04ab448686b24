"""`unevaluatedProperties` / `unevaluatedItems` where what is evaluated is known statically.

Design note. A property (an item) is evaluated when a keyword of the schema object, or of a
subschema applied to the same instance that validates it, looked at it: `properties`,
`patternProperties`, `additionalProperties` (every member), a nested `unevaluated*` (every
member); `prefixItems` (its positions), `items` (every item). Through `allOf` and `$ref` every
part applies, so the evaluated set is the union of their keywords. Rewritten (`rewrite`) as one
more allOf part that declares those names and patterns (with no constraint) and gives the
rest the unevaluated schema as its `additionalProperties` (for items: as many free positions as
the longest prefix, then `items`), which is what the merge of allOf parts then enforces exactly
(`combinators.merge_objects`: a part's additionalProperties applies to the names that part
neither declares nor matches with its patterns; the new part declares all the others').

Not static: `anyOf` / `oneOf` / `if` / `dependentSchemas` (the branches that validate
evaluate), `contains` (the items it matched) and dynamic references anywhere in the closure:
refused (`unsupported`: an error, or with `lenient` the keyword ignored). `not` evaluates
nothing, so it may stand anywhere. The closure is walked at most `MAX_SCHEMA_NESTING` deep.
"""

from __future__ import annotations

from jaxguide.grammars.json_schema.limits import MAX_SCHEMA_NESTING

_DYNAMIC = ("anyOf", "oneOf", "if", "dependentSchemas", "dependencies", "$dynamicRef",
            "$recursiveRef")
KEYWORDS = ("unevaluatedProperties", "unevaluatedItems")


def rewrite(combinators, schema: dict, pointer: str):
    """`schema` with its unevaluated* keywords as allOf parts (see the module docstring), or
    without them where refused (lenient) or where every member is evaluated anyway."""
    parts = _closure(combinators, schema, pointer)
    out = {k: v for k, v in schema.items() if k not in KEYWORDS}
    extra = []
    for keyword in KEYWORDS:
        if keyword not in schema:
            continue
        dynamic = [] if parts is None else sorted(
            {k for part in parts for k in _DYNAMIC if k in part} |
            ({"contains"} if keyword == "unevaluatedItems" and any(
                "contains" in part for part in parts) else set()))
        if parts is None or dynamic:
            combinators.unsupported(keyword, pointer, "beside " + ", ".join(dynamic)
                                    if dynamic else "allOf / $ref parts nested deeper than "
                                    f"{MAX_SCHEMA_NESTING}")
            continue
        part = (_properties_part if keyword == "unevaluatedProperties" else _items_part)(
            schema, parts, schema[keyword])
        if part is not None:
            extra.append(part)
    if extra and isinstance(out.get("allOf", []), list):  # (else refused when read)
        out["allOf"] = [*out.get("allOf", ()), *extra]
    return out


def _closure(combinators, schema: dict, pointer: str) -> list | None:
    """The schema objects that apply to the same instance through allOf and $ref (the
    schema itself first, each once: a cycle ends); None past MAX_SCHEMA_NESTING levels."""
    out, seen = [], set()
    stack = [(schema, pointer, 0)]
    while stack:
        s, where, depth = stack.pop()
        if not isinstance(s, dict) or id(s) in seen:
            continue
        if depth > MAX_SCHEMA_NESTING:
            return None
        seen.add(id(s))
        out.append(s)
        if isinstance(s.get("$ref"), str):
            target, target_ptr = combinators.resolve_ref(s["$ref"], where)
            stack.append((target, target_ptr, depth + 1))
        for i, sub in enumerate(s.get("allOf") if isinstance(s.get("allOf"), list) else ()):
            stack.append((sub, f"{where}/allOf/{i}", depth + 1))
    return out


def _properties_part(schema: dict, parts: list, unevaluated):
    """The allOf part for unevaluatedProperties; None when every member is evaluated."""
    names, patterns = {}, {}
    for part in parts:
        if "additionalProperties" in part or (
                part is not schema and "unevaluatedProperties" in part):
            return None
        names.update(dict.fromkeys(part.get("properties") or {}, True))
        patterns.update(dict.fromkeys(part.get("patternProperties") or {}, True))
    return {"properties": names, "patternProperties": patterns,
            "additionalProperties": unevaluated}


def _items_part(schema: dict, parts: list, unevaluated):
    """The allOf part for unevaluatedItems; None when every item is evaluated."""
    longest = 0
    for part in parts:
        items = part.get("items")
        if isinstance(items, list):  # draft <= 2019 tuple form
            if "additionalItems" in part:
                return None
            longest = max(longest, len(items))
        elif items is not None or (part is not schema and "unevaluatedItems" in part):
            return None
        prefix = part.get("prefixItems")
        longest = max(longest, len(prefix) if isinstance(prefix, list) else 0)
    return {"prefixItems": [True] * longest, "items": unevaluated}
