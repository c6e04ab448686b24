"""$ref resolution and the combinators: allOf merged, anyOf/oneOf distributed.

Design note. `expand` turns a schema into "any", "none" or a list of alternatives, each a dict
without `$ref`/allOf/anyOf/oneOf, or ("ref", pointer) for a reference lowered lazily (which is
how recursion stays finite). allOf is distributed over anyOf/oneOf (at most
`MAX_ALLOF_PRODUCT` combinations) and each combination merged keyword by keyword (`merge`):
types intersected, bounds tightened, required united; object, array and literal keywords
interact across parts and are merged by `merge_objects` (a name one part declares gets every
other part's schema for undeclared names; each part's additionalProperties is kept apart,
under `ADDITIONAL_PARTS`), `merge_arrays` (position by position) and `merge_literals` (values
in every part). oneOf is exact when provable, type by type (`oneof_excluded_types`): a type
two branches accept entirely is excluded, otherwise the branches must be disjoint on it; else
"cannot be enforced" (lenient: anyOf). The merged dicts are the input of the keyword reading
(`normalize`).
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

from jaxguide.grammars.json_schema import unevaluated
from jaxguide.grammars.json_schema.automata import (
    RegexTooLarge,
    ecma_search,
    intersection_pattern,
)
from jaxguide.grammars.json_schema.errors import (
    InvalidSchemaError,
    JsonSchemaError,
    SchemaNestingError,
)
from jaxguide.grammars.json_schema.formats import asserted
from jaxguide.grammars.json_schema.limits import (
    MAX_ALLOF_PRODUCT,
    MAX_KEPT_APART_PATTERNS,
    MAX_SCHEMA_NESTING,
)
from jaxguide.grammars.json_schema.numbers import decimal_lcm
from jaxguide.grammars.json_schema.pattern import PatternError, split_lookaheads
from jaxguide.grammars.json_schema.refs import References
from jaxguide.grammars.json_schema.values import ValueChecker, canon, type_of

ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$comment", "title", "description", "default", "examples",
    "example", "readOnly", "writeOnly", "deprecated", "$anchor", "$vocabulary",
    "$dynamicAnchor", "$recursiveAnchor", "contentEncoding", "contentMediaType",
    "contentSchema", "$defs", "definitions", "discriminator", "nullable", "xml",
    "externalDocs",
})
UNSUPPORTED = frozenset({
    "not", "if", "then", "else", "contains", "minContains", "maxContains",
    "dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef",
})
IMPLEMENTED = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "anyOf", "oneOf", "allOf", "$ref",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "uniqueItems",
})
ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")  # integer within number


MERGED_FROM = "jaxguide:merged_from"  # the source dicts of a merged dict
# ((declared names, schema), ...): the object has an undeclared member (none of the names) whose
# value fails the schema (`negation.resolve_existential`; read by the object form).
WITNESS = "jaxguide:witness"
ADDITIONAL_PARTS = "jaxguide:additional_parts"  # [(patterns, schema)] of merged parts
# (pattern, ...): more patterns a string must match, where their product with `pattern` is too
# large to write back as one pattern (the string form makes them the lexer's lookaheads).
PATTERNS = "jaxguide:patterns"
MERGED_TOGETHER = frozenset({
    "properties", "patternProperties", "additionalProperties", ADDITIONAL_PARTS,
    "items", "prefixItems", "additionalItems", "enum", "const", MERGED_FROM})




_BOUNDS = frozenset({"minLength", "minItems", "minProperties", "maxLength", "maxItems",
                     "maxProperties", "minimum", "maximum", "exclusiveMinimum",
                     "exclusiveMaximum"})


_SCHEMA = (dict, bool)
# The JSON types a structural keyword's value may have (checked by `Combinators.check_shapes`;
# counts, bounds, `type`, `format`, `pattern` are checked where they are read).
KEYWORD_SHAPES = {
    "required": (list,), "enum": (list,), "prefixItems": (list,), "properties": (dict,),
    "patternProperties": (dict,), "items": (dict, bool, list), "additionalItems": _SCHEMA,
    "additionalProperties": _SCHEMA, "propertyNames": _SCHEMA, "not": _SCHEMA,
    "contains": _SCHEMA, "if": _SCHEMA, "then": _SCHEMA, "else": _SCHEMA, "format": (str,),
    "pattern": (str,),
}
SHAPE_NAMES = {(list,): "an array", (dict,): "an object", (str,): "a string",
               _SCHEMA: "a schema (object or boolean)",
               (dict, bool, list): "a schema or an array of schemas"}


def is_unread(key) -> bool:
    """Whether the normalizer never reads keyword `key`: an annotation, or a keyword it neither
    implements nor refuses (`x-...`, `_format`; its own `jaxguide:` markers among them)."""
    return key in ANNOTATIONS or (key not in IMPLEMENTED and key not in UNSUPPORTED)


def not_bodies(s: dict) -> list:
    """The bodies of a dict's `not` (merged nots are `{"anyOf": [...]}`)."""
    if "not" not in s:
        return []
    body = s["not"]
    if isinstance(body, dict) and set(body) == {"anyOf"} and isinstance(body["anyOf"], list):
        return list(body["anyOf"])
    return [body]


def check_type_keyword(value, pointer: str) -> None:
    """Refuses a `type` that is not a known type name or an array of them."""
    if isinstance(value, str) and (value in ALL_TYPES or value == "integer"):
        return  # (the usual case, checked first)
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
        raise InvalidSchemaError("type must be a string or an array of strings", pointer,
                                 "type")
    for name in names:
        if name not in ALL_TYPES and name != "integer":
            raise InvalidSchemaError(f"unknown type {name!r}", pointer, "type")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _merge_patterns(out: dict, value: str, pointer: str) -> None:
    """Merges a second `pattern` into `out`: their product automaton written back as one
    pattern, or, when that regex is too large or either pattern has lookaheads, `value` kept
    apart under PATTERNS (the lexer builds their product)."""
    cur = out["pattern"]
    try:
        if split_lookaheads(cur)[1] or split_lookaheads(value)[1]:
            raise RegexTooLarge("lookaheads")  # the lexer reads those
        both = intersection_pattern((cur, value))
    except RegexTooLarge as e:
        if len(out.get(PATTERNS, ())) >= MAX_KEPT_APART_PATTERNS:
            raise JsonSchemaError(f"allOf: cannot merge two different 'pattern' values ({e}; "
                                  f"more than {MAX_KEPT_APART_PATTERNS} kept apart)", pointer,
                                  "pattern") from None
        out[PATTERNS] = (*out.get(PATTERNS, ()), value)
        return
    except PatternError as e:
        raise JsonSchemaError(f"allOf: cannot merge two different 'pattern' values ({e})",
                              pointer, "pattern") from None
    out["pattern"] = both if both is not None else "[]"  # [] matches nothing


def _value_schema(s: dict, name: str):
    """The schema that object schema `s` gives the value of member `name` when it is one
    schema (a declared property, or additionalProperties when no pattern may apply), else
    None."""
    properties = s.get("properties")
    if isinstance(properties, dict) and name in properties:
        return properties[name]
    if s.get("patternProperties"):
        return None
    extra = s.get("additionalProperties")
    return extra if isinstance(extra, (dict, bool)) and extra is not True else None


class Combinators:
    """The schema-level half of normalization: one root, its draft and its options."""

    def __init__(self, root, additional_properties_default: bool, lenient: bool,
                 formats: str = "assert"):
        self.root = root
        self.additional_default = additional_properties_default
        self.lenient = lenient
        self.formats = formats  # formats.FORMAT_MODES
        self.values = ValueChecker(root, self.unsupported, formats)
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = bool(re.search(r"draft-0[0-7]", str(schema_uri)))
        self.draft4 = "draft-04" in str(schema_uri) or "draft-03" in str(schema_uri)
        # items as an array of position schemas (draft <= 2019-09), else prefixItems
        self.tuple_items = self.old_draft or "2019-09" in str(schema_uri)
        self.expansions: dict[int, tuple] = {}  # id(schema) -> (schema, expand's result)
        self.refs = References(root)

    # --- errors ----------------------------------------------------------------------------
    def unsupported(self, keyword: str, pointer: str, why: str = ""):
        message = f"keyword {keyword!r} cannot be enforced" + (f" ({why})" if why else "")
        if self.lenient:
            warnings.warn(f"jaxguide JSON Schema: {message} at {pointer or '#'}; ignored "
                          "(lenient)", stacklevel=4)
            return
        raise JsonSchemaError(message + "; pass lenient=True to ignore it", pointer, keyword)

    def check_shapes(self, schema: dict, pointer: str) -> None:
        """Refuses a structural keyword whose value has the wrong JSON type, before allOf
        merges it with others (`KEYWORD_SHAPES`)."""
        for key, allowed in KEYWORD_SHAPES.items():
            if key not in schema:
                continue
            value = schema[key]
            if key == "required" and isinstance(value, bool) and self.draft4:
                continue  # draft 3: `required: true` on the property itself
            if not isinstance(value, allowed):
                raise InvalidSchemaError(f"{key} must be {SHAPE_NAMES[allowed]}", pointer, key)
            if key == "required" and not all(isinstance(name, str) for name in value):
                raise InvalidSchemaError("required must be an array of strings", pointer, key)

    # --- $ref ------------------------------------------------------------------------------
    def resolve_ref(self, ref, pointer: str):
        """(the subschema `ref` names, its canonical `#/...` pointer); JsonSchemaError when it
        names none (`refs.References`)."""
        return self.refs.resolve(ref, pointer)

    # --- normalization: $ref siblings, allOf, anyOf/oneOf distribution ---------------------
    def expand(self, schema, pointer: str, depth: int = 0):
        """Normalizes combinators: -> "any" | "none" | a list of alternatives, each a dict
        without $ref/allOf/anyOf/oneOf, or ("ref", pointer) for a reference lowered lazily
        (which is how recursion stays finite). The result (or error) of each schema object is
        remembered: oneOf expands its branches twice (`oneof_excluded_types`), which without
        it is exponential in the oneOf nesting depth. Callers do not modify the result."""
        if depth > MAX_SCHEMA_NESTING:
            raise SchemaNestingError("$ref/allOf nesting too deep (a reference cycle without "
                                     "structure?)", pointer, "$ref")
        if not isinstance(schema, dict) or not schema:
            return self.expand_once(schema, pointer, depth)
        known = self.expansions.get(id(schema))
        if known is not None and known[0] is schema:  # (the schema is kept alive there)
            if isinstance(known[1], JsonSchemaError):
                raise known[1].with_traceback(None)
            return known[1]
        try:
            result = self.expand_once(schema if schema.keys().isdisjoint(unevaluated.KEYWORDS)
                                      else unevaluated.rewrite(self, schema, pointer),
                                      pointer, depth)
        except JsonSchemaError as error:
            self.expansions[id(schema)] = (schema, error)
            raise
        self.expansions[id(schema)] = (schema, result)
        return result

    def trivial_or_checked(self, schema, pointer: str):
        """"any" / "none" for `true` / `{}` / `false`; else None once the schema object's
        keyword values have been checked (InvalidSchemaError / JsonSchemaError)."""
        if schema is True or (isinstance(schema, dict) and not schema):
            return "any"
        if schema is False:
            return "none"
        if not isinstance(schema, dict):
            raise JsonSchemaError(f"a schema must be an object or a boolean, not "
                                  f"{type(schema).__name__}", pointer)
        for key, value in schema.items():
            if value is None and key != "const" and (key in IMPLEMENTED or key in UNSUPPORTED):
                raise InvalidSchemaError(f"{key} must not be null", pointer, key)
        if "type" in schema:
            check_type_keyword(schema["type"], pointer)
        self.check_shapes(schema, pointer)
        return None

    def expand_once(self, schema, pointer: str, depth: int):
        """`expand` without the memo."""
        trivial = self.trivial_or_checked(schema, pointer)
        if trivial is not None:
            return trivial
        schema = dict(schema)
        conjuncts = []  # each: a list of alternatives
        if "$ref" in schema:
            _, target_ptr = self.resolve_ref(schema.pop("$ref"), pointer)
            if self.old_draft or not any(k in IMPLEMENTED or k in UNSUPPORTED for k in schema):
                return [("ref", target_ptr)]
            conjuncts.append([("ref", target_ptr)])
        for key in ("$dynamicRef", "$recursiveRef"):  # (`References.resolve_dynamic`)
            if key in schema:
                _, target_ptr = self.refs.resolve_dynamic(key, schema.pop(key), pointer)
                conjuncts.append([("ref", target_ptr)])
        if "allOf" in schema:
            subs = schema.pop("allOf")
            if not isinstance(subs, list) or not subs:
                raise JsonSchemaError("allOf must be a non-empty array", pointer, "allOf")
            for i, sub in enumerate(subs):
                e = self.expand(sub, f"{pointer}/allOf/{i}", depth + 1)
                if e == "none":
                    return "none"
                if e != "any":
                    conjuncts.append(e)
        for key in ("anyOf", "oneOf"):
            if key not in schema:
                continue
            subs = schema.pop(key)
            if not isinstance(subs, list) or not subs:
                raise JsonSchemaError(f"{key} must be a non-empty array", pointer, key)
            if key == "oneOf" and len(subs) > 1:
                required = schema.get("required")  # the parent's: required in every branch
                required = tuple(required) if isinstance(required, list) else ()
                excluded = self.oneof_excluded_types(subs, schema.get("type"), pointer, depth,
                                                     required)
                if excluded is None:
                    exact = self.exact_oneof(subs, pointer, depth, required,  # None: anyOf
                                             schema.get("type"))
                    if exact == "none":
                        return "none"
                    if exact is not None:
                        if exact != "any":
                            conjuncts.append(exact)
                        continue
                if excluded:
                    keep = [t for t in ALL_TYPES if t not in excluded]
                    if not keep:
                        return "none"
                    conjuncts.append([{"type": keep}])
            branches = []
            for i, sub in enumerate(subs):
                e = self.expand(sub, f"{pointer}/{key}/{i}", depth + 1)
                if e == "any":
                    branches = None
                    break
                if e != "none":
                    branches += e
                if len(branches) > MAX_ALLOF_PRODUCT:
                    raise JsonSchemaError(f"more than {MAX_ALLOF_PRODUCT} alternatives after "
                                          f"distributing {key}", pointer, key)
            if branches is None:
                continue  # one branch accepts anything
            if not branches:
                return "none"
            conjuncts.append(branches)
        if any(k in IMPLEMENTED or k in UNSUPPORTED for k in schema):
            conjuncts.insert(0, [schema])
        if not conjuncts:
            return "any"
        return self.conjoin(conjuncts, pointer, depth)

    def conjoin(self, conjuncts, pointer, depth):
        combos = [[]]
        for alternatives in conjuncts:
            combos = [c + [a] for c in combos for a in alternatives]
            if len(combos) > MAX_ALLOF_PRODUCT:
                return self.conjoin_pruned(conjuncts, pointer, depth)
        out = []
        for combo in combos:
            if len(combo) == 1:
                out.append(combo[0])
                continue
            refs = [i for i, c in enumerate(combo) if isinstance(c, tuple)]
            if refs:  # a reference merged with other parts is inlined, in its place (the
                # order of the parts is the order of the merged properties)
                at = refs[0]
                target, tptr = self.resolve_ref(combo[at][1], pointer)
                e = self.expand(target, tptr, depth + 1)
                if e == "none":
                    continue
                e = [{}] if e == "any" else e
                sub = self.conjoin([[c] for c in combo[:at]] + [e] +
                                   [[c] for c in combo[at + 1:]], pointer, depth + 1)
                if sub == "none":
                    continue
                out += [{}] if sub == "any" else sub
                continue
            merged = self.merge(combo, pointer)
            if merged is not None:
                out += self.after_merge(merged, pointer, depth)
        if not out:
            return "none"
        if any(o == {} for o in out):
            return "any"
        return out

    def conjoin_pruned(self, conjuncts, pointer, depth):
        """`conjoin` of a product beyond `MAX_ALLOF_PRODUCT` combinations: merged one conjunct
        at a time, dropping each partial merge that no value satisfies (types or enums
        disjoint, a required member that cannot be present), so that only the satisfiable
        combinations count against the budget (a complement's alternatives mostly contradict
        the branch they are merged with)."""
        if any(isinstance(a, tuple) for alternatives in conjuncts for a in alternatives):
            raise JsonSchemaError(f"more than {MAX_ALLOF_PRODUCT} alternatives after "
                                  "distributing allOf over anyOf/oneOf", pointer, "allOf")
        partial: list = [None]
        for alternatives in conjuncts:
            merged = []
            for p in partial:
                for a in alternatives:
                    m = a if p is None else self.merge([p, a], pointer)
                    if m is not None and not self.contradicts(m):
                        merged.append(m)
                if len(merged) > MAX_ALLOF_PRODUCT:  # as soon as it is known
                    raise JsonSchemaError(f"more than {MAX_ALLOF_PRODUCT} alternatives after "
                                          "distributing allOf over anyOf/oneOf", pointer,
                                          "allOf")
            partial = merged
        out = [m for p in partial for m in self.after_merge(p, pointer, depth)]
        if not out:
            return "none"
        return "any" if any(o == {} for o in out) else out

    @staticmethod
    def contradicts(s: dict) -> bool:
        """An object-only merged dict requiring a member it forbids (`properties: {a: false}`,
        also inside an allOf)."""
        t = s.get("type")
        if t not in ("object", ["object"]):
            return False
        properties = s.get("properties") or {}
        for name in s.get("required") or () if isinstance(s.get("required"), list) else ():
            sub = properties.get(name)
            if sub is False or (isinstance(sub, dict) and isinstance(sub.get("allOf"), list)
                                and any(x is False for x in sub["allOf"])):
                return True
        return False

    # Hooks of the complements (`negation.Negations`): an overlapping oneOf, and a merged dict
    # whose `not` needs the merged object to be read.
    def exact_oneof(self, subs: list, pointer: str, depth: int, required: tuple = (),
                    types=None):
        self.unsupported("oneOf", pointer, "branches not provably disjoint; lenient enforces "
                         "it as anyOf")

    def after_merge(self, merged: dict, pointer: str, depth: int) -> list:
        return [merged]

    def merge(self, schemas: list, pointer: str):
        """allOf of dicts (no $ref/allOf/anyOf/oneOf) -> one dict, or None if unsatisfiable.

        Keywords that act alone are merged pairwise (types intersected, bounds tightened,
        required united). Object, array and literal keywords interact across parts and are
        merged by `merge_objects`, `merge_arrays` and `merge_literals`. The merged dict keeps
        its sources under `MERGED_FROM` (enum values are checked against them).
        """
        out: dict = {}
        for s in schemas:
            for key, value in s.items():
                if key in MERGED_TOGETHER:
                    continue
                if key not in out:
                    out[key] = value
                    continue
                cur = out[key]
                if cur is value or canon(cur) == canon(value):
                    continue
                if key in _BOUNDS and not (_is_number(cur) and _is_number(value)) and not (
                        isinstance(cur, bool) or isinstance(value, bool)):  # draft-4 flags
                    out[key] = value if _is_number(cur) else cur  # read (and refused) later
                    continue
                if key == "type":
                    a = {cur} if isinstance(cur, str) else set(cur)
                    b = {value} if isinstance(value, str) else set(value)

                    def widen(t):
                        return t | ({"integer"} if "number" in t else set())
                    both = widen(a) & widen(b)
                    if not both:
                        return None
                    out[key] = sorted(both)
                elif key == "required":
                    out[key] = list(dict.fromkeys(list(cur) + list(value)))
                elif key in ("minLength", "minItems", "minProperties"):
                    out[key] = max(cur, value)
                elif key in ("maxLength", "maxItems", "maxProperties"):
                    out[key] = min(cur, value)
                elif key == "minimum" or (key == "exclusiveMinimum" and not isinstance(value,
                                                                                       bool)):
                    out[key] = max(cur, value)
                elif key == "maximum" or (key == "exclusiveMaximum" and not isinstance(value,
                                                                                       bool)):
                    out[key] = min(cur, value)
                elif key == "propertyNames" and isinstance(cur, (dict, bool)) and \
                        isinstance(value, (dict, bool)):
                    out[key] = {"allOf": [cur, value]}
                elif key == "pattern" and isinstance(cur, str) and isinstance(value, str):
                    _merge_patterns(out, value, pointer)
                elif key == "multipleOf" and all(isinstance(x, int) and not isinstance(
                        x, bool) and x > 0 for x in (cur, value)):
                    out[key] = math.lcm(cur, value)  # multiples of both
                elif key == "multipleOf" and decimal_lcm(cur, value) is not None:
                    out[key] = decimal_lcm(cur, value)
                elif key == "contains" and not any(
                        k in x for x in schemas for k in ("minContains", "maxContains")):
                    # some item matches each: the second as "some item fails items(not it)"
                    second = {"items": {"not": value}}
                    out["not"] = {"anyOf": [*not_bodies(out), second]} if "not" in out else \
                        second
                elif key in ("contains", "multipleOf"):
                    self.unsupported(key, pointer, "two different values in one allOf")
                elif key == "uniqueItems" and isinstance(cur, bool) and isinstance(value, bool):
                    out[key] = True  # one of them is: the items differ
                elif key in (WITNESS, PATTERNS):
                    out[key] = tuple(cur) + tuple(value)
                elif key == "not":  # not A and not B = not (A or B)
                    out[key] = {"anyOf": [*not_bodies(out), value]}
                elif is_unread(key):
                    continue
                else:
                    raise JsonSchemaError(f"allOf: cannot merge two different {key!r} values",
                                          pointer, key)
        if not self.merge_literals(schemas, out):
            return None
        self.merge_objects(schemas, out, pointer)
        self.merge_arrays(schemas, out)
        out[MERGED_FROM] = tuple(src for s in schemas for src in s.get(MERGED_FROM, (s,)))
        return out

    @staticmethod
    def merge_literals(schemas: list, out: dict) -> bool:
        """`enum` / `const` of all parts -> one `enum` of the values in every part (numbers
        compared by value); False if none is."""
        lists = [[s["const"]] if "const" in s else s["enum"]
                 for s in schemas if "const" in s or "enum" in s]
        if not lists:
            return True
        for values in lists:
            if not isinstance(values, list):
                raise JsonSchemaError("enum must be an array", "", "enum")
        values = lists[0]
        for other in lists[1:]:
            keep = {canon(v) for v in other}
            values = [v for v in values if canon(v) in keep]
        out["enum"] = values
        return bool(values)

    def additional_parts(self, s: dict) -> list:
        """[(patterns, schema)]: `schema` applies to the names that s does not declare and
        that none of `patterns` matches (s's additionalProperties; merged dicts keep one entry
        per part). Trivial (true) parts are left out."""
        if ADDITIONAL_PARTS in s:
            return list(s[ADDITIONAL_PARTS])
        additional = s.get("additionalProperties")
        if additional is None or additional is True or additional == {}:
            return []
        return [(tuple(s.get("patternProperties") or {}), additional)]

    def key_matches(self, pattern: str, name: str, pointer: str) -> bool:
        try:
            return ecma_search(pattern, name)
        except PatternError as e:
            self.unsupported("patternProperties", pointer, f"pattern {pattern!r}: {e}")
            return False

    def merge_objects(self, schemas: list, out: dict, pointer: str) -> None:
        """properties / patternProperties / additionalProperties of all parts. A name that one
        part declares gets, from every other part, that part's schema for an undeclared name
        (its additionalProperties unless one of its patterns matches); patterns are united;
        the additionalProperties of each part are kept apart (`ADDITIONAL_PARTS`), since each
        applies only where that part's own patterns do not match."""
        object_keys = ("properties", "patternProperties", "additionalProperties",
                       ADDITIONAL_PARTS)
        if not any(k in s for s in schemas for k in object_keys):
            return
        for s in schemas:
            for k in ("properties", "patternProperties"):
                if not isinstance(s.get(k, {}), dict):
                    raise JsonSchemaError(f"{k} must be an object", pointer, k)
        names = list(dict.fromkeys(k for s in schemas for k in s.get("properties", {})))
        properties = {}
        for name in names:
            subs = [s["properties"][name] for s in schemas if name in s.get("properties", {})]
            for s in schemas:
                if name in s.get("properties", {}):
                    continue
                subs += [schema for patterns, schema in self.additional_parts(s)
                         if not any(self.key_matches(p, name, pointer) for p in patterns)]
            properties[name] = subs[0] if len(subs) == 1 else {"allOf": subs}
        if properties:
            out["properties"] = properties
        patterns: dict = {}
        for s in schemas:
            for p, ps in (s.get("patternProperties") or {}).items():
                patterns[p] = {"allOf": [patterns[p], ps]} if p in patterns else ps
        if patterns:
            out["patternProperties"] = patterns
        parts = [part for s in schemas for part in self.additional_parts(s)]
        if parts:
            out[ADDITIONAL_PARTS] = parts
        elif any("additionalProperties" in s for s in schemas):
            out["additionalProperties"] = True

    @staticmethod
    def array_parts(s: dict) -> tuple[list, Any]:
        """(prefix schemas, schema of the items after them) of one schema's array keywords:
        2020-12 prefixItems + items, or draft <= 2019 array-form items + additionalItems."""
        items = s.get("items")
        if isinstance(items, list):
            return items, s.get("additionalItems", True)
        return list(s.get("prefixItems") or []), True if items is None else items

    def merge_arrays(self, schemas: list, out: dict) -> None:
        """items / prefixItems / additionalItems of all parts, position by position: index i
        gets every part's schema for index i (its prefix schema, or the schema of its rest)."""
        if not any(k in s for s in schemas for k in ("items", "prefixItems", "additionalItems")):
            return
        parts = [self.array_parts(s) for s in schemas]

        def conjunction(subs):
            subs = [x for x in subs if x is not True and x != {}]
            return True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}

        length = max(len(prefix) for prefix, _ in parts)
        prefix = [conjunction([p[i] if i < len(p) else rest for p, rest in parts])
                  for i in range(length)]
        out.pop("additionalItems", None)
        if prefix:
            out["prefixItems"] = prefix
        out["items"] = conjunction([rest for _, rest in parts])

    # --- oneOf disjointness --------------------------------------------------------------
    _TYPE_KEYWORDS = {
        "object": {"properties", "required", "additionalProperties", "patternProperties",
                   "propertyNames", "minProperties", "maxProperties", "dependencies",
                   "dependentRequired", "dependentSchemas", "unevaluatedProperties",
                   ADDITIONAL_PARTS},
        "array": {"items", "prefixItems", "additionalItems", "minItems", "maxItems",
                  "uniqueItems", "contains", "unevaluatedItems"},
        "string": {"minLength", "maxLength", "pattern", PATTERNS},
        "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    }
    _ANY_TYPE_KEYWORDS = {"not", "if", "then", "else"}

    def oneof_excluded_types(self, subs, parent_type, pointer, depth=0, parent_required=()):
        """Types no value of which can match exactly one branch, or None if the branches are
        not provably disjoint on the other types (then oneOf != anyOf)."""
        branches = []
        for i, sub in enumerate(subs):
            try:
                e = self.expand(sub, f"{pointer}/oneOf/{i}", depth + 1)
            except (SchemaNestingError, InvalidSchemaError):
                raise
            except JsonSchemaError:
                return None
            if e == "none":
                continue
            if e == "any":
                e = [{}]
            alts = []
            for alt in e:
                if isinstance(alt, tuple):
                    target, tptr = self.resolve_ref(alt[1], pointer)
                    try:
                        inner = self.expand(target, tptr, depth + 2)
                    except (SchemaNestingError, InvalidSchemaError):
                        raise
                    except JsonSchemaError:
                        return None
                    if inner == "none":
                        continue
                    inner = [{}] if inner == "any" else inner
                    if any(isinstance(x, tuple) for x in inner):
                        return None
                    alts += inner
                else:
                    alts.append(alt)
            if alts:
                branches.append(alts)
        wanted = ALL_TYPES
        if parent_type is not None:
            pt = {parent_type} if isinstance(parent_type, str) else set(parent_type)
            wanted = [t for t in ALL_TYPES if t in pt or (t == "number" and "integer" in pt)]
        excluded = set()
        for t in wanted:
            kinds = [[self._classify(alt, t) for alt in b] for b in branches]
            live = [(b, k) for b, k in zip(branches, kinds) if any(x != "none" for x in k)]
            full = [b for b, k in live if "all" in k]
            if len(full) >= 2:
                excluded.add(t)
                continue
            if full and len(live) > 1:
                return None
            for i in range(len(live)):
                for j in range(i + 1, len(live)):
                    for a in live[i][0]:
                        for b in live[j][0]:
                            if not self._disjoint_on(a, b, t, parent_required):
                                return None
        return excluded

    def _classify(self, s: dict, t: str) -> str:
        types = s.get("type")
        if types is not None:
            types = {types} if isinstance(types, str) else set(types)
            if t == "number" and "number" not in types:
                if "integer" not in types:
                    return "none"
                return "partial"
            if t != "number" and t not in types:
                return "none"
        if "const" in s or "enum" in s:
            values = [s["const"]] if "const" in s else s.get("enum") or []
            return "partial" if any(type_of(v) == t for v in values) else "none"
        if set(s) & (self._TYPE_KEYWORDS.get(t, set()) | self._ANY_TYPE_KEYWORDS):
            return "partial"
        if t == "string" and asserted(s.get("format"), self.formats):
            return "partial"
        return "all"

    def _disjoint_on(self, a: dict, b: dict, t: str, parent_required=()) -> bool:
        def values(s):
            if "const" in s:
                return {canon(s["const"])}
            if "enum" in s and isinstance(s["enum"], list):
                return {canon(v) for v in s["enum"]}
            return None

        va, vb = values(a), values(b)
        if va is not None and vb is not None and not (va & vb):
            return True
        if t == "object":
            ra = set(a.get("required") or []) | set(parent_required)
            rb = set(b.get("required") or []) | set(parent_required)
            # A name one side requires, whose values the two sides constrain apart (the other
            # side's declared schema for it, or its additionalProperties).
            named = [(k, sx, sy) for x, y, rx in ((a, b, ra), (b, a, rb)) for k in sorted(rx)
                     for sx, sy in [(_value_schema(x, k), _value_schema(y, k))]
                     if sx is not None and sy is not None and True not in (sx, sy)]
            if any(False in (sx, sy) for _, sx, sy in named):
                return True  # a required name the other side (or the side itself) forbids
            pairs = [(sx, sy) for _, sx, sy in named]
            for sa, sb in pairs:
                if isinstance(sa, dict) and isinstance(sb, dict):
                    xa, xb = values(sa), values(sb)
                    if xa is not None and xb is not None and not (xa & xb):
                        return True
                    ta, tb = sa.get("type"), sb.get("type")
                    if ta is not None and tb is not None and "$ref" not in sa and \
                            "$ref" not in sb:
                        ta = {ta} if isinstance(ta, str) else set(ta)
                        tb = {tb} if isinstance(tb, str) else set(tb)
                        for x in (ta, tb):
                            if "number" in x:
                                x.add("integer")
                        if not (ta & tb):
                            return True
            for x, y, rx in ((a, b, ra), (b, a, rb)):
                if y.get("additionalProperties") is False and not y.get("patternProperties"):
                    if rx - set(y.get("properties") or {}):
                        return True
            # last, the costlier proof (references followed, jsonschema, automata), for the
            # names both sides require
            if any(self._values_disjoint(sa, sb) for k, sa, sb in named
                   if k in ra and k in rb and isinstance(sa, dict) and isinstance(sb, dict)):
                return True
        if t == "number":
            def interval(s):
                lo = s.get("minimum", s.get("exclusiveMinimum"))
                hi = s.get("maximum", s.get("exclusiveMaximum"))
                lo = lo if isinstance(lo, (int, float)) and not isinstance(lo, bool) else None
                hi = hi if isinstance(hi, (int, float)) and not isinstance(hi, bool) else None
                return lo, hi
            (la, ha), (lb, hb) = interval(a), interval(b)
            if ha is not None and lb is not None and ha < lb:
                return True
            if hb is not None and la is not None and hb < la:
                return True
        return False

    def _values_disjoint(self, sa, sb) -> bool:
        """Whether no value satisfies both property schemas, as far as cheaply proven: their
        references followed, a const/enum set none of whose values the other accepts (asked
        of `jsonschema`, exact), or two string patterns whose product is empty."""
        try:
            da, db = self.single_alternative(sa, ""), self.single_alternative(sb, "")
        except JsonSchemaError:
            return False
        if da is None or db is None:
            return False
        for x, y in ((da, db), (db, da)):
            values = [x["const"]] if "const" in x else x.get("enum")
            if isinstance(values, list) and len(values) <= 64:
                try:
                    check = self.values.validity(y, "", "oneOf")
                    return not any(check(v) for v in values)
                except JsonSchemaError:
                    return False
        if da.get("type") == "string" and db.get("type") == "string" and isinstance(
                da.get("pattern"), str) and isinstance(db.get("pattern"), str):
            try:
                return intersection_pattern((da["pattern"], db["pattern"])) is None
            except PatternError:
                return False
        return False

    def single_alternative(self, schema, pointer: str) -> dict | None:
        """`schema` with its references resolved and its combinators merged, as one dict
        ({} for any value), or None if it has several alternatives or none."""
        for depth in range(MAX_SCHEMA_NESTING + 1):
            e = self.expand(schema, pointer, depth)
            if e == "any":
                return {}
            if e == "none" or len(e) != 1:
                return None
            if isinstance(e[0], dict):
                return e[0]
            schema, pointer = self.resolve_ref(e[0][1], pointer)
        raise SchemaNestingError("$ref/allOf nesting too deep", pointer, "$ref")

