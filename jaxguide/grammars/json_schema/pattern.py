"""The ECMA-262 `pattern` subset -> regexes over JSON string units (exact on the decoded string).

Design note. `EcmaParser` parses a pattern into an AST over code point sets:
("set", ranges) | ("cat", [..]) | ("alt", [..]) | ("rep", node, min, max|None) | ("bol",) |
("eol",). `strip_anchors` splits the top-level alternatives and their `^`/`$` anchors (an
alternation holding anchors at a branch's edge is distributed first; anchors elsewhere: an
error). `split_lookaheads` takes out the lookaheads that open a pattern (and two other exact
forms) for the lexer's lookahead product, before any of this. `pattern_to_units` emits each alternative over units (`unit_regex`), so
the pattern applies to the decoded value, and searches (unanchored sides take `ANY_UNIT*`), as
JSON Schema says. min/maxLength with a pattern: kept when the pattern implies them, or pushed
into the one repetition that carries the variable length of an anchored alternative
(`^[A-Z][a-z]*$` + maxLength 8 -> `[A-Z][a-z]{0,7}`); otherwise `PatternError`, which the
compiler reports as a keyword it cannot enforce. Other lookaround, backreferences, `\\b`,
`\\p{..}`: `PatternError` (not regular, or not supported).
"""

from __future__ import annotations

import functools
import re

from jaxguide.grammars.json_schema.formats import LIBRARY_PATTERNS
from jaxguide.grammars.json_schema.limits import MAX_COUNT
from jaxguide.grammars.json_schema.units import (
    ANY_UNIT,
    DIGITS,
    ECMA_SPACE,
    LINE_TERMINATORS,
    MAX_UNICODE,
    WORD,
    complement,
    norm_ranges,
    unit_regex,
)

# ECMA-262 pattern subset -> AST: ("set", ranges) | ("cat", [..]) | ("alt", [..])
# | ("rep", node, min, max|None) | ("bol",) | ("eol",)


class PatternError(ValueError):
    pass


# The parser's tables and regexes, built once (it runs for every pattern of every schema).
_QUANTIFIER_LIMITS = {"*": (0, None), "+": (1, None), "?": (0, 1)}
_BRACES = re.compile(r"\{(\d+)(,(\d*))?\}")
_BRACES_AHEAD = re.compile(r"\{\d+(,\d*)?\}")
_CLASS_ESCAPES = {"d": DIGITS, "w": WORD, "s": ECMA_SPACE}
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11}
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")
_UNICODE_ESCAPE = re.compile(r"\{([0-9a-fA-F]+)\}|[0-9a-fA-F]{4}")
_LOW_SURROGATE_ESCAPE = re.compile(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})")


class EcmaParser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0

    def parse(self):
        node = self.alt()
        if self.i < len(self.p):
            raise PatternError(f"unexpected {self.p[self.i]!r} at {self.i}")
        return node

    def peek(self):
        return self.p[self.i] if self.i < len(self.p) else None

    def alt(self):
        branches = [self.cat()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.cat())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def cat(self):
        items = []
        p, n = self.p, len(self.p)
        while self.i < n and p[self.i] not in "|)":
            items.append(self.quantified())
        return ("cat", items)

    def quantified(self):
        atom = self.atom()
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi = _QUANTIFIER_LIMITS[c]
            elif c == "{":
                m = _BRACES.match(self.p, self.i)
                if not m:
                    return atom if atom[0] != "lit{" else atom  # literal '{' handled in atom
                self.i = m.end()
                lo = int(m.group(1))
                hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                if hi is not None and hi < lo:
                    raise PatternError("numbers out of order in {} quantifier")
            else:
                return atom
            if atom[0] in ("bol", "eol"):
                raise PatternError("quantified anchor")
            if self.peek() == "?":
                self.i += 1  # lazy: same language
            atom = ("rep", atom, lo, hi)
            nxt = self.peek()
            if nxt in ("*", "+", "?") or (nxt == "{" and _BRACES_AHEAD.match(self.p, self.i)):
                raise PatternError(f"nothing to repeat at {self.i}")
            return atom

    def atom(self):
        c = self.p[self.i]
        self.i += 1
        if c == "(":
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.p.startswith("?<", self.i) and not self.p.startswith(("?<=", "?<!"),
                                                                               self.i):
                end = self.p.find(">", self.i)
                if end < 0:
                    raise PatternError("unterminated group name")
                self.i = end + 1
            elif self.peek() == "?":
                raise PatternError(f"unsupported group construct (?{self.p[self.i + 1:self.i + 2]}"
                                    " (lookaround is not regular)")
            node = self.alt()
            if self.peek() != ")":
                raise PatternError("missing )")
            self.i += 1
            return node
        if c == ")":
            raise PatternError("unbalanced )")
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == ".":
            return ("set", complement(LINE_TERMINATORS))
        if c == "[":
            return ("set", self.char_class())
        if c == "\\":
            return ("set", self.escape(in_class=False))
        if c in "*+?":
            raise PatternError(f"nothing to repeat at {self.i - 1}")
        if c == "{" and _BRACES_AHEAD.match(self.p, self.i - 1):
            raise PatternError(f"nothing to repeat at {self.i - 1}")
        cp = ord(c)
        if 0xD800 <= cp <= 0xDBFF and self.i < len(self.p):
            cp2 = ord(self.p[self.i])
            if 0xDC00 <= cp2 <= 0xDFFF:
                self.i += 1
                cp = 0x10000 + ((cp - 0xD800) << 10) + (cp2 - 0xDC00)
        return ("set", ((cp, cp),))

    def escape(self, in_class: bool):
        if self.i >= len(self.p):
            raise PatternError("trailing backslash")
        c = self.p[self.i]
        self.i += 1
        classes = _CLASS_ESCAPES
        if c in classes:
            return classes[c]
        if c.lower() in classes:
            return complement(classes[c.lower()])
        simple = _SIMPLE_ESCAPES
        if c in simple:
            return ((simple[c], simple[c]),)
        if c == "0" and not (self.peek() or "").isdigit():
            return ((0, 0),)
        if c == "b" and in_class:
            return ((8, 8),)
        if c in "bB":
            raise PatternError("\\b and \\B (word boundaries) are not regular")
        if c.isdigit():
            raise PatternError("backreferences are not regular")
        if c == "k":
            raise PatternError("backreferences are not regular")
        if c in "pP":
            raise PatternError("\\p{...} Unicode properties are not supported")
        if c == "c":
            letter = self.peek()
            if letter and letter.isascii() and letter.isalpha():
                self.i += 1
                return ((ord(letter) % 32, ord(letter) % 32),)
            return ((ord("\\"), ord("\\")), (ord("c"), ord("c")))
        if c == "x":
            m = _HEX2.match(self.p, self.i)
            if m:
                self.i = m.end()
                v = int(m.group(), 16)
                return ((v, v),)
            return ((ord("x"), ord("x")),)
        if c == "u":
            m = _UNICODE_ESCAPE.match(self.p, self.i)
            if m:
                self.i = m.end()
                v = int(m.group(1) or m.group(), 16)
                if 0xD800 <= v <= 0xDBFF:
                    m2 = _LOW_SURROGATE_ESCAPE.match(self.p, self.i)
                    if m2:
                        self.i = m2.end()
                        v = 0x10000 + ((v - 0xD800) << 10) + (int(m2.group(1), 16) - 0xDC00)
                if v > MAX_UNICODE:
                    raise PatternError("\\u{...} beyond U+10FFFF")
                return ((v, v),)
            return ((ord("u"), ord("u")),)
        return ((ord(c), ord(c)),)

    def char_class(self):
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        ranges = []
        first = True
        while True:
            if self.i >= len(self.p):
                raise PatternError("unterminated character class")
            c = self.p[self.i]
            if c == "]" and not (first and False):
                self.i += 1
                break
            first = False
            lo_set = self.class_atom()
            if (self.peek() == "-" and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]"
                    and len(lo_set) == 1 and lo_set[0][0] == lo_set[0][1]):
                self.i += 1
                hi_set = self.class_atom()
                if len(hi_set) != 1 or hi_set[0][0] != hi_set[0][1]:
                    raise PatternError("class escape as a range bound")
                lo, hi = lo_set[0][0], hi_set[0][0]
                if lo > hi:
                    raise PatternError("range out of order in character class")
                ranges.append((lo, hi))
            else:
                ranges.extend(lo_set)
        ranges = norm_ranges(ranges)
        return complement(ranges) if negate else ranges

    def class_atom(self):
        c = self.p[self.i]
        self.i += 1
        if c == "\\":
            return self.escape(in_class=True)
        if c == "[" and self.peek() in (":", "=", "."):
            pass  # POSIX brackets are literal in ECMA
        return ((ord(c), ord(c)),)


_MAX_ANCHOR_BRANCHES = 64  # alternatives an anchor may be distributed into (strip_anchors)


def _flat_items(node) -> list:
    """The items of a concatenation, nested concatenations spliced in (a group is no item)."""
    items = list(node[1]) if node[0] == "cat" else [node]
    out = []
    for item in items:
        out.extend(_flat_items(item) if item[0] == "cat" else [item])
    return out


def _strip_edge_anchors(node):
    """strip_anchors' first try: anchors where the branches start and end, a lone group lifted."""
    branches = node[1] if node[0] == "alt" else [node]
    out = []
    for branch in branches:
        items = list(branch[1]) if branch[0] == "cat" else [branch]
        # A branch that is a single group of alternatives: lift it.
        if len(items) == 1 and items[0][0] == "alt":
            out.extend(_strip_edge_anchors(items[0]))
            continue
        if len(items) == 1 and items[0][0] == "cat":
            out.extend(_strip_edge_anchors(items[0]))
            continue
        items, start, end = _pop_anchors(items)
        # ^(a|b)$ with anchors inside a lone group
        if len(items) == 1 and items[0][0] in ("alt", "cat") and not start and not end:
            inner = _strip_edge_anchors(items[0])
            out.extend(inner)
            continue
        if _has_anchor(("cat", items)):
            raise PatternError("^ or $ other than at the start / end of the pattern")
        out.append((("cat", items), start, end))
    return out


def strip_anchors(node):
    """Top-level alternatives with their ^/$ anchors: [(node, anchored_start, anchored_end)].
    An alternation that opens or closes a branch and holds anchors is distributed over the
    branch (`^(?:a|$)` is `^a|^$`, `^(\\d+$)|(^x$)` is two anchored branches), up to
    `_MAX_ANCHOR_BRANCHES` branches; an anchor left anywhere else is an error."""
    try:
        return _strip_edge_anchors(node)
    except PatternError:
        pass
    pending = [_flat_items(branch) for branch in (node[1] if node[0] == "alt" else [node])]
    out = []
    while pending:
        items = pending.pop(0)
        if len(out) + len(pending) > _MAX_ANCHOR_BRANCHES:
            raise PatternError("^ or $ inside alternatives that spread too wide")
        if items and items[0][0] == "alt" and _has_anchor(items[0]):
            pending[:0] = [_flat_items(b) + items[1:] for b in items[0][1]]
            continue
        if items and items[-1][0] == "alt" and _has_anchor(items[-1]):
            pending[:0] = [items[:-1] + _flat_items(b) for b in items[-1][1]]
            continue
        items, start, end = _pop_anchors(items)
        if _has_anchor(("cat", items)):
            raise PatternError("^ or $ other than at the start / end of the pattern")
        out.append((("cat", items), start, end))
    return out


def _pop_anchors(items: list) -> tuple[list, bool, bool]:
    """A branch's items without its leading `^`s and trailing `$`s, and whether it had any."""
    start = end = False
    while items and items[0][0] == "bol":
        items = items[1:]
        start = True
    while items and items[-1][0] == "eol":
        items = items[:-1]
        end = True
    return items, start, end


def _has_anchor(node) -> bool:
    kind = node[0]
    if kind in ("bol", "eol"):
        return True
    if kind in ("cat", "alt"):
        return any(_has_anchor(n) for n in node[1])
    if kind == "rep":
        return _has_anchor(node[1])
    return False


def _node_units(node) -> str | None:
    """Regex over units for the node; None when it matches nothing (an empty class such as
    `[]`, or only lone surrogates, which no JSON string holds). The emitted regex never uses
    lookaround (the native Python-dialect lexer refuses `(?!)`)."""
    kind = node[0]
    if kind == "set":
        return unit_regex(node[1])
    if kind == "cat":
        parts = [_group(n) for n in node[1]]
        return None if any(p is None for p in parts) else "".join(parts)
    if kind == "alt":
        branches = [b for b in (_node_units(n) for n in node[1]) if b is not None]
        return "|".join(branches) if branches else None
    if kind == "rep":
        _, inner, lo, hi = node
        if hi is not None and hi > MAX_COUNT:
            raise PatternError(f"repetition count {hi} above {MAX_COUNT}")
        if lo > MAX_COUNT:
            raise PatternError(f"repetition count {lo} above {MAX_COUNT}")
        body = _node_units(inner)
        if body is None:
            return "" if lo == 0 else None
        q = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((lo, hi))
        if q is None:
            q = f"{{{lo}}}" if lo == hi else (f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}")
        return f"(?:{body}){q}"
    raise PatternError(f"internal: {kind}")


def _group(node) -> str | None:
    text = _node_units(node)
    return f"(?:{text})" if node[0] == "alt" and text is not None else text


def _length_range(node) -> tuple[int, int | None]:
    kind = node[0]
    if kind == "set":
        return (1, 1)
    if kind in ("bol", "eol"):
        return (0, 0)
    if kind == "cat":
        lo, hi = 0, 0
        for n in node[1]:
            a, b = _length_range(n)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if kind == "alt":
        ranges = [_length_range(n) for n in node[1]]
        return (min(r[0] for r in ranges),
                None if any(r[1] is None for r in ranges) else max(r[1] for r in ranges))
    _, inner, lo, hi = node
    a, b = _length_range(inner)
    return a * lo, (None if hi is None or b is None else b * hi)


def pattern_to_units(pattern: str, min_length: int = 0, max_length: int | None = None,
                     ) -> str | None:
    """Regex over JSON string content (no quotes) for strings that `pattern` matches (search);
    None when no string does (`[]`, `^a$` with maxLength 0, a lone surrogate).

    Raises PatternError for unsupported syntax, or when a length bound is not implied.
    """
    units, error = pattern_units_memo(pattern, min_length, max_length)
    if error is not None:
        raise PatternError(error)
    return units


def pattern_units_memo(pattern: str, min_length, max_length) -> tuple[str | None, str | None]:
    """(`pattern_to_units`'s result, None) or (None, its PatternError's message): a schema
    often repeats a pattern (a validity check and the emitter ask for each one, too). A format
    pattern without lengths is translated once per process (`LIBRARY_PATTERNS`)."""
    if pattern in LIBRARY_PATTERNS and min_length == 0 and max_length is None:
        found = _LIBRARY_UNITS.get(pattern)
        if found is None:
            found = _LIBRARY_UNITS[pattern] = _schema_pattern_units(pattern, 0, None)
        return found
    return _schema_pattern_units(pattern, min_length, max_length)


_LIBRARY_UNITS: dict[str, tuple[str | None, str | None]] = {}


@functools.lru_cache(maxsize=4096, typed=True)  # typed: 2 and 2.0 spell different bounds
def _schema_pattern_units(pattern: str, min_length, max_length) -> tuple[str | None, str | None]:
    try:
        return _pattern_to_units(pattern, min_length, max_length), None
    except PatternError as e:
        return None, str(e)


def is_length_product(units: str | None) -> bool:
    """Whether `pattern_to_units` wrote its lengths as the lexer's product form."""
    return units is not None and units.startswith("(?=")


def _structure(pattern: str, start: int = 0):
    """(index, character, group depth before it) of the characters of `pattern` from `start`
    that are syntax: outside escapes and character classes."""
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        else:
            yield i, c, depth
            depth += {"(": 1, ")": -1}.get(c, 0)
        i += 1


def _group_end(pattern: str, start: int) -> int:
    """The index just past the `)` closing the group opened at `start`; -1 when it is not
    closed."""
    for i, c, depth in _structure(pattern, start):
        if c == ")" and depth == 1:
            return i + 1
    return -1


def _top_level_branches(pattern: str) -> list[str]:
    """`pattern` split at its `|`s outside every group and class."""
    cuts = [i for i, c, depth in _structure(pattern) if c == "|" and depth == 0]
    return [pattern[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(pattern)])]


def _from_start(pattern: str) -> str:
    """A pattern that matches where `pattern` matches at position 0: `^` before each of its
    top-level alternatives (`^(?:A|^B)` as `^A|^B`, which the parser reads)."""
    return "|".join("^" + branch.removeprefix("^") for branch in _top_level_branches(pattern))


_TEMPERED = re.compile(r"\^\((?:\?:)?((?:\(\?![^()]*\))+)\.\)\*\$")
_TEMPERED_BODY = re.compile(r"\(\?!([^()]*)\)")


def _nullable(node) -> bool:
    """Whether an ECMA AST node matches the empty string (an anchor counts as empty)."""
    kind = node[0]
    if kind == "cat":
        return all(_nullable(n) for n in node[1])
    if kind == "alt":
        return any(_nullable(n) for n in node[1])
    if kind == "rep":
        return node[2] == 0 or _nullable(node[1])
    return kind in ("bol", "eol")


def _tempered_lookaheads(pattern: str) -> tuple[tuple[bool, str], ...] | None:
    """`^((?!X)(?!Y).)*$` (no X, no Y anywhere; a line without terminators) as negative
    lookaheads (False, X), (False, Y) searched anywhere, when X and Y are plain (no group,
    anchor or backslash-letter assertion) and match no empty string: then a match of X at
    some position of the string is exactly what the pattern forbids. None: not that form."""
    found = _TEMPERED.fullmatch(pattern)
    if found is None:
        return None
    bodies = _TEMPERED_BODY.findall(found.group(1))
    for body in bodies:
        if not body or re.search(r"[\^$]|\\[bB]", body):
            return None
        try:
            if _nullable(EcmaParser(body).parse()):  # it matches ""
                return None
        except PatternError:
            return None
    return tuple((False, body) for body in bodies)


@functools.lru_cache(maxsize=1024)
def split_lookaheads(pattern: str) -> tuple[str, tuple[tuple[bool, str], ...]]:
    """`pattern` without the lookaheads it opens with, and those as (must match, pattern):
    `^(?!X)(?=Y)R` -> (`^R`, ((False, `^X`), (True, `^Y`))). A search finds the pattern
    exactly when it finds `^R`, finds `^Y` and does not find `^X` (the lookaheads read from
    position 0, as R does; `^` goes before each top-level alternative of X and Y). A lookahead that closes an unanchored
    pattern, `R(?=X)`, becomes `R(?:X)`: a search finds one exactly when it finds the other.
    Other lookarounds stay (the parser refuses them)."""
    if "(?=" not in pattern and "(?!" not in pattern or len(_top_level_branches(pattern)) > 1:
        return pattern, ()
    tempered = _tempered_lookaheads(pattern)
    if tempered is not None:
        return "^.*$", tempered
    looks = []
    rest = pattern
    if rest.startswith("^"):
        i = 1
        while rest.startswith(("(?=", "(?!"), i):
            end = _group_end(rest, i)
            if end < 0:
                return pattern, ()
            looks.append((rest[i + 2] == "=", _from_start(rest[i + 3:end - 1])))
            i = end
        rest = "^" + rest[i:]
    if rest.endswith(")") and not rest.endswith("\\)"):
        start = rest.rfind("(?=")
        if start >= 0 and _group_end(rest, start) == len(rest):
            rest = rest[:start] + "(?:" + rest[start + 3:]
    return rest, tuple(looks)


class _LengthNotImplied(PatternError):
    """The length window cannot be pushed into the pattern's repetitions."""


def _pattern_to_units(pattern: str, min_length, max_length) -> str | None:
    """The pattern's units with the length window pushed into it, or else written as the
    lexer's product form: `(?=(?:LENGTH)")(?:PATTERN)` (native/lexer/regex_product.h), a
    lookahead that must stay next to the closing quote (`units.key_regex`); the normalizer
    checks its size (`MAX_LENGTH_PATTERN_PRODUCT`)."""
    try:
        return _pushed_pattern_units(pattern, min_length, max_length)
    except _LengthNotImplied:
        pass
    units = _pushed_pattern_units(pattern, 0, None)
    if units is None:
        return None
    counts = (f"{{{min_length},}}" if max_length is None else f"{{{min_length}}}"
              if min_length == max_length else f"{{{min_length},{max_length}}}")
    return f'(?=(?:{ANY_UNIT}{counts})")(?:{units})'


def _pushed_pattern_units(pattern: str, min_length, max_length) -> str | None:
    ast = EcmaParser(pattern).parse()
    branches = strip_anchors(ast)
    alts = []
    for node, start, end in branches:
        body = _node_units(node)
        if body is None:
            continue  # this alternative matches nothing
        lo, hi = _length_range(node)
        if not start:
            hi = None
        if not end:
            hi = None
        if (min_length > lo) or (max_length is not None and (hi is None or hi > max_length)):
            if not (start and end):
                raise _LengthNotImplied("minLength/maxLength together with an unanchored "
                                        "pattern")
            node = _push_length(node, min_length, max_length)
            if node is None:
                continue
            body = _node_units(node)
            if body is None:
                continue
        alts.append(("" if start else f"{ANY_UNIT}*") + f"(?:{body})"
                     + ("" if end else f"{ANY_UNIT}*"))
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(f"(?:{a})" for a in alts) + ")"


def _flatten(node) -> list:
    if node[0] == "cat":
        return [x for n in node[1] for x in _flatten(n)]
    return [node]


def _push_length(node, min_length: int, max_length: int | None):
    """An anchored branch intersected with a length window, when exactly one repetition of a
    fixed-length item carries the variable length (e.g. ^[A-Z][a-z0-9_]*$); None if empty.
    Raises PatternError otherwise."""
    items = _flatten(node)
    fixed, variable = 0, []
    for i, item in enumerate(items):
        lo, hi = _length_range(item)
        if lo == hi:
            fixed += lo
        else:
            variable.append(i)
    if not variable:
        ok = fixed >= min_length and (max_length is None or fixed <= max_length)
        return ("cat", items) if ok else None
    if len(variable) != 1 or items[variable[0]][0] != "rep":
        raise _LengthNotImplied("minLength/maxLength together with a pattern they are not "
                                "implied by")
    _, inner, a, b = items[variable[0]]
    lo, hi = _length_range(inner)
    if lo != hi or lo == 0:
        raise _LengthNotImplied("minLength/maxLength together with a pattern they are not "
                                "implied by")
    k_lo = max(a, -(-(min_length - fixed) // lo))
    k_hi = b
    if max_length is not None:
        limit = (max_length - fixed) // lo
        k_hi = limit if k_hi is None else min(k_hi, limit)
    if k_hi is not None and k_lo > k_hi:
        return None
    items[variable[0]] = ("rep", inner, k_lo, k_hi)
    return ("cat", items)



def string_units(min_length: int = 0, max_length: int | None = None,
                 pattern: str | None = None) -> str | None:
    """Regex over JSON string content for the strings of min..max code points (max None:
    unbounded) that `pattern` matches (None: any); None when there is none. With a pattern,
    the lengths must be implied by it or pushed into it (else PatternError)."""
    if max_length is not None and max_length < min_length:
        return None
    if pattern is not None:
        return pattern_to_units(pattern, min_length, max_length)
    if min_length == 0 and max_length is None:
        return f"{ANY_UNIT}*"
    if max_length is None:
        return f"{ANY_UNIT}{{{min_length},}}"
    if min_length == max_length:
        return f"{ANY_UNIT}{{{min_length}}}"
    return f"{ANY_UNIT}{{{min_length},{max_length}}}"
