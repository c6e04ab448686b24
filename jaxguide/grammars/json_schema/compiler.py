"""JSON Schema -> grammar IR: the lowering (see the package docstring for the design note)."""

from __future__ import annotations

import functools
import json
import math
import re
import warnings
from decimal import Decimal
from typing import Any

import jsonschema

from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema.automata import (
    Dfa,
    ecma_search,
    names_node,
    pattern_node,
)
from jaxguide.grammars.json_schema.dialect import exact_numbers, validator_class
from jaxguide.grammars.json_schema.errors import JsonSchemaError
from jaxguide.grammars.json_schema.formats import FORMATS, format_check
from jaxguide.grammars.json_schema.layout import Layout
from jaxguide.grammars.json_schema.limits import (
    MAX_ALLOF_PRODUCT,
    MAX_COUNT,
    MAX_ENUMERATED_MULTIPLES,
    MAX_INDENT_DEPTH,
    MAX_PATTERN_GROUPS,
    MAX_PROPERTY_COUNT,
    MAX_RULES,
    MAX_SCHEMA_NESTING,
    STRING_CHUNK,
)
from jaxguide.grammars.json_schema.numbers import (
    INTEGER_RX,
    NUMBER_RX,
    int_range,
    number_literal,
    number_range,
)
from jaxguide.grammars.json_schema.pattern import PatternError, pattern_to_units
from jaxguide.grammars.json_schema.units import (
    ANY_UNIT,
    literal_units,
    not_names_units,
    wrap,
)

ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$comment", "title", "description", "default", "examples",
    "example", "readOnly", "writeOnly", "deprecated", "$anchor", "$vocabulary",
    "$dynamicAnchor", "$recursiveAnchor", "contentEncoding", "contentMediaType",
    "contentSchema", "$defs", "definitions", "discriminator", "nullable", "xml",
    "externalDocs",
})
UNSUPPORTED = frozenset({
    "not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains",
    "dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef",
})
IMPLEMENTED = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "anyOf", "oneOf", "allOf", "$ref",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf",
})
ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")  # integer within number


def _count(s: dict, keyword: str, pointer: str, default):
    """A count keyword (minLength, maxItems, ...): a non-negative integer, or a float of
    integral value (2.0 is 2 in JSON Schema); `default` when absent."""
    value = s.get(keyword)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JsonSchemaError(f"{keyword} must be a non-negative integer", pointer, keyword)
    return value


def _to_decimal(value, pointer: str, keyword: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JsonSchemaError(f"{keyword} must be a number", pointer, keyword)
    if isinstance(value, float) and not math.isfinite(value):
        raise JsonSchemaError(f"{keyword} must be finite", pointer, keyword)
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _ptr_escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _type_of(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(type(value).__name__)


def _json_value(value):
    """`value` with every integral float made an int: JSON Schema compares numbers by value
    (2.0 == 2), never booleans with numbers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _canon(value) -> str:
    """A text equal for JSON values that JSON Schema deems equal."""
    return json.dumps(_json_value(value), sort_keys=True)


# Internal keys of merged allOf parts (not JSON Schema keywords).
_MERGED_FROM = "jaxguide:merged_from"  # the source dicts of a merged dict
_ADDITIONAL_PARTS = "jaxguide:additional_parts"  # [(patterns, schema)] of merged parts
_MERGED_TOGETHER = frozenset({
    "properties", "patternProperties", "additionalProperties", _ADDITIONAL_PARTS,
    "items", "prefixItems", "additionalItems", "enum", "const", _MERGED_FROM})


class _ValueChecker:
    """Exact validity of concrete values (enum / const values, property names) under the
    subschemas of one root, in jaxguide's dialect (`json_schema_dialect`) with this module's
    ECMA engine and format regexes: the same semantics the grammar enforces."""

    def __init__(self, root, lowering: _Lowering):
        self.root = root if isinstance(root, (dict, bool)) else {}
        self.lowering = lowering
        self._validator = None

    def _search(self, pattern: str, text: str) -> bool:
        try:
            return ecma_search(pattern, text)
        except PatternError as e:
            self.lowering.unsupported("pattern", "", f"{pattern!r}: {e}")
            return True  # lenient: the keyword is ignored

    def is_valid(self, value, schema, pointer: str, keyword: str) -> bool:
        if self._validator is None:
            formats = jsonschema.FormatChecker(formats=())
            for name, pattern in FORMATS.items():
                formats.checks(name)(functools.partial(format_check, pattern))
            cls = validator_class(self.root, self._search)
            self._validator = cls(exact_numbers(self.root), format_checker=formats)
        try:
            return self._validator.evolve(schema=exact_numbers(schema)).is_valid(
                exact_numbers(value))
        except JsonSchemaError:
            raise
        except Exception as e:  # noqa: BLE001 (jsonschema / referencing errors)
            raise JsonSchemaError(f"cannot check the {keyword} values ({type(e).__name__}: "
                                  f"{e})", pointer, keyword) from None


class _Lowering:
    def __init__(self, root, whitespace, additional_properties_default, lenient):
        self.root = root
        self.layout = Layout(whitespace)
        self.additional_default = additional_properties_default
        self.lenient = lenient
        self.terminals: dict[str, int] = {}
        self.nonterminals: list[str] = []
        self.rules: list[tuple[int, tuple]] = []
        self.memo: dict = {}
        self.values = _ValueChecker(root, self)
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = bool(re.search(r"draft-0[0-7]", str(schema_uri)))
        self.draft4 = "draft-04" in str(schema_uri) or "draft-03" in str(schema_uri)

    # --- IR building -----------------------------------------------------------------------
    # Symbols while building: a terminal is ~index (negative), a nonterminal its index.
    def term(self, regex: str) -> int:
        index = self.terminals.get(regex)
        if index is None:
            index = self.terminals[regex] = len(self.terminals)
        return ~index

    def new_nt(self, name: str) -> int:
        self.nonterminals.append(name)
        return len(self.nonterminals) - 1

    def rule(self, lhs: int, rhs) -> None:
        self.rules.append((lhs, tuple(rhs)))
        if len(self.rules) > MAX_RULES:
            raise JsonSchemaError(f"the grammar exceeds {MAX_RULES} rules")

    def finish(self, start: int) -> GrammarIR:
        n_t = len(self.terminals)
        terminals = tuple(TerminalIR(f"T{i}", rx) for i, rx in enumerate(self.terminals))
        rules = tuple((lhs, tuple([n_t + s if s >= 0 else ~s for s in rhs]))
                      for lhs, rhs in self.rules)
        return GrammarIR(terminals=terminals, nonterminals=tuple(self.nonterminals),
                         rules=rules, start=start)

    # --- errors ----------------------------------------------------------------------------
    def unsupported(self, keyword: str, pointer: str, why: str = ""):
        message = f"keyword {keyword!r} cannot be enforced" + (f" ({why})" if why else "")
        if self.lenient:
            warnings.warn(f"jaxguide JSON Schema: ignoring {message} at {pointer or '#'}",
                          stacklevel=4)
            return
        raise JsonSchemaError(message + "; pass lenient=True to ignore it", pointer, keyword)

    # --- $ref ------------------------------------------------------------------------------
    def resolve_ref(self, ref, pointer: str):
        if not isinstance(ref, str):
            raise JsonSchemaError("$ref must be a string", pointer, "$ref")
        if not ref.startswith("#"):
            raise JsonSchemaError(f"$ref {ref!r} is not local (remote references are not "
                                  "supported)", pointer, "$ref")
        from urllib.parse import unquote

        frag = unquote(ref[1:])
        node = self.root
        if frag and not frag.startswith("/"):
            raise JsonSchemaError(f"$ref {ref!r}: anchors are not supported", pointer, "$ref")
        for part in frag.split("/")[1:] if frag else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise JsonSchemaError(f"$ref {ref!r} does not resolve", pointer, "$ref")
        if not isinstance(node, (dict, bool)):
            raise JsonSchemaError(f"$ref {ref!r} is not a schema", pointer, "$ref")
        return node, "#" + frag

    # --- normalization: $ref siblings, allOf, anyOf/oneOf distribution ---------------------
    def expand(self, schema, pointer: str, depth: int = 0):
        """Normalizes combinators: -> "any" | "none" | a list of alternatives, each a dict
        without $ref/allOf/anyOf/oneOf, or ("ref", pointer) for a reference lowered lazily
        (which is how recursion stays finite)."""
        if depth > MAX_SCHEMA_NESTING:
            raise JsonSchemaError("$ref/allOf nesting too deep (a reference cycle without "
                                  "structure?)", pointer, "$ref")
        if schema is True or (isinstance(schema, dict) and not schema):
            return "any"
        if schema is False:
            return "none"
        if not isinstance(schema, dict):
            raise JsonSchemaError(f"a schema must be an object or a boolean, not "
                                  f"{type(schema).__name__}", pointer)
        schema = dict(schema)
        conjuncts = []  # each: a list of alternatives
        if "$ref" in schema:
            _, target_ptr = self.resolve_ref(schema.pop("$ref"), pointer)
            if self.old_draft or not any(k in IMPLEMENTED or k in UNSUPPORTED for k in schema):
                return [("ref", target_ptr)]
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
                excluded = self.oneof_excluded_types(subs, schema.get("type"), pointer, depth)
                if excluded is None:
                    self.unsupported("oneOf", pointer, "branches not provably disjoint; "
                                     "lenient enforces it as anyOf")
                elif excluded:
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
                raise JsonSchemaError(f"more than {MAX_ALLOF_PRODUCT} alternatives after "
                                      "distributing allOf over anyOf/oneOf", pointer, "allOf")
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
                out.append(merged)
        if not out:
            return "none"
        if any(o == {} for o in out):
            return "any"
        return out

    def _deref(self, target_ptr: str, pointer: str):
        return self.resolve_ref(target_ptr, pointer)

    def merge(self, schemas: list, pointer: str):
        """allOf of dicts (no $ref/allOf/anyOf/oneOf) -> one dict, or None if unsatisfiable.

        Keywords that act alone are merged pairwise (types intersected, bounds tightened,
        required united). Object, array and literal keywords interact across parts and are
        merged by `merge_objects`, `merge_arrays` and `merge_literals`. The merged dict keeps
        its sources under `_MERGED_FROM` (enum values are checked against them).
        """
        out: dict = {}
        for s in schemas:
            for key, value in s.items():
                if key in _MERGED_TOGETHER:
                    continue
                if key not in out:
                    out[key] = value
                    continue
                cur = out[key]
                if _canon(cur) == _canon(value):
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
                elif key in ANNOTATIONS or (key not in IMPLEMENTED and key not in UNSUPPORTED):
                    continue
                else:
                    raise JsonSchemaError(f"allOf: cannot merge two different {key!r} values",
                                          pointer, key)
        if not self.merge_literals(schemas, out):
            return None
        self.merge_objects(schemas, out, pointer)
        self.merge_arrays(schemas, out)
        out[_MERGED_FROM] = tuple(src for s in schemas for src in s.get(_MERGED_FROM, (s,)))
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
            keep = {_canon(v) for v in other}
            values = [v for v in values if _canon(v) in keep]
        out["enum"] = values
        return bool(values)

    def additional_parts(self, s: dict) -> list:
        """[(patterns, schema)]: `schema` applies to the names that s does not declare and
        that none of `patterns` matches (s's additionalProperties; merged dicts keep one entry
        per part). Trivial (true) parts are left out."""
        if _ADDITIONAL_PARTS in s:
            return list(s[_ADDITIONAL_PARTS])
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
        the additionalProperties of each part are kept apart (`_ADDITIONAL_PARTS`), since each
        applies only where that part's own patterns do not match."""
        object_keys = ("properties", "patternProperties", "additionalProperties",
                       _ADDITIONAL_PARTS)
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
            out[_ADDITIONAL_PARTS] = parts
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
                   _ADDITIONAL_PARTS},
        "array": {"items", "prefixItems", "additionalItems", "minItems", "maxItems",
                  "uniqueItems", "contains", "unevaluatedItems"},
        "string": {"minLength", "maxLength", "pattern"},
        "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    }
    _ANY_TYPE_KEYWORDS = {"not", "if", "then", "else"}

    def oneof_excluded_types(self, subs, parent_type, pointer, depth=0):
        """Types no value of which can match exactly one branch, or None if the branches are
        not provably disjoint on the other types (then oneOf != anyOf)."""
        branches = []
        for i, sub in enumerate(subs):
            try:
                e = self.expand(sub, f"{pointer}/oneOf/{i}", depth + 1)
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
                            if not self._disjoint_on(a, b, t):
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
            return "partial" if any(_type_of(v) == t for v in values) else "none"
        if set(s) & (self._TYPE_KEYWORDS.get(t, set()) | self._ANY_TYPE_KEYWORDS):
            return "partial"
        if t == "string" and s.get("format") in FORMATS:
            return "partial"
        return "all"

    def _disjoint_on(self, a: dict, b: dict, t: str) -> bool:
        def values(s):
            if "const" in s:
                return {_canon(s["const"])}
            if "enum" in s and isinstance(s["enum"], list):
                return {_canon(v) for v in s["enum"]}
            return None

        va, vb = values(a), values(b)
        if va is not None and vb is not None and not (va & vb):
            return True
        if t == "object":
            pa, pb = a.get("properties") or {}, b.get("properties") or {}
            ra, rb = set(a.get("required") or []), set(b.get("required") or [])
            for k in set(pa) & set(pb) & ra & rb:
                sa, sb = pa[k], pb[k]
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

    # --- values ----------------------------------------------------------------------------
    def value(self, schema, pointer: str, depth: int):
        """Nonterminal for the JSON values valid under `schema`."""
        if depth > MAX_INDENT_DEPTH and self.layout.indented:
            return self.new_nt("too_deep")  # no rules: nesting limit of the indented layout
        key_depth = depth if self.layout.indented else 0
        memo_key = (id(schema), key_depth)
        if isinstance(schema, dict) and memo_key in self.memo:
            return self.memo[memo_key][0]
        nt = self.new_nt(f"v{len(self.nonterminals)}")
        if isinstance(schema, dict):
            self.memo[memo_key] = (nt, schema)
        e = self.expand(schema, pointer)
        if e == "none":
            return nt
        if e == "any":
            self.rule(nt, [self.any_value(depth)])
            return nt
        for alt in e:
            if isinstance(alt, tuple):
                target, tptr = self._deref(alt[1], pointer)
                self.rule(nt, [self.value(target, tptr, depth)])
            else:
                self.alternative(nt, alt, pointer, depth)
        return nt

    def any_value(self, depth: int):
        key = ("any", depth if self.layout.indented else 0)
        if key in self.memo:
            return self.memo[key][0]
        nt = self.new_nt("any")
        self.memo[key] = (nt, None)
        self.alternative(nt, {}, "", depth)
        return nt

    def alternative(self, nt, s: dict, pointer: str, depth: int):
        """Adds rules nt -> (a value valid under dict schema s without combinators)."""
        if "const" in s or "enum" in s:
            self.literals(nt, s, pointer, depth)
            return
        if "not" in s:
            s = self.apply_not(s, pointer)
            if s is None:
                return
        for key in s:
            if key in UNSUPPORTED:
                if key == "uniqueItems" and s[key] is False:
                    continue
                if key in ("then", "else") and "if" not in s:
                    continue
                if key == "if" and "then" not in s and "else" not in s:
                    continue
                self.unsupported(key, pointer)
        types = s.get("type")
        if types is None:
            types = set(ALL_TYPES)
        else:
            tl = [types] if isinstance(types, str) else types
            if not isinstance(tl, list) or not all(isinstance(t, str) for t in tl):
                raise JsonSchemaError("type must be a string or an array of strings", pointer,
                                      "type")
            for t in tl:
                if t not in ALL_TYPES and t != "integer":
                    raise JsonSchemaError(f"unknown type {t!r}", pointer, "type")
            types = set(tl)
        if "integer" in types and "number" in types:
            types.discard("integer")
        for t in sorted(types):
            if t == "null":
                self.rule(nt, [self.term("null")])
            elif t == "boolean":
                self.rule(nt, [self.term("true|false")])
            elif t == "string":
                content = self.string_content(s, pointer, allow_chunks=True)
                if isinstance(content, tuple):
                    self.rule(nt, [self.chunked_string(content[1], content[2])])
                elif content is not None:
                    self.rule(nt, [self.term(f'"{content}"')])
            elif t in ("number", "integer"):
                rx = self.number_regex(s, pointer, integer=(t == "integer"))
                if rx is not None:
                    self.rule(nt, [self.term(rx)])
            elif t == "object":
                self.object(nt, s, pointer, depth)
            elif t == "array":
                self.array(nt, s, pointer, depth)

    def apply_not(self, s: dict, pointer: str):
        """`not` with only `type` (or a type-only $ref) removes those types; else unsupported."""
        neg = s["not"]
        if isinstance(neg, dict) and "$ref" in neg:
            resolved = self.single_alternative(neg, pointer)
            neg = neg if resolved is None else resolved
        rest = {k: v for k, v in s.items() if k != "not"}
        if neg is True or neg == {}:
            return None
        if neg is False:
            return rest
        if isinstance(neg, dict) and set(neg) - ANNOTATIONS == {"type"}:
            t = neg["type"]
            removed = {t} if isinstance(t, str) else set(t)
            types = rest.get("type", list(ALL_TYPES) + ["integer"])
            types = {types} if isinstance(types, str) else set(types)
            if "number" in types:
                types.add("integer")
            if "integer" in removed and "number" not in removed and "number" in types:
                self.unsupported("not", pointer, "a number that is not an integer")
                return rest
            if "number" in removed:
                removed.add("integer")
            rest["type"] = sorted(types - removed)
            if not rest["type"]:
                return None
            return rest
        self.unsupported("not", pointer, "only {\"not\": {\"type\": ...}} is supported")
        return rest

    def empty_container(self, pair: str, depth: int) -> list[int]:
        """`{}` / `[]`: the open and close tokens (no extra terminal), except in the indented
        layout, where the empty form has no line break."""
        lay = self.layout
        if lay.indented:
            return [self.term(lay.empty(pair))]
        return [self.term(lay.open(pair[0], depth)), self.term(lay.close(pair[1], depth))]

    def literals(self, nt, s: dict, pointer: str, depth: int) -> None:
        """Rules for the enum / const values of s that are valid under all of s (exact: each
        value is checked against every sibling keyword, including ones the grammar could not
        enforce, such as `not` or `uniqueItems`)."""
        values = [s["const"]] if "const" in s else s["enum"]
        if not isinstance(values, list):
            raise JsonSchemaError("enum must be an array", pointer, "enum")
        sources = s.get(_MERGED_FROM, (s,))
        keyword = "const" if "const" in s else "enum"
        floats = all(src.get("type") is None or "number" in (
            [src["type"]] if isinstance(src["type"], str) else src["type"]) for src in sources)
        strings = []
        seen = set()
        for v in values:
            if _canon(v) in seen or not all(
                    self.values.is_valid(v, source, pointer, keyword) for source in sources):
                continue
            seen.add(_canon(v))
            if isinstance(v, str):
                strings.append('"' + literal_units(v) + '"')
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                self.rule(nt, [self.term(number_literal(v, floats))])
            else:
                self.rule(nt, [self.literal_value(v, depth)])
        if strings:
            self.rule(nt, [self.term("|".join(sorted(set(strings))))])

    def literal_value(self, v, depth):
        if isinstance(v, str):
            return self.term('"' + literal_units(v) + '"')
        if v is None or isinstance(v, (bool, int, float)):  # nested: the value's own text
            return self.term(re.escape(json.dumps(v)))
        nt = self.new_nt("lit")
        lay = self.layout
        if isinstance(v, list):
            if not v:
                self.rule(nt, self.empty_container("[]", depth))
                return nt
            rhs = [self.term(lay.open("[", depth))]
            for i, x in enumerate(v):
                if i:
                    rhs.append(self.term(lay.comma(depth)))
                rhs.append(self.literal_value(x, depth + 1))
            rhs.append(self.term(lay.close("]", depth)))
        else:
            if not v:
                self.rule(nt, self.empty_container("{}", depth))
                return nt
            rhs = [self.term(lay.open("{", depth))]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    rhs.append(self.term(lay.comma(depth)))
                rhs.append(self.term('"' + literal_units(k) + '"' + lay.colon()))
                rhs.append(self.literal_value(x, depth + 1))
            rhs.append(self.term(lay.close("}", depth)))
        self.rule(nt, rhs)
        return nt

    # --- strings ---------------------------------------------------------------------------
    def string_content(self, s: dict, pointer: str, allow_chunks: bool = False):
        min_len = _count(s, "minLength", pointer, 0)
        max_len = _count(s, "maxLength", pointer, None)
        if max_len is not None and max_len < min_len:
            return None
        pattern = s.get("pattern")
        fmt = s.get("format")
        if fmt is not None and fmt not in FORMATS:
            fmt = None  # an annotation
        if pattern is not None and fmt is not None:
            self.unsupported("format", pointer, "together with pattern")
            fmt = None
        if pattern is not None or fmt is not None:
            source = pattern if pattern is not None else FORMATS[fmt]
            keyword = "pattern" if pattern is not None else "format"
            if not isinstance(source, str):
                raise JsonSchemaError("pattern must be a string", pointer, "pattern")
            try:
                return pattern_to_units(source, min_len, max_len)
            except PatternError as e:
                if "minLength/maxLength" in str(e):
                    self.unsupported("maxLength" if max_len is not None else "minLength",
                                     pointer, str(e))
                    return pattern_to_units(source)
                self.unsupported(keyword, pointer, f"{source!r}: {e}")
                # lenient: fall through to the length-only string
        if allow_chunks and (min_len > STRING_CHUNK or (max_len or 0) > STRING_CHUNK):
            return ("chunked", min_len, max_len)
        if max_len is not None and max_len > MAX_COUNT:
            self.unsupported("maxLength", pointer, f"{max_len} above the {MAX_COUNT} limit")
            max_len = None
        if min_len > MAX_COUNT:
            self.unsupported("minLength", pointer, f"{min_len} above the {MAX_COUNT} limit")
            min_len = 0
        if min_len == 0 and max_len is None:
            return f"{ANY_UNIT}*"
        if max_len is None:
            return f"{ANY_UNIT}{{{min_len},}}"
        if min_len == max_len:
            return f"{ANY_UNIT}{{{min_len}}}"
        return f"{ANY_UNIT}{{{min_len},{max_len}}}"

    def chunked_string(self, min_len: int, max_len: int | None):
        """A string of min_len..max_len code points as lexemes of STRING_CHUNK units.

        Maximal munch makes the split unique: every lexeme but the last is a full chunk of
        exactly K units, the last has 0..K-1 units and the closing quote. The chunk count is
        kept by rules, so the lexer holds K counting states whatever the length (a small NFA,
        few fresh DFA states), and the length is exact.
        """
        key = ("chunked", min_len, max_len)
        if key in self.memo:
            return self.memo[key][0]
        k = STRING_CHUNK

        def tail(lead: str, lo: int, hi: int):
            reps = f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
            return self.term(f'{lead}{ANY_UNIT}{reps}"')

        if max_len is None:
            last = max(1, -(-min_len // k))  # the chain loops on its last element
        else:
            last = max_len // k
        chain = [self.new_nt(f"str{j}") for j in range(last + 1)]
        for j, sym in enumerate(chain):
            lead = '"' if j == 0 else ""
            if max_len is None or (j + 1) * k <= max_len:
                nxt = chain[min(j + 1, last)]
                self.rule(sym, [self.term(f"{lead}{ANY_UNIT}{{{k}}}"), nxt])
            lo = max(0, min_len - j * k)
            hi = k - 1 if max_len is None else min(k - 1, max_len - j * k)
            if lo <= hi:
                self.rule(sym, [tail(lead, lo, hi)])

        self.memo[key] = (chain[0], None)
        return chain[0]

    # --- numbers ---------------------------------------------------------------------------
    def number_regex(self, s: dict, pointer: str, integer: bool) -> str | None:
        lo = hi = None
        lo_strict = hi_strict = False
        if "minimum" in s:
            lo = _to_decimal(s["minimum"], pointer, "minimum")
        if "maximum" in s:
            hi = _to_decimal(s["maximum"], pointer, "maximum")
        em, eM = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
        if isinstance(em, bool):
            lo_strict = em and lo is not None
        elif em is not None:
            v = _to_decimal(em, pointer, "exclusiveMinimum")
            if lo is None or v >= lo:
                lo, lo_strict = v, True
        if isinstance(eM, bool):
            hi_strict = eM and hi is not None
        elif eM is not None:
            v = _to_decimal(eM, pointer, "exclusiveMaximum")
            if hi is None or v <= hi:
                hi, hi_strict = v, True
        mult = s.get("multipleOf")
        zero_fraction = False
        max_frac = None
        step = None
        if mult is not None:
            m = _to_decimal(mult, pointer, "multipleOf")
            if m <= 0:
                raise JsonSchemaError("multipleOf must be > 0", pointer, "multipleOf")
            if m == m.to_integral_value():
                zero_fraction = not integer  # a number: 6000.0 is a multiple of 1 too
                integer = True
                step = int(m)
            elif not integer and m.normalize().as_tuple().digits == (1,):
                max_frac = -m.normalize().as_tuple().exponent
            else:
                self.unsupported("multipleOf", pointer, f"{mult}")
        if integer:
            ilo = None if lo is None else (int(math.floor(lo)) + 1 if lo_strict and lo ==
                                           lo.to_integral_value() else int(math.ceil(lo)))
            ihi = None if hi is None else (int(math.ceil(hi)) - 1 if hi_strict and hi ==
                                           hi.to_integral_value() else int(math.floor(hi)))
            if ilo is not None and ihi is not None and ilo > ihi:
                return None
            if step and step > 1:
                rx = self.multiples(ilo, ihi, step, pointer)
            elif ilo is None and ihi is None:
                rx = INTEGER_RX
            else:
                rx = int_range(ilo, ihi)
            return f"(?:{rx})(?:\\.0+)?" if zero_fraction and rx is not None else rx
        if lo is None and hi is None and max_frac is None:
            return NUMBER_RX
        return number_range(lo, lo_strict, hi, hi_strict, max_frac)

    def multiples(self, lo, hi, k, pointer) -> str | None:
        if lo is not None and hi is not None:
            first = -(-lo // k) * k
            if first > hi:
                return None
            count = (hi - first) // k + 1
            if count <= MAX_ENUMERATED_MULTIPLES:
                values = [str(v) for v in range(first, hi + 1, k)]
                return "(?:" + "|".join(values) + ")"
        a = b = 0
        r = k
        while r % 2 == 0:
            r //= 2
            a += 1
        while r % 5 == 0:
            r //= 5
            b += 1
        if r != 1 or (lo is not None and lo not in (0, 1)) or hi is not None:
            self.unsupported("multipleOf", pointer, f"multipleOf {k} with this range")
            return int_range(lo, hi) if (lo is not None or hi is not None) else INTEGER_RX
        n = max(a, b)
        ends = sorted({str(v).zfill(n) for v in range(0, 10 ** n, k)})
        tail = "(?:" + "|".join(ends) + ")"
        small = [str(v) for v in range(k, 10 ** n, k)]
        body = f"[1-9][0-9]*{tail}" + ("|" + "|".join(small) if small else "")
        nonneg_pos = f"(?:{body})"
        if lo is None:
            return f"(?:0|-?{nonneg_pos})"
        return f"(?:0|{nonneg_pos})" if lo == 0 else nonneg_pos

    # --- objects ---------------------------------------------------------------------------
    def key_terminal(self, content_regex: str):
        return self.term('"' + wrap(content_regex) + '"' + self.layout.colon())

    def object(self, nt, s: dict, pointer: str, depth: int):
        lay = self.layout
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise JsonSchemaError("properties must be an object", pointer, "properties")
        required = s.get("required") or []
        if self.draft4 and isinstance(required, bool):
            required = []
        if not isinstance(required, list):
            raise JsonSchemaError("required must be an array", pointer, "required")
        required_order = list(dict.fromkeys(required))
        required = set(required)
        patterns = s.get("patternProperties") or {}
        if not isinstance(patterns, dict):
            raise JsonSchemaError("patternProperties must be an object", pointer,
                                  "patternProperties")
        if _ADDITIONAL_PARTS in s:
            parts = s[_ADDITIONAL_PARTS]
        else:
            additional = s.get("additionalProperties",
                               True if self.additional_default else False)
            parts = [(tuple(patterns), additional)]
        names = s.get("propertyNames")
        min_p = _count(s, "minProperties", pointer, 0)
        max_p = _count(s, "maxProperties", pointer, None)
        name_check = None if names is True or names == {} else names

        def matching_patterns(name):
            return [ps for p, ps in patterns.items() if self.key_matches(p, name, pointer)]

        def undeclared_schemas(name):
            """The schemas of a name no property declares: its patterns', plus each part's
            additionalProperties where none of that part's patterns matches."""
            subs = matching_patterns(name) + [
                a for part_patterns, a in parts
                if not any(self.key_matches(p, name, pointer) for p in part_patterns)]
            return [x for x in subs if x is not True and x != {}]

        declared = []
        all_names = list(props) + [k for k in required_order if k not in props]
        for k in all_names:
            if name_check is not None and not self.name_ok(k, name_check, pointer):
                if k in required:
                    return  # a required name propertyNames refuses: no valid object
                continue
            if k in props:
                v, vptr = props[k], f"{pointer}/properties/{_ptr_escape(k)}"
                matching = matching_patterns(k)
                if matching:
                    v = {"allOf": [v] + matching}
            else:  # required but not declared: the extra-property schemas apply
                subs, vptr = undeclared_schemas(k), pointer
                if any(x is False for x in subs):
                    return  # a required name no schema allows: no valid object
                v = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
            declared.append((k, v, vptr))
        declared_names = set(all_names)
        # extra key classes: (key content regex, value schema, pointer)
        extras = []
        free = all(a is True or a == {} for _, a in parts) and all(
            ps is True or ps == {} for ps in patterns.values())
        if patterns and not free:
            if name_check is not None:
                self.unsupported("propertyNames", pointer, "together with patternProperties")
            try:
                extras = self.pattern_key_classes(patterns, parts, declared_names, pointer)
            except PatternError as e:
                self.unsupported("patternProperties", pointer, str(e))
                extras = [] if any(a is False for _, a in parts) else [
                    (self.not_names(sorted(declared_names)), True,
                     f"{pointer}/additionalProperties")]
        else:
            subs = [a for _, a in parts if a is not True and a != {}]
            content = self.key_content(None, name_check, pointer, declared_names, None)
            if content is not None and not any(a is False for a in subs):
                v = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
                extras.append((content, v, f"{pointer}/additionalProperties"))
        counting = bool(min_p) or max_p is not None
        cap = max_p if max_p is not None else min_p
        if counting and cap > MAX_PROPERTY_COUNT:
            self.unsupported("maxProperties" if max_p is not None else "minProperties",
                             pointer, f"above {MAX_PROPERTY_COUNT}")
            counting = False
        n = len(declared)
        req_after = [False] * (n + 1)
        for i in range(n - 1, -1, -1):
            req_after[i] = req_after[i + 1] or declared[i][0] in required
        members = {}
        pair_nt = []
        for k, v, vptr in declared:
            p = self.new_nt("prop")
            self.rule(p, [self.key_terminal(literal_units(k)), self.value(v, vptr, depth + 1)])
            pair_nt.append(p)
        extra_nt = []
        for content, v, vptr in extras:
            if v is False:
                continue
            p = self.new_nt("extra")
            self.rule(p, [self.key_terminal(content), self.value(v, vptr, depth + 1)])
            extra_nt.append(p)
        comma = self.term(lay.comma(depth))

        def count_ok(c):
            return (not counting) or (c >= min_p and (max_p is None or c <= max_p))

        def can_add(c):
            return (not counting) or max_p is None or c < max_p

        def clamp(c):
            if not counting:
                return 0
            return c if max_p is not None else min(c, min_p)

        # Nonterminals: R(i, c) rest after c items with next declared index i (comma-led);
        # NX(i, c) choose next declared >= i (comma-led); F(i, c)/FN first item (no comma).
        def get(kind, i, c):
            key = (kind, i, c)
            if key in members:
                return members[key]
            sym = self.new_nt(f"{kind}{i}_{c}")
            members[key] = sym
            lead = [comma] if kind in ("R", "NX") else []
            if kind in ("R", "F"):
                if kind == "R" and not req_after[i] and count_ok(c):
                    self.rule(sym, [])
                if i < n or True:
                    if i < n:
                        self.rule(sym, [get("NX" if kind == "R" else "FN", i, c)])
                if can_add(c):
                    for e in extra_nt:
                        self.rule(sym, lead + [e, get("R", i, clamp(c + 1))])
            else:  # NX / FN
                if i >= n:
                    return sym
                if can_add(c):
                    self.rule(sym, lead + [pair_nt[i], get("R", i + 1, clamp(c + 1))])
                if declared[i][0] not in required:
                    self.rule(sym, [get(kind, i + 1, c)])
            return sym

        first = get("F", 0, 0)
        self.rule(nt, [self.term(lay.open("{", depth)), first, self.term(lay.close("}",
                                                                                   depth))])
        if not req_after[0] and count_ok(0):
            self.rule(nt, self.empty_container("{}", depth))

    def pattern_key_classes(self, patterns: dict, parts: list, declared: set, pointer):
        """[(key content regex, value schema, pointer)] for the keys that are not declared:
        one class per set of matching patterns (their schemas all apply, and the
        additionalProperties of every part none of whose patterns match), including the
        empty set."""
        groups: dict = {}  # patterns with the same schema and parts form one alternation
        for p, ps in patterns.items():
            member_of = tuple(i for i, (part_patterns, _) in enumerate(parts)
                              if p in part_patterns)
            groups.setdefault((_canon(ps), member_of), []).append((p, ps))
        if len(groups) > MAX_PATTERN_GROUPS:
            raise PatternError(f"more than {MAX_PATTERN_GROUPS} patternProperties with different "
                               "schemas")
        items = [("|".join(f"(?:{p})" for p, _ in group) if len(group) > 1 else group[0][0],
                  group[0][1], {p for p, _ in group}) for group in groups.values()]
        nodes = [pattern_node(p) for p, _, _ in items]
        if declared:
            nodes.append(names_node(sorted(declared)))
        dfa = Dfa(nodes)
        n = len(items)
        out = []
        for mask in range(1 << n):
            matched = set().union(*(items[i][2] for i in range(n) if mask >> i & 1))
            subs = [items[i][1] for i in range(n) if mask >> i & 1] + [
                a for part_patterns, a in parts if not matched & set(part_patterns)]
            subs = [x for x in subs if x is not True and x != {}]
            if any(x is False for x in subs):
                continue

            def accept(vec, mask=mask):
                return (all(vec[i] == bool(mask >> i & 1) for i in range(n))
                        and not (declared and vec[n]))

            rx = dfa.regex(accept)
            if rx is not None:
                schema = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
                where = "patternProperties" if mask else "additionalProperties"
                out.append((rx, schema, f"{pointer}/{where}"))
        return out

    def name_ok(self, name: str, names_schema, pointer: str) -> bool:
        """Whether a property name is valid under propertyNames (exact)."""
        return self.values.is_valid(name, names_schema, pointer, "propertyNames")

    def key_content(self, content, names_schema, pointer, declared: set, pattern):
        """Content regex of extra keys: `content` (None: any name not in `declared`), further
        restricted by a propertyNames schema; None when no key is allowed."""
        if names_schema is None:
            return content if content is not None else self.not_names(sorted(declared))
        if names_schema is False:
            return None
        s = self.single_alternative(names_schema, pointer)
        if s is None:
            self.unsupported("propertyNames", pointer, "a schema with alternatives")
            return content if content is not None else self.not_names(sorted(declared))
        if "enum" in s or "const" in s:
            values = [s["const"]] if "const" in s else s["enum"]
            keep = [v for v in values if isinstance(v, str) and v not in declared
                    and self.name_ok(v, names_schema, pointer)
                    and (pattern is None or re.search(pattern, v))]
            return "|".join(literal_units(v) for v in keep) if keep else None
        allowed = {"type", "pattern", "maxLength", "minLength", "format"}
        if not set(s) - ANNOTATIONS <= allowed or (content is not None or declared):
            self.unsupported("propertyNames", pointer,
                             "only enum/const, or a string schema when no property is declared")
            return content if content is not None else self.not_names(sorted(declared))
        if s.get("type", "string") != "string" and "string" not in s.get("type", ()):
            return None
        return self.string_content(s, pointer)

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
        raise JsonSchemaError("$ref/allOf nesting too deep", pointer, "$ref")

    def not_names(self, names: list[str]) -> str:
        """Content regex for strings (in units) that differ from every name."""
        key = ("not_names", tuple(names))
        if key in self.memo:
            return self.memo[key][0]
        rx = not_names_units(tuple(names))
        self.memo[key] = (rx, None)
        return rx

    # --- arrays ----------------------------------------------------------------------------
    def array(self, nt, s: dict, pointer: str, depth: int):
        lay = self.layout
        items = s.get("items")
        prefix = s.get("prefixItems")
        rest = True
        if isinstance(items, list):  # draft <= 2019 tuple form
            prefix = items
            rest = s.get("additionalItems", True)
            rest_ptr = f"{pointer}/additionalItems"
        else:
            if items is not None:
                rest = items
            rest_ptr = f"{pointer}/items"
        prefix = list(prefix or [])
        min_i = _count(s, "minItems", pointer, 0)
        max_i = _count(s, "maxItems", pointer, None)
        rest_none = rest is False or self.expand(rest, rest_ptr) == "none"
        if rest_none:
            max_i = len(prefix) if max_i is None else min(max_i, len(prefix))
        if max_i is not None and max_i < min_i:
            return
        if max_i is not None and max_i > MAX_COUNT:
            self.unsupported("maxItems", pointer, f"{max_i} above {MAX_COUNT}")
            max_i = None
        if min_i > MAX_COUNT:
            self.unsupported("minItems", pointer, f"{min_i} above {MAX_COUNT}")
            min_i = 0
        item_syms = [self.value(p, f"{pointer}/prefixItems/{i}", depth + 1)
                     for i, p in enumerate(prefix)]
        rest_sym = None if rest_none else self.value(rest, rest_ptr, depth + 1)
        comma = self.term(lay.comma(depth))
        counted = max(len(prefix), min_i) if max_i is None else max_i
        states = {}

        def item(c):
            return item_syms[c] if c < len(item_syms) else rest_sym

        # S(c): after c items; S(c) -> eps if c >= min; -> , item(c) S(c+1)
        def get(c):
            if c > counted:
                c = counted  # unbounded tail: loop
            if c in states:
                return states[c]
            sym = self.new_nt(f"A{c}")
            states[c] = sym
            if c >= min_i and (max_i is None or c <= max_i):
                self.rule(sym, [])
            if (max_i is None or c < max_i) and item(c) is not None:
                self.rule(sym, [comma, item(c), get(c + 1)])
            return sym

        if (max_i is None or max_i >= 1) and item(0) is not None:
            self.rule(nt, [self.term(lay.open("[", depth)), item(0), get(1),
                           self.term(lay.close("]", depth))])
        if min_i == 0:
            self.rule(nt, self.empty_container("[]", depth))


def json_schema_to_ir(schema: Any, *, whitespace="flexible",
                      additional_properties_default: bool = True,
                      lenient: bool = False) -> GrammarIR:
    """Lowers a JSON Schema (a dict/bool, or its JSON text) to a `GrammarIR`.

    See the module docstring for the semantics and the coverage table.

    Raises:
      JsonSchemaError: an invalid schema, a bad `$ref`, or a keyword that cannot be enforced
        (unless `lenient`), naming the keyword and its JSON pointer.
    """
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except ValueError as e:
            raise JsonSchemaError(f"not valid JSON: {e}") from None
    if not isinstance(schema, (dict, bool)):
        raise JsonSchemaError(f"a schema must be an object or a boolean, not "
                              f"{type(schema).__name__}")
    lowering = _Lowering(schema, whitespace, additional_properties_default, lenient)
    start = lowering.new_nt("start")
    try:
        root = lowering.value(schema, "", 0)
    except RecursionError:
        raise JsonSchemaError("schema nesting too deep") from None
    lowering.rule(start, [root])
    return lowering.finish(start)

