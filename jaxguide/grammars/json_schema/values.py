"""Exact validity of concrete values (enum/const values, property names), and value equality.

Design note. Where the grammar needs a verdict on a concrete value (an `enum` value against its
sibling keywords, a declared name against `propertyNames`), it asks `jsonschema` in jaxguide's
dialect (`dialect`), with this package's ECMA engine (`automata.ecma_search`) and format
regexes: the same semantics the grammar enforces (a format the grammar refuses, `regex`, is
checked on a concrete value by `jsonschema`'s own checker; `formats="annotation"`: none).
`canon` is a text equal for the values JSON Schema deems equal (numbers by value, never
booleans with numbers).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from jaxguide.grammars.json_schema.automata import ecma_search
from jaxguide.grammars.json_schema.dialect import (
    context_search,
    current_search,
    exact_numbers,
    import_jsonschema,
    validator_class,
)
from jaxguide.grammars.json_schema.errors import JsonSchemaError
from jaxguide.grammars.json_schema.formats import FORMATS, REFUSED
from jaxguide.grammars.json_schema.pattern import PatternError


def type_of(value) -> str:
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


def json_value(value):
    """`value` with every integral float made an int: JSON Schema compares numbers by value
    (2.0 == 2), never booleans with numbers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    return value


def canon(value) -> str:
    """A text equal for JSON values that JSON Schema deems equal."""
    return json.dumps(json_value(value), sort_keys=True)




def format_check(pattern: str, instance: Any) -> bool:
    return not isinstance(instance, str) or ecma_search(pattern, instance)


class ValueChecker:
    """Exact validity of concrete values (enum / const values, property names) under the
    subschemas of one root, in jaxguide's dialect (`dialect`) with this package's
    ECMA engine and format regexes: the same semantics the grammar enforces."""

    def __init__(self, root, unsupported: Callable[[str, str, str], None],
                 formats: str = "assert"):
        self.root = root if isinstance(root, (dict, bool)) else {}
        self.unsupported = unsupported  # (keyword, pointer, why): warns or raises
        self.formats = formats  # formats.FORMAT_MODES
        self._validator = None

    def _no_checker(self, name: str, _instance) -> bool:
        self.unsupported("format", "", f"{name!r}: {REFUSED[name]}, and jsonschema has no "
                         "checker for it")
        return True  # lenient: ignored

    def _search(self, pattern: str, text: str) -> bool:
        try:
            return ecma_search(pattern, text)
        except PatternError as e:
            self.unsupported("pattern", "", f"{pattern!r}: {e}")
            return True  # lenient: the keyword is ignored

    def is_valid(self, value, schema, pointer: str, keyword: str) -> bool:
        return self.validity(schema, pointer, keyword)(value)

    def validity(self, schema, pointer: str, keyword: str) -> Callable[[Any], bool]:
        """`is_valid(·, schema, ...)` as a function, for checking many values against one
        schema (the schema is converted once)."""
        def checked(work, *args):
            token = current_search.set(self._search)
            try:
                return work(*args)
            except JsonSchemaError:
                raise
            except Exception as e:  # noqa: BLE001 (jsonschema / referencing errors)
                raise JsonSchemaError(f"cannot check the {keyword} values "
                                      f"({type(e).__name__}: {e})", pointer, keyword) from None
            finally:
                current_search.reset(token)

        validator = checked(self._validator_for, schema)
        return lambda value: checked(validator.is_valid, exact_numbers(value))

    def _validator_for(self, schema):
        if self._validator is None:
            jsonschema = import_jsonschema()  # not at the top: its import is slow
            formats = jsonschema.FormatChecker(formats=())
            if self.formats == "assert":
                for name, pattern in FORMATS.items():
                    formats.checks(name)(functools.partial(format_check, pattern))
                # A refused format has no regex, but a concrete value is checked exactly.
                known = jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers
                for name in REFUSED:
                    formats.checkers[name] = known.get(name) or (
                        functools.partial(self._no_checker, name), ())
            cls = validator_class(self.root, context_search)  # self._search
            self._validator = cls(exact_numbers(self.root), format_checker=formats)
        return self._validator.evolve(schema=exact_numbers(schema))


# Keywords that jsonschema ignores in every draft (annotations).
# The keywords jsonschema's validators read in some draft (their VALIDATORS, 3 to 2020-12; a
# test compares): any other member of a schema (annotations, "name", "x-...") changes no verdict.
VALIDATION_KEYWORDS = frozenset({
    "$dynamicRef", "$recursiveRef", "$ref", "additionalItems", "additionalProperties", "allOf",
    "anyOf", "const", "contains", "dependencies", "dependentRequired", "dependentSchemas",
    "disallow", "divisibleBy", "enum", "exclusiveMaximum", "exclusiveMinimum", "extends",
    "format", "if", "items", "maxItems", "maxLength", "maxProperties", "maximum", "minItems",
    "minLength", "minProperties", "minimum", "multipleOf", "not", "oneOf", "pattern",
    "patternProperties", "prefixItems", "properties", "propertyNames", "required", "type",
    "unevaluatedItems", "unevaluatedProperties", "uniqueItems",
})


# Type checks that mean the same in every draft (number and integer do not: 1.0 is an integer
# from draft 6 on; a bool is not a number in any draft, unlike Python's).
_TYPE_CHECKS = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
                "null": lambda v: v is None, "object": lambda v: isinstance(v, dict),
                "array": lambda v: isinstance(v, list)}


def simple_type_check(rest: dict):
    """A plain Python check for jsonschema's verdict under `rest` (a schema without enum /
    const) when `rest` says nothing a validator reads but a `type` among string / boolean /
    null / object / array (the usual sibling of a large enum), else None: the same answer in every draft,
    without building a validator (its class setup is most of a small schema's lowering)."""
    if VALIDATION_KEYWORDS.intersection(rest) != {"type"}:
        return None
    types = rest["type"]
    types = [types] if isinstance(types, str) else types
    if not isinstance(types, list) or not types or not all(
            isinstance(t, str) and t in _TYPE_CHECKS for t in types):
        return None
    if len(types) == 1:
        return _TYPE_CHECKS[types[0]]
    checks = [_TYPE_CHECKS[t] for t in types]
    return lambda value: any(check(value) for check in checks)
