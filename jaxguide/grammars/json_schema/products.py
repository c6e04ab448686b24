"""Product automata too large for Python, handed to the lexer: the lookahead product form.

Design note. Intersections and complements of string languages (patternProperties key classes,
a pattern with a length window) are computed on small product DFAs over code points
(`automata`) and written back as regexes. Where that DFA or its regex passes its budget, the
same language is written as the lexer's lookahead product, `(?=(?:A)")(?!(?:C)")(?:B)"`
(native/lexer/regex_product.h): the lexer builds the product of the parts' DFAs over JSON
string units itself, states on its own budget, with no regex written out. The checks here keep
that product within the lexer's budget before any rule is built, so a schema that cannot be
enforced fails when it is lowered (JsonSchemaError, lenient fallbacks), not when compiled.
"""

from __future__ import annotations

import functools

from jaxguide.grammars.json_schema.automata import (
    PRODUCT_TOO_LARGE,
    TOO_MANY_STATES,
    Dfa,
    names_nfa,
    pattern_dfa,
    pattern_nfa,
    record_product_states,
    recorded_product_states,
)
from jaxguide.grammars.json_schema.formats import FORMATS
from jaxguide.grammars.json_schema.limits import (
    MAX_DFA_STATES,
    MAX_INTERSECTION_STATES,
    MAX_LENGTH_PATTERN_PRODUCT,
    MAX_PROPERTY_COUNT,
    MAX_REGEX_STATES,
)
from jaxguide.grammars.json_schema.normal_form import StringForm
from jaxguide.grammars.json_schema.pattern import (
    PatternError,
    is_length_product,
    pattern_to_units,
    split_lookaheads,
    string_units,
)
from jaxguide.grammars.json_schema.units import ANY_UNIT, literal_units

# The state budget of the key classes' product DFA (a name tests can lower).
KEY_CLASS_DFA_STATES = MAX_DFA_STATES


def pattern_states(pattern: str) -> int:
    """The states of a pattern's DFA over code points (PatternError past its budget)."""
    return _states((pattern,), None)


def product_states(patterns: tuple[str, ...]) -> int:
    """The states of the product DFA of the patterns (searched) over code points: what the
    lexer's lookahead product of them comes to (PatternError past
    `MAX_INTERSECTION_STATES`)."""
    return _states(patterns, MAX_INTERSECTION_STATES)


def _states(patterns: tuple[str, ...], budget: int | None) -> int:
    states, error = _states_memo(patterns, budget)
    if error is not None:
        raise PatternError(error)
    return states


@functools.lru_cache(maxsize=1024)
def _states_memo(patterns: tuple[str, ...], budget: int | None) -> tuple[int, str | None]:
    """(states, None) or (0, the error): failures memoized too (a schema's alternatives ask
    for the same product again and again)."""
    limit = MAX_DFA_STATES if budget is None else budget
    known = recorded_product_states(patterns)  # built by an intersection already?
    if known is not None and (known != TOO_MANY_STATES or limit <= MAX_INTERSECTION_STATES):
        if known == TOO_MANY_STATES or known > limit:
            return 0, PRODUCT_TOO_LARGE
        return known, None
    try:
        if len(patterns) == 1 and limit == MAX_DFA_STATES:  # (the one ecma_search walks)
            dfa = pattern_dfa(patterns[0])
            if dfa is None:
                return 0, PRODUCT_TOO_LARGE
        else:
            dfa = Dfa([pattern_nfa(p) for p in patterns], limit)
    except PatternError as e:
        return 0, str(e)
    if limit == MAX_INTERSECTION_STATES:
        record_product_states(patterns, len(dfa.states))
    return len(dfa.states), None


def check_length_product(pattern: str, min_len: int, max_len: int | None,
                         lookaheads: tuple[str, ...] = ()) -> None:
    """PatternError when the lexer's product of the pattern (and the `lookaheads` patterns
    that go with it) with the length window would be too large
    (`MAX_LENGTH_PATTERN_PRODUCT`)."""
    try:
        states = (product_states((pattern, *lookaheads)) if lookaheads
                  else pattern_states(pattern))
    except PatternError as e:
        raise PatternError("minLength/maxLength together with a pattern they are not "
                           f"implied by, whose automaton is too large ({e})") from None
    window = max(min_len, max_len or 0) + 1
    if states * window > MAX_LENGTH_PATTERN_PRODUCT:
        raise PatternError("minLength/maxLength together with a pattern they are not "
                           f"implied by: {states} pattern states x {window} lengths is "
                           f"above {MAX_LENGTH_PATTERN_PRODUCT:,}")


def key_class_regexes(patterns: list[str], declared: list[str], list_names: bool,
                      wanted=None):
    """Per mask (bit i: the key matches patterns[i]), the content regex of the undeclared
    keys in that class (None: no key) and, when `list_names`, its keys if at most
    `MAX_PROPERTY_COUNT`. From the product DFA of the patterns and names; where that or
    its regex is too large, as the lexer's lookahead product (native/lexer/
    regex_product.h: `(?=(?:P1)")(?!(?:P2)")(?!(?:names)")(?:unit*)`, empty classes
    included, keys not listed) when each pattern's own DFA is within `MAX_DFA_STATES`.
    `wanted(mask)` False: that class is left out of the product (None, None)."""
    n = len(patterns)
    if n == 1 and not declared and not list_names and wanted is not None and not wanted(0):
        # Only the keys the one pattern matches: its content regex, as a string `pattern`
        # value's (no product to build; a pattern no string matches gives None).
        return [(None, None), (pattern_to_units(patterns[0]), None)]
    nodes = [pattern_nfa(p) for p in patterns] + ([names_nfa(declared)] if declared else [])
    if not nodes:  # one class: every key
        return [(f"(?:{ANY_UNIT})*", None)]
    try:
        dfa = Dfa(nodes, KEY_CLASS_DFA_STATES)
        out = []
        for mask in range(1 << n):
            if wanted is not None and not wanted(mask):
                out.append((None, None))
                continue

            def accept(vec, mask=mask):
                return (all(vec[i] == bool(mask >> i & 1) for i in range(n))
                        and not (declared and vec[n]))
            out.append((dfa.regex(accept, max_states=MAX_REGEX_STATES),
                        dfa.finite_language(accept, MAX_PROPERTY_COUNT)
                        if list_names else None))
        return out
    except PatternError as e:
        if "too large" not in str(e):
            raise
    for p in patterns:  # each pattern's own DFA within budget (else PatternError)
        pattern_states(p)
    units = [pattern_to_units(p) for p in patterns]
    names = "|".join(literal_units(name) for name in declared)
    out = []
    for mask in range(1 << n):
        if wanted is not None and not wanted(mask):
            out.append((None, None))
            continue
        looks = [f'(?{"=" if mask >> i & 1 else "!"}(?:{u})")' if u is not None else ""
                 for i, u in enumerate(units)]
        if any(u is None and mask >> i & 1 for i, u in enumerate(units)):
            out.append((None, None))  # a pattern no string matches
            continue
        looks += [f'(?!(?:{names})")'] if names else []
        out.append(("".join(looks) + f"(?:{ANY_UNIT}*)", None))
    return out


def check_string_product(source: str | None, lookaheads: tuple[str, ...], min_len: int,
                         max_len: int | None) -> None:
    """Checks the lexer's work for a string form before any rule is built (PatternError):
    `source` (the pattern or format, None: any string) with the length window, and with the
    `lookaheads` patterns their product, within `MAX_INTERSECTION_STATES`; where the length
    window is a part of the product too, `check_length_product`."""
    units = pattern_to_units(source, min_len, max_len) if source is not None else None
    windowed = (is_length_product(units) if source is not None
                else min_len > 0 or max_len is not None)
    if lookaheads:
        for pattern in lookaheads:
            pattern_to_units(pattern)  # its syntax
        try:
            product_states(((source,) if source is not None else ()) + lookaheads)
        except PatternError as e:
            raise PatternError(f"their product is too large ({e})") from None
    if windowed:
        check_length_product(source if source is not None else "", min_len, max_len,
                             lookaheads)


def pattern_lookaheads(pattern, others) -> tuple:
    """(pattern, lookaheads) of a string schema's `pattern` and allOf's `others` (patterns
    kept apart, `combinators.PATTERNS`): the lookaheads that open or close a pattern
    (`pattern.split_lookaheads`) and the others become the lexer's lookaheads, as (must
    match, ECMA pattern) pairs."""
    looks: tuple = ()
    if isinstance(pattern, str):
        pattern, looks = split_lookaheads(pattern)
    for other in others:
        other, leading = split_lookaheads(other)
        looks += ((True, other), *leading)
    return pattern, looks


def ecma_literal(names) -> str:
    """An anchored ECMA pattern for exactly these strings (every character but ASCII letters
    and digits written as `\\u{...}`)."""
    def char(c: str) -> str:
        return c if c.isascii() and c.isalnum() else f"\\u{{{ord(c):x}}}"
    return "^(?:" + "|".join("".join(map(char, name)) for name in names) + ")$"


def string_form_units(form: StringForm) -> str | None:
    """The content regex (JSON string units, no quotes) of a string form; None when no
    string is left. Its `lookaheads` come first, as the lexer's lookahead product
    (`(?=(?:P)")` must match, `(?!(?:N)")` must not, native/lexer/regex_product.h)."""
    base = string_units(form.min_length, form.max_length, form.pattern if form.pattern
                        is not None else FORMATS.get(form.format))
    if base is None or not form.lookaheads:
        return base
    looks = []
    for must, pattern in form.lookaheads:
        units = pattern_to_units(pattern)
        if units is None:
            if must:
                return None  # a pattern no string matches
            continue  # excludes nothing
        looks.append(f'(?{"=" if must else "!"}(?:{units})")')
    return "".join(looks) + (base if is_length_product(base) else f"(?:{base})")
