"""JSON string *units* over code point sets: the regexes every string terminal is made of.

Design note. A JSON string is a sequence of units, each spelling one code point: a raw
character (U+0020 and above except `"` and `\\`), a short escape, or `\\uXXXX` (a surrogate
pair above U+FFFF). A set of code points is a tuple of sorted disjoint inclusive ranges;
`unit_regex(ranges)` is the regex of every unit spelling one of them (raw class | short escapes
| hex ranges, any hex case; `\\uXXXX` only where `json.dumps` would write one, see the package
design note). `ANY_UNIT` is the shorter regex for free content (any non-surrogate `\\uXXXX`).
`not_names_units` is the complement of a finite set of names (a trie whose diverging branches
end in `ANY_UNIT*`), used for the keys no property declares.
"""

from __future__ import annotations

import functools
import re

MAX_UNICODE = 0x10FFFF

# Code point sets: sorted disjoint inclusive ranges.


def norm_ranges(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(ranges):
    out, prev = [], 0
    for lo, hi in ranges:
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAX_UNICODE:
        out.append((prev, MAX_UNICODE))
    return tuple(out)


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


ALL_CHARS = ((0, MAX_UNICODE),)
SURROGATES = ((0xD800, 0xDFFF),)
DIGITS = ((0x30, 0x39),)
WORD = norm_ranges([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
ECMA_SPACE = norm_ranges([(9, 13), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
                    (0xFEFF, 0xFEFF)])
LINE_TERMINATORS = norm_ranges([(10, 10), (13, 13), (0x2028, 0x2029)])


def _class_item(cp: int) -> str:
    if cp < 0x80 and (chr(cp).isalnum() or chr(cp) in " _"):
        return chr(cp)
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def char_class(ranges) -> str:
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return re.escape(chr(ranges[0][0])) if ranges[0][0] >= 0x20 and ranges[0][0] < 0x7F \
            else _class_item(ranges[0][0])
    parts = []
    for lo, hi in ranges:
        if lo == hi:
            parts.append(_class_item(lo))
        elif hi == lo + 1:
            parts.append(_class_item(lo) + _class_item(hi))
        else:
            parts.append(f"{_class_item(lo)}-{_class_item(hi)}")
    return "[" + "".join(parts) + "]"


# Hex digits of a \u escape, any case.
def _hex_digit_class(lo: int, hi: int) -> str:
    parts = []
    dlo, dhi = max(lo, 0), min(hi, 9)
    if lo == hi and lo < 10:
        return str(lo)
    if dlo <= dhi:
        parts.append(f"{dlo}" if dlo == dhi else f"{dlo}-{dhi}")
    alo, ahi = max(lo, 10), min(hi, 15)
    if alo <= ahi:
        a, b = "abcdef"[alo - 10], "abcdef"[ahi - 10]
        parts.append(a + a.upper() if a == b else f"{a}-{b}{a.upper()}-{b.upper()}")
    return "[" + "".join(parts) + "]"


def _hex_range(lo: int, hi: int, width: int = 4) -> list[str]:
    """Regex alternatives for `width` hex digits (any case) with value in [lo, hi]."""
    if width == 0:
        return [""]
    unit = 16 ** (width - 1)
    if lo == 0 and hi == 16 ** width - 1:
        return ["[0-9a-fA-F]" + (f"{{{width}}}" if width > 1 else "")]
    dlo, dhi = lo // unit, hi // unit
    if dlo == dhi:
        return [_hex_digit_class(dlo, dlo) + r for r in _hex_range(lo % unit, hi % unit,
                                                                   width - 1)]
    out = []
    first, last = dlo, dhi
    if lo % unit:
        out += [_hex_digit_class(dlo, dlo) + r for r in _hex_range(lo % unit, unit - 1,
                                                                   width - 1)]
        first += 1
    if hi % unit != unit - 1:
        last -= 1
    if first <= last:
        out += [_hex_digit_class(first, last) + r for r in _hex_range(0, unit - 1, width - 1)]
    if hi % unit != unit - 1:
        out += [_hex_digit_class(dhi, dhi) + r for r in _hex_range(0, hi % unit, width - 1)]
    return out


_SHORT_ESCAPES = {0x22: '\\\\"', 0x5C: "\\\\\\\\", 0x2F: "\\\\/", 0x08: "\\\\b", 0x0C: "\\\\f",
                  0x0A: "\\\\n", 0x0D: "\\\\r", 0x09: "\\\\t"}
_RAW_OK = norm_ranges([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, MAX_UNICODE)])
_U_ESCAPABLE = norm_ranges([(0, 0x1F), (0x7F, 0xD7FF), (0xE000, MAX_UNICODE)])


@functools.lru_cache(maxsize=4096)
def unit_regex(ranges, raw: bool = True) -> str | None:
    """Regex for the JSON string units spelling a code point in `ranges` (None if none);
    with raw=False only the escaped spellings."""
    ranges = intersect(ranges, complement(SURROGATES))
    alts = []
    raw = intersect(ranges, _RAW_OK) if raw else ()
    if raw:
        alts.append(char_class(raw))
    for cp, esc in _SHORT_ESCAPES.items():
        if intersect(ranges, ((cp, cp),)):
            alts.append(esc)
    uesc = intersect(ranges, _U_ESCAPABLE)
    bmp = intersect(uesc, ((0, 0xFFFF),))
    hexes = [h for lo, hi in bmp for h in _hex_range(lo, hi)]
    if hexes:
        alts.append("\\\\u(?:" + "|".join(hexes) + ")" if len(hexes) > 1 else "\\\\u" + hexes[0])
    for lo, hi in intersect(uesc, ((0x10000, MAX_UNICODE),)):
        lo, hi = lo - 0x10000, hi - 0x10000
        hlo, hhi = 0xD800 + (lo >> 10), 0xD800 + (hi >> 10)
        pieces = []
        if hlo == hhi:
            pieces.append((hlo, hlo, 0xDC00 + (lo & 0x3FF), 0xDC00 + (hi & 0x3FF)))
        else:
            mid_lo, mid_hi = hlo + 1, hhi - 1
            if lo & 0x3FF:
                pieces.append((hlo, hlo, 0xDC00 + (lo & 0x3FF), 0xDFFF))
            else:
                mid_lo = hlo
            if (hi & 0x3FF) != 0x3FF:
                pieces.append((hhi, hhi, 0xDC00, 0xDC00 + (hi & 0x3FF)))
            else:
                mid_hi = hhi
            if mid_lo <= mid_hi:
                pieces.append((mid_lo, mid_hi, 0xDC00, 0xDFFF))
        for a, b, c, d in pieces:
            high = "|".join(_hex_range(a, b))
            low = "|".join(_hex_range(c, d))
            alts.append(f"\\\\u(?:{high})\\\\u(?:{low})")
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# Any unit: where the content is unconstrained, every non-surrogate \uXXXX is accepted (a
# shorter regex; constrained units above keep the canonical spellings only).
ANY_UNIT = ('(?:[^"\\\\\\x00-\\x1f\\ud800-\\udfff]|\\\\["\\\\/bfnrt]'
            '|\\\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2})'
            '|\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2})')


# A class that matches nothing (the native lexer refuses the lookahead `(?!)`).
NOTHING = "[^\\x00-\\U0010ffff]"


# Printable ASCII other than `"`, `\\` and `/`: each character is its only spelling.
_PLAIN_ASCII = re.compile(r"[ !#-.0-\[\]-~]*")


@functools.lru_cache(maxsize=65536)
def literal_units(text: str) -> str:
    """Regex for the spellings of `text` as JSON string content (matches nothing if `text`
    holds a lone surrogate, which no JSON string jaxguide accepts spells)."""
    if _PLAIN_ASCII.fullmatch(text):
        return re.escape(text)
    out = []
    for ch in text:
        cp = ord(ch)
        if 0x20 <= cp < 0x7F and cp not in (0x22, 0x5C, 0x2F):
            out.append(re.escape(ch))
        else:
            out.append(unit_regex(((cp, cp),)) or NOTHING)
    return "".join(out)



def literal_set_units(texts) -> str:
    """Unit regex of exactly the strings `texts` (non-empty), as a trie: common prefixes are
    written once, so a large enum costs the lexer about its number of distinct prefixes
    rather than its total length. Built without recursion (strings may be long)."""
    root: dict = {}
    for text in texts:
        node = root
        for ch in text:
            node = node.setdefault(ch, {})
        node[""] = {}
    units: dict[str, str] = {}

    def unit(ch: str) -> str:
        found = units.get(ch)
        if found is None:
            found = units[ch] = literal_units(ch)
        return found

    # A chain (one child, no string ending) is the units of its characters before the regex of
    # the node it leads to: joined once, not copied at every level.
    regex_of: dict[int, str] = {}
    kids: dict[int, list] = {}  # id(node) -> [(character, chain characters, node led to)]
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if not children_done:
            stack.append((node, True))
            below = kids[id(node)] = []
            for ch in sorted(k for k in node if k):
                chain, cur = [ch], node[ch]
                while len(cur) == 1 and "" not in cur:
                    (k,) = cur
                    chain.append(k)
                    cur = cur[k]
                below.append((chain, cur))
                stack.append((cur, False))
            continue
        branches = ["".join([unit(ch) for ch in chain]) + regex_of.pop(id(end))
                    for chain, end in kids.pop(id(node))]
        if not branches:
            regex_of[id(node)] = ""
        elif len(branches) == 1 and "" not in node:
            regex_of[id(node)] = branches[0]
        else:
            regex_of[id(node)] = "(?:" + "|".join(branches) + (")?" if "" in node else ")")
    return regex_of[id(root)]

_NON_ASCII_RAW = char_class(intersect(_RAW_OK, ((0x7F, MAX_UNICODE),)))
# Escaped units (never a plain printable ASCII character: \\uXXXX only spells the others).
_ESCAPE_UNIT = unit_regex(ALL_CHARS, raw=False)


@functools.lru_cache(maxsize=4096)
def _ascii_except(chars: str) -> str:
    """Class of the raw printable ASCII string characters other than `chars`."""
    return "[^\"\\\\\\x00-\\x1f\\x7f-\\U0010ffff" + "".join(
        re.escape(c) if c not in "-]^" else "\\" + c for c in chars) + "]"


def not_names_units(names: tuple) -> str:
    """Unit regex of the strings that are none of `names`: a trie whose every diverging
    branch ends in `ANY_UNIT*`. Names of plain printable ASCII (the usual case) share one
    branch for leaving the trie by an escape or a non-ASCII character, so each trie node costs
    one small ASCII class."""
    if not names:
        return f"{ANY_UNIT}*"
    trie: dict = {}
    for name in names:
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[""] = {}
    plain = all(0x20 <= ord(c) < 0x7F and c not in '"\\/' for n in names for c in n)
    diverge, every, proper = _NamesTrie(plain).walk(trie)
    parts = [diverge]
    if plain:  # leaving the trie by an escape or a non-ASCII character: one shared branch
        parts.append(every + f"(?:{_ESCAPE_UNIT}|{_NON_ASCII_RAW})")
    body = "(?:" + "|".join(parts) + f"){ANY_UNIT}*"
    if proper is not None:
        body = f"{body}|{proper}"
    return "(?:" + body + ")"


class _NamesTrie:
    """The three regexes of `not_names_units` for a trie of names. For a node: diverge (the
    strings that leave the trie below it), every (its prefixes in the trie) and proper (those
    that are not names; None if none):
      diverge = (?:X|l1 diverge1|l2 diverge2..)  with X the units of no child's character,
      every = (?:|l1 every1|..),  proper = (?:|l1 proper1|..) ("" not when a name ends here).
    Computed bottom-up without recursion; a chain (one child, no name ending) is written as
    its pieces around the strings of the node it leads to, so a long name costs linear time
    (concatenating level by level copied the strings once per level)."""

    def __init__(self, plain: bool):
        self.plain = plain
        self.lits: dict[str, str] = {}
        self.divs: dict[str, str] = {}
        self.pieces: dict[str, tuple[str, str, str]] = {}

    def lit(self, c: str) -> str:
        found = self.lits.get(c)
        if found is None:
            found = self.lits[c] = literal_units(c)
        return found

    def div(self, chars: str) -> str:
        """X for a node whose children are `chars` ("" for none)."""
        found = self.divs.get(chars)
        if found is None:
            if self.plain:
                found = _ascii_except(chars)
            else:
                found = unit_regex(complement(norm_ranges([(ord(c), ord(c)) for c in chars])))
            found = self.divs[chars] = found or ""
        return found

    def walk(self, trie: dict):
        results: dict[int, tuple] = {}  # id(node) -> (diverge, every, proper)
        kids: dict[int, list] = {}  # id(node) -> [(char, chain characters, node it leads to)]
        stack = [(trie, False)]
        while stack:
            node, done = stack.pop()
            if not done:
                stack.append((node, True))
                below = kids[id(node)] = []
                for c in sorted(k for k in node if k):
                    chain, cur = [], node[c]
                    while len(cur) == 1 and "" not in cur:
                        (k,) = cur
                        chain.append(k)
                        cur = cur[k]
                    below.append((c, chain, cur))
                    stack.append((cur, False))
                continue
            x = self.div("".join(c for c, _, _ in kids[id(node)]))
            div = [x] if x else []
            every = [""]
            proper = [] if "" in node else [""]
            for c, chain, end in kids.pop(id(node)):
                d, e, p = self.chain(chain, results.pop(id(end)))
                lit = self.lit(c)
                div.append(lit + d)
                every.append(lit + e)
                if p is not None:
                    proper.append(lit + p)
            d = div[0] if len(div) == 1 else "(?:" + "|".join(div) + ")"
            e = "" if len(every) == 1 else "(?:" + "|".join(every) + ")"
            p = None if not proper else ("" if proper == [""] else "(?:" + "|".join(proper) + ")")
            results[id(node)] = (d, e, p)
        return results[id(trie)]

    def chain(self, chain: list, below: tuple):
        """The strings of the first node of a chain, from those of the node it leads to."""
        d, e, p = below
        if not chain:
            return d, e, p
        pieces = self.pieces
        try:
            got = [pieces[c] for c in chain]
        except KeyError:
            got = [self.piece(c) for c in chain]
        d = "".join([g[0] for g in got]) + d + "".join([g[1] for g in got])
        e_open = "".join([g[2] for g in got])
        e = e_open + e + ")" * len(got)
        if p is None:  # the last chain node is a proper prefix: "" there
            p = e_open[:-len(got[-1][2])] + ")" * (len(got) - 1)
        else:
            p = e_open + p + ")" * len(got)
        return d, e, p

    def piece(self, c: str) -> tuple[str, str, str]:
        found = self.pieces[c] = _chain_piece(c, self.plain)
        return found


@functools.lru_cache(maxsize=4096)
def _chain_piece(c: str, plain: bool) -> tuple[str, str, str]:
    """A chain node of character c around its child's strings (see `_NamesTrie`): (diverge
    before, diverge after, every / proper before; ")" after)."""
    lit = literal_units(c)
    x = _ascii_except(c) if plain else unit_regex(complement(((ord(c), ord(c)),)))
    return (("(?:" + x + "|" + lit, ")") if x else (lit, "")) + ("(?:|" + lit,)


def wrap(rx: str) -> str:
    return f"(?:{rx})" if "|" in rx else rx


