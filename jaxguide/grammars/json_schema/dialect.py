"""jaxguide's JSON Schema dialect as a `jsonschema` validator class (for concrete values).

Design note. The schema compiler (`json_schema.py`) needs to validate concrete values exactly
(an `enum` / `const` value against its sibling keywords, a declared property name against
`propertyNames`), and the soundness oracle (`jaxguide.testing.oracles`) validates finished
texts. Both read a schema the same way, defined here once:

  * the draft is the one `$schema` names (`jsonschema.validators.validator_for`), 2020-12 when
    absent or unknown;
  * in 2020-12, an array-valued `items` and `additionalItems` keep their draft 2019-09 meaning
    (tuple validation), as the compiler accepts both forms whatever the draft;
  * `pattern`, `patternProperties` and the "no pattern matched" test of
    `additionalProperties` use an ECMA-262 `search(pattern, text)` supplied by the caller
    (`jsonschema` itself uses Python's `re.search`, where `\\d` is any Unicode digit);
  * `format` is checked by the caller's format checker;
  * numbers are exact: values are checked with floats turned into `Decimal`s
    (`exact_numbers`), so `multipleOf: 0.1` takes 96879470.6 (float division says it is not
    a multiple), and an integral `Decimal` is an `integer` from draft 6 on (in drafts 3 and 4
    only an integer text is).

The caller brings the regex engine and the format checks: the compiler its own (the ones it
enforces), the oracle independent ones.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import sys
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

Search = Callable[[str, str], bool]

# The search `context_search` delegates to (set around each validation by the caller): lets
# one validator class per draft serve callers whose searches differ (the compiler's reports
# an unsupported pattern to its own schema's error or warning).
current_search: contextvars.ContextVar[Search] = contextvars.ContextVar("jaxguide_search")


def context_search(pattern: str, text: str) -> bool:
    return current_search.get()(pattern, text)


def import_jsonschema():
    """The `jsonschema` module, imported on first use rather than with jaxguide: with its
    format extra installed (the test extra) it imports `rfc3987_syntax`, which builds a Lark
    parser at import time (0.5-2 s), and `import jaxguide` should not pay that (nor a schema
    that never needs a concrete value checked). The first import runs on a new thread, whose
    Python stack is shallow: at some stack depths CPython 3.11 maps and unmaps a frame-stack
    chunk hundreds of thousands of times during that build (4.7 s, 3 s in the kernel, against
    1.0 s). An import error is left to the ordinary import that follows. (No deadlock:
    jsonschema imports nothing of jaxguide.)"""
    if "jsonschema" not in sys.modules:
        def run() -> None:
            try:
                importlib.import_module("jsonschema")
            except Exception:  # noqa: BLE001 - the ordinary import below reports it
                pass

        thread = threading.Thread(target=run, name="jaxguide-import-jsonschema")
        thread.start()
        thread.join()
    return importlib.import_module("jsonschema")


def exact_numbers(value: Any) -> Any:
    """`value` (a schema or an instance) with every float replaced by the `Decimal` of its
    shortest repr (the number its JSON text wrote)."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, list):
        return [exact_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: exact_numbers(v) for k, v in value.items()}
    return value


def is_multiple(value: Decimal, step: Decimal) -> bool:
    """Whether value / step is an integer, exactly, for finite decimals of any exponent
    (`1e999999999` is a multiple of 0.1; no huge intermediate numbers)."""
    if not value.is_finite() or not step.is_finite() or step == 0:
        return False
    if value == 0:
        return True
    _, digits, exponent = value.as_tuple()
    _, step_digits, step_exponent = step.as_tuple()
    m, s = int("".join(map(str, digits))), int("".join(map(str, step_digits)))
    shift = exponent - step_exponent  # value / step = (m / s) * 10**shift
    if shift < 0:
        if -shift > len(str(m)):  # s * 10**-shift has more digits than m
            return False
        return m % (s * 10 ** -shift) == 0
    for prime in (2, 5):  # 10**shift supplies up to `shift` factors of 2 and of 5
        for _ in range(shift):
            if s % prime:
                break
            s //= prime
    return m % s == 0


def validator_class(schema: Any, search: Search) -> type:
    """The `jsonschema` validator class of `schema`'s draft in jaxguide's dialect (validate
    `exact_numbers` of the schema and the instance with it). One class per (draft, search):
    making one costs about a millisecond (attrs compiles its methods)."""
    jsonschema = import_jsonschema()
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return _dialect_class(base, search)


@functools.lru_cache(maxsize=64)
def _dialect_class(base: type, search: Search) -> type:
    jsonschema = import_jsonschema()
    from jsonschema import ValidationError
    from jsonschema import _keywords as keywords
    from jsonschema import _legacy_keywords as legacy_keywords

    integral_decimals = base not in (jsonschema.Draft3Validator, jsonschema.Draft4Validator)

    def is_integer(_checker, instance) -> bool:
        if isinstance(instance, bool):
            return False
        if isinstance(instance, Decimal):
            return (integral_decimals and instance.is_finite()
                    and instance == instance.to_integral_value())
        return base.TYPE_CHECKER.is_type(instance, "integer")

    def pattern(validator, regex, instance, _schema):
        if validator.is_type(instance, "string") and not search(regex, instance):
            yield ValidationError(f"{instance!r} does not match {regex!r} (ECMA-262)")

    def pattern_properties(validator, patterns, instance, _schema):
        if not validator.is_type(instance, "object"):
            return
        for regex, subschema in patterns.items():
            for key, value in instance.items():
                if search(regex, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=regex)

    def additional_properties(validator, additional, instance, schema_):
        if not validator.is_type(instance, "object"):
            return
        declared = schema_.get("properties", {})
        regexes = list(schema_.get("patternProperties", {}))
        extras = [key for key in instance if key not in declared
                  and not any(search(regex, key) for regex in regexes)]
        if validator.is_type(additional, "object"):
            for key in extras:
                yield from validator.descend(instance[key], additional, path=key)
        elif not additional and extras:
            yield ValidationError(f"additional properties {sorted(extras)!r} are not allowed")

    def multiple_of(validator, step, instance, _schema):
        if not validator.is_type(instance, "number"):
            return
        if isinstance(step, (Decimal, int)) and not isinstance(step, bool) and isinstance(
                instance, (Decimal, int)) and not is_multiple(Decimal(instance), Decimal(step)):
            yield ValidationError(f"{instance} is not a multiple of {step}")
        elif not isinstance(step, (Decimal, int)) or not isinstance(instance, (Decimal, int)):
            yield from keywords.multipleOf(validator, step, instance, _schema)

    overrides: dict[str, Callable] = {
        "pattern": pattern, "patternProperties": pattern_properties,
        "additionalProperties": additional_properties, "multipleOf": multiple_of}
    if base is jsonschema.Draft202012Validator:
        def items(validator, value, instance, schema_):
            if validator.is_type(value, "array"):
                yield from legacy_keywords.items_draft6_draft7_draft201909(
                    validator, value, instance, schema_)
            else:
                yield from keywords.items(validator, value, instance, schema_)

        def additional_items(validator, value, instance, schema_):
            if isinstance(schema_.get("items"), list):
                yield from legacy_keywords.additionalItems(validator, value, instance, schema_)

        overrides.update({"items": items, "additionalItems": additional_items})
    return jsonschema.validators.extend(
        base, overrides, type_checker=base.TYPE_CHECKER.redefine("integer", is_integer))
