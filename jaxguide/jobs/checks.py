"""The check of a generated output against its constraint, by a checker independent of
jaxguide's lowering: `jsonschema` (the validator of the schema's draft), Python's
`re.fullmatch`, the `lark` package's Earley parser, membership for a choice.

Design note. This is the one checker of `jaxguide.jobs.generation_job` (the `valid` field of a
result line) and of `python -m jaxguide` (its printed verdicts and exit status). It uses only the
package's own dependencies: the oracles of `jaxguide.testing` (jaxguide's JSON Schema dialect with
an ECMA-262 regex engine, time limits, an "undecided" verdict) need the `testing` extra, which a
generation job does not install.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema
import lark

CHECK_KINDS = ("json_schema", "regex", "lark", "choice", "none")


@functools.lru_cache(maxsize=64)
def _lark_parser(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="earley", lexer="dynamic")


def why_invalid(kind: str, source: Any, text: str) -> str | None:
    """None if `text` conforms to the constraint `source` of `kind` (one of CHECK_KINDS; "none"
    always conforms), else why not."""
    if kind == "none":
        return None
    if kind == "regex":
        return None if re.fullmatch(source, text) else f"does not match the regex {source!r}"
    if kind == "choice":
        return None if text in source else "not one of the choices"
    if kind == "json_schema":
        try:
            value = json.loads(text)
        except ValueError as e:
            return f"not JSON: {e}"
        validator = jsonschema.validators.validator_for(source)(source)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return None
        return f"{error.message} (at {error.json_path})"
    if kind == "lark":
        try:
            _lark_parser(source).parse(text)
        except lark.exceptions.LarkError as e:
            first_line = next(iter(str(e).strip().splitlines()), "")
            return f"{type(e).__name__}: {first_line}"
        return None
    raise ValueError(f"kind must be one of {', '.join(CHECK_KINDS)}, got {kind!r}")


def check_output(kind: str, source: Any, text: str) -> bool | None:
    """Whether `text` conforms to the constraint (`why_invalid` is None); None for kind
    "none" (nothing to check)."""
    if kind == "none":
        return None
    return why_invalid(kind, source, text) is None
