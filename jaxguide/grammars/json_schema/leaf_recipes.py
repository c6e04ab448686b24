"""Leaf recipes: the rules of a leaf schema seen before, emitted without normalizing it again.

Design note. A leaf schema (scalar types only, no subschema, no `$ref`: `leaf_key`) lowers to
one nonterminal whose rules are each a single terminal, and those rules are a function of its
keywords (annotations aside: the normalizer never reads them), of the root's dialect (`$schema`)
and of the options, nothing else: no layout (scalars have no whitespace), no depth, no pointer
(a pointer only appears in errors, and a failing leaf is never kept). `Emitter.value` keeps the
terminal keys of those rules per leaf key, process-wide, and emits a leaf seen before from them:
the same rules with terminals created in the same order, so the same IR; the normalizer's work
(expansion, type and shape checks, string and number forms, exact enum checks) is skipped, but
for the one part of an enum's checks that reads the root: the jsonschema validator built from
it (`Normalizer.literal_checks`, called again: a root it cannot read fails as before). It is
what tool parameters mostly are (`{"type": "string", "description": ...}`), across the schemas
of one request and of later ones. Not kept: leaves whose lowering creates nonterminals (chunked
strings, array or object constants), lenient lowering (its warnings would be skipped), and
leaves whose keywords pass `MAX_LEAF_KEY` characters (long enums: the cache stays small).
Keywords jaxguide does not know (`x-...`, `_format`: neither implemented nor refused, so the
normalizer never reads them) are left out of the key as annotations are; its own merge markers
(`jaxguide:...`) are not (a leaf holding one has no recipe).

Pinned recipes. The recipes of the plain scalar types (`{"type": "string"}` and the others)
under the common dialects are a fixed table (`pin_leaf_recipes`, filled when the engine loads,
as the core's pinned terminals): `clear_leaf_recipes` keeps them, so a cold schema does not
normalize its first string or integer leaf either.
"""

from __future__ import annotations

from jaxguide.grammars.json_schema.combinators import is_unread
from jaxguide.grammars.lru import LruCache

LEAF_RECIPE_ENTRIES = 4096
MAX_LEAF_KEY = 2048  # characters of a leaf's keywords: a larger leaf (a long enum) is not kept
_leaf_recipes = LruCache(LEAF_RECIPE_ENTRIES)
_pinned_recipes: dict[tuple, tuple[tuple, ...]] = {}  # (pin_leaf_recipes; never cleared)
_LEAF_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})
LEAF_KEYWORDS = frozenset({"type", "enum", "const", "format", "pattern", "minLength",
                           "maxLength", "minimum", "maximum", "exclusiveMinimum",
                           "exclusiveMaximum", "multipleOf"})
_SCALARS = (str, int, float, bool, type(None))


def clear_leaf_recipes() -> None:
    _leaf_recipes.clear()


def leaf_recipe(key: tuple) -> tuple[tuple, ...] | None:
    """The terminal keys of each rule of the leaf with that key (None: not seen)."""
    pinned = _pinned_recipes.get(key)
    return pinned if pinned is not None else _leaf_recipes.get(key)


def pin_leaf_recipes(lower_probe) -> None:
    """Fills the pinned table: `lower_probe(schema)` lowers each probe (an object whose
    properties are the plain scalar types, under each common `$schema`), and the recipes that
    recorded are kept for the process."""
    if _pinned_recipes:
        return
    for dialect in PINNED_DIALECTS:
        probe = {"type": "object", "properties": {t: {"type": t} for t in sorted(_LEAF_TYPES)},
                 "additionalProperties": False}
        if dialect is not None:
            probe["$schema"] = dialect
        clear_leaf_recipes()
        lower_probe(probe)
        _pinned_recipes.update(_leaf_recipes.items())
    clear_leaf_recipes()


# The `$schema` values most schemas carry (none, drafts 4, 6, 7, 2019-09, 2020-12).
PINNED_DIALECTS = (None, "http://json-schema.org/draft-04/schema#",
                   "http://json-schema.org/draft-04/schema",
                   "http://json-schema.org/draft-06/schema#",
                   "http://json-schema.org/draft-07/schema#",
                   "http://json-schema.org/draft-07/schema",
                   "https://json-schema.org/draft/2019-09/schema",
                   "https://json-schema.org/draft/2020-12/schema")


def record_leaf_recipe(emitter, key: tuple, nt: int, first_rule: int,
                       first_nonterminal: int) -> None:
    """Keeps what the leaf with that key just added to `emitter` (rules from `first_rule`,
    all of `nt`) when it is a recipe: no nonterminal created, each rule terminals only."""
    if len(emitter.nonterminals) != first_nonterminal:
        return
    added = emitter.rules[first_rule:]
    if all(lhs == nt and all(s < 0 for s in rhs) for lhs, rhs in added):
        _leaf_recipes.put(key, tuple(tuple(emitter.terminal_keys[~s] for s in rhs)
                                     for _, rhs in added))


def leaf_key(schema: dict, normalizer) -> tuple | None:
    """The recipe key of a leaf schema (its keywords but annotations, the root's `$schema`
    and the options that can change a leaf's rules), or None for any other schema and in
    lenient mode."""
    if normalizer.lenient:
        return None
    items, size = [], 0
    for key, value in schema.items():
        if key in LEAF_KEYWORDS:
            pass
        elif isinstance(key, str) and is_unread(key) and not key.startswith("jaxguide:"):
            continue  # (a keyword the normalizer never reads; its own markers disqualify)
        else:
            return None
        if isinstance(value, list):
            if not all(isinstance(v, _SCALARS) for v in value):
                return None
        elif not isinstance(value, _SCALARS):
            return None
        text = repr(value)  # (repr tells 1 from 1.0 and True, a str from an int)
        size += len(text)
        if size > MAX_LEAF_KEY:
            return None
        items.append((key, text))
    types = schema.get("type")
    if types is None:
        if "enum" not in schema and "const" not in schema:
            return None  # every type, objects and arrays too
    elif not (types in _LEAF_TYPES if isinstance(types, str) else
              isinstance(types, list) and all(t in _LEAF_TYPES for t in types)):
        return None
    root = normalizer.root
    dialect = root.get("$schema") if isinstance(root, dict) else None
    return (repr(dialect), normalizer.formats, normalizer.use_complements, tuple(items))
