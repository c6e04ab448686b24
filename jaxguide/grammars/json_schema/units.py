"""JSON string *units* over code point sets: the regexes every string terminal is made of.

Design note. A JSON string is a sequence of units, each spelling one code point: a raw
character (U+0020 and above except `"` and `\\`), a short escape, or `\\uXXXX` (a surrogate
pair above U+FFFF). A set of code points is a tuple of sorted disjoint inclusive ranges;
`unit_regex(ranges)` is the regex of every unit spelling one of them (raw class | short escapes
| hex ranges, any hex case; `\\uXXXX` only where `json.dumps` would write one, see the package
design note). `ANY_UNIT` is the shorter regex for free content (any non-surrogate `\\uXXXX`).
`not_names_units` is the complement of a finite set of names, used for the keys no property
declares: a negative lookahead over `ANY_UNIT*` when every name has one spelling (the native
lexer builds it as an automaton, native/lexer/except_words.h), else a trie whose diverging
branches end in `ANY_UNIT*`.
"""

from __future__ import annotations

import bisect
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
    """The code points of both sorted disjoint range tuples (a merge; hot: every unit class)."""
    out, i, j, na, nb = [], 0, 0, len(a), len(b)
    while i < na and j < nb:
        a_lo, a_hi = a[i]
        b_lo, b_hi = b[j]
        lo = a_lo if a_lo > b_lo else b_lo  # noqa: FURB136 (no call: the hot loop)
        hi = a_hi if a_hi < b_hi else b_hi  # noqa: FURB136
        if lo <= hi:
            out.append((lo, hi))
        if a_hi < b_hi:
            i += 1
        else:
            j += 1
    return tuple(out)


def contains(ranges, cp: int) -> bool:
    """Whether sorted disjoint `ranges` hold `cp` (a binary search: a class may have hundreds
    of ranges)."""
    i = bisect.bisect_right(ranges, (cp, MAX_UNICODE + 1)) - 1
    return i >= 0 and ranges[i][1] >= cp


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
_NOT_SURROGATES = complement(SURROGATES)


@functools.lru_cache(maxsize=4096)
def unit_regex(ranges, raw: bool = True) -> str | None:
    """Regex for the JSON string units spelling a code point in `ranges` (None if none);
    with raw=False only the escaped spellings."""
    ranges = intersect(ranges, _NOT_SURROGATES)
    alts = []
    raw = intersect(ranges, _RAW_OK) if raw else ()
    if raw:
        alts.append(char_class(raw))
    for cp, esc in _SHORT_ESCAPES.items():
        if contains(ranges, cp):
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
_WORD = re.compile(r"[0-9A-Za-z_]*")  # plain, and nothing for re.escape to escape


@functools.lru_cache(maxsize=65536)
def literal_units(text: str) -> str:
    """Regex for the spellings of `text` as JSON string content (matches nothing if `text`
    holds a lone surrogate, which no JSON string jaxguide accepts spells)."""
    if _WORD.fullmatch(text):  # most names: no escaping to do
        return text
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

def not_names_units(names: tuple) -> str:
    """Unit regex of the strings that are none of `names`, to be followed by the closing `"`
    of a key (`key_regex`). Names of plain printable ASCII (the usual case) have one canonical
    spelling each, so the regex says it with a lookahead over canonical units,
    `(?!(?:n1|n2)")unit*`, which Python's `re` reads as it is and the native lexer builds as
    an automaton without spelling the complement out (native/lexer/except_words.h). Other
    names: `not_names_trie_units` (canonical escapes inside the trie, any after it)."""
    if not names:
        return f"{ANY_UNIT}*"
    ordered = sorted(set(names))
    if all(_PLAIN_ASCII.fullmatch(n) for n in ordered):
        return "(?!(?:" + "|".join([n if _WORD.fullmatch(n) else re.escape(n)
                                    for n in ordered]) + ')")' + _CANONICAL_UNIT + "*"
    return not_names_trie_units(ordered)


# Every unit in its canonical spellings (no `\\uXXXX` for a printable ASCII character): with
# `ANY_UNIT`, "\\u0061" would be a key other than "a" for the lookahead although it is "a".
_CANONICAL_UNIT = CANONICAL_UNIT = unit_regex(ALL_CHARS)  # (public: pinned_key_suffixes)


def key_regex(content: str) -> str:
    """The regex of a key whose content (units) is `content`, quotes included."""
    # A lookahead content must stay in the same sequence as the closing quote (the lexer's
    # lookahead forms end in T: native/lexer/regex_parser.cc): never wrapped in a group.
    return '"' + (content if content.startswith(("(?!", "(?=")) else wrap(content)) + '"'


def not_names_trie_units(names: list) -> str:
    """`not_names_units` spelled out: a trie of the sorted distinct `names` whose every
    diverging branch (a unit of a code point no name continues with, in its canonical
    spellings) ends in `ANY_UNIT*`."""
    diverge, every, proper = _NamesTrie(names).walk()
    body = f"(?:{diverge}){ANY_UNIT}*"
    if proper is not None:
        body = f"{body}|{proper}"
    return "(?:" + body + ")"


class _NamesTrie:
    """The three regexes of `not_names_trie_units` for the trie of sorted distinct names. For a
    node: diverge (the strings that leave the trie below it), every (its prefixes in the trie)
    and proper (those that are not names; None if none):
      diverge = (?:X|l1 diverge1|l2 diverge2..)  with X the units of no child's character,
      every = (?:|l1 every1|..),  proper = (?:|l1 proper1|..) ("" not when a name ends here).
    A node is a range of the sorted names sharing a prefix (its depth); computed bottom-up
    without recursion. A chain (nodes of one child where no name ends) is a substring of a
    name, written around the strings of the node it leads to with `str.translate` through
    per-character pieces, so a long name costs no Python step per character."""

    def __init__(self, names: list):
        self.names = names
        self.lits: dict[str, str] = {}

    def div(self, chars: str) -> str:
        """X for a node whose children are `chars` ("" for none)."""
        return unit_regex(complement(norm_ranges([(ord(c), ord(c)) for c in chars]))) or ""

    def children(self, lo: int, hi: int, depth: int) -> list:
        """[(character, chain, first, end, depth of the node the chain leads to)] below the
        node names[lo:hi] at depth: names[first:end] go on with that character."""
        names, out = self.names, []
        a = lo + 1 if len(names[lo]) == depth else lo
        while a < hi:
            first = names[a]
            cp = ord(first[depth])
            b = hi if cp == MAX_UNICODE else bisect.bisect_left(
                names, first[:depth] + chr(cp + 1), a + 1, hi)
            end = len(first) if b - a == 1 else _common_prefix(first, names[b - 1], depth + 1)
            out.append((first[depth], first[depth + 1:end], a, b, end))
            a = b
        return out

    def walk(self):
        results: dict[tuple, tuple] = {}  # (first, depth) -> (diverge, every, proper)
        kids: dict[tuple, list] = {}
        stack = [(0, len(self.names), 0, False)]
        while stack:
            lo, hi, depth, done = stack.pop()
            if not done:
                stack.append((lo, hi, depth, True))
                below = kids[lo, depth] = self.children(lo, hi, depth)
                stack.extend((a, b, end, False) for _, _, a, b, end in below)
                continue
            below = kids.pop((lo, depth))
            x = self.div("".join([c for c, _, _, _, _ in below]))
            div = [x] if x else []
            every = [""]
            proper = [] if len(self.names[lo]) == depth else [""]
            for c, chain, a, _, end in below:
                d, e, p = self.chain(chain, results.pop((a, end)))
                lit = self.lits.get(c)
                if lit is None:
                    lit = self.lits[c] = literal_units(c)
                div.append(lit + d)
                every.append(lit + e)
                if p is not None:
                    proper.append(lit + p)
            d = div[0] if len(div) == 1 else "(?:" + "|".join(div) + ")"
            e = "" if len(every) == 1 else "(?:" + "|".join(every) + ")"
            p = None if not proper else ("" if proper == [""] else "(?:" + "|".join(proper) + ")")
            results[lo, depth] = (d, e, p)
        return results[0, 0]

    def chain(self, chain: str, below: tuple):
        """The strings of the first node of a chain, from those of the node it leads to."""
        d, e, p = below
        n = len(chain)
        if not n:
            return d, e, p
        before, after, open_every = _CHAIN_TABLES
        d = chain.translate(before) + d + chain.translate(after)
        opened = chain.translate(open_every)
        e = opened + e + ")" * n
        if p is None:  # the last chain node is a proper prefix: "" there
            p = chain[:-1].translate(open_every) + ")" * (n - 1)
        else:
            p = opened + p + ")" * n
        return d, e, p


def _common_prefix(a: str, b: str, start: int) -> int:
    """The length of the common prefix of a and b, which agree before `start`."""
    n = min(len(a), len(b))
    if a[start:n] == b[start:n]:
        return n
    lo, hi = start, n - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[start:mid] == b[start:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _PieceTable(dict):
    """A `str.translate` table of one of the chain pieces (`_chain_piece`), filled on use."""

    def __init__(self, which: int):
        super().__init__()
        self.which = which

    def __missing__(self, cp: int) -> str:
        piece = self[cp] = _chain_piece(chr(cp))[self.which]
        return piece


_CHAIN_TABLES = tuple(_PieceTable(i) for i in range(3))


def clear_chain_tables() -> None:
    for table in _CHAIN_TABLES:
        table.clear()


@functools.lru_cache(maxsize=4096)
def _chain_piece(c: str) -> tuple[str, str, str]:
    """A chain node of character c around its child's strings (see `_NamesTrie`): (diverge
    before, diverge after, every / proper before; ")" after)."""
    lit = literal_units(c)
    x = unit_regex(complement(((ord(c), ord(c)),)))
    return (("(?:" + x + "|" + lit, ")") if x else (lit, "")) + ("(?:|" + lit,)


def wrap(rx: str) -> str:
    return f"(?:{rx})" if "|" in rx else rx


