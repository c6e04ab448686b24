"""Exact complements of schemas, and the keywords built on them: `not`, overlapping `oneOf`,
`if`/`then`/`else`, `dependencies` / `dependentRequired` / `dependentSchemas`.

Design note. The complement of one merged alternative (a dict of keywords, read as their
conjunction) is the union of "some keyword fails": values of a type the alternative does not
admit, and per admitted type one alternative per keyword that applies to it (`minimum` 3 ->
`exclusiveMaximum` 3; `required` [a, b] -> `a` absent, or `b` absent; a property `p`: `p`
present with a value under `{"not": S}`; a prefix item likewise; `contains` S -> every item
under `{"not": S}`; an enum/const set -> every other value of each type, an object or array
value by the complement of its shape: a member / item that differs, is missing or is extra). Every complement is
written as ordinary JSON Schema, so the rest of the compiler (allOf merging, the keyword
reading, the exact enum filter that asks `jsonschema`) reads it unchanged, and the `not` of a
subschema is only expanded when emit reaches that value (recursion stays lazy). Three kinds of
`not` stay in a merged dict for later, because only there is the context known:
- string exclusions (`{"not": {"pattern" | "format" | "enum" of strings}}`): the string form
  subtracts them in one product automaton (`normalize.string_form`);
- "some member fails the additional / pattern properties or propertyNames" (the complement of
  those keywords): resolved in `resolve_existential` with the merged object: a finite union
  over its declared names, plus, when it admits undeclared members, a witness (`WITNESS`: the
  object form's class of undeclared members one of which must appear, emitted with a "seen"
  flag in the member rules; a body's one patternProperties entry restricts its keys to the
  pattern, as does a body's propertyNames whose failing keys are a pattern; several
  witnesses, or one beside propertyNames, are a bit mask of those met in a keyed object:
  `object_witnesses`); a body of several member classes: refused. The complement of a
  resolved dict takes each witness's complement too ("every such member satisfies S"). A
  dict that no merge reaches is resolved when it is read (`Normalizer.union`). A witness
  made before a merge that brings more declared (or required) names is made again for them
  (`stale_witnesses`): a complement is expanded on its own, then merged with its context;
- "some item after the prefix fails items": the array form's witness item (as `contains`);
- `not` of multipleOf: the number form's digit automaton (`number_forms`, `NON_MULTIPLES`);
- what no finite shape expresses (`not` of uniqueItems): refused when the keyword reading
  reaches it.
Next to an enum/const nothing is expanded (`literal_context`): the values are checked against
every keyword exactly. With `lenient`, a budget error of this exact reading makes
`json_schema_to_ir` lower the schema again without it (`use_complements`: the keywords are
ignored or oneOf read as anyOf, warned, as before), so lenient never fails where it did not.
With these, `oneOf` = the union over branches of (branch i and not each branch j that is not
provably disjoint from it), `if`/`then`/`else` = (if and then) or (not if and else), and a
dependency "a needs b" = (a absent) or (a and b present). Each is charged to
`MAX_ALLOF_PRODUCT` alternatives (the distribution budget) before it is built.
"""

from __future__ import annotations

import math
from decimal import Decimal

from jaxguide.grammars.json_schema.combinators import (
    ADDITIONAL_PARTS,
    ALL_TYPES,
    ANNOTATIONS,
    PATTERNS,
    WITNESS,
    Combinators,
    not_bodies,
)
from jaxguide.grammars.json_schema.errors import (
    InvalidSchemaError,
    JsonSchemaError,
    SchemaNestingError,
)
from jaxguide.grammars.json_schema.formats import asserted
from jaxguide.grammars.json_schema.limits import MAX_ALLOF_PRODUCT, MAX_EXCLUDED_NUMBERS
from jaxguide.grammars.json_schema.object_witnesses import (
    witness_complements,
    witness_key,
)
from jaxguide.grammars.json_schema.values import type_of

# `not` bodies the keyword reading folds in place (see the design note).
STRING_EXCLUSIONS = frozenset({"pattern", "format", "enum", "const"})
EXISTENTIAL = frozenset({"properties", "patternProperties", "additionalProperties",
                         "propertyNames", ADDITIONAL_PARTS})
_NON_OBJECT = ["array", "boolean", "null", "number", "string"]
# The keywords `Negations.expand_once` looks at (others go straight to `Combinators`).
_DEPENDENCIES = ("dependencies", "dependentRequired", "dependentSchemas")
_TRIGGERS = frozenset({"not", "if", *_DEPENDENCIES, "enum", "const", "allOf"})


def _types(s: dict) -> set:
    """The type names a dict admits (`integer` only when `number` is not admitted)."""
    t = s.get("type")
    types = set(ALL_TYPES) if t is None else {t} if isinstance(t, str) else set(t)
    if "integer" in types and "number" in types:
        types.discard("integer")
    return types


def _trivial(schema) -> bool:
    return schema is True or schema == {}


def string_exclusion(body) -> bool:
    """A `not` body the string form subtracts: one string keyword (pattern, format, or an
    enum/const of strings), with at most `type: string` beside it."""
    if not isinstance(body, dict):
        return False
    keys = set(body) - ANNOTATIONS
    if body.get("type", "string") != "string":
        return False
    keys.discard("type")
    if len(keys) != 1 or not keys <= STRING_EXCLUSIONS:
        return False
    (key,) = keys
    if key == "enum":
        return isinstance(body["enum"], list) and all(isinstance(v, str) for v in body["enum"])
    if key == "const":
        return isinstance(body["const"], str)
    return isinstance(body[key], str)


def multiple_only(body) -> bool:
    """A `not` body that is one positive `multipleOf`, alone or with a `type` under which
    every multiple is of that type (numbers that are not its multiples:
    `NumberForms.number_form`'s digit automaton; without `type`, other types satisfy the body,
    with it they do not)."""
    if not isinstance(body, dict) or set(body) - ANNOTATIONS - {"type"} != {"multipleOf"}:
        return False
    step = body["multipleOf"]
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(
            step) or step <= 0:
        return False
    if "type" not in body:
        return True
    names = body["type"] if isinstance(body["type"], list) else [body["type"]]
    return "number" in names or ("integer" in names and step == int(step))


def type_only(body) -> bool:
    return isinstance(body, dict) and set(body) - ANNOTATIONS == {"type"}


def deferred(body) -> bool:
    """A complement that only the merged dict can read, or none can (see the design note):
    an existential, or `not` of multipleOf, uniqueItems, later items, object/array values."""
    if not isinstance(body, dict):
        return False
    keys = set(body) - ANNOTATIONS - {"type"}
    if existential(body) or keys == {"multipleOf"} or keys == {"uniqueItems"}:
        return True
    if keys and keys <= {"items", "prefixItems", "additionalItems"}:
        return True
    return container_literals(body)


def container_literals(body) -> bool:
    """A `not` body that is an enum/const of objects and arrays only: next to an enum/const
    its values are checked, else it is complemented member by member once merged
    (`Negations.resolve_literal_nots`)."""
    if not isinstance(body, dict):
        return False
    keys = set(body) - ANNOTATIONS - {"type"}
    values = body.get("enum") if keys == {"enum"} else [body.get("const")] if keys == {
        "const"} else None
    return isinstance(values, list) and bool(values) and all(
        isinstance(v, (dict, list)) for v in values)


def array_witness(body) -> bool:
    """A deferred `not` body that the array form reads: "some item after the prefix fails
    `items`" (`{"items": S}`, after `prefixItems` or an array-form `items`)."""
    if not isinstance(body, dict):
        return False
    keys = set(body) - ANNOTATIONS - {"type"}
    if body.get("type", "array") != "array" or not keys:
        return False
    if isinstance(body.get("items"), list):
        return keys == {"items", "additionalItems"}
    return "items" in keys and keys <= {"items", "prefixItems"}


def foldable_not(body) -> bool:
    """A `not` that `expand` leaves in the dict: the keyword reading folds it into the forms
    (true, false, types, string exclusions), the merged object resolves it, or it is refused
    when read (`deferred`); merged nots are anyOf of those."""
    if body is True or body is False or body == {}:
        return True
    if isinstance(body, dict) and set(body) == {"anyOf"} and isinstance(body["anyOf"], list):
        return all(foldable_not(b) for b in body["anyOf"])
    return type_only(body) or string_exclusion(body) or deferred(body)


def existential(body) -> bool:
    """A `not` body that says "some member fails": only object-member keywords, with
    `properties` used to name the declared members (each schema trivial)."""
    if not isinstance(body, dict) or body.get("type", "object") != "object":
        return False
    keys = set(body) - ANNOTATIONS - {"type"}
    return bool(keys) and keys <= EXISTENTIAL and all(
        _trivial(v) for v in (body.get("properties") or {}).values())


def _is_count(value) -> bool:
    """A number a count keyword may hold (else it is refused when read)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def type_names(t) -> set:
    """The type names of a `type` keyword's value (a name or a list)."""
    return {t} if isinstance(t, str) else set(t)


def without_types(types: set, t) -> set | None:
    """`types` (type names, `integer` beside `number` or alone) minus those of a type-only
    `not` body; None when that leaves "a number but no integer", which no type list says."""
    removed = {t} if isinstance(t, str) else set(t)
    if "integer" in removed and "number" not in removed and "number" in types:
        return None
    return types - (removed | ({"integer"} if "number" in removed else set()))


def with_nots(s: dict, bodies: list) -> dict:
    out = {k: v for k, v in s.items() if k != "not"}
    if bodies:
        out["not"] = bodies[0] if len(bodies) == 1 else {"anyOf": bodies}
    return out


class Negations(Combinators):
    """Combinators plus exact complements (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.complements: dict[int, tuple] = {}  # id(dict) -> (dict, its complement)
        self.literal_context = False  # expanding next to an enum/const (see expand_once)
        self.use_complements = True  # False: lenient's fallback (`json_schema_to_ir`)

    # --- the complement of a schema --------------------------------------------------------
    def negate_schema(self, schema, pointer: str, depth: int):
        """"any" | "none" | alternatives whose union is every value `schema` rejects."""
        e = self.expand(schema, pointer, depth + 1)
        if e == "any":
            return "none"
        if e == "none":
            return "any"
        conjuncts = []
        for alt in e:
            if isinstance(alt, tuple):  # ("ref", pointer): the complement of its target
                target, tptr = self.resolve_ref(alt[1], pointer)
                complement = self.negate_schema(target, tptr, depth + 1)
            else:
                complement = self.negate_dict(alt, pointer, depth + 1)
            if complement == "none":
                return "none"
            if complement != "any":
                conjuncts.append(complement)
        if not conjuncts:
            return "any"
        return self.conjoin(conjuncts, pointer, depth + 1)

    def negate_dict(self, s: dict, pointer: str, depth: int = 0):
        """The complement of one merged alternative: a list of dicts ("none": s takes every
        value; [] never: then "none"). Memoized by identity, so a recursive schema's
        complement names the same `{"not": ...}` subschemas each time."""
        known = self.complements.get(id(s))
        if known is not None and known[0] is s:
            return known[1]
        out = self._negate_dict(s, pointer)
        # Expanded, so that a `not` body or a complement with combinators is merged as the
        # alternatives it stands for (merge reads no combinator).
        result = self._union(out, pointer, depth) if out else "none"
        self.complements[id(s)] = (s, result)
        return result

    def _negate_dict(self, s: dict, pointer: str) -> list:
        types = _types(s)
        out: list = []
        if "const" in s or "enum" in s:
            return self._negate_literals(s, pointer)
        absent = [t for t in ALL_TYPES if t not in types and not (
            t == "number" and "integer" in types)]
        if absent:
            out.append({"type": absent})
        if "integer" in types:
            out.append({"type": "number", "not": {"type": "integer"}})
        for t in sorted(types):
            out += self._negate_keywords(s, t, pointer)
        for body in not_bodies(s):
            out.append(body)  # not (X and not N) = not X or N
        if "object" in types:
            out += witness_complements(s)
        for keyword in ("if", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
                        "$recursiveRef"):
            if keyword in s:
                self.unsupported("not", pointer, f"the complement of {keyword!r}")
        return out

    def _negate_literals(self, s: dict, pointer: str) -> list:
        """Every value that is not one of s's (filtered) enum/const values."""
        values = self.literals(s, pointer).values
        by_type: dict[str, list] = {t: [] for t in ALL_TYPES}
        for v in values:
            by_type[type_of(v)].append(v)
        out: list = []
        if not by_type["null"]:
            out.append({"type": "null"})
        booleans = [b for b in (False, True) if b not in by_type["boolean"]]
        if booleans:
            out.append({"type": "boolean"} if len(booleans) == 2 else {"enum": booleans})
        out += self._numbers_except(by_type["number"], pointer)
        for t in ("string", "object", "array"):
            kept = by_type[t]  # (objects / arrays: resolve_literal_nots, unless next to enum)
            out.append({"type": t, "not": {"enum": kept}} if kept else {"type": t})
        return out

    def _literal_shape(self, value) -> dict:
        """The schema whose only value is `value` (an object or an array), written with the
        keywords complements read: its complement is every other object (array) through a
        member (item) that differs, is missing or is extra."""
        if isinstance(value, dict):
            return {"type": "object", "required": list(value), "additionalProperties": False,
                    "properties": {k: {"enum": [v]} for k, v in value.items()}}
        items = [{"enum": [v]} for v in value]
        return {"type": "array", "minItems": len(items), "maxItems": len(items),
                ("items" if self.tuple_items else "prefixItems"): items}

    def _numbers_except(self, numbers: list, pointer: str) -> list:
        """Numbers other than the given ones: the open intervals between them."""
        points = sorted({Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
                         for v in numbers})
        if len(points) > MAX_EXCLUDED_NUMBERS:
            self.unsupported("not", pointer, f"the complement of more than "
                             f"{MAX_EXCLUDED_NUMBERS} numbers")
            return [{"type": "number"}]
        if not points:
            return [{"type": "number"}]
        edges = [_number(p) for p in points]
        out = [self._interval(None, edges[0])]
        out += [self._interval(a, b) for a, b in zip(edges, edges[1:])]
        out.append(self._interval(edges[-1], None))
        return out

    def _interval(self, lo, hi) -> dict:
        """Numbers strictly between lo and hi (None: unbounded), in the root's draft."""
        out: dict = {"type": "number"}
        if lo is not None:
            out.update({"minimum": lo, "exclusiveMinimum": True} if self.draft4 else
                       {"exclusiveMinimum": lo})
        if hi is not None:
            out.update({"maximum": hi, "exclusiveMaximum": True} if self.draft4 else
                       {"exclusiveMaximum": hi})
        return out

    def _negate_keywords(self, s: dict, t: str, pointer: str) -> list:
        if t == "string":
            return self._negate_string(s)
        if t in ("number", "integer"):
            return self._negate_number(s, t)
        if t == "object":
            return self._negate_object(s, pointer)
        if t == "array":
            return self._negate_array(s, pointer)
        return []

    def _negate_string(self, s: dict) -> list:
        out = _flipped_counts(s, "string", "minLength", "maxLength")
        for pattern in ([s["pattern"]] if "pattern" in s else []) + list(s.get(PATTERNS, ())):
            out.append({"type": "string", "not": {"pattern": pattern}})
        if asserted(s.get("format"), self.formats):
            out.append({"type": "string", "not": {"format": s["format"]}})
        return out

    def _negate_number(self, s: dict, t: str) -> list:
        out = []
        lo, hi = s.get("minimum"), s.get("maximum")
        xlo, xhi = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
        if self.draft4 or isinstance(xlo, bool) or isinstance(xhi, bool):
            if _num(lo):  # draft 4: the flag makes `minimum` strict
                out.append({"type": t, "maximum": lo, "exclusiveMaximum": True} if xlo is not
                           True else {"type": t, "maximum": lo})
            if _num(hi):
                out.append({"type": t, "minimum": hi, "exclusiveMinimum": True} if xhi is not
                           True else {"type": t, "minimum": hi})
        else:
            if _num(lo):
                out.append({"type": t, "exclusiveMaximum": lo})
            if _num(hi):
                out.append({"type": t, "exclusiveMinimum": hi})
            if _num(xlo):
                out.append({"type": t, "maximum": xlo})
            if _num(xhi):
                out.append({"type": t, "minimum": xhi})
        if "multipleOf" in s:
            out.append({"type": t, "not": {"multipleOf": s["multipleOf"]}})
        return out

    def _negate_object(self, s: dict, pointer: str) -> list:
        out = []
        for name in s.get("required") or [] if isinstance(s.get("required"), list) else []:
            out.append({"type": "object", "properties": {name: False}})
        for name, sub in (s.get("properties") or {}).items():
            if _trivial(sub):
                continue
            out.append({"type": "object", "required": [name]} if sub is False else
                       {"type": "object", "required": [name], "properties": {name: {"not": sub}}})
        out += _flipped_counts(s, "object", "minProperties", "maxProperties")
        return out + self._negate_members(s)

    def _negate_members(self, s: dict) -> list:
        """"Some member fails patternProperties / additionalProperties / propertyNames": left
        as an existential `not` (resolved with the merged object, `resolve_existential`)."""
        names = {name: True for name in s.get("properties") or {}}
        patterns = s.get("patternProperties") or {}
        out = []
        parts = s.get(ADDITIONAL_PARTS)
        if parts is None:
            extra = s.get("additionalProperties", True)
            parts = [(tuple(patterns), extra)] if not _trivial(extra) else []
        for part_patterns, extra in parts:
            body = {"properties": dict(names), "additionalProperties": extra}
            if part_patterns:
                body["patternProperties"] = {p: True for p in part_patterns}
            out.append({"type": "object", "not": body})
        if any(not _trivial(v) for v in patterns.values()):
            out.append({"type": "object", "not": {"patternProperties": dict(patterns)}})
        if "propertyNames" in s and not _trivial(s["propertyNames"]):
            out.append({"type": "object", "not": {"propertyNames": s["propertyNames"]}})
        return out

    def _negate_array(self, s: dict, pointer: str) -> list:
        out = _flipped_counts(s, "array", "minItems", "maxItems")
        prefix, rest = self.array_parts(s)
        legacy = isinstance(s.get("items"), list)  # draft <= 2019: items as an array
        for i, sub in enumerate(prefix):
            if _trivial(sub):
                continue
            items = [True] * i + [{"not": sub}]
            out.append({"type": "array", "minItems": i + 1,
                        ("items" if legacy else "prefixItems"): items})
        if rest is False:
            out.append({"type": "array", "minItems": len(prefix) + 1})
        elif not _trivial(rest):
            body = {"items": rest} if not prefix else (
                {"items": [True] * len(prefix), "additionalItems": rest} if legacy else
                {"prefixItems": [True] * len(prefix), "items": rest})
            out.append({"type": "array", "not": body})  # refused when read
        counted = "minContains" in s or "maxContains" in s
        if "contains" in s and (counted or not _trivial(s["contains"])):
            low, high = s.get("minContains", 1), s.get("maxContains")  # (read again there)
            if not counted:
                out.append({"type": "array", "items": {"not": s["contains"]}})
            elif low != 0:  # fewer than minContains match, or more than maxContains
                out.append({"type": "array", "contains": s["contains"], "minContains": 0,
                            "maxContains": low - 1 if _is_count(low) else low})
            if counted and high is not None:
                out.append({"type": "array", "contains": s["contains"],
                            "minContains": high + 1 if _is_count(high) else high})
        if s.get("uniqueItems") is True:
            out.append({"type": "array", "not": {"uniqueItems": True}})  # refused when read
        return out

    # --- existential nots, resolved against the merged object ------------------------------
    def resolve_existential(self, merged: dict, pointer: str, depth: int):
        """A merged dict whose `not` holds "some member fails ..." bodies -> the alternatives
        that say which member (a declared name, or the object form's witness of undeclared
        ones); the same dict when it holds none. Next to patternProperties / propertyNames an
        open object is refused (lenient: the body is dropped)."""
        if "enum" in merged or "const" in merged:
            return [merged]  # its values are checked against all of it
        merged = self._fold_type_nots(merged)
        if merged is None:
            return []
        for resolve in (self.resolve_literal_nots, self.stale_witnesses):
            alternatives = resolve(merged, pointer, depth)
            if alternatives is not None:
                return alternatives
        bodies = not_bodies(merged)
        found = [b for b in bodies if existential(b)]
        if not found or "object" not in _types(merged):
            return [merged]
        rest = with_nots(merged, [b for b in bodies if not existential(b)])
        if any("type" not in b for b in found) and _types(rest) != {"object"}:
            rest["type"] = "object"  # a non-object satisfies an object-only body: excluded
        names = self.closed_names(merged, pointer, depth)
        open_object = names is None
        if open_object:
            if any(witness_key(b) is None for b in found):
                self.unsupported("not", pointer, "some undeclared member of a body with "
                                 "several member classes")
                return [rest]
            names = self.member_names(merged, pointer, depth)
        conjuncts = [[rest]]
        for body in found:
            conjuncts.append([{"required": [n], **({"properties": {n: {"not": v}}}
                                                   if v is not True else {})}
                              for n, v in self.member_failures(body, names, pointer)])
            if open_object:  # or an undeclared member (the object form's witness class;
                # the names here are those the alternatives above took: stale_witnesses)
                key_pattern, fails = witness_key(body)
                conjuncts[-1].append({WITNESS: ((tuple(dict.fromkeys(
                    [*(body.get("properties") or ()), *names])), fails,
                    *((key_pattern,) if key_pattern is not None else ())),)})
            if not conjuncts[-1]:
                return []  # no declared member can fail: no object
        result = self.conjoin(conjuncts, pointer, depth + 1)
        return [] if result == "none" else [{}] if result == "any" else result

    def resolve_literal_nots(self, merged: dict, pointer: str, depth: int):
        """A dict (no enum/const of its own: the caller's check) that excludes object/array
        values, merged or read as it is (`Normalizer.union`): the rest and, for each such
        `not` body, any other type or an object / array whose shape differs from each value's
        (`_literal_shape`: its complement is member by member); None when it holds none."""
        if not self.use_complements:
            return None
        bodies = not_bodies(merged)
        literal = [b for b in bodies if container_literals(b)]
        if not literal:
            return None
        conjuncts = [[with_nots(merged, [b for b in bodies if not container_literals(b)])]]
        for body in literal:
            values = body["enum"] if "enum" in body else [body["const"]]
            others = [{"type": ["boolean", "null", "number", "string"]}]
            for t in ("object", "array"):
                shapes = [{"not": self._literal_shape(v)} for v in values
                          if isinstance(v, dict) == (t == "object")]
                others.append({"type": t, "allOf": shapes} if shapes else {"type": t})
            # expanded: merge reads no combinator
            complement = self._union(others, pointer, depth)
            if complement == "none":
                return []
            if complement != "any":
                conjuncts.append(complement)
        result = self.conjoin(conjuncts, pointer, depth + 1)
        return [] if result == "none" else [{}] if result == "any" else result

    def stale_witnesses(self, merged: dict, pointer: str, depth: int):
        """A witness class ("some member other than these names fails S") made before this
        merge brought more declared names: each new name is one more alternative (that
        member is present and fails S), and the class leaves it out (the object form's
        witness is undeclared members only). None when no witness is stale."""
        needs = merged.get(WITNESS) or ()
        if not needs or "object" not in _types(merged):
            return None
        declared = self.member_names(merged, pointer, depth)
        if all(set(declared) <= set(names) for names, *_ in needs):
            return None
        rest = {k: v for k, v in merged.items() if k != WITNESS}
        conjuncts = [[rest]]
        for names, fails, *key_pattern in needs:
            new = [n for n in declared if n not in names]
            alternatives = [] if _trivial(fails) else [
                {"required": [n], **({"properties": {n: {"not": fails}}}
                                     if fails is not False else {})} for n in new
                if not key_pattern or self.key_matches(key_pattern[0], n, pointer)]
            conjuncts.append(alternatives + [{WITNESS: (((*names, *new), fails, *key_pattern),)}])
        result = self.conjoin(conjuncts, pointer, depth + 1)
        return [] if result == "none" else [{}] if result == "any" else result

    @staticmethod
    def _fold_type_nots(s: dict) -> dict | None:
        """s with its type-only `not` bodies applied to its `type` (None: no type is left),
        so that a complement of a complement stays small; "a number but no integer" stays."""
        bodies = not_bodies(s)
        if not any(type_only(b) for b in bodies):
            return s
        types = _types(s)
        kept = []
        for body in bodies:
            t = body.get("type") if type_only(body) else None
            names = {t} if isinstance(t, str) else set(t) if isinstance(t, list) else None
            left = None if names is None or not names <= set(ALL_TYPES) | {"integer"} else \
                without_types(types, t)  # (a bad type name: refused when read)
            if left is None and names is not None and names <= set(ALL_TYPES) | {"integer"}:
                # "a number but no integer" stays a `not`; the other types named go
                types = without_types(types, sorted(names - {"integer"}))
                kept.append({"type": "integer"})
                continue
            if left is None:
                kept.append(body)
                continue
            types = left
        if not types:
            return None
        out = with_nots(s, kept)
        out["type"] = sorted(types)
        return out

    def closed_names(self, s: dict, pointer: str, depth: int) -> list | None:
        """The member names an object of merged dict s may have, when they are only its
        declared properties (None: other names may appear)."""
        parts = s.get(ADDITIONAL_PARTS)
        if parts is None:
            closed = s.get("additionalProperties", self.additional_default) is False
        else:
            closed = any(p == () and x is False for p, x in parts)
        if not closed or s.get("patternProperties"):
            return None
        return self.declared_names(s, pointer, depth)

    def declared_names(self, s: dict, pointer: str, depth: int) -> list:
        """The declared properties of merged dict s that some value satisfies."""
        return [name for name, sub in (s.get("properties") or {}).items()
                if self.expand(sub, pointer, depth + 1) != "none"]

    def member_names(self, s: dict, pointer: str, depth: int) -> list:
        """The names the object form of merged dict s takes apart from its undeclared keys:
        its declared properties (`declared_names`) and its required names (a witness among
        undeclared keys excludes them: through them, "some member fails" is an
        alternative of its own)."""
        names = self.declared_names(s, pointer, depth)
        required = s.get("required")
        if isinstance(required, list):
            names += [n for n in dict.fromkeys(required) if isinstance(n, str) and
                      n not in (s.get("properties") or {})]
        return names

    def member_failures(self, body: dict, names: list, pointer: str) -> list:
        """[(name, schema its value must fail, or True: any value)] for the declared names
        through which "some member fails `body`" can hold."""
        out = []
        declared = body.get("properties") or {}
        patterns = body.get("patternProperties") or {}
        names_schema = body.get("propertyNames")
        for name in names:
            if names_schema is not None and not self.values.is_valid(
                    name, names_schema, pointer, "propertyNames"):
                out.append((name, True))
                continue
            if name in declared:
                continue
            subs = [v for p, v in patterns.items() if self.key_matches(p, name, pointer)]
            if not subs and "additionalProperties" in body:
                subs = [body["additionalProperties"]]
            subs = [v for v in subs if not _trivial(v)]
            if subs:
                out.append((name, subs[0] if len(subs) == 1 else {"allOf": subs}))
        return out

    # --- keywords built on complements -----------------------------------------------------
    def expand_once(self, schema, pointer: str, depth: int):
        """`Combinators.expand_once`, with a `not` the keyword reading cannot fold,
        dependencies and if/then/else distributed as alternatives first."""
        if not isinstance(schema, dict) or schema.keys().isdisjoint(_TRIGGERS) or (
                "$ref" in schema and self.old_draft) or not self.use_complements:
            return super().expand_once(schema, pointer, depth)
        if self.literal_context or _has_literals(schema):
            # enum/const values are checked against every sibling keyword (and every allOf
            # part) exactly: the keywords stay as they are, complements are not needed
            outer, self.literal_context = self.literal_context, True
            try:
                return super().expand_once(schema, pointer, depth)
            finally:
                self.literal_context = outer
        general = "not" in schema and not foldable_not(schema["not"])
        conditional = "if" in schema and ("then" in schema or "else" in schema)
        dependent = any(k in schema for k in _DEPENDENCIES)
        if not (general or conditional or dependent):
            return super().expand_once(schema, pointer, depth)
        self.check_shapes(schema, pointer)
        conjuncts = []
        if general:
            conjuncts.append(self.general_not(schema["not"], pointer, depth))
        if conditional:
            conjuncts.append(self.conditional(schema, pointer, depth))
        if dependent:
            conjuncts += self.dependency_alternatives(schema, pointer, depth)
        drop = set(_DEPENDENCIES) if dependent else set()
        drop |= {"not"} if general else set()
        drop |= {"if", "then", "else"} if conditional else set()
        rest = super().expand_once({k: v for k, v in schema.items() if k not in drop},
                                   pointer, depth)
        conjuncts.insert(0, rest)
        if any(c == "none" for c in conjuncts):
            return "none"
        conjuncts = [c for c in conjuncts if c != "any"]
        return self.conjoin(conjuncts, pointer, depth) if conjuncts else "any"

    def after_merge(self, merged: dict, pointer: str, depth: int) -> list:
        return self.resolve_existential(merged, pointer, depth)

    def general_not(self, body, pointer: str, depth: int):
        """The alternatives of `not body` when the keyword reading cannot fold it."""
        return self.negate_schema(body, pointer + "/not", depth)

    def exact_oneof(self, subs: list, pointer: str, depth: int, required: tuple = (),
                    types=None):
        """oneOf as the union of (branch i and not branch j) over the pairs not provably
        disjoint; charged to `MAX_ALLOF_PRODUCT` before the complements are built. `required`,
        `types`: the parent's (they hold in every branch)."""
        if not self.use_complements:
            return super().exact_oneof(subs, pointer, depth, required, types)
        overlapping = {}
        for i in range(len(subs)):
            overlapping[i] = [j for j in range(len(subs)) if j != i and self.oneof_excluded_types(
                [subs[i], subs[j]], None, pointer, depth, required) != set()]
        alternatives = []
        # The parent's `required` (and type) go into each branch too (they hold there): the
        # complements of the other branches lose, as they are merged, the alternatives that
        # lack a required member (`conjoin_pruned`), before they multiply.
        context = [{"required": list(required)}] if required else []
        if context and types is not None:
            context[0]["type"] = types  # (`contradicts` reads objects only)
        for i, sub in enumerate(subs):
            parts = [sub] + [{"not": subs[j]} for j in overlapping[i]]
            parts = context + parts if len(parts) > 1 else parts
            try:
                e = self.expand({"allOf": parts} if len(parts) > 1 else sub,
                                f"{pointer}/oneOf/{i}", depth + 1)
            except (SchemaNestingError, InvalidSchemaError):
                raise
            except JsonSchemaError as error:
                if len(parts) == 1 or error.keyword == "oneOf":
                    raise
                why = (f"its branches overlap, and excluding the others from branch {i} needs: "
                       f"{str(error).removeprefix('JSON Schema: ')}")
                if self.lenient:  # as before complements: read as anyOf, warned
                    self.unsupported("oneOf", pointer, why + "; lenient enforces it as anyOf")
                    return None
                raise JsonSchemaError(f"keyword 'oneOf' cannot be enforced ({why})", pointer,
                                      "oneOf") from None
            if e == "any":
                return "any"
            if e != "none":
                alternatives += e
            if len(alternatives) > MAX_ALLOF_PRODUCT:
                raise JsonSchemaError(f"more than {MAX_ALLOF_PRODUCT} alternatives after "
                                      "distributing oneOf over the complements of its "
                                      "overlapping branches", pointer, "oneOf")
        return alternatives or "none"

    def conditional(self, schema: dict, pointer: str, depth: int):
        """if/then/else: (if and then) or (not if and else)."""
        condition = schema["if"]
        then, otherwise = schema.get("then", True), schema.get("else", True)
        return self._union([{"allOf": [condition, then]},
                            {"allOf": [{"not": condition}, otherwise]}], pointer, depth)

    def dependency_alternatives(self, schema: dict, pointer: str, depth: int) -> list:
        """One conjunct per dependency: (name absent) or (name present and what it needs),
        and, when the schema admits other types, any non-object."""
        conjuncts = []
        required = set(schema.get("required") or []) if isinstance(
            schema.get("required"), list) else set()
        others = [t for t in _NON_OBJECT if t in _types(schema) or (
            t == "number" and "integer" in _types(schema))]
        for key in _DEPENDENCIES:
            value = schema.get(key)
            if value is None:
                continue
            if not isinstance(value, dict):
                raise JsonSchemaError(f"{key} must be an object", pointer, key)
            for name, need in value.items():
                if isinstance(need, list):
                    if not all(isinstance(n, str) for n in need):
                        raise JsonSchemaError(f"{key}/{name} must be an array of strings",
                                              pointer, key)
                    if set(need) <= required | {name}:
                        continue
                    present = {"type": "object", "required": [name, *need]}
                elif _trivial(need):
                    continue
                else:
                    present = {"type": "object", "required": [name], "allOf": [need]}
                alts = [{"type": "object", "properties": {name: False}}, present]
                if others:
                    alts.insert(0, {"type": others})
                conjuncts.append(self._union(alts, pointer, depth))
        return conjuncts

    def _union(self, schemas: list, pointer: str, depth: int):
        out = []
        for schema in schemas:
            e = self.expand(schema, pointer, depth + 1)
            if e == "any":
                return "any"
            if e != "none":
                out += e
        return out or "none"


def _has_literals(schema: dict) -> bool:
    """An enum/const in the dict or in one of its allOf parts (the values are then checked
    against all of it)."""
    if "enum" in schema or "const" in schema:
        return True
    parts = schema.get("allOf")
    return isinstance(parts, list) and any(
        isinstance(p, dict) and ("enum" in p or "const" in p) for p in parts)


def _flipped_counts(s: dict, t: str, low: str, high: str) -> list:
    """The complements of a count pair (minLength/maxLength, ...): fewer than the minimum, or
    more than the maximum, of type t."""
    out = []
    lo, hi = s.get(low), s.get(high)
    if _num(lo) and lo > 0:
        out.append({"type": t, high: int(-(-lo // 1)) - 1})
    if _num(hi):
        out.append({"type": t, low: int(hi // 1) + 1})
    return out


def _num(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(d: Decimal):
    """A Decimal as the JSON number jsonschema compares exactly (int when integral)."""
    return int(d) if d == d.to_integral_value() else float(d)

