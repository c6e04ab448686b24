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

from jaxguide.grammars.json_schema.automata import Dfa, names_node, pattern_node
from jaxguide.grammars.json_schema.limits import (
    MAX_DFA_STATES,
    MAX_LENGTH_PATTERN_PRODUCT,
    MAX_PROPERTY_COUNT,
)
from jaxguide.grammars.json_schema.pattern import PatternError, pattern_to_units
from jaxguide.grammars.json_schema.units import ANY_UNIT, literal_units

# The state budget of the key classes' product DFA (a name tests can lower).
KEY_CLASS_DFA_STATES = MAX_DFA_STATES


@functools.lru_cache(maxsize=1024)
def pattern_states(pattern: str) -> int:
    """The states of a pattern's DFA over code points (PatternError past its budget)."""
    return len(Dfa([pattern_node(pattern)]).states)


def check_length_product(pattern: str, min_len: int, max_len: int | None) -> None:
    """PatternError when the lexer's product of the pattern with the length window would
    be too large (`MAX_LENGTH_PATTERN_PRODUCT`)."""
    try:
        states = pattern_states(pattern)
    except PatternError as e:
        raise PatternError("minLength/maxLength together with a pattern they are not "
                           f"implied by, whose automaton is too large ({e})") from None
    window = max(min_len, max_len or 0) + 1
    if states * window > MAX_LENGTH_PATTERN_PRODUCT:
        raise PatternError("minLength/maxLength together with a pattern they are not "
                           f"implied by: {states} pattern states x {window} lengths is "
                           f"above {MAX_LENGTH_PATTERN_PRODUCT:,}")


def key_class_regexes(patterns: list[str], declared: list[str], list_names: bool):
    """Per mask (bit i: the key matches patterns[i]), the content regex of the undeclared
    keys in that class (None: no key) and, when `list_names`, its keys if at most
    `MAX_PROPERTY_COUNT`. From the product DFA of the patterns and names; where that or
    its regex is too large, as the lexer's lookahead product (native/lexer/
    regex_product.h: `(?=(?:P1)")(?!(?:P2)")(?!(?:names)")(?:unit*)`, empty classes
    included, keys not listed) when each pattern's own DFA is within `MAX_DFA_STATES`."""
    nodes = [pattern_node(p) for p in patterns] + ([names_node(declared)] if declared else [])
    n = len(patterns)
    try:
        dfa = Dfa(nodes, KEY_CLASS_DFA_STATES)
        out = []
        for mask in range(1 << n):
            def accept(vec, mask=mask):
                return (all(vec[i] == bool(mask >> i & 1) for i in range(n))
                        and not (declared and vec[n]))
            out.append((dfa.regex(accept), dfa.finite_language(accept, MAX_PROPERTY_COUNT)
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
        looks = [f'(?{"=" if mask >> i & 1 else "!"}(?:{u})")' if u is not None else ""
                 for i, u in enumerate(units)]
        if any(u is None and mask >> i & 1 for i, u in enumerate(units)):
            out.append((None, None))  # a pattern no string matches
            continue
        looks += [f'(?!(?:{names})")'] if names else []
        out.append(("".join(looks) + f"(?:{ANY_UNIT}*)", None))
    return out
