"""How many values a schema admits, when plainly finitely many.

Design note. An array whose items must differ (`uniqueItems`) holds no more items than its item
schema has values; the matcher refuses repeats beyond the grammar, but only the grammar can
stop a comma once every value is used (else the output would reach a dead end). So the
normalizer caps maxItems at `finite_values` of the item schema: an upper bound, exact where
simple (enum / const counted by value, booleans, null, integers between two bounds with an
integer multipleOf, closed objects of such properties); None where not plainly finite, or not
worth counting. Cost: linear in the schema, 8 levels of properties at most.
"""

from __future__ import annotations

import math

from jaxguide.grammars.json_schema.values import canon


def _integers_between(s: dict) -> int | None:
    """How many integers the bounds of `s` leave (its integer `multipleOf` counted; None when
    a bound is missing or not a number)."""
    def finite(value) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
            value)

    low, high = s.get("minimum"), s.get("maximum")
    low_open, high_open = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    if isinstance(low_open, bool):  # draft 4: flags on minimum / maximum
        low_open = low if low_open else None
    if isinstance(high_open, bool):
        high_open = high if high_open else None
    lows = [math.ceil(low)] if finite(low) else []
    lows += [math.floor(low_open) + 1] if finite(low_open) else []
    highs = [math.floor(high)] if finite(high) else []
    highs += [math.ceil(high_open) - 1] if finite(high_open) else []
    if not lows or not highs:
        return None
    low, high = max(lows), min(highs)
    step = s.get("multipleOf", 1)
    if not finite(step) or step <= 0 or step != int(step):
        step = 1  # a fractional step: every integer (an upper bound)
    step = int(step)
    return max(0, high // step - -(-low // step) + 1)


def finite_values(combinators, schema, pointer: str, depth: int = 0) -> int | None:
    """At least as many as the values `schema` admits, when it plainly admits finitely
    many (None: not known to be finite): enums and consts, booleans, null, integers
    between two bounds, and objects without other properties whose properties are such.
    (An array of unique items holds no more items than that.)"""
    s = combinators.single_alternative(schema, pointer)
    if s is None or depth > 8:
        return None
    if "const" in s:
        return 1
    if isinstance(s.get("enum"), list):
        return len({canon(v) for v in s["enum"]})
    kinds = s.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or not kinds:
        return None
    total = 0
    for kind in set(kinds):
        if kind in ("null", "boolean"):
            count = 1 if kind == "null" else 2
        elif kind == "integer":
            count = _integers_between(s)
        elif kind == "object":
            count = _finite_objects(combinators, s, pointer, depth)
        else:
            count = None
        if count is None:
            return None
        total += count
    return total

def _finite_objects(combinators, s: dict, pointer: str, depth: int) -> int | None:
    """An upper bound on the objects `s` admits when they are finitely many: no property
    but the declared ones, each with finitely many values (None otherwise)."""
    properties = s.get("properties", {})
    required = s.get("required", [])
    if (s.get("additionalProperties") is not False or s.get("patternProperties")
            or not isinstance(properties, dict) or not isinstance(required, list)):
        return None
    count = 1
    for name, sub in properties.items():
        values = finite_values(combinators, sub, f"{pointer}/properties/{name}", depth + 1)
        if values is None:
            return None
        count *= values + (name not in required)
    return count
