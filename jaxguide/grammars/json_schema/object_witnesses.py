"""The witnesses of an object form: undeclared members one of which must appear.

Design note. A complement's "some member fails B" (`negation.resolve_existential`) becomes,
for the undeclared members of an open object, a witness: a class of members whose key is
undeclared (and matches B's key pattern, if B has one) and whose value fails B's schema. The
merged dict carries them under `WITNESS` as (names, fails, [key pattern]) entries; the object
form reads them here:
- one witness, no propertyNames: `ObjectForm.witness`, one class (or one per key class next
  to the object's own patternProperties, `witness_classes`); the emitter adds a "seen" flag
  to the member states and lets no undeclared member follow it (a repeated key would replace
  it: JSON keeps the last);
- several witnesses, or one beside propertyNames (`several_witnesses`): the key classes of
  the product of every pattern involved (the object's patternProperties, the propertyNames
  patterns a key must match, each witness's key pattern: `products.key_class_regexes`), each
  class with the witnesses its keys may meet; a member of a class meets any nonempty subset
  T of those when its value also fails each of theirs (`WitnessKeys`, 2^|T| - 1 classes per
  key class). The emitter tracks the set of witnesses met (a bit mask, `ObjectForm.
  witness_count` bits) and the object is `keyed`: the matcher refuses a repeated key, so no
  member that met a witness is replaced later, and undeclared members may follow it.
Budgets: `MAX_WITNESS_PATTERNS` patterns in one product (2^n key classes, each a DFA regex
within `KEY_CLASS_DFA_STATES`), `MAX_WITNESS_CLASSES` member classes; beyond, the `not` is
refused (lenient: the witnesses are dropped, with a warning).
"""

from __future__ import annotations

from itertools import combinations

from jaxguide.grammars.json_schema.combinators import (
    ANNOTATIONS,
    MERGED_FROM,
    PATTERNS,
    WITNESS,
)
from jaxguide.grammars.json_schema.limits import (
    MAX_OBJECT_WITNESSES,
    MAX_PATTERN_GROUPS,
    MAX_WITNESS_CLASSES,
    MAX_WITNESS_PATTERNS,
)
from jaxguide.grammars.json_schema.normal_form import ExtraKeys, Subschema, WitnessKeys
from jaxguide.grammars.json_schema.pattern import PatternError
from jaxguide.grammars.json_schema.products import ecma_literal, key_class_regexes
from jaxguide.grammars.json_schema.values import canon


def conjunction(subs: list):
    """allOf of `subs` without the trivial ones (True when none is left)."""
    subs = [x for x in subs if x is not True and x != {}]
    return True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}


def witness_key(body) -> tuple | None:
    """(key pattern or None: any key, the schema its value fails) of the undeclared members
    through which "some member fails `body`" holds: the body's additionalProperties, its
    one patternProperties entry (other keys satisfy the body), or its propertyNames when
    the keys that fail it are a pattern (`failing_names`; any value: False); None when the
    body has more member classes than one (several patterns, patterns beside
    additionalProperties, propertyNames beside either)."""
    keys = set(body) - ANNOTATIONS - {"type", "properties"}
    if keys <= {"additionalProperties"}:
        return None, body.get("additionalProperties", True)
    patterns = body.get("patternProperties")
    if keys == {"patternProperties"} and isinstance(patterns, dict) and len(patterns) == 1:
        (pattern, fails), = patterns.items()
        return pattern, fails
    if keys == {"propertyNames"}:
        pattern = failing_names(body["propertyNames"])
        return None if pattern is None else (pattern or None, False)
    return None


def failing_names(names_schema) -> str | None:
    """An ECMA pattern of the strings that fail a propertyNames schema ("" for every
    string), where it is `false` or `{"not": X}` with X a pattern or a string enum/const;
    None otherwise."""
    if names_schema is False:
        return ""
    if not isinstance(names_schema, dict) or set(names_schema) - ANNOTATIONS != {"not"}:
        return None
    x = names_schema["not"]
    if not isinstance(x, dict) or x.get("type", "string") != "string":
        return None
    keys = set(x) - ANNOTATIONS - {"type"}
    if keys == {"pattern"} and isinstance(x["pattern"], str):
        return x["pattern"]
    if keys in ({"const"}, {"enum"}):
        values = [x["const"]] if "const" in x else x["enum"]
        if isinstance(values, list):
            names = list(dict.fromkeys(v for v in values if isinstance(v, str)))
            return ecma_literal(names) if names else "[]"  # ([] matches nothing)
    return None


def witness_complements(s: dict) -> list:
    """The complements of a resolved dict's witnesses (`WITNESS`: "some member, none of
    `names`, whose key matches the pattern, fails S"): every such member satisfies S. With a
    key pattern, the names are held to S too (a smaller complement: sound, not exact)."""
    out = []
    for names, fails, *key_pattern in s.get(WITNESS) or ():
        if key_pattern:
            out.append({"type": "object", "patternProperties": {key_pattern[0]: fails}})
        else:
            out.append({"type": "object", "properties": {n: True for n in names},
                        "additionalProperties": fails})
    return out


def pattern_groups(patterns: dict, parts: list) -> list[tuple[str, object, set]]:
    """[(one pattern, or the alternation of several, their schema, the patterns)]: an
    object's patternProperties with the same schema and the same additional parts form one
    group (one key class bit). PatternError past `MAX_PATTERN_GROUPS` groups."""
    if len(patterns) == 1:  # (one group: no schema to compare, canon of a large one spared)
        [(p, ps)] = patterns.items()
        return [(p, ps, {p})]
    groups: dict = {}
    for p, ps in patterns.items():
        member_of = tuple(i for i, (part_patterns, _) in enumerate(parts) if p in part_patterns)
        groups.setdefault((canon(ps), member_of), []).append((p, ps))
    if len(groups) > MAX_PATTERN_GROUPS:
        raise PatternError(f"more than {MAX_PATTERN_GROUPS} patternProperties with different "
                           "schemas")
    return [("|".join(f"(?:{p})" for p, _ in group) if len(group) > 1 else group[0][0],
             group[0][1], {p for p, _ in group}) for group in groups.values()]


def joined(regexes: list[str]) -> list[str]:
    """Key class regexes with one value schema, as few as can be: one alternation, unless
    some is the lexer's lookahead product (which stands alone in its terminal)."""
    if len(regexes) > 1 and not any(rx.startswith(("(?=", "(?!")) for rx in regexes):
        return ["|".join(regexes)]
    return regexes


class ObjectWitnesses:
    """The object form's witness classes (see the module docstring); a mixin of the
    `Normalizer`, which provides `unsupported`, `key_matches`, `single_alternative`,
    `not_names` and `pattern_key_classes`."""

    def witness(self, s: dict, pointer: str, declared: set, parts: list, name_check,
                patterns: dict, free: bool):
        """The object form's single witness class (`negation.resolve_existential`):
        undeclared members, none of the complement's names, whose value fails its schema;
        None: no witness needed (or several: `several_witnesses`); False: none can appear
        (no object)."""
        needs = s.get(WITNESS)
        if not needs or len(needs) > 1 or name_check is not None:
            return None
        (names, fails, *key_pattern), = needs
        if key_pattern or (patterns and not free):
            return self.witness_classes(patterns, parts, declared | set(names), fails,
                                        key_pattern[0] if key_pattern else None, pointer)
        subs = [a for _, a in parts if a is not True and a != {}]
        if any(a is False for a in subs) or fails is True or fails == {}:
            return False  # no undeclared member, or none can fail
        if fails is not False:
            subs.append({"not": fails})
        content = self.not_names(sorted(declared | set(names)))
        if content is None:
            return False
        return ExtraKeys(content, Subschema(conjunction(subs),
                                            f"{pointer}/additionalProperties"))

    def witness_classes(self, patterns: dict, parts: list, names: set, fails, key_pattern,
                        pointer: str):
        """The witness next to patternProperties, or "some key matching `key_pattern` fails":
        one class per key class of the object (`pattern_key_classes`, split by `key_pattern`
        when given, keeping the keys that match it), the value its schema and not `fails`;
        False: no such member can appear (no object). Refused (lenient: no witness) where
        the key classes are over their budgets."""
        if fails is True or fails == {}:
            return False
        try:
            classes = self.pattern_key_classes(patterns, parts, names, pointer,
                                               witness_pattern=key_pattern)
        except PatternError as e:
            self.unsupported("not", pointer, f"some undeclared member: {e}")
            return None
        out = []
        for rx, schema, where, _ in classes:
            value = conjunction([schema] + ([] if fails is False else [{"not": fails}]))
            out.append(ExtraKeys(rx, Subschema(value, where)))
        return tuple(out) or False

    def needs_several_witnesses(self, s: dict, name_check) -> bool:
        """Whether the object form reads its witnesses with `several_witnesses`."""
        needs = s.get(WITNESS)
        return bool(needs) and (len(needs) > 1 or name_check is not None)

    def several_witnesses(self, needs, pointer: str, declared: set, parts: list,
                          name_check, patterns: dict):
        """(extras, witness classes, witness count) of an object with several witnesses
        (`needs`: its `WITNESS` entries), one beside propertyNames, or none but propertyNames
        beside patternProperties (see the module docstring): the extras are
        [(key regex, value schema, pointer, None)] as `Normalizer.object_form` builds them,
        the classes `WitnessKeys`; None when refused (lenient: read without the witnesses);
        False when no object has a member for every witness."""
        if any(fails is True or fails == {} for _, fails, *_ in needs):
            return False  # a witness no value meets
        if len(needs) > MAX_OBJECT_WITNESSES:
            self.unsupported("not", pointer, f"more than {MAX_OBJECT_WITNESSES} undeclared "
                             "members that must each fail a complement's body")
            return None
        names = set(declared).union(*(set(names) for names, *_ in needs))
        name_patterns = self.names_as_patterns(name_check, pointer, bool(needs))
        if name_patterns is None:
            return None
        try:
            items = pattern_groups(patterns, parts)
        except PatternError as e:
            self.unsupported("patternProperties", pointer, str(e))
            return None
        sources = list(dict.fromkeys([rx for rx, _, _ in items] + name_patterns + [
            key_pattern[0] for _, _, *key_pattern in needs if key_pattern]))
        if len(sources) > MAX_WITNESS_PATTERNS:
            self.unsupported("not", pointer, f"undeclared members under more than "
                             f"{MAX_WITNESS_PATTERNS} key patterns")
            return None
        bit = {rx: 1 << i for i, rx in enumerate(sources)}
        need_names = sum(bit[p] for p in name_patterns)
        try:
            classes = key_class_regexes(sources, sorted(names), False,
                                        lambda mask: mask & need_names == need_names)
        except PatternError as e:
            self.unsupported("not", pointer, f"some undeclared member: {e}")
            return None
        extras: dict = {}  # object pattern bits -> [key regexes] (one schema per entry)
        witnesses = []
        for mask, (rx, _) in enumerate(classes):
            if rx is None or mask & need_names != need_names:
                continue
            matched = set().union(*(ps for prx, _, ps in items if mask & bit[prx]))
            schema = conjunction([ps for prx, ps, _ in items if mask & bit[prx]] + [
                a for part_patterns, a in parts if not matched & set(part_patterns)])
            if schema is False or (isinstance(schema, dict) and any(
                    x is False for x in schema.get("allOf", ()))):
                continue
            where = f"{pointer}/{'patternProperties' if matched else 'additionalProperties'}"
            own = sum(bit[prx] for prx, _, _ in items if mask & bit[prx])
            extras.setdefault((own, where), (schema, []))[1].append(rx)
            meets = [i for i, (_, _, *key_pattern) in enumerate(needs)
                     if not key_pattern or mask & bit[key_pattern[0]]]
            for size in range(1, len(meets) + 1):
                for subset in combinations(meets, size):
                    fails = [needs[i][1] for i in subset if needs[i][1] is not False]
                    value = conjunction([schema] + [{"not": f} for f in fails])
                    witnesses.append(WitnessKeys(ExtraKeys(rx, Subschema(value, where)),
                                                 sum(1 << i for i in subset)))
            if len(witnesses) > MAX_WITNESS_CLASSES:
                self.unsupported("not", pointer, f"more than {MAX_WITNESS_CLASSES} classes "
                                 "of undeclared members that meet witnesses")
                return None
        met = 0
        for w in witnesses:
            met |= w.meets
        if met != (1 << len(needs)) - 1:
            return False  # some witness no undeclared key can meet
        extra_list = [(rx, schema, where, None) for (_, where), (schema, rxs) in extras.items()
                      for rx in joined(rxs)]
        return extra_list, tuple(witnesses), len(needs)

    def names_as_patterns(self, name_check, pointer: str, witnesses: bool) -> list | None:
        """The ECMA patterns every undeclared key must match under a propertyNames schema
        (`[]`: none; None: not expressible as patterns, refused): a string schema of
        patterns only, or an enum/const of strings."""
        if name_check is None or name_check is True or name_check == {}:
            return []
        if name_check is False:
            return ["[]"]  # (matches nothing)
        s = self.single_alternative(name_check, pointer)
        if s is not None and ("enum" in s or "const" in s):
            values = [s["const"]] if "const" in s else s["enum"]
            keep = [v for v in dict.fromkeys(v for v in values if isinstance(v, str))]
            return [ecma_literal(keep) if keep else "[]"]
        if s is not None and set(s) - ANNOTATIONS <= {"type", "pattern", PATTERNS,
                                                      MERGED_FROM} and s.get(
                "type", "string") in ("string", ["string"]):
            return ([s["pattern"]] if "pattern" in s else []) + list(s.get(PATTERNS, ()))
        if witnesses:
            self.unsupported("not", pointer, "some undeclared member of an object whose "
                             "propertyNames is not patterns or an enum")
        else:
            self.unsupported("propertyNames", pointer, "together with patternProperties, "
                             "other than patterns or an enum")
        return None
