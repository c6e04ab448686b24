"""Independent oracles: is a finished text in the language of the *source* grammar?

Design note. The soundness checker validates the text of every walk that ended at EOS with code
that shares nothing with jaxguide's lowering, so a wrong lowering cannot hide behind itself:

  JsonSchemaOracle  `json.loads` (no NaN/Infinity; a repeated key keeps its last value; numbers
                    exact, as `Decimal`s, for schema and text alike) and the
                    `jsonschema` validator of the schema's draft in jaxguide's dialect
                    (`jaxguide.json_schema_dialect`), with `pattern`, `patternProperties` and
                    `additionalProperties` matched by an independent ECMA-262 engine (`regress`,
                    u-mode; `jsonschema` itself uses Python's `re.search`, where `\\d` is any
                    Unicode digit; long texts of patterns on which regress backtracks
                    exponentially go to the native lexer's ECMA DFA, see `ecma_search`) and
                    `format` checked by `jsonschema`'s format
                    checkers of draft 2020-12 (the `format-nongpl` extra) for every format
                    jaxguide enforces, whatever the schema's draft; an
                    enforced format without a checker is an error, never a silent pass. Formats
                    jaxguide treats as annotations are reported apart (`note`), not as invalid:
                    JSON Schema makes `format` an annotation by default. So are repeated object
                    keys (RFC 8259: names SHOULD be unique; jaxguide documents that it does not
                    exclude repeats of undeclared names).
  RegexOracle       Python's `re.fullmatch` (the semantics of `Grammar.from_regex`), under a
                    time limit (`re` backtracks exponentially on some patterns).
  LarkOracle        the `lark` package's Earley parser with the same start rule and
                    `lexer="dynamic"` (the semantics of `Grammar.from_lark`).

Each has `source` (the schema's JSON, the pattern or the grammar text) and `check(text) -> None
| str`: None when the text is valid, else why not; after a valid verdict, `note` may hold a
remark worth counting (never a soundness failure). An oracle that cannot decide (lark 1.3's
Earley parser raises "Earley should not generate multiple start symbol items" on some texts of
lark.lark, e.g. `h:A{f}//\n#`; `re` past its time limit) raises `OracleUndecided`: reported
apart, never counted as valid.
"""

from __future__ import annotations

import functools
import json
import re
import signal
import threading
from decimal import Decimal
from typing import Any

import jsonschema
import lark
import regress

from jaxguide.engine.regex_lexer import RegexError, RegexLexer
from jaxguide.errors import BudgetExceededError
from jaxguide.grammars.json_schema import ENFORCED_FORMATS
from jaxguide.grammars.json_schema.dialect import exact_numbers, validator_class

_REGRESS_SAFE_LENGTH = 20


@functools.lru_cache(maxsize=4096)
def ecma_regex(pattern: str) -> regress.Regex:
    """An ECMA-262 regex: u-mode, as JSON Schema reads `pattern`, or without flags (Annex B:
    `\\-`, a lone `]`) for the patterns only that mode accepts."""
    try:
        return regress.Regex(pattern, "u")
    except Exception:  # noqa: BLE001 (regress raises its own error type)
        return regress.Regex(pattern)


def _has_nested_repetition(pattern: str) -> bool:
    """Whether a quantified group holds a quantifier (`(a+)*`, `(?:\\w+\\.)+`): regress
    backtracks exponentially on such patterns."""
    stack = [False]  # per open group: whether it holds a quantifier
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            stack.append(False)
        elif c == ")" and len(stack) > 1:
            inner = stack.pop()
            if inner and pattern[i + 1:i + 2] in ("*", "+", "{"):
                return True
            stack[-1] = stack[-1] or inner
        elif c in "*+{?":
            stack[-1] = True
        i += 1
    return False


@functools.lru_cache(maxsize=4096)
def _native_ecma(pattern: str):
    """The native lexer's ECMA dialect (a DFA, linear time; its own parser, not the schema
    compiler's, and checked against regress on every MaskBench pattern by
    tests/test_ecma_patterns.py); None if it refuses the pattern."""
    try:
        lexer = RegexLexer([pattern], "ecma")
        return lexer, lexer.start_state()
    except (RegexError, BudgetExceededError):
        return None


def ecma_search(pattern: str, text: str) -> bool:
    """Whether the ECMA-262 `pattern` matches somewhere in `text`: regress, except for texts
    over `_REGRESS_SAFE_LENGTH` characters under a pattern with nested repetition, which go to
    the native ECMA DFA (regress took 807 s on a 41-character text of `^\\w+([\\.-]?\\w+)*@`)."""
    if len(text) > _REGRESS_SAFE_LENGTH and _has_nested_repetition(pattern):
        native = _native_ecma(pattern)
        if native is not None:
            lexer, start = native
            return lexer.is_match(lexer.feed(start, text.encode("utf-8", "surrogatepass")))
    return ecma_regex(pattern).find(text) is not None


def _exact_number(text: str) -> Decimal | float:
    try:
        return Decimal(text)
    except ArithmeticError:  # an exponent beyond Decimal's range: +-inf or 0 as a float
        return float(text)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def json_loads(text: str) -> tuple[Any, list[str]]:
    """`json.loads` that refuses NaN / Infinity and reads fractions and exponents as exact
    `Decimal`s; returns the value and the object keys that were repeated (the last value of a
    repeated key wins, as in `json.loads`)."""
    repeated: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            repeated.extend(k for k, _ in pairs if k in seen or seen.add(k))
        return out

    value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=pairs_hook,
                       parse_float=_exact_number)
    return value, repeated


def _modern_format_checker() -> jsonschema.FormatChecker:
    """The format checkers of draft 2020-12, whatever the schema's draft: jaxguide enforces
    the modern formats in every draft (draft 3's `time` has no offset; draft 4 has no `time`),
    and draft 3's other names (host-name, ip-address, color) with draft 3's checkers."""
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers.update(jsonschema.Draft3Validator.FORMAT_CHECKER.checkers)
    checker.checkers.update(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    return checker


class JsonSchemaOracle:
    """Validates JSON texts against a schema (see the module docstring).

    Attributes:
      schema: the schema.
      note: after a valid verdict of `check`: the repeated keys of the text, or the format
        error of a text that fails a format jaxguide does not enforce (formats read as
        annotations); else None.
    """

    kind = "json_schema"

    def __init__(self, schema: Any):
        self.schema = schema
        self.source = json.dumps(schema)
        ecma = validator_class(schema, ecma_search)
        ecma.check_schema(schema)
        all_formats = _modern_format_checker()
        missing = sorted(ENFORCED_FORMATS - set(all_formats.checkers))
        if missing:
            raise RuntimeError(f"no format checker for {missing} (install jsonschema's "
                               "format-nongpl extra)")
        enforced = jsonschema.FormatChecker(formats=())
        for name in ENFORCED_FORMATS:
            enforced.checkers[name] = all_formats.checkers[name]
        exact = exact_numbers(schema)
        self._validator = ecma(exact, format_checker=enforced)
        self._all_formats = ecma(exact, format_checker=all_formats)
        self.note: str | None = None

    def check(self, text: str) -> str | None:
        self.note = None
        try:
            value, repeated = json_loads(text)
        except ValueError as e:
            return f"not JSON: {e}"
        error = jsonschema.exceptions.best_match(self._validator.iter_errors(value))
        if error is not None:
            return f"{error.message} (at {error.json_path}, schema {list(error.schema_path)})"
        note = jsonschema.exceptions.best_match(self._all_formats.iter_errors(value))
        if note is not None:
            self.note = f"unenforced format: {note.message} (at {note.json_path})"
        elif repeated:
            self.note = f"repeated keys: {sorted(set(repeated))}"
        return None


class OracleUndecided(Exception):
    """The oracle failed on a text (its own bug, or its time limit): neither valid nor
    invalid."""


class _Deadline(BaseException):  # not an Exception: no `except Exception` in lark eats it
    pass


def _raise_deadline(_signum, _frame):
    raise _Deadline


def _within(seconds: float, what: str, fn, *args):
    """fn(*args), or OracleUndecided past `seconds` (by SIGALRM, which interrupts `re` and
    pure-Python parsers; only on the main thread of a POSIX process, elsewhere unbounded)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal,
                                                                                 "setitimer"):
        return fn(*args)
    previous = signal.signal(signal.SIGALRM, _raise_deadline)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    except _Deadline:
        raise OracleUndecided(f"{what} took over {seconds} s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class RegexOracle:
    """`re.fullmatch(pattern, text)`, within `time_limit` seconds: `re` backtracks, and some
    patterns (nested repetition) take exponential time on long texts; past the limit the
    verdict is `OracleUndecided` (see `_within`)."""

    kind = "regex"

    def __init__(self, pattern: str, time_limit: float = 2.0):
        self.pattern = pattern
        self.source = pattern
        self._compiled = re.compile(pattern)
        self.time_limit = time_limit
        self.note = None

    def _fullmatch(self, text: str) -> bool:
        return _within(self.time_limit, "re.fullmatch", self._compiled.fullmatch,
                       text) is not None

    def check(self, text: str) -> str | None:
        if not self._fullmatch(text):
            return f"re.fullmatch({self.pattern!r}) does not match"
        return None


class LarkOracle:
    """`lark.Lark(grammar, parser="earley", lexer="dynamic", start=start).parse(text)`, within
    `time_limit` seconds (lark's Earley parser is slow on long texts of ambiguous grammars;
    past the limit: `OracleUndecided`)."""

    kind = "lark"

    def __init__(self, grammar: str, start: str = "start", import_paths: list[str] | None = None,
                 time_limit: float = 30.0):
        self.grammar = grammar
        self.source = grammar
        self._parser = lark.Lark(grammar, parser="earley", lexer="dynamic", start=start,
                                 import_paths=import_paths or [])
        self.time_limit = time_limit
        self.note = None

    def check(self, text: str) -> str | None:
        try:
            _within(self.time_limit, "lark's parse", self._parser.parse, text)
        except lark.exceptions.LarkError as e:
            return f"lark rejects it: {str(e).strip().splitlines()[0]}"
        except RuntimeError as e:  # lark's "please report this bug" errors
            raise OracleUndecided(f"lark failed: {e}") from None
        return None
