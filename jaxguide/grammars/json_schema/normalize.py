"""JSON Schema -> typed normal form (`normal_form`): the keyword reading.

Design note. `Normalizer.normal_form(schema, pointer)` expands the combinators (`combinators`:
`$ref`, allOf merged, anyOf/oneOf distributed), then reads each merged alternative into a
`Conjunction`: an enum/const set filtered exactly (each value checked against every sibling
keyword), or, after `not` (type-only: the types removed) and the keywords it cannot enforce,
one typed form per admitted type. Every check of a keyword's value, every "cannot be enforced"
(`unsupported`: an error, or with `lenient` a warning and the keyword ignored) and every limit
of `limits` is decided here, so `emit` only lowers typed fields.

Order. Alternatives and per-type forms are read when emit reaches them (`Pending`), and
subschemas (property values, items, `$ref` targets) are normalized when emit lowers them, so
the first error a schema reports is the single-pass compiler's. Depth is bounded by budgets
(`limits.MAX_VALUE_NESTING`, `MAX_SCHEMA_NESTING`), not by Python's recursion limit.
"""

from __future__ import annotations

import functools
import math

from jaxguide.grammars.json_schema.automata import (
    RegexTooLarge,
    difference_pattern,
    intersection_pattern,
)
from jaxguide.grammars.json_schema.combinators import (
    ADDITIONAL_PARTS,
    ALL_TYPES,
    ANNOTATIONS,
    MERGED_FROM,
    PATTERNS,
    UNSUPPORTED,
    WITNESS,
    check_type_keyword,
    not_bodies,
)
from jaxguide.grammars.json_schema.digit_automata import DigitBudget
from jaxguide.grammars.json_schema.domains import finite_values
from jaxguide.grammars.json_schema.errors import JsonSchemaError
from jaxguide.grammars.json_schema.formats import BOUNDED, FORMATS, REFUSED, asserted
from jaxguide.grammars.json_schema.limits import (
    MAX_ARRAY_WITNESSES,
    MAX_CHUNKED_LENGTH,
    MAX_CONTAINS_STATES,
    MAX_COUNT,
    MAX_PROPERTY_COUNT,
    STRING_CHUNK,
)
from jaxguide.grammars.json_schema.negation import (
    Negations,
    array_witness,
    existential,
    multiple_only,
    string_exclusion,
    type_names,
    type_only,
    with_nots,
    without_types,
)
from jaxguide.grammars.json_schema.normal_form import (
    ANY,
    NONE,
    ArrayForm,
    BooleanForm,
    Conjunction,
    ContainsCount,
    ExtraKeys,
    Literals,
    NormalForm,
    NullForm,
    ObjectForm,
    Pending,
    Property,
    Ref,
    StringForm,
    Subschema,
    Union,
)
from jaxguide.grammars.json_schema.number_forms import (
    NON_INTEGER,
    NON_MULTIPLES,
    NumberForms,
    to_decimal,
)
from jaxguide.grammars.json_schema.object_witnesses import (
    ObjectWitnesses,
    pattern_groups,
)
from jaxguide.grammars.json_schema.pattern import (
    PatternError,
    pattern_units_memo,
)
from jaxguide.grammars.json_schema.products import (
    check_string_product,
    ecma_literal,
    key_class_regexes,
    pattern_lookaheads,
    string_form_units,
)
from jaxguide.grammars.json_schema.units import literal_units, not_names_units
from jaxguide.grammars.json_schema.values import canon, simple_type_check


def count(s: dict, keyword: str, pointer: str, default):
    """A count keyword (minLength, maxItems, ...): a non-negative integer, or a float of
    integral value (2.0 is 2 in JSON Schema); `default` when absent."""
    if keyword not in s:
        return default
    value = s[keyword]
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JsonSchemaError(f"{keyword} must be a non-negative integer", pointer, keyword)
    return value


def ptr_escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class Normalizer(NumberForms, ObjectWitnesses, Negations):
    """Reads the schemas of one root into normal forms (see the module docstring)."""

    def __init__(self, root, additional_properties_default: bool, lenient: bool,
                 formats: str = "assert"):
        super().__init__(root, additional_properties_default, lenient, formats)
        self.not_names_memo: dict[tuple, str] = {}
        # key_class_regexes' answers (pure in its arguments): objects of a schema often repeat
        # one patternProperties (a map keyed by ids), each a product automaton to build.
        self.key_classes_memo: dict[tuple, list] = {}
        self.digit_budget = DigitBudget()  # (`number_forms`: all the schema's digit automata)

    def normal_form(self, schema, pointer: str) -> NormalForm:
        """`schema` as `ANY` or a `Union` whose alternatives are read when emit reaches them."""
        return self.union(self.expand(schema, pointer), pointer)

    def union(self, expanded, pointer: str) -> NormalForm:
        """The normal form of an expansion (`expand`): each $ref resolved, each dict read, when
        emit reaches it (emit calls `expand` and this apart: one call deep, as always)."""
        if expanded == "any":
            return ANY
        if expanded == "none":
            return NONE
        alternatives = []
        for alt in expanded:  # a `not` of object/array values or "some member fails" that
            # no merge resolved (a dict with no allOf): resolved here
            if isinstance(alt, tuple) or "enum" in alt or "const" in alt:
                resolved = None
            elif self.use_complements and any(existential(b) for b in not_bodies(alt)):
                resolved = self.resolve_existential(alt, pointer, 0)
            else:
                resolved = self.resolve_literal_nots(alt, pointer, 0)
            alternatives += [alt] if resolved is None else resolved
        return Union(tuple(Pending(functools.partial(self.ref, alt[1], pointer))
                           if isinstance(alt, tuple) else
                           Pending(functools.partial(self.conjunction, alt, pointer))
                           for alt in alternatives))

    def ref(self, target_ptr: str, pointer: str) -> Ref:
        target, tptr = self.resolve_ref(target_ptr, pointer)
        return Ref(target, tptr)

    def conjunction(self, s: dict, pointer: str) -> Conjunction | None:
        """A merged dict without combinators as a `Conjunction` (None: no value); the forms
        of its types are read when emit reaches them."""
        if "const" in s or "enum" in s:
            return Conjunction(literals=self.literals(s, pointer))
        if "not" in s:
            s = self.apply_not(s, pointer)
            if s is None:
                return None
        for key in s:
            if key in UNSUPPORTED and key not in ("not", "contains", "minContains",
                                                  "maxContains"):
                # (apply_not read `not`; array_form reads contains and its counts)
                if key in ("then", "else") and "if" not in s:
                    continue
                if key == "if" and "then" not in s and "else" not in s:
                    continue
                self.unsupported(key, pointer)
        forms = []
        for t in sorted(self.types(s, pointer)):
            if t == "null":
                forms.append(NullForm())
            elif t == "boolean":
                forms.append(BooleanForm())
            elif t == "string":
                forms.append(Pending(functools.partial(self.string_form, s, pointer, True)))
            elif t in ("number", "integer"):
                forms.append(Pending(functools.partial(self.number_form, s, pointer,
                                                       t == "integer")))
            else:
                read = self.object_form if t == "object" else self.array_form
                forms.append(Pending(functools.partial(read, s, pointer)))
        return Conjunction(forms=tuple(forms))

    @staticmethod
    def types(s: dict, pointer: str) -> set:
        """The admitted type names (`integer` only without `number`)."""
        types = s.get("type")
        if types is None:
            types = set(ALL_TYPES)
        else:
            check_type_keyword(types, pointer)
            types = {types} if isinstance(types, str) else set(types)
        if "integer" in types and "number" in types:
            types.discard("integer")
        return types

    def apply_not(self, s: dict, pointer: str):
        """The `not` left by `expand` (`negation.foldable_not`): type-only bodies remove types,
        string exclusions stay for `string_form` (a bare `pattern` / `format` body also removes
        the other types: they satisfy it); a body needing the merged object (an open one, see
        `negation.resolve_existential`) or with no finite shape is unsupported."""
        rest = {k: v for k, v in s.items() if k != "not"}
        types = rest.get("type", list(ALL_TYPES) + ["integer"])
        types = {types} if isinstance(types, str) else set(types)
        if "number" in types:
            types.add("integer")
        kept = []
        bodies = list(not_bodies(s))
        while bodies:
            body = bodies.pop(0)
            if isinstance(body, dict) and set(body) == {"anyOf"} and isinstance(
                    body["anyOf"], list):
                bodies[:0] = body["anyOf"]  # not (A or B) = not A and not B
                continue
            if isinstance(body, dict) and "$ref" in body:
                resolved = self.single_alternative(body, pointer)
                body = body if resolved is None else resolved
            if body is True or body == {}:
                return None
            if body is False:
                continue
            if type_only(body):
                check_type_keyword(body["type"], f"{pointer}/not")
                left = without_types(types, body["type"])
                if left is None:  # a number that is not an integer, and no other type named
                    rest[NON_INTEGER] = True  # read by number_form
                    types = without_types(types, sorted(type_names(body["type"]) - {"integer"}))
                    types.discard("integer")
                else:
                    types = left
            elif multiple_only(body):  # read by number_form; without a type in the body,
                if "type" not in body:  # other types satisfy it
                    types &= {"number", "integer"}
                rest[NON_MULTIPLES] = (*rest.get(NON_MULTIPLES, ()),
                                       to_decimal(body["multipleOf"], pointer, "multipleOf"))
            elif string_exclusion(body):
                if "type" not in body and ({"pattern", "format"} & set(body)):
                    types &= {"string"}
                kept.append(body)
            elif array_witness(body):  # read by array_form
                if "type" not in body:
                    types &= {"array"}
                kept.append(body)
            else:
                self.unsupported("not", pointer, "a complement with no finite shape here: "
                                 + _not_reason(body))
        if not types:
            return None
        if "number" in types:
            types.discard("integer")
        rest["type"] = sorted(types)
        return with_nots(rest, kept)

    # --- enum / const ---------------------------------------------------------------------
    def literals(self, s: dict, pointer: str) -> Literals:
        """The enum / const values of s that are valid under all of s (exact: each value is
        checked against every sibling keyword, including ones the grammar could not enforce,
        such as `not` or `uniqueItems`), without repeats."""
        values = [s["const"]] if "const" in s else s["enum"]
        if not isinstance(values, list):
            raise JsonSchemaError("enum must be an array", pointer, "enum")
        sources = s.get(MERGED_FROM, (s,))
        floats = all(src.get("type") is None or "number" in (
            [src["type"]] if isinstance(src["type"], str) else src["type"]) for src in sources)
        checks = self.literal_checks(s, pointer)
        valid = []
        seen = set()
        for v in values:
            key = ("string", v) if isinstance(v, str) else canon(v)
            if key in seen or not all(check(v) for check in checks):
                continue
            seen.add(key)
            valid.append(v)
        return Literals(tuple(valid), floats, pointer)

    def literal_checks(self, s: dict, pointer: str) -> list:
        """A check per source of s (s, or the allOf parts merged into it) with sibling keywords:
        jsonschema's verdict under them without enum / const (each value is in every source's
        enum / const: linear in the values, not quadratic). The validator is built from the
        root (one jsonschema cannot read fails here: a leaf recipe calls this again)."""
        keyword = "const" if "const" in s else "enum"
        return [simple_type_check(rest) or self.values.validity(rest, pointer, keyword)
                for rest in ({k: v for k, v in source.items() if k not in ("enum", "const")}
                             for source in s.get(MERGED_FROM, (s,))) if set(rest) - ANNOTATIONS]

    # --- strings ----------------------------------------------------------------------------
    def capped(self, count, keyword: str, pointer: str, why: str, instead, cap=MAX_COUNT):
        """`count`, or `instead` once the keyword is reported unsupported (lenient) when the
        count is above `cap`; `why` formats (count, cap)."""
        if count is not None and count > cap:
            shown = count if count < 10 ** 300 else math.inf  # `{:g}` of a huge int overflows
            self.unsupported(keyword, pointer, why.format(shown, cap))
            return instead
        return count

    def string_form(self, s: dict, pointer: str, allow_chunks: bool = False):
        """The string keywords of s (None: no string). A pattern or format is checked here,
        with its lengths: what cannot be enforced is dropped (lenient) or an error. Patterns
        whose product is too large to write back as one pattern stay apart, as lookaheads."""
        min_len = count(s, "minLength", pointer, 0)
        max_len = count(s, "maxLength", pointer, None)
        if max_len is not None and max_len < min_len:
            return None
        pattern, looks = pattern_lookaheads(s.get("pattern"), s.get(PATTERNS, ()))
        from_patterns = bool(looks)
        fmt = s.get("format")
        if fmt is not None and not isinstance(fmt, str):
            raise JsonSchemaError("format must be a string", pointer, "format")
        if not asserted(fmt, self.formats):
            fmt = None  # an annotation
        elif fmt in REFUSED:
            self.unsupported("format", pointer, f"{fmt!r}: {REFUSED[fmt]}; pass "
                             "formats='annotation' to read formats as annotations")
            fmt = None  # lenient: ignored
        if (pattern is not None and fmt is not None and isinstance(pattern, str)
                and pattern_units_memo(pattern, 0, None)[1] is None):  # else: pattern's error
            try:  # one pattern for both: the product automaton, written back as a pattern
                pattern = intersection_pattern((FORMATS[fmt], pattern))
            except RegexTooLarge:
                looks += ((True, FORMATS[fmt]),)  # the lexer builds the product
            except PatternError as e:
                self.unsupported("format", pointer, f"together with pattern: {e}")
                fmt = None  # lenient: the pattern alone
            else:
                if pattern is None:
                    return None  # no string matches both
        if any(string_exclusion(b) for b in not_bodies(s)):  # one product automaton
            excluded = self.excluded(s, pattern, fmt, pointer)
            if excluded is None:
                return None
            pattern, more = excluded
            looks += more
        if pattern is None and fmt in BOUNDED and max_len is not None:
            pattern = BOUNDED[fmt]  # the variant that implies a long maxLength
        source = pattern if pattern is not None else FORMATS.get(fmt)
        if source is not None and not isinstance(source, str):
            raise JsonSchemaError("pattern must be a string", pointer, "pattern")
        looks = self.lookaheads(source, looks, fmt, pointer,
                                from_patterns=from_patterns)
        if source is not None or looks:
            try:
                check_string_product(source, tuple(p for _, p in looks), min_len, max_len)
                return StringForm(min_len, max_len, pattern, fmt, looks)
            except PatternError as e:
                if "minLength/maxLength" in str(e):
                    self.unsupported("maxLength" if max_len is not None else "minLength",
                                     pointer, str(e))
                    return StringForm(0, None, pattern, fmt, looks)
                self.unsupported("pattern" if pattern is not None else "format", pointer,
                                 f"{source!r}: {e}")
                # lenient: fall through to the length-only string
        if allow_chunks and (min_len > STRING_CHUNK or (max_len or 0) > STRING_CHUNK):
            # Lowered in chunks: one or two rules per chunk, so the budget is checked first.
            max_len = self.capped(max_len, "maxLength", pointer, "{:.6g} above the {:,} limit",
                                  None, MAX_CHUNKED_LENGTH)
            min_len = self.capped(min_len, "minLength", pointer, "{:.6g} above the {:,} limit",
                                  0, MAX_CHUNKED_LENGTH)
            if min_len > STRING_CHUNK or (max_len or 0) > STRING_CHUNK:
                return StringForm(min_len, max_len)
        max_len = self.capped(max_len, "maxLength", pointer, "{} above the {} limit", None)
        min_len = self.capped(min_len, "minLength", pointer, "{} above the {} limit", 0)
        return StringForm(min_len, max_len)

    def lookaheads(self, source: str | None, looks: tuple, fmt, pointer: str,
                   from_patterns: bool = False) -> tuple:
        """`looks` when the lexer's product of them with `source` (the pattern or format) is
        within its budget; else () (lenient: `source` alone), named by the keyword that asked
        for them (`from_patterns`: some come from `pattern`s, their leading lookaheads or
        allOf's other patterns; else from a `not`)."""
        if not looks or (source is not None and pattern_units_memo(source, 0, None)[1]):
            return looks  # none, or the pattern's own error comes next
        try:
            check_string_product(source, tuple(p for _, p in looks), 0, None)
            return looks
        except PatternError as e:
            keyword = ("format" if fmt and (True, FORMATS[fmt]) in looks else "pattern"
                       if from_patterns else "not")
            self.unsupported(keyword, pointer, str(e))
            return ()

    def excluded(self, s: dict, pattern, fmt, pointer: str):
        """(pattern, lookaheads) of the strings that match `pattern` / `fmt` and none of the
        string exclusions of s's `not`: one pattern where their product can be written back
        as one, else the exclusions as negative lookaheads. None: no string is left."""
        negatives, names = [], []
        for body in not_bodies(s):
            if not string_exclusion(body):
                continue
            if "pattern" in body:
                negatives.append(body["pattern"])
            elif "format" in body:
                if not asserted(body["format"], self.formats) or body["format"] in REFUSED:
                    if body["format"] in REFUSED and asserted(body["format"], self.formats):
                        self.unsupported("not", pointer, f"the complement of format "
                                         f"{body['format']!r}")
                        continue
                    return None  # an annotation: every string satisfies it
                negatives.append(FORMATS[body["format"]])
            else:
                names += [body["const"]] if "const" in body else body["enum"]
        positive = pattern if pattern is not None else FORMATS[fmt] if fmt else None
        names = sorted(set(names))
        try:
            difference = difference_pattern(positive, tuple(negatives), tuple(names))
            return None if difference is None else (difference, ())
        except RegexTooLarge:  # the lexer builds the product
            return pattern, tuple((False, p) for p in negatives) + (
                ((False, ecma_literal(names)),) if names else ())
        except PatternError as e:
            self.unsupported("not", pointer, f"the complement of a string set: {e}")
            return pattern, ()

    # --- objects ----------------------------------------------------------------------------
    def object_form(self, s: dict, pointer: str) -> ObjectForm | None:
        """The object keywords of s (None: no valid object). Names are checked against
        propertyNames, declared names get the schemas of the patterns they match, the
        undeclared ones form key classes (`pattern_key_classes`, `key_content`; with
        several witnesses or propertyNames beside patternProperties, `several_witnesses`).
        The object is keyed (no repeated key) where a repeat could change the verdict:
        several witnesses, or minProperties that undeclared keys must make up."""
        props, required_order, patterns, parts = self._object_keywords(s, pointer)
        required = set(required_order)
        names = s.get("propertyNames")
        min_p = count(s, "minProperties", pointer, 0)
        max_p = count(s, "maxProperties", pointer, None)
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
                    return None  # a required name propertyNames refuses: no valid object
                continue
            if k in props:
                v, vptr = props[k], f"{pointer}/properties/{ptr_escape(k)}"
                matching = matching_patterns(k)
                if matching:
                    v = {"allOf": [v] + matching}
            else:  # required but not declared: the extra-property schemas apply
                subs, vptr = undeclared_schemas(k), pointer
                if any(x is False for x in subs):
                    return None  # a required name no schema allows: no valid object
                v = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
            declared.append(Property(k, Subschema(v, vptr), k in required))
        declared_names = set(all_names)
        undeclared = self.undeclared_members(s, pointer, declared_names, parts, name_check,
                                             patterns, min_p - sum(p.required for p in declared))
        if undeclared is None:
            return None
        extras, witness, witnesses, witness_count = undeclared
        keyed = bool(witnesses)  # (a repeated key would replace a member that met one)
        if min_p - sum(p.required for p in declared) >= 2 and (extras or witness or
                                                                 witnesses) and not keyed:
            keyed = not self.distinct_undeclared(declared, extras, witness)
        if (bool(min_p) or max_p is not None) and (
                max_p if max_p is not None else min_p) > MAX_PROPERTY_COUNT:
            self.unsupported("maxProperties" if max_p is not None else "minProperties",
                             pointer, f"above {MAX_PROPERTY_COUNT}")
            min_p, max_p = 0, None  # not counted
        return ObjectForm(tuple(declared), tuple(ExtraKeys(rx, Subschema(v, vptr))
                                                for rx, v, vptr, _ in extras), min_p, max_p,
                          witness, witnesses, witness_count, keyed)

    def undeclared_members(self, s: dict, pointer: str, declared_names: set, parts: list,
                           name_check, patterns: dict, undeclared_count: int):
        """(extras, witness, witnesses, witness count) of an object's undeclared keys: the
        extras [(key content regex, value schema, pointer, its names when few)], the single
        witness (`witness`) or the classes of several (`several_witnesses`); None: no valid
        object. `undeclared_count`: the members minProperties needs beyond the required."""
        extras = []
        free = all(a is True or a == {} for _, a in parts) and all(
            ps is True or ps == {} for ps in patterns.values())
        witness, witnesses, witness_count = None, (), 0
        product = None  # several witnesses, or propertyNames beside patternProperties
        in_product = self.needs_several_witnesses(s, name_check) or (
            patterns and not free and name_check is not None)
        if in_product:
            product = self.several_witnesses(s.get(WITNESS) or (), pointer, declared_names,
                                             parts, name_check, {} if free else patterns)
            if product is False:
                return None
        if product is not None:
            extras, witnesses, witness_count = product
        elif patterns and not free:
            if name_check is not None and not in_product:  # (else refused there)
                self.unsupported("propertyNames", pointer, "together with patternProperties")
            try:
                extras = self.pattern_key_classes(patterns, parts, declared_names, pointer,
                                                  undeclared_count > 1)
            except PatternError as e:
                self.unsupported("patternProperties", pointer, str(e))
                extras = [] if any(a is False for _, a in parts) else [
                    (self.not_names(sorted(declared_names)), True,
                     f"{pointer}/additionalProperties", None)]
        else:
            subs = [a for _, a in parts if a is not True and a != {}]
            closed = any(a is False for a in subs)  # (then key_content only checks names)
            content, names = (None, None) if closed and name_check is None else \
                self.key_content(name_check, pointer, declared_names)
            if content is not None and not closed:
                v = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
                extras.append((content, v, f"{pointer}/additionalProperties", names))
        if product is None:
            witness = self.witness(s, pointer, declared_names, parts, name_check, patterns,
                                   free)
            if witness is False:
                return None
        return extras, witness, witnesses, witness_count

    @staticmethod
    def distinct_undeclared(declared: list, extras: list, witness) -> bool:
        """minProperties when undeclared members would make up two or more of the count:
        the rules count members, not distinct keys, and an undeclared key may repeat (JSON
        keeps the last). Few undeclared names (all classes finite, `MAX_PROPERTY_COUNT` in
        all) become optional declared properties, each at most once, after the declared ones
        (a class's names sorted, or as a propertyNames enum lists them; `declared` and
        `extras` are updated in place): True. Else False: the object is keyed (the matcher
        refuses a repeated key, so members are distinct keys)."""
        names = [(name, v, vptr) for _, v, vptr, class_names in extras
                 for name in class_names or ()]
        if witness is None and all(x[3] is not None for x in extras) and len(
                names) <= MAX_PROPERTY_COUNT:
            declared.extend(Property(name, Subschema(v, vptr), False)
                            for name, v, vptr in names)
            extras.clear()
            return True
        return False

    def _object_keywords(self, s: dict, pointer: str):
        """(properties, required names in order, patternProperties, additional parts)."""
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise JsonSchemaError("properties must be an object", pointer, "properties")
        required = s.get("required") or []
        if self.draft4 and isinstance(required, bool):
            required = []
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            raise JsonSchemaError("required must be an array of strings", pointer, "required")
        required_order = list(dict.fromkeys(required))
        patterns = s.get("patternProperties") or {}
        if not isinstance(patterns, dict):
            raise JsonSchemaError("patternProperties must be an object", pointer,
                                  "patternProperties")
        if ADDITIONAL_PARTS in s:
            parts = s[ADDITIONAL_PARTS]
        else:
            additional = s.get("additionalProperties",
                               True if self.additional_default else False)
            parts = [(tuple(patterns), additional)]
        return props, required_order, patterns, parts

    def pattern_key_classes(self, patterns: dict, parts: list, declared: set, pointer,
                            list_names: bool = False, witness_pattern: str | None = None):
        """[(key content regex, value schema, pointer, the keys when `list_names` and there
        are at most `MAX_PROPERTY_COUNT`, else None)] for the keys that are not declared:
        one class per set of matching patterns (their schemas all apply, and the
        additionalProperties of every part none of whose patterns match), including the
        empty set. With `witness_pattern`, only the keys that also match it (a witness's,
        `witness_classes`; it adds no schema)."""
        items = pattern_groups(patterns, parts)
        n = len(items)
        extra = [] if witness_pattern is None else [witness_pattern]

        def class_schemas(mask: int) -> list | None:
            """The schemas of the keys matching exactly the patterns in `mask` (None: no such
            key may appear, so its class is not built: a complement class can be large)."""
            if extra and not mask >> n & 1:
                return None
            mask &= (1 << n) - 1
            matched = set().union(*(items[i][2] for i in range(n) if mask >> i & 1))
            subs = [items[i][1] for i in range(n) if mask >> i & 1] + [
                a for part_patterns, a in parts if not matched & set(part_patterns)]
            subs = [x for x in subs if x is not True and x != {}]
            return None if any(x is False for x in subs) else subs

        schemas = [class_schemas(mask) for mask in range(1 << (n + len(extra)))]
        key = (tuple(p for p, _, _ in items) + tuple(extra), tuple(sorted(declared)),
               list_names, tuple(x is not None for x in schemas))
        classes = self.key_classes_memo.get(key)
        if classes is None:
            classes = self.key_classes_memo[key] = key_class_regexes(
                list(key[0]), list(key[1]), list_names, wanted=lambda m: schemas[m] is not None)
        out = []
        for mask, (rx, names) in enumerate(classes):
            subs = schemas[mask]
            if rx is None or subs is None:
                continue
            mask &= (1 << n) - 1
            where = "patternProperties" if mask else "additionalProperties"
            schema = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
            out.append((rx, schema, f"{pointer}/{where}", names))
        return out

    def name_ok(self, name: str, names_schema, pointer: str) -> bool:
        """Whether a property name is valid under propertyNames (exact)."""
        return self.values.is_valid(name, names_schema, pointer, "propertyNames")

    def key_content(self, names_schema, pointer, declared: set):
        """(content regex of the keys not in `declared`, restricted by a propertyNames schema
        (None: no restriction), or None when no key is allowed; the keys when an enum lists
        them, else None)."""
        if names_schema is None:
            return self.not_names(sorted(declared)), None
        if names_schema is False:
            return None, None
        s = self.single_alternative(names_schema, pointer)
        if s is None:
            self.unsupported("propertyNames", pointer, "a schema with alternatives")
            return self.not_names(sorted(declared)), None
        if "enum" in s or "const" in s:
            values = [s["const"]] if "const" in s else s["enum"]
            keep = [v for v in dict.fromkeys(x for x in values if isinstance(x, str))
                    if v not in declared and self.name_ok(v, names_schema, pointer)]
            return ("|".join(literal_units(v) for v in keep), keep) if keep else (None, None)
        allowed = {"type", "pattern", "maxLength", "minLength", "format", PATTERNS, MERGED_FROM}
        if not set(s) - ANNOTATIONS <= allowed or declared:
            self.unsupported("propertyNames", pointer,
                             "only enum/const, or a string schema when no property is declared")
            return self.not_names(sorted(declared)), None
        if s.get("type", "string") != "string" and "string" not in s.get("type", ()):
            return None, None
        form = self.string_form(s, pointer)
        if form is None:
            return None, None
        return string_form_units(form), None

    def not_names(self, names: list[str]) -> str:
        """Content regex for strings (in units) that differ from every name."""
        key = tuple(names)
        if key not in self.not_names_memo:
            self.not_names_memo[key] = not_names_units(key)
        return self.not_names_memo[key]

    # --- arrays -----------------------------------------------------------------------------
    def array_form(self, s: dict, pointer: str) -> ArrayForm | None:
        """The array keywords of s (None: no valid array)."""
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
        min_i = count(s, "minItems", pointer, 0)
        max_i = count(s, "maxItems", pointer, None)
        rest_none = rest is False or self.expand(rest, rest_ptr) == "none"
        if rest_none:
            max_i = len(prefix) if max_i is None else min(max_i, len(prefix))
        if max_i is not None and max_i < min_i:
            return None
        max_i = self.capped(max_i, "maxItems", pointer, "{} above {}", None)
        min_i = self.capped(min_i, "minItems", pointer, "{} above {}", 0)
        unique = s.get("uniqueItems") is True
        if unique and not rest_none:  # as many items as the item schema has values, at most
            values = finite_values(self, rest, rest_ptr)
            if values is not None:
                max_i = len(prefix) + values if max_i is None else min(max_i, len(prefix) + values)
                if max_i < min_i:
                    return None
        counted = self.contains_count(s, pointer, prefix, None if rest_none else rest,
                                      rest_ptr, min_i, max_i)
        witness = None if counted is not None else self.array_witness(
            s, pointer, len(prefix), None if rest_none else rest)
        if witness is False:
            return None
        several = isinstance(witness, list)
        return ArrayForm(tuple(Subschema(p, f"{pointer}/prefixItems/{i}")
                               for i, p in enumerate(prefix)),
                         None if rest_none else Subschema(rest, rest_ptr), min_i, max_i,
                         None if several else witness, unique,
                         tuple(witness) if several else (), counted)

    def contains_count(self, s: dict, pointer: str, prefix: list, rest, rest_ptr: str,
                       min_i: int, max_i: int | None) -> ContainsCount | None:
        """`contains` with minContains other than 0 or 1, a maxContains, or prefix items,
        as a count of the items that match it (each item's schema split in two: and
        contains, and not contains); None when there is none (`array_witness` reads a plain `contains`) or
        when refused (lenient: the counts are ignored). Charged to `MAX_CONTAINS_STATES`."""
        contains = s.get("contains")
        low, high = s.get("minContains", 1), s.get("maxContains")
        if contains is None or (high is None and (low == 0 or (low == 1 and not prefix))):
            return None  # (no count, or one item: a witness)
        low = count(s, "minContains", pointer, 1)
        high = count(s, "maxContains", pointer, None)
        if any(array_witness(b) for b in not_bodies(s)):
            self.unsupported("maxContains" if high is not None else "minContains", pointer,
                             "beside an item that must fail items")
            return None
        positions = max(len(prefix), min_i) if max_i is None else max_i
        states = (positions + 1) * ((high if high is not None else low) + 1)
        if states > MAX_CONTAINS_STATES:
            self.unsupported("maxContains" if high is not None else "minContains", pointer,
                             f"counting the items that match contains needs {states} states, "
                             f"above {MAX_CONTAINS_STATES:,}")
            return None

        def split(schema, where):
            return (Subschema({"allOf": [schema, contains]}, where),
                    Subschema({"allOf": [schema, {"not": contains}]}, where))
        return ContainsCount(
            tuple(split(p, f"{pointer}/prefixItems/{i}") for i, p in enumerate(prefix)),
            None if rest is None else split(rest, rest_ptr), low, high)

    def array_witness(self, s: dict, pointer: str, prefix: int, rest):
        """(from, schema) of the item one of which must appear (`contains`, a "some item
        fails items" complement), a list of them when there are several (at most
        `MAX_ARRAY_WITNESSES`); None: no witness; False: none can appear (no array)."""
        needs = []  # (from, schema the item must also match)
        contains = s.get("contains")
        low = s.get("minContains", 1)
        if contains is not None and not (isinstance(low, (int, float)) and low == 0):
            needs.append((0, contains))  # (with prefix items: `contains_count`)
        for body in not_bodies(s):
            if array_witness(body):
                items = body["items"]
                start, fails = (len(items), body["additionalItems"]) if isinstance(
                    items, list) else (len(body.get("prefixItems") or ()), items)
                needs.append((start, {"not": fails}))
        if not needs:
            return None
        if len(needs) > MAX_ARRAY_WITNESSES or any(start < prefix for start, _ in needs):
            self.unsupported("not", pointer, f"more than {MAX_ARRAY_WITNESSES} items that must "
                             "fail or match, or one among the prefix items")
            return None
        if rest is None:
            return False
        out = [(start, Subschema(extra if rest is True or rest == {} else {"allOf": [
            rest, extra]}, f"{pointer}/items")) for start, extra in needs]
        return out[0] if len(out) == 1 else out


def _not_reason(body) -> str:
    if isinstance(body, dict) and set(body) & {"additionalProperties", "patternProperties",
                                               "propertyNames"}:
        return "some member of an object that admits undeclared members"
    keys = sorted(set(body) - ANNOTATIONS) if isinstance(body, dict) else [repr(body)]
    return "not " + ", ".join(keys)
