"""JSON Schema -> grammar IR (`Grammar.from_json_schema`).

Design note. A schema is lowered straight to `GrammarIR` (no Lark text round trip: big schemas
have thousands of rules and lark's loader would dominate the time to first mask). Every JSON
token that has no inner structure is one terminal, with the whitespace folded into it: an
object key *and* the colon after it (`"name"\\s*:\\s*`), `,`, `{`, `[`, `}`, `]`, a string, a
number, `true`/`false`/`null`. Structure (objects, arrays, alternatives, `$ref` recursion) is
rules. Properties come in the schema's order (then names that are only `required`, in that
order), each optional one may be left out, and extra properties (additionalProperties /
patternProperties) may appear between them; the sequence rules are unambiguous (one Earley
derivation per text), O(properties) in size. Other key orders are not generated (like
llguidance and xgrammar; a valid instance whose keys are out of order is rejected).

Strings. A JSON string is a sequence of *units*, each spelling one code point: a raw character
(U+0020 and above except `"` and `\\`, UTF-8), a short escape (`\\" \\\\ \\/ \\b \\f \\n \\r \\t`),
or `\\uXXXX` (any hex case; a surrogate pair for code points above U+FFFF). Where the content
is constrained (pattern, format, enum/const, property names), `\\uXXXX` is accepted only for
code points below U+0020 or from U+007F up, i.e. where `json.dumps` (ensure_ascii on or off)
would write one; `"\\u0041"` is not accepted as a spelling of a constrained `"A"`. Free content
(no constraint, or only min/maxLength) takes any `\\uXXXX`. Lone surrogates are rejected
everywhere. Within that spelling rule every constraint is exact on the *decoded* string:
`pattern`, `format`, `min/maxLength` (code points; an escape counts one), `enum`/`const`
strings, property names. A unit class is lowered to `raw class | short escapes | hex ranges`.
Length-bounded free strings longer than `STRING_CHUNK` (= 256) are lexed as chunks of exactly
256 units plus a last chunk with the closing quote (maximal munch makes the split unique), the
chunk count kept by rules: the lexer stays small whatever maxLength is, and stays exact.

`pattern` (ECMA-262) is parsed here (`_EcmaParser`) into code point sets, concatenation,
alternation and repetition, then emitted over units, so it applies to the decoded value. It is
searched (unanchored unless `^`/`$`), as JSON Schema says. Supported: literals and escapes
(`\\d \\w \\s \\D \\W \\S \\n \\t \\r \\f \\v \\0 \\xhh \\uhhhh \\u{h..} \\cX`), classes, `.`, groups
(capturing, `(?:`, `(?<name>`), `|`, `* + ? {m} {m,} {m,n}` and lazy forms, `^` at the start and
`$` at the end of a top-level alternative. Lookaround, backreferences, `\\b`, `\\p{..}`: error.

Numbers. Integer ranges are exact regexes (digit-range construction). Other ranges (non-integer
bounds, `exclusive*`, type `number`) are exact over decimal texts without exponent: a bounded
`number` is written without `e`/`E` (a documented restriction: `1e2` is rejected when a bound
applies; unbounded numbers take any JSON number). `multipleOf`: 1 / an integer k on integers
(k = 2^a 5^b by last digits, other k by enumeration of a finite range of at most 2,000 values),
10^-k on numbers (at most k significant fraction digits, then any zeros: 1.50 is a multiple of
0.1; decimal arithmetic); an integer k on a `number` also takes `N.0`, `N.00`, ... Negative
zero is accepted where 0 is in range. Every regex this module writes uses explicit ASCII
classes (`[0-9]`, never Python's Unicode-wide `\\d`).

Whitespace. "flexible": any of ` \\t\\n\\r` between two tokens, at most `MAX_FLEXIBLE_WS` (= 24)
characters in a row on each side of `{ } [ ] ,` and `MAX_COLON_WS` (= 4) on each side of `:`
(so a model cannot loop on whitespace); none before the value or after it. `json.dumps(x)` (separators `", "`, `": "`) and
`json.dumps(x, indent=2)` for shallow x match. "compact": none
(`json.dumps(x, separators=(",", ":"))`). An int n: exactly `json.dumps(x, indent=n)`'s layout
(empty `{}`/`[]` inline), down to `MAX_INDENT_DEPTH` (= 32) levels of nesting.

Coverage (keyword: what is enforced)

  ======================  ==================================================================
  type                    all six types, and arrays of types; `integer` is canonical `-?[0-9]+`
  enum / const            exact: each value is kept only if it is valid under all of its
                          sibling keywords (checked on the value with `jsonschema` in this
                          module's dialect: `json_schema_dialect`), so siblings that the
                          grammar could not enforce (`not`, `uniqueItems`, ...) are exact
                          here; numbers compare by value (`-2.0` is also written `-2`,
                          `-2.00`; a fraction takes trailing zeros; float spellings of an
                          integral value only where the schema takes non-integers); strings:
                          any unit spelling; nested values as `json.dumps` writes them
  properties              in the schema's order; each optional unless in `required`
  required                exact
  additionalProperties    true/false/a schema; default `additional_properties_default`; extra
                          keys are exactly the names not declared (trie complement), and may
                          appear between the declared properties
  patternProperties       exact: keys are classed by the set of patterns they match (all their
                          schemas apply) or none (additionalProperties), minus declared names
                          (declared names matching a pattern get both schemas). Intersections
                          and complements are computed on a small product DFA (at most 400
                          states, 4 patterns with different schemas), emitted by state
                          elimination; beyond that, an error
  propertyNames           exact on declared names (a refused required name: no valid object);
                          `false`: only `{}`; extra keys: `enum`/`const`, or a string schema
                          (pattern, min/maxLength, format) when no property is declared;
                          otherwise error
  min/maxProperties       exact (counted in the rules; at most 64 x properties states); counts
                          (these, min/maxItems, min/maxLength) may be integral floats (2.0)
  items / prefixItems     exact; draft <= 7 array-form `items` + `additionalItems`
  min/maxItems            exact (counted in the rules; up to 4,096)
  anyOf                   exact (alternatives)
  oneOf                   exact when provable, type by type: a type two branches accept
                          entirely is excluded (no value of it can match exactly one branch);
                          otherwise the branches must be disjoint on it (const/enum, a
                          required property's const/enum/type, required-vs-closed names,
                          disjoint number intervals); else error (lenient: anyOf, warned)
  allOf                   merged keyword by keyword where provable (types intersected, bounds
                          tightened, anyOf distributed, properties in the order of the parts);
                          exact for keywords that interact across parts: array items position
                          by position (each part's prefix schema or rest schema), a name one
                          part declares gets every other part's additionalProperties unless
                          that part's patterns match it, extra names get each part's
                          additionalProperties where that part's own patterns do not match
                          (kept per part), enum/const intersected by value; an unmergeable
                          pair (two different patterns...) is an error
  $ref / $defs            local refs (`#`, JSON pointers, `definitions`), recursive; draft <= 7:
                          siblings of `$ref` ignored, later drafts: combined with it (allOf)
  minLength / maxLength   exact, code points, any size (chunked, see Strings); with a `pattern`
                          or `format`: when implied by it, or pushed into the one repetition
                          of an anchored pattern that carries the variable length
                          (`^[A-Z][a-z]*$` + maxLength 8 -> `[A-Z][a-z]{0,7}`); else error
  pattern                 exact on the decoded string (see above); ECMA subset
  format                  date-time, date, time, duration, email, hostname, ipv4, ipv6, uuid,
                          uri (regexes: dates with month lengths and leap years, times without
                          leap seconds, email the usual dot-atom@hostname, uri RFC 3986's
                          `URI`); other formats are annotations: ignored
  minimum / maximum       exact (integers any size; numbers: decimal texts without exponent)
  exclusiveMin/Max        exact; number (draft 6+) or boolean (draft 4) form
  multipleOf              see Numbers
  true / false schemas    exact; `{}` is any JSON value
  annotations             title, description, default, examples, $comment, ... ignored
  not                     `{"not": {"type": ...}}` (types removed); other forms: error
  if/then/else, uniqueItems (true), contains, dependencies, dependentRequired,
  dependentSchemas, unevaluated*, $dynamicRef, remote $ref
                          error naming the keyword and its JSON pointer (lenient: ignored with
                          a warning)
  ======================  ==================================================================

Unknown keywords (not part of JSON Schema) are ignored, as validators do.

Limits (clear `JsonSchemaError`): 20,000 rules; counted repetitions in patterns / maxItems /
minLength-with-pattern beyond 4,096; allOf distribution beyond 256 combinations; min/max
Properties above 64; `$ref`/allOf nesting deeper than 40 without structure in between.
Duplicate object keys are not excluded beyond what the property classes above imply (a declared
name appears at most once; an undeclared one may repeat).
"""

from __future__ import annotations

import functools
import json
import math
import re
import warnings
from decimal import Decimal
from typing import Any

import jsonschema

from jaxguide.errors import GrammarError
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema.dialect import exact_numbers, validator_class

MAX_FLEXIBLE_WS = 24
MAX_COLON_WS = 4
MAX_INDENT_DEPTH = 32
MAX_RULES = 20_000
MAX_COUNT = 4096
STRING_CHUNK = 256
MAX_ALLOF_PRODUCT = 256
MAX_UNICODE = 0x10FFFF


class JsonSchemaError(GrammarError):
    """A JSON Schema is invalid or uses a keyword that cannot be enforced.

    Attributes:
      pointer: JSON pointer of the offending schema location ("" = the root).
      keyword: the keyword at fault, or None.
    """

    def __init__(self, message: str, pointer: str = "", keyword: str | None = None):
        where = f" at {pointer or '#'}" if True else ""
        super().__init__(f"JSON Schema: {message}{where}")
        self.pointer = pointer or "#"
        self.keyword = keyword


ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$comment", "title", "description", "default", "examples",
    "example", "readOnly", "writeOnly", "deprecated", "$anchor", "$vocabulary",
    "$dynamicAnchor", "$recursiveAnchor", "contentEncoding", "contentMediaType",
    "contentSchema", "$defs", "definitions", "discriminator", "nullable", "xml",
    "externalDocs",
})
UNSUPPORTED = frozenset({
    "not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains",
    "dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef",
})
IMPLEMENTED = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "anyOf", "oneOf", "allOf", "$ref",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf",
})
ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")  # integer within number

# ---------------------------------------------------------------------------------------------
# Code point sets: sorted disjoint inclusive ranges.


def _norm(ranges):
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


def _complement(ranges):
    out, prev = [], 0
    for lo, hi in ranges:
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAX_UNICODE:
        out.append((prev, MAX_UNICODE))
    return tuple(out)


def _intersect(a, b):
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
WORD = _norm([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
ECMA_SPACE = _norm([(9, 13), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
                    (0xFEFF, 0xFEFF)])
LINE_TERMINATORS = _norm([(10, 10), (13, 13), (0x2028, 0x2029)])


def _class_item(cp: int) -> str:
    if cp < 0x80 and (chr(cp).isalnum() or chr(cp) in " _"):
        return chr(cp)
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _char_class(ranges) -> str:
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
_RAW_OK = _norm([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, MAX_UNICODE)])
_U_ESCAPABLE = _norm([(0, 0x1F), (0x7F, 0xD7FF), (0xE000, MAX_UNICODE)])


@functools.lru_cache(maxsize=4096)
def _unit(ranges, raw: bool = True) -> str | None:
    """Regex for the JSON string units spelling a code point in `ranges` (None if none);
    with raw=False only the escaped spellings."""
    ranges = _intersect(ranges, _complement(SURROGATES))
    alts = []
    raw = _intersect(ranges, _RAW_OK) if raw else ()
    if raw:
        alts.append(_char_class(raw))
    for cp, esc in _SHORT_ESCAPES.items():
        if _intersect(ranges, ((cp, cp),)):
            alts.append(esc)
    uesc = _intersect(ranges, _U_ESCAPABLE)
    bmp = _intersect(uesc, ((0, 0xFFFF),))
    hexes = [h for lo, hi in bmp for h in _hex_range(lo, hi)]
    if hexes:
        alts.append("\\\\u(?:" + "|".join(hexes) + ")" if len(hexes) > 1 else "\\\\u" + hexes[0])
    for lo, hi in _intersect(uesc, ((0x10000, MAX_UNICODE),)):
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
_NOTHING = "[^\\x00-\\U0010ffff]"


@functools.lru_cache(maxsize=65536)
def _literal_units(text: str) -> str:
    """Regex for the spellings of `text` as JSON string content (matches nothing if `text`
    holds a lone surrogate, which no JSON string jaxguide accepts spells)."""
    out = []
    for ch in text:
        cp = ord(ch)
        if 0x20 <= cp < 0x7F and cp not in (0x22, 0x5C, 0x2F):
            out.append(re.escape(ch))
        else:
            out.append(_unit(((cp, cp),)) or _NOTHING)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# ECMA-262 pattern subset -> AST: ("set", ranges) | ("cat", [..]) | ("alt", [..])
# | ("rep", node, min, max|None) | ("bol",) | ("eol",)


class _PatternError(ValueError):
    pass


class _EcmaParser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0

    def parse(self):
        node = self.alt()
        if self.i < len(self.p):
            raise _PatternError(f"unexpected {self.p[self.i]!r} at {self.i}")
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
        while self.peek() is not None and self.peek() not in "|)":
            items.append(self.quantified())
        return ("cat", items)

    def quantified(self):
        atom = self.atom()
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            elif c == "{":
                m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.p, self.i)
                if not m:
                    return atom if atom[0] != "lit{" else atom  # literal '{' handled in atom
                self.i = m.end()
                lo = int(m.group(1))
                hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                if hi is not None and hi < lo:
                    raise _PatternError("numbers out of order in {} quantifier")
            else:
                return atom
            if atom[0] in ("bol", "eol"):
                raise _PatternError("quantified anchor")
            if self.peek() == "?":
                self.i += 1  # lazy: same language
            atom = ("rep", atom, lo, hi)
            nxt = self.peek()
            if nxt in ("*", "+", "?") or (nxt == "{" and re.compile(r"\{\d+(,\d*)?\}").match(
                    self.p, self.i)):
                raise _PatternError(f"nothing to repeat at {self.i}")
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
                    raise _PatternError("unterminated group name")
                self.i = end + 1
            elif self.peek() == "?":
                raise _PatternError(f"unsupported group construct (?{self.p[self.i + 1:self.i + 2]}"
                                    " (lookaround is not regular)")
            node = self.alt()
            if self.peek() != ")":
                raise _PatternError("missing )")
            self.i += 1
            return node
        if c == ")":
            raise _PatternError("unbalanced )")
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == ".":
            return ("set", _complement(LINE_TERMINATORS))
        if c == "[":
            return ("set", self.char_class())
        if c == "\\":
            return ("set", self.escape(in_class=False))
        if c in "*+?":
            raise _PatternError(f"nothing to repeat at {self.i - 1}")
        if c == "{" and re.compile(r"\{\d+(,\d*)?\}").match(self.p, self.i - 1):
            raise _PatternError(f"nothing to repeat at {self.i - 1}")
        cp = ord(c)
        if 0xD800 <= cp <= 0xDBFF and self.i < len(self.p):
            cp2 = ord(self.p[self.i])
            if 0xDC00 <= cp2 <= 0xDFFF:
                self.i += 1
                cp = 0x10000 + ((cp - 0xD800) << 10) + (cp2 - 0xDC00)
        return ("set", ((cp, cp),))

    def escape(self, in_class: bool):
        if self.i >= len(self.p):
            raise _PatternError("trailing backslash")
        c = self.p[self.i]
        self.i += 1
        classes = {"d": DIGITS, "w": WORD, "s": ECMA_SPACE}
        if c in classes:
            return classes[c]
        if c.lower() in classes:
            return _complement(classes[c.lower()])
        simple = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11}
        if c in simple:
            return ((simple[c], simple[c]),)
        if c == "0" and not (self.peek() or "").isdigit():
            return ((0, 0),)
        if c == "b" and in_class:
            return ((8, 8),)
        if c in "bB":
            raise _PatternError("\\b and \\B (word boundaries) are not regular")
        if c.isdigit():
            raise _PatternError("backreferences are not regular")
        if c == "k":
            raise _PatternError("backreferences are not regular")
        if c in "pP":
            raise _PatternError("\\p{...} Unicode properties are not supported")
        if c == "c":
            letter = self.peek()
            if letter and letter.isascii() and letter.isalpha():
                self.i += 1
                return ((ord(letter) % 32, ord(letter) % 32),)
            return ((ord("\\"), ord("\\")), (ord("c"), ord("c")))
        if c == "x":
            m = re.compile(r"[0-9a-fA-F]{2}").match(self.p, self.i)
            if m:
                self.i = m.end()
                v = int(m.group(), 16)
                return ((v, v),)
            return ((ord("x"), ord("x")),)
        if c == "u":
            m = re.compile(r"\{([0-9a-fA-F]+)\}|[0-9a-fA-F]{4}").match(self.p, self.i)
            if m:
                self.i = m.end()
                v = int(m.group(1) or m.group(), 16)
                if 0xD800 <= v <= 0xDBFF:
                    m2 = re.compile(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})").match(self.p, self.i)
                    if m2:
                        self.i = m2.end()
                        v = 0x10000 + ((v - 0xD800) << 10) + (int(m2.group(1), 16) - 0xDC00)
                if v > MAX_UNICODE:
                    raise _PatternError("\\u{...} beyond U+10FFFF")
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
                raise _PatternError("unterminated character class")
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
                    raise _PatternError("class escape as a range bound")
                lo, hi = lo_set[0][0], hi_set[0][0]
                if lo > hi:
                    raise _PatternError("range out of order in character class")
                ranges.append((lo, hi))
            else:
                ranges.extend(lo_set)
        ranges = _norm(ranges)
        return _complement(ranges) if negate else ranges

    def class_atom(self):
        c = self.p[self.i]
        self.i += 1
        if c == "\\":
            return self.escape(in_class=True)
        if c == "[" and self.peek() in (":", "=", "."):
            pass  # POSIX brackets are literal in ECMA
        return ((ord(c), ord(c)),)


def _strip_anchors(node):
    """Top-level alternatives with their ^/$ anchors: [(node, anchored_start, anchored_end)]."""
    branches = node[1] if node[0] == "alt" else [node]
    out = []
    for branch in branches:
        items = list(branch[1]) if branch[0] == "cat" else [branch]
        # A branch that is a single group of alternatives: lift it.
        if len(items) == 1 and items[0][0] == "alt":
            out.extend(_strip_anchors(items[0]))
            continue
        if len(items) == 1 and items[0][0] == "cat":
            out.extend(_strip_anchors(items[0]))
            continue
        start = end = False
        while items and items[0][0] == "bol":
            items.pop(0)
            start = True
        while items and items[-1][0] == "eol":
            items.pop()
            end = True
        # ^(a|b)$ with anchors inside a lone group
        if len(items) == 1 and items[0][0] in ("alt", "cat") and not start and not end:
            inner = _strip_anchors(items[0])
            out.extend(inner)
            continue
        if _has_anchor(("cat", items)):
            raise _PatternError("^ or $ other than at the start / end of the pattern")
        out.append((("cat", items), start, end))
    return out


def _has_anchor(node) -> bool:
    kind = node[0]
    if kind in ("bol", "eol"):
        return True
    if kind in ("cat", "alt"):
        return any(_has_anchor(n) for n in node[1])
    if kind == "rep":
        return _has_anchor(node[1])
    return False


def _emit(node) -> str | None:
    """Regex over units for the node; None when it matches nothing (an empty class such as
    `[]`, or only lone surrogates, which no JSON string holds). The emitted regex never uses
    lookaround (the native Python-dialect lexer refuses `(?!)`)."""
    kind = node[0]
    if kind == "set":
        return _unit(node[1])
    if kind == "cat":
        parts = [_group(n) for n in node[1]]
        return None if any(p is None for p in parts) else "".join(parts)
    if kind == "alt":
        branches = [b for b in (_emit(n) for n in node[1]) if b is not None]
        return "|".join(branches) if branches else None
    if kind == "rep":
        _, inner, lo, hi = node
        if hi is not None and hi > MAX_COUNT:
            raise _PatternError(f"repetition count {hi} above {MAX_COUNT}")
        if lo > MAX_COUNT:
            raise _PatternError(f"repetition count {lo} above {MAX_COUNT}")
        body = _emit(inner)
        if body is None:
            return "" if lo == 0 else None
        q = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((lo, hi))
        if q is None:
            q = f"{{{lo}}}" if lo == hi else (f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}")
        return f"(?:{body}){q}"
    raise _PatternError(f"internal: {kind}")


def _group(node) -> str | None:
    text = _emit(node)
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

    Raises _PatternError for unsupported syntax, or when a length bound is not implied.
    """
    ast = _EcmaParser(pattern).parse()
    branches = _strip_anchors(ast)
    alts = []
    for node, start, end in branches:
        body = _emit(node)
        if body is None:
            continue  # this alternative matches nothing
        lo, hi = _length_range(node)
        if not start:
            hi = None
        if not end:
            hi = None
        if (min_length > lo) or (max_length is not None and (hi is None or hi > max_length)):
            if not (start and end):
                raise _PatternError("minLength/maxLength together with an unanchored pattern")
            node = _push_length(node, min_length, max_length)
            if node is None:
                continue
            body = _emit(node)
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
    Raises _PatternError otherwise."""
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
        raise _PatternError("minLength/maxLength together with a pattern they are not implied "
                            "by")
    _, inner, a, b = items[variable[0]]
    lo, hi = _length_range(inner)
    if lo != hi or lo == 0:
        raise _PatternError("minLength/maxLength together with a pattern they are not implied "
                            "by")
    k_lo = max(a, -(-(min_length - fixed) // lo))
    k_hi = b
    if max_length is not None:
        limit = (max_length - fixed) // lo
        k_hi = limit if k_hi is None else min(k_hi, limit)
    if k_hi is not None and k_lo > k_hi:
        return None
    items[variable[0]] = ("rep", inner, k_lo, k_hi)
    return ("cat", items)


# ---------------------------------------------------------------------------------------------
# Small automata over code points, for the key languages of patternProperties: "matches these
# patterns, not those, and is no declared name" needs intersection and complement, which regex
# syntax lacks. Patterns and names -> NFAs -> one product DFA -> per class, a regex by state
# elimination. Sizes are capped (`_MAX_DFA_STATES`, `_MAX_KEY_REGEX`): beyond, an error.

_MAX_NFA_STATES = 20_000
_MAX_DFA_STATES = 400
_MAX_KEY_REGEX = 60_000


class _Nfa:
    def __init__(self):
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple]] = []

    def new(self) -> int:
        if len(self.eps) >= _MAX_NFA_STATES:
            raise _PatternError("pattern automaton too large")
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def build(self, node) -> tuple[int, int]:
        kind = node[0]
        if kind == "set":
            s, e = self.new(), self.new()
            self.edges[s].append((node[1], e))
            return s, e
        if kind == "cat":
            s = cur = self.new()
            for n in node[1]:
                a, b = self.build(n)
                self.eps[cur].append(a)
                cur = b
            return s, cur
        if kind == "alt":
            s, e = self.new(), self.new()
            for n in node[1]:
                a, b = self.build(n)
                self.eps[s].append(a)
                self.eps[b].append(e)
            return s, e
        if kind == "rep":
            _, inner, lo, hi = node
            s = cur = self.new()
            for _ in range(lo):
                a, b = self.build(inner)
                self.eps[cur].append(a)
                cur = b
            if hi is None:
                x = self.new()
                self.eps[cur].append(x)
                a, b = self.build(inner)
                self.eps[x].append(a)
                self.eps[b].append(x)
                cur = x
            else:
                for _ in range(hi - lo):
                    nxt = self.new()
                    self.eps[cur].append(nxt)
                    a, b = self.build(inner)
                    self.eps[cur].append(a)
                    self.eps[b].append(nxt)
                    cur = nxt
            return s, cur
        raise _PatternError("^ or $ inside the pattern")


_ANY_STAR = ("rep", ("set", ALL_CHARS), 0, None)


def _pattern_node(pattern: str):
    branches = []
    for node, start, end in _strip_anchors(_EcmaParser(pattern).parse()):
        items = ([] if start else [_ANY_STAR]) + [node] + ([] if end else [_ANY_STAR])
        branches.append(("cat", items))
    return ("alt", branches)


def _names_node(names):
    return ("alt", [("cat", [("set", ((ord(c), ord(c)),)) for c in name]) for name in names])


class _Dfa:
    """Product DFA of several NFAs over a shared partition of code points into atoms."""

    def __init__(self, nodes: list):
        self.nfas = []
        bounds = {0, MAX_UNICODE + 1}
        for node in nodes:
            nfa = _Nfa()
            start, end = nfa.build(node)
            self.nfas.append((nfa, start, end))
            for edges in nfa.edges:
                for ranges, _ in edges:
                    for lo, hi in ranges:
                        bounds.update((lo, hi + 1))
        cuts = sorted(bounds)
        self.atoms = [(cuts[i], cuts[i + 1] - 1) for i in range(len(cuts) - 1)]
        starts = tuple(self._closure(i, {s}) for i, (_, s, _) in enumerate(self.nfas))
        self.states = [starts]
        self.index = {starts: 0}
        self.trans: list[list[int]] = []
        i = 0
        while i < len(self.states):
            state = self.states[i]
            row = []
            for lo, _ in self.atoms:
                nxt = tuple(self._step(k, comp, lo) for k, comp in enumerate(state))
                if nxt not in self.index:
                    if len(self.states) >= _MAX_DFA_STATES:
                        raise _PatternError("key automaton too large")
                    self.index[nxt] = len(self.states)
                    self.states.append(nxt)
                row.append(self.index[nxt])
            self.trans.append(row)
            i += 1
        self.accepts = [tuple(self.nfas[k][2] in comp for k, comp in enumerate(state))
                        for state in self.states]

    def _closure(self, k, states):
        nfa = self.nfas[k][0]
        stack, seen = list(states), set(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def _step(self, k, comp, cp):
        nfa = self.nfas[k][0]
        out = set()
        for s in comp:
            for ranges, t in nfa.edges[s]:
                for lo, hi in ranges:
                    if lo <= cp <= hi:
                        out.add(t)
                        break
        return self._closure(k, out)

    def regex(self, accept) -> str | None:
        """Unit regex for the strings whose accept vector satisfies `accept`; None if none."""
        n = len(self.states)
        final = [accept(a) for a in self.accepts]
        # states that can reach a final state
        rev = [set() for _ in range(n)]
        for i, row in enumerate(self.trans):
            for j in row:
                rev[j].add(i)
        live = {i for i in range(n) if final[i]}
        stack = list(live)
        while stack:
            for i in rev[stack.pop()]:
                if i not in live:
                    live.add(i)
                    stack.append(i)
        if 0 not in live:
            return None
        start, end = n, n + 1
        # State elimination over adjacency maps (succ[a][b] == pred[b][a] == regex of a->b), so
        # a state's degree is O(1) and the min-degree pick is O(states): O(states^2) overall.
        succ: dict[int, dict[int, str]] = {i: {} for i in (*live, start, end)}
        pred: dict[int, dict[int, str]] = {i: {} for i in (*live, start, end)}

        def put(a: int, b: int, regex: str) -> None:
            succ[a][b] = regex
            pred[b][a] = regex

        for i in live:
            by_target: dict[int, list] = {}
            for a, j in enumerate(self.trans[i]):
                if j in live:
                    by_target.setdefault(j, []).append(self.atoms[a])
            for j, atoms in by_target.items():
                unit = _unit(_norm(atoms))
                if unit is not None:
                    put(i, j, unit)
            if final[i]:
                put(i, end, "")
        put(start, 0, "")
        remaining = set(live)
        while remaining:
            k = min(remaining, key=lambda s: len(succ[s]) + len(pred[s]))
            remaining.discard(k)
            loop = succ[k].pop(k, None)
            pred[k].pop(k, None)
            star = f"(?:{loop})*" if loop else ""
            ins = list(pred.pop(k).items())
            outs = list(succ.pop(k).items())
            for a, _ in ins:
                del succ[a][k]
            for b, _ in outs:
                del pred[b][k]
            for a, ra in ins:
                for b, rb in outs:
                    piece = f"{_wrap(ra)}{star}{_wrap(rb)}"
                    old = succ[a].get(b)
                    merged = piece if old is None else f"{old}|{piece}"
                    if len(merged) > _MAX_KEY_REGEX:
                        raise _PatternError("key regex too large")
                    put(a, b, merged)
        return succ[start].get(end)


@functools.lru_cache(maxsize=1024)
def _search_nfa(pattern: str) -> tuple[_Nfa, int, int]:
    nfa = _Nfa()
    start, end = nfa.build(_pattern_node(pattern))
    return nfa, start, end


def _ecma_search(pattern: str, text: str) -> bool:
    """Whether the ECMA pattern matches somewhere in text (NFA simulation)."""
    nfa, start, end = _search_nfa(pattern)

    def closure(states):
        stack, seen = list(states), set(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return seen

    current = closure({start})
    for ch in text:
        cp = ord(ch)
        current = closure({t for s in current for ranges, t in nfa.edges[s]
                           if any(lo <= cp <= hi for lo, hi in ranges)})
        if not current:
            return False
    return end in current


_PLAIN_ASCII = _norm([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)])
_NON_ASCII_RAW = _char_class(_intersect(_RAW_OK, ((0x7F, MAX_UNICODE),)))
_PLAIN_NAME_CHARS = _norm([(0x20, 0x21), (0x23, 0x2E), (0x30, 0x5B), (0x5D, 0x7E)])
# Escaped units (never a plain printable ASCII character: \\uXXXX only spells the others).
_ESCAPE_UNIT = _unit(ALL_CHARS, raw=False)


@functools.lru_cache(maxsize=4096)
def _ascii_except(chars: str) -> str:
    """Class of the raw printable ASCII string characters other than `chars`."""
    return "[^\"\\\\\\x00-\\x1f\\x7f-\\U0010ffff" + "".join(
        re.escape(c) if c not in "-]^" else "\\" + c for c in chars) + "]"


def _not_names(names: tuple) -> str:
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

    def walk(node):
        """(diverge, all prefixes, proper non-name prefixes or None) below node."""
        chars = sorted(k for k in node if k)
        if plain:
            div = [_ascii_except("".join(chars))]
        else:
            u = _unit(_complement(_norm([(ord(c), ord(c)) for c in chars])))
            div = [u] if u else []
        every = [""]
        proper = [] if "" in node else [""]
        for c in chars:
            lit = _literal_units(c)
            d, e, p = walk(node[c])
            div.append(lit + d)
            every.append(lit + e)
            if p is not None:
                proper.append(lit + p)
        d = div[0] if len(div) == 1 else "(?:" + "|".join(div) + ")"
        e = "" if len(every) == 1 else "(?:" + "|".join(every) + ")"
        p = None if not proper else ("" if proper == [""] else "(?:" + "|".join(proper) + ")")
        return d, e, p

    diverge, every, proper = walk(trie)
    parts = [diverge]
    if plain:  # leaving the trie by an escape or a non-ASCII character: one shared branch
        parts.append(every + f"(?:{_ESCAPE_UNIT}|{_NON_ASCII_RAW})")
    body = "(?:" + "|".join(parts) + f"){ANY_UNIT}*"
    if proper is not None:
        body = f"{body}|{proper}"
    return "(?:" + body + ")"


def _wrap(rx: str) -> str:
    return f"(?:{rx})" if "|" in rx else rx


# A calendar date (years 0001-9999, month lengths, leap years), as datetime.date accepts it.
_YEAR = r"(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-"
         f"(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)")

# RFC 3339 full-time without leap seconds (second 60 is valid only at 23:59 UTC, which depends
# on the offset; `jsonschema`'s checker refuses it everywhere).
_TIME = (r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
         r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")

_FORMATS = {
    "date": f"^{_DATE}$",
    "time": f"^{_TIME}$",
    "date-time": f"^{_DATE}[Tt]{_TIME}$",
    "duration": r"^P(?:[0-9]+W|(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))$",
    "email": r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    "hostname": r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    "ipv4": r"^(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
}
_H16 = r"[0-9a-fA-F]{1,4}"
_V4 = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"
_LS32 = f"(?:{_H16}:{_H16}|{_V4})"
_FORMATS["ipv6"] = "^(?:" + "|".join([
    f"(?:{_H16}:){{6}}{_LS32}",
    f"::(?:{_H16}:){{5}}{_LS32}",
    f"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    f"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    f"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    f"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    f"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    f"(?:(?:{_H16}:){{0,6}}{_H16})?::",
]) + ")$"
# RFC 3986 (appendix A) `URI`: scheme ":" hier-part ["?" query] ["#" fragment]. An IPv4 host
# is a reg-name too.
_UNRESERVED_SUB_DELIMS = r"A-Za-z0-9\-._~!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = f"(?:[{_UNRESERVED_SUB_DELIMS}:@]|{_PCT})"
_QUERY = f"(?:[{_UNRESERVED_SUB_DELIMS}:@/?]|{_PCT})*"
_IP_LITERAL = (r"\[(?:" + _FORMATS["ipv6"][1:-1] +
               f"|v[0-9A-Fa-f]+\\.[{_UNRESERVED_SUB_DELIMS}:]+)\\]")
_AUTHORITY = (f"(?:(?:[{_UNRESERVED_SUB_DELIMS}:]|{_PCT})*@)?"
              f"(?:{_IP_LITERAL}|(?:[{_UNRESERVED_SUB_DELIMS}]|{_PCT})*)(?::[0-9]*)?")
_FORMATS["uri"] = (
    f"^[A-Za-z][A-Za-z0-9+\\-.]*:(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"
    f"|{_PCHAR}+(?:/{_PCHAR}*)*)?(?:\\?{_QUERY})?(?:#{_QUERY})?$")
# The formats enforced exactly (the others are annotations).
ENFORCED_FORMATS = frozenset(_FORMATS)

# ---------------------------------------------------------------------------------------------
# Numbers


def _fixed_width_range(lo: str, hi: str) -> list[str]:
    """Alternatives for digit strings of len(lo) == len(hi) with lo <= value <= hi."""
    if not lo:
        return [""]
    if lo == hi:
        return [lo]
    if lo[0] == hi[0]:
        return [lo[0] + r for r in _fixed_width_range(lo[1:], hi[1:])]
    n = len(lo) - 1
    out = []
    a, b = int(lo[0]), int(hi[0])
    tail_any = f"[0-9]{{{n}}}" if n > 1 else ("[0-9]" if n == 1 else "")
    if lo[1:] == "0" * n:
        start = a
    else:
        out += [lo[0] + r for r in _fixed_width_range(lo[1:], "9" * n)]
        start = a + 1
    end = b if hi[1:] == "9" * n else b - 1
    if start <= end:
        cls = str(start) if start == end else f"[{start}-{end}]"
        out.append(cls + tail_any)
    if hi[1:] != "9" * n:
        out += [hi[0] + r for r in _fixed_width_range("0" * n, hi[1:])]
    return out


def _nonneg_int_range(a: int, b: int | None) -> list[str]:
    """Alternatives for canonical non-negative integers in [a, b] (b None = unbounded)."""
    if b is not None and a > b:
        return []
    out = []
    la = len(str(a))
    lb = len(str(b)) if b is not None else la
    for k in range(la, lb + 1):
        lo = max(a, 10 ** (k - 1) if k > 1 else 0)
        hi = 10 ** k - 1 if b is None else min(b, 10 ** k - 1)
        if lo <= hi:
            out += _fixed_width_range(str(lo).zfill(k), str(hi).zfill(k))
    if b is None:
        out.append(f"[1-9][0-9]{{{la},}}")
    return out


def _int_range(lo: int | None, hi: int | None) -> str | None:
    """Regex for canonical JSON integers in [lo, hi] (None = unbounded); None if empty."""
    alts = []
    if hi is None or hi >= 0:
        alts += _nonneg_int_range(max(lo, 0) if lo is not None else 0, hi)
    if lo is None or lo < 0:
        neg = _nonneg_int_range(max(-hi, 1) if hi is not None else 1,
                                -lo if lo is not None else None)
        alts += ["-" + a if "|" not in a else f"-(?:{a})" for a in neg]
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _any_digits(max_len: int | None, min_len: int = 0) -> str:
    if max_len is None:
        return {0: "[0-9]*", 1: "[0-9]+"}.get(min_len, f"[0-9]{{{min_len},}}")
    if min_len == max_len:
        return f"[0-9]{{{min_len}}}" if min_len != 1 else "[0-9]"
    return f"[0-9]{{{min_len},{max_len}}}"


def _nonzero_digits(max_len: int | None) -> str:
    """Non-empty digit strings with a non-zero digit, at most max_len long."""
    if max_len is None:
        return "0*[1-9][0-9]*"
    return "|".join("0" * i + "[1-9]" + (_any_digits(max_len - i - 1) if max_len - i - 1 else "")
                    for i in range(max_len))


def _frac_range(lo: str, lo_strict: bool, hi: str | None, hi_strict: bool,
                max_len: int | None):
    """Digit strings d (incl. empty) with 0.lo <(=) 0.d <(=) 0.hi; hi None = no upper bound.

    Returns (regex for the non-empty strings or None, whether the empty string is included).
    """
    lo_zero = lo.strip("0") == ""
    hi_zero = hi is not None and hi.strip("0") == ""
    empty_ok = lo_zero and not lo_strict and not (hi_zero and hi_strict)
    if max_len == 0:
        return None, empty_ok
    if lo_zero and hi is None:
        if lo_strict:
            return _nonzero_digits(max_len), False
        return _any_digits(max_len, 1), True
    if lo_zero and hi_zero:
        if lo_strict or hi_strict:
            return None, False
        return ("0+" if max_len is None else f"0{{1,{max_len}}}"), True
    sub_len = None if max_len is None else max_len - 1
    lf = int(lo[0]) if lo else 0
    hf = 9 if hi is None else (int(hi[0]) if hi else 0)
    alts = []
    mid_lo, mid_hi = lf + 1, (9 if hi is None else hf - 1)
    if mid_lo <= mid_hi:
        cls = str(mid_lo) if mid_lo == mid_hi else f"[{mid_lo}-{mid_hi}]"
        alts.append(cls + (_any_digits(sub_len) if sub_len != 0 else ""))
    for d in sorted({lf, hf} if hi is not None else {lf}):
        at_lo, at_hi = d == lf, hi is not None and d == hf
        sub, sub_empty = _frac_range(lo[1:] if at_lo else "", lo_strict if at_lo else False,
                                     (hi[1:] if at_hi else None), hi_strict if at_hi else False,
                                     sub_len)
        if sub is None and not sub_empty:
            continue
        if sub is None:
            alts.append(str(d))
        elif sub_empty:
            alts.append(f"{d}(?:{sub})?")
        else:
            alts.append(f"{d}(?:{sub})")
    if not alts:
        return None, empty_ok
    return "|".join(alts), empty_ok


def _decimal_parts(value: Decimal) -> tuple[int, str]:
    """Non-negative decimal -> (integer part, fraction digits without trailing zeros)."""
    sign, digits, exp = value.normalize().as_tuple()
    text = format(value.normalize(), "f")
    if "." in text:
        ip, fp = text.split(".")
        return int(ip), fp.rstrip("0")
    return int(text), ""


def _magnitude_range(a: Decimal, a_strict: bool, b: Decimal | None, b_strict: bool,
                     max_frac: int | None) -> str | None:
    """Regex for non-negative decimal texts I(.F)? with a <(=) value <(=) b."""
    if b is not None and (a > b or (a == b and (a_strict or b_strict))):
        return None
    ia, fa = _decimal_parts(a)
    alts = []

    def suffix(res):
        """The fraction part; with a digit limit (multipleOf), trailing zeros past it too."""
        rx, empty = res
        zeros = "" if max_frac is None else "0*"
        if rx is None:
            return ("" if max_frac is None else "(?:\\.0+)?") if empty else None
        if not empty:
            return f"\\.(?:{rx}){zeros}"
        if max_frac is None:
            return f"(?:\\.(?:{rx}))?"
        return f"(?:\\.(?:{rx}){zeros}|\\.0+)?"

    def int_lit(i: int) -> str:
        return str(i)

    if b is not None:
        ib, fb = _decimal_parts(b)
    if b is not None and ia == ib:
        s = suffix(_frac_range(fa, a_strict, fb, b_strict, max_frac))
        if s is not None:
            alts.append(int_lit(ia) + s)
    else:
        s = suffix(_frac_range(fa, a_strict, None, False, max_frac))
        if s is not None:
            alts.append(int_lit(ia) + s)
        mids = _nonneg_int_range(ia + 1, None if b is None else ib - 1)
        if mids:
            mid = mids[0] if len(mids) == 1 else "(?:" + "|".join(mids) + ")"
            any_frac = suffix((_any_digits(max_frac, 1) if max_frac != 0 else None, True))
            alts.append(mid + any_frac)
        if b is not None:
            s = suffix(_frac_range("", False, fb, b_strict, max_frac))
            if s is not None:
                alts.append(int_lit(ib) + s)
    if not alts:
        return None
    return "(?:" + "|".join(alts) + ")"


def _number_range(lo: Decimal | None, lo_strict: bool, hi: Decimal | None, hi_strict: bool,
                  max_frac: int | None) -> str | None:
    """Regex for JSON numbers (no exponent) in the interval; None if empty."""
    alts = []
    zero = Decimal(0)
    if hi is None or hi >= 0:
        if lo is None or lo < 0:
            a, a_s = zero, False
        else:
            a, a_s = lo, lo_strict
        pos = _magnitude_range(a, a_s, hi, hi_strict, max_frac)
        if pos:
            alts.append(pos)
    if lo is None or lo < 0:
        if hi is None or hi > 0:
            a, a_s = zero, False
        else:
            a, a_s = -hi, hi_strict
        neg = _magnitude_range(a, a_s, None if lo is None else -lo, lo_strict, max_frac)
        if neg:
            alts.append("-" + neg)
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


INTEGER_RX = r"-?(?:0|[1-9][0-9]*)"
NUMBER_RX = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"


def _count(s: dict, keyword: str, pointer: str, default):
    """A count keyword (minLength, maxItems, ...): a non-negative integer, or a float of
    integral value (2.0 is 2 in JSON Schema); `default` when absent."""
    value = s.get(keyword)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JsonSchemaError(f"{keyword} must be a non-negative integer", pointer, keyword)
    return value


def _to_decimal(value, pointer: str, keyword: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JsonSchemaError(f"{keyword} must be a number", pointer, keyword)
    if isinstance(value, float) and not math.isfinite(value):
        raise JsonSchemaError(f"{keyword} must be finite", pointer, keyword)
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


# ---------------------------------------------------------------------------------------------
# The lowering


class _Layout:
    """Punctuation terminals for a whitespace policy."""

    def __init__(self, whitespace):
        if isinstance(whitespace, bool) or not (whitespace in ("flexible", "compact")
                                                 or (isinstance(whitespace, int)
                                                     and 0 <= whitespace <= 16)):
            raise JsonSchemaError(f"whitespace must be 'flexible', 'compact' or an indent "
                                  f"0..16, not {whitespace!r}")
        self.mode = whitespace
        ws = f"[ \\t\\n\\r]{{0,{MAX_FLEXIBLE_WS}}}" if whitespace == "flexible" else ""
        self.ws = ws

    @property
    def indented(self) -> bool:
        return isinstance(self.mode, int)

    def _nl(self, depth: int) -> str:
        return "\\n" + " " * (self.mode * depth)

    def open(self, ch: str, depth: int) -> str:
        if self.indented:
            return re.escape(ch) + self._nl(depth + 1)
        return re.escape(ch) + self.ws

    def close(self, ch: str, depth: int) -> str:
        if self.indented:
            return self._nl(depth) + re.escape(ch)
        return self.ws + re.escape(ch)

    def empty(self, pair: str) -> str:
        if self.indented or self.mode == "compact":
            return re.escape(pair)
        return re.escape(pair[0]) + self.ws + re.escape(pair[1])

    def comma(self, depth: int) -> str:
        if self.indented:
            return "," + self._nl(depth + 1)
        return self.ws + "," + self.ws

    def colon(self) -> str:
        if self.indented:
            return ": "
        if self.mode == "flexible":
            ws = f"[ \\t\\n\\r]{{0,{MAX_COLON_WS}}}"
            return ws + ":" + ws
        return ":"


def _ptr_escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _type_of(value) -> str:
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


def _json_value(value):
    """`value` with every integral float made an int: JSON Schema compares numbers by value
    (2.0 == 2), never booleans with numbers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _canon(value) -> str:
    """A text equal for JSON values that JSON Schema deems equal."""
    return json.dumps(_json_value(value), sort_keys=True)


# Internal keys of merged allOf parts (not JSON Schema keywords).
_MERGED_FROM = "jaxguide:merged_from"  # the source dicts of a merged dict
_ADDITIONAL_PARTS = "jaxguide:additional_parts"  # [(patterns, schema)] of merged parts
_MERGED_TOGETHER = frozenset({
    "properties", "patternProperties", "additionalProperties", _ADDITIONAL_PARTS,
    "items", "prefixItems", "additionalItems", "enum", "const", _MERGED_FROM})


def _number_literal(value: int | float, floats: bool) -> str:
    """Regex of JSON number texts whose value is `value` (JSON Schema compares numbers by
    value). A fraction takes any trailing zeros; with `floats` (the schema takes non-integer
    numbers: a float text of an integral value is not an `integer` in draft 4 nor for
    jaxguide) an integral value below 2^53 is also `N.0`, `N.00`, ...; zero is also `-0`.
    Texts with an exponent are only `value`'s own."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        value = int(value)
    text = json.dumps(value)
    if isinstance(value, int):
        if abs(value) >= 2 ** 53:
            return re.escape(text)
        return (("-?" if value == 0 else "") + re.escape(text) +
                (r"(?:\.0+)?" if floats else ""))
    if "e" in text or "E" in text:
        return re.escape(text)
    return re.escape(text) + "0*"


def _format_checks(pattern: str, instance: Any) -> bool:
    return not isinstance(instance, str) or _ecma_search(pattern, instance)


class _ValueChecker:
    """Exact validity of concrete values (enum / const values, property names) under the
    subschemas of one root, in jaxguide's dialect (`json_schema_dialect`) with this module's
    ECMA engine and format regexes: the same semantics the grammar enforces."""

    def __init__(self, root, lowering: _Lowering):
        self.root = root if isinstance(root, (dict, bool)) else {}
        self.lowering = lowering
        self._validator = None

    def _search(self, pattern: str, text: str) -> bool:
        try:
            return _ecma_search(pattern, text)
        except _PatternError as e:
            self.lowering.unsupported("pattern", "", f"{pattern!r}: {e}")
            return True  # lenient: the keyword is ignored

    def is_valid(self, value, schema, pointer: str, keyword: str) -> bool:
        if self._validator is None:
            formats = jsonschema.FormatChecker(formats=())
            for name, pattern in _FORMATS.items():
                formats.checks(name)(functools.partial(_format_checks, pattern))
            cls = validator_class(self.root, self._search)
            self._validator = cls(exact_numbers(self.root), format_checker=formats)
        try:
            return self._validator.evolve(schema=exact_numbers(schema)).is_valid(
                exact_numbers(value))
        except JsonSchemaError:
            raise
        except Exception as e:  # noqa: BLE001 (jsonschema / referencing errors)
            raise JsonSchemaError(f"cannot check the {keyword} values ({type(e).__name__}: "
                                  f"{e})", pointer, keyword) from None


class _Lowering:
    def __init__(self, root, whitespace, additional_properties_default, lenient):
        self.root = root
        self.layout = _Layout(whitespace)
        self.additional_default = additional_properties_default
        self.lenient = lenient
        self.terminals: dict[str, int] = {}
        self.nonterminals: list[str] = []
        self.rules: list[tuple[int, tuple]] = []
        self.memo: dict = {}
        self.values = _ValueChecker(root, self)
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = bool(re.search(r"draft-0[0-7]", str(schema_uri)))
        self.draft4 = "draft-04" in str(schema_uri) or "draft-03" in str(schema_uri)

    # --- IR building -----------------------------------------------------------------------
    # Symbols while building: a terminal is ~index (negative), a nonterminal its index.
    def term(self, regex: str) -> int:
        index = self.terminals.get(regex)
        if index is None:
            index = self.terminals[regex] = len(self.terminals)
        return ~index

    def new_nt(self, name: str) -> int:
        self.nonterminals.append(name)
        return len(self.nonterminals) - 1

    def rule(self, lhs: int, rhs) -> None:
        self.rules.append((lhs, tuple(rhs)))
        if len(self.rules) > MAX_RULES:
            raise JsonSchemaError(f"the grammar exceeds {MAX_RULES} rules")

    def finish(self, start: int) -> GrammarIR:
        n_t = len(self.terminals)
        terminals = tuple(TerminalIR(f"T{i}", rx) for i, rx in enumerate(self.terminals))
        rules = tuple((lhs, tuple([n_t + s if s >= 0 else ~s for s in rhs]))
                      for lhs, rhs in self.rules)
        return GrammarIR(terminals=terminals, nonterminals=tuple(self.nonterminals),
                         rules=rules, start=start)

    # --- errors ----------------------------------------------------------------------------
    def unsupported(self, keyword: str, pointer: str, why: str = ""):
        message = f"keyword {keyword!r} cannot be enforced" + (f" ({why})" if why else "")
        if self.lenient:
            warnings.warn(f"jaxguide JSON Schema: ignoring {message} at {pointer or '#'}",
                          stacklevel=4)
            return
        raise JsonSchemaError(message + "; pass lenient=True to ignore it", pointer, keyword)

    # --- $ref ------------------------------------------------------------------------------
    def resolve_ref(self, ref, pointer: str):
        if not isinstance(ref, str):
            raise JsonSchemaError("$ref must be a string", pointer, "$ref")
        if not ref.startswith("#"):
            raise JsonSchemaError(f"$ref {ref!r} is not local (remote references are not "
                                  "supported)", pointer, "$ref")
        from urllib.parse import unquote

        frag = unquote(ref[1:])
        node = self.root
        if frag and not frag.startswith("/"):
            raise JsonSchemaError(f"$ref {ref!r}: anchors are not supported", pointer, "$ref")
        for part in frag.split("/")[1:] if frag else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise JsonSchemaError(f"$ref {ref!r} does not resolve", pointer, "$ref")
        if not isinstance(node, (dict, bool)):
            raise JsonSchemaError(f"$ref {ref!r} is not a schema", pointer, "$ref")
        return node, "#" + frag

    # --- normalization: $ref siblings, allOf, anyOf/oneOf distribution ---------------------
    def expand(self, schema, pointer: str, depth: int = 0):
        """Normalizes combinators: -> "any" | "none" | a list of alternatives, each a dict
        without $ref/allOf/anyOf/oneOf, or ("ref", pointer) for a reference lowered lazily
        (which is how recursion stays finite)."""
        if depth > 40:
            raise JsonSchemaError("$ref/allOf nesting too deep (a reference cycle without "
                                  "structure?)", pointer, "$ref")
        if schema is True or (isinstance(schema, dict) and not schema):
            return "any"
        if schema is False:
            return "none"
        if not isinstance(schema, dict):
            raise JsonSchemaError(f"a schema must be an object or a boolean, not "
                                  f"{type(schema).__name__}", pointer)
        schema = dict(schema)
        conjuncts = []  # each: a list of alternatives
        if "$ref" in schema:
            _, target_ptr = self.resolve_ref(schema.pop("$ref"), pointer)
            if self.old_draft or not any(k in IMPLEMENTED or k in UNSUPPORTED for k in schema):
                return [("ref", target_ptr)]
            conjuncts.append([("ref", target_ptr)])
        if "allOf" in schema:
            subs = schema.pop("allOf")
            if not isinstance(subs, list) or not subs:
                raise JsonSchemaError("allOf must be a non-empty array", pointer, "allOf")
            for i, sub in enumerate(subs):
                e = self.expand(sub, f"{pointer}/allOf/{i}", depth + 1)
                if e == "none":
                    return "none"
                if e != "any":
                    conjuncts.append(e)
        for key in ("anyOf", "oneOf"):
            if key not in schema:
                continue
            subs = schema.pop(key)
            if not isinstance(subs, list) or not subs:
                raise JsonSchemaError(f"{key} must be a non-empty array", pointer, key)
            if key == "oneOf" and len(subs) > 1:
                excluded = self.oneof_excluded_types(subs, schema.get("type"), pointer, depth)
                if excluded is None:
                    self.unsupported("oneOf", pointer, "branches not provably disjoint; "
                                     "lenient enforces it as anyOf")
                elif excluded:
                    keep = [t for t in ALL_TYPES if t not in excluded]
                    if not keep:
                        return "none"
                    conjuncts.append([{"type": keep}])
            branches = []
            for i, sub in enumerate(subs):
                e = self.expand(sub, f"{pointer}/{key}/{i}", depth + 1)
                if e == "any":
                    branches = None
                    break
                if e != "none":
                    branches += e
            if branches is None:
                continue  # one branch accepts anything
            if not branches:
                return "none"
            conjuncts.append(branches)
        if any(k in IMPLEMENTED or k in UNSUPPORTED for k in schema):
            conjuncts.insert(0, [schema])
        if not conjuncts:
            return "any"
        return self.conjoin(conjuncts, pointer, depth)

    def conjoin(self, conjuncts, pointer, depth):
        combos = [[]]
        for alternatives in conjuncts:
            combos = [c + [a] for c in combos for a in alternatives]
            if len(combos) > MAX_ALLOF_PRODUCT:
                raise JsonSchemaError(f"more than {MAX_ALLOF_PRODUCT} alternatives after "
                                      "distributing allOf over anyOf/oneOf", pointer, "allOf")
        out = []
        for combo in combos:
            if len(combo) == 1:
                out.append(combo[0])
                continue
            refs = [i for i, c in enumerate(combo) if isinstance(c, tuple)]
            if refs:  # a reference merged with other parts is inlined, in its place (the
                # order of the parts is the order of the merged properties)
                at = refs[0]
                target, tptr = self.resolve_ref(combo[at][1], pointer)
                e = self.expand(target, tptr, depth + 1)
                if e == "none":
                    continue
                e = [{}] if e == "any" else e
                sub = self.conjoin([[c] for c in combo[:at]] + [e] +
                                   [[c] for c in combo[at + 1:]], pointer, depth + 1)
                if sub == "none":
                    continue
                out += [{}] if sub == "any" else sub
                continue
            merged = self.merge(combo, pointer)
            if merged is not None:
                out.append(merged)
        if not out:
            return "none"
        if any(o == {} for o in out):
            return "any"
        return out

    def _deref(self, target_ptr: str, pointer: str):
        return self.resolve_ref(target_ptr, pointer)

    def merge(self, schemas: list, pointer: str):
        """allOf of dicts (no $ref/allOf/anyOf/oneOf) -> one dict, or None if unsatisfiable.

        Keywords that act alone are merged pairwise (types intersected, bounds tightened,
        required united). Object, array and literal keywords interact across parts and are
        merged by `merge_objects`, `merge_arrays` and `merge_literals`. The merged dict keeps
        its sources under `_MERGED_FROM` (enum values are checked against them).
        """
        out: dict = {}
        for s in schemas:
            for key, value in s.items():
                if key in _MERGED_TOGETHER:
                    continue
                if key not in out:
                    out[key] = value
                    continue
                cur = out[key]
                if _canon(cur) == _canon(value):
                    continue
                if key == "type":
                    a = {cur} if isinstance(cur, str) else set(cur)
                    b = {value} if isinstance(value, str) else set(value)

                    def widen(t):
                        return t | ({"integer"} if "number" in t else set())
                    both = widen(a) & widen(b)
                    if not both:
                        return None
                    out[key] = sorted(both)
                elif key == "required":
                    out[key] = list(dict.fromkeys(list(cur) + list(value)))
                elif key in ("minLength", "minItems", "minProperties"):
                    out[key] = max(cur, value)
                elif key in ("maxLength", "maxItems", "maxProperties"):
                    out[key] = min(cur, value)
                elif key == "minimum" or (key == "exclusiveMinimum" and not isinstance(value,
                                                                                       bool)):
                    out[key] = max(cur, value)
                elif key == "maximum" or (key == "exclusiveMaximum" and not isinstance(value,
                                                                                       bool)):
                    out[key] = min(cur, value)
                elif key == "propertyNames" and isinstance(cur, (dict, bool)) and \
                        isinstance(value, (dict, bool)):
                    out[key] = {"allOf": [cur, value]}
                elif key in ANNOTATIONS or (key not in IMPLEMENTED and key not in UNSUPPORTED):
                    continue
                else:
                    raise JsonSchemaError(f"allOf: cannot merge two different {key!r} values",
                                          pointer, key)
        if not self.merge_literals(schemas, out):
            return None
        self.merge_objects(schemas, out, pointer)
        self.merge_arrays(schemas, out)
        out[_MERGED_FROM] = tuple(src for s in schemas for src in s.get(_MERGED_FROM, (s,)))
        return out

    @staticmethod
    def merge_literals(schemas: list, out: dict) -> bool:
        """`enum` / `const` of all parts -> one `enum` of the values in every part (numbers
        compared by value); False if none is."""
        lists = [[s["const"]] if "const" in s else s["enum"]
                 for s in schemas if "const" in s or "enum" in s]
        if not lists:
            return True
        for values in lists:
            if not isinstance(values, list):
                raise JsonSchemaError("enum must be an array", "", "enum")
        values = lists[0]
        for other in lists[1:]:
            keep = {_canon(v) for v in other}
            values = [v for v in values if _canon(v) in keep]
        out["enum"] = values
        return bool(values)

    def additional_parts(self, s: dict) -> list:
        """[(patterns, schema)]: `schema` applies to the names that s does not declare and
        that none of `patterns` matches (s's additionalProperties; merged dicts keep one entry
        per part). Trivial (true) parts are left out."""
        if _ADDITIONAL_PARTS in s:
            return list(s[_ADDITIONAL_PARTS])
        additional = s.get("additionalProperties")
        if additional is None or additional is True or additional == {}:
            return []
        return [(tuple(s.get("patternProperties") or {}), additional)]

    def key_matches(self, pattern: str, name: str, pointer: str) -> bool:
        try:
            return _ecma_search(pattern, name)
        except _PatternError as e:
            self.unsupported("patternProperties", pointer, f"pattern {pattern!r}: {e}")
            return False

    def merge_objects(self, schemas: list, out: dict, pointer: str) -> None:
        """properties / patternProperties / additionalProperties of all parts. A name that one
        part declares gets, from every other part, that part's schema for an undeclared name
        (its additionalProperties unless one of its patterns matches); patterns are united;
        the additionalProperties of each part are kept apart (`_ADDITIONAL_PARTS`), since each
        applies only where that part's own patterns do not match."""
        object_keys = ("properties", "patternProperties", "additionalProperties",
                       _ADDITIONAL_PARTS)
        if not any(k in s for s in schemas for k in object_keys):
            return
        for s in schemas:
            for k in ("properties", "patternProperties"):
                if not isinstance(s.get(k, {}), dict):
                    raise JsonSchemaError(f"{k} must be an object", pointer, k)
        names = list(dict.fromkeys(k for s in schemas for k in s.get("properties", {})))
        properties = {}
        for name in names:
            subs = [s["properties"][name] for s in schemas if name in s.get("properties", {})]
            for s in schemas:
                if name in s.get("properties", {}):
                    continue
                subs += [schema for patterns, schema in self.additional_parts(s)
                         if not any(self.key_matches(p, name, pointer) for p in patterns)]
            properties[name] = subs[0] if len(subs) == 1 else {"allOf": subs}
        if properties:
            out["properties"] = properties
        patterns: dict = {}
        for s in schemas:
            for p, ps in (s.get("patternProperties") or {}).items():
                patterns[p] = {"allOf": [patterns[p], ps]} if p in patterns else ps
        if patterns:
            out["patternProperties"] = patterns
        parts = [part for s in schemas for part in self.additional_parts(s)]
        if parts:
            out[_ADDITIONAL_PARTS] = parts
        elif any("additionalProperties" in s for s in schemas):
            out["additionalProperties"] = True

    @staticmethod
    def array_parts(s: dict) -> tuple[list, Any]:
        """(prefix schemas, schema of the items after them) of one schema's array keywords:
        2020-12 prefixItems + items, or draft <= 2019 array-form items + additionalItems."""
        items = s.get("items")
        if isinstance(items, list):
            return items, s.get("additionalItems", True)
        return list(s.get("prefixItems") or []), True if items is None else items

    def merge_arrays(self, schemas: list, out: dict) -> None:
        """items / prefixItems / additionalItems of all parts, position by position: index i
        gets every part's schema for index i (its prefix schema, or the schema of its rest)."""
        if not any(k in s for s in schemas for k in ("items", "prefixItems", "additionalItems")):
            return
        parts = [self.array_parts(s) for s in schemas]

        def conjunction(subs):
            subs = [x for x in subs if x is not True and x != {}]
            return True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}

        length = max(len(prefix) for prefix, _ in parts)
        prefix = [conjunction([p[i] if i < len(p) else rest for p, rest in parts])
                  for i in range(length)]
        out.pop("additionalItems", None)
        if prefix:
            out["prefixItems"] = prefix
        out["items"] = conjunction([rest for _, rest in parts])

    # --- oneOf disjointness --------------------------------------------------------------
    _TYPE_KEYWORDS = {
        "object": {"properties", "required", "additionalProperties", "patternProperties",
                   "propertyNames", "minProperties", "maxProperties", "dependencies",
                   "dependentRequired", "dependentSchemas", "unevaluatedProperties",
                   _ADDITIONAL_PARTS},
        "array": {"items", "prefixItems", "additionalItems", "minItems", "maxItems",
                  "uniqueItems", "contains", "unevaluatedItems"},
        "string": {"minLength", "maxLength", "pattern"},
        "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    }
    _ANY_TYPE_KEYWORDS = {"not", "if", "then", "else"}

    def oneof_excluded_types(self, subs, parent_type, pointer, depth=0):
        """Types no value of which can match exactly one branch, or None if the branches are
        not provably disjoint on the other types (then oneOf != anyOf)."""
        branches = []
        for i, sub in enumerate(subs):
            try:
                e = self.expand(sub, f"{pointer}/oneOf/{i}", depth + 1)
            except JsonSchemaError:
                return None
            if e == "none":
                continue
            if e == "any":
                e = [{}]
            alts = []
            for alt in e:
                if isinstance(alt, tuple):
                    target, tptr = self.resolve_ref(alt[1], pointer)
                    try:
                        inner = self.expand(target, tptr, depth + 2)
                    except JsonSchemaError:
                        return None
                    if inner == "none":
                        continue
                    inner = [{}] if inner == "any" else inner
                    if any(isinstance(x, tuple) for x in inner):
                        return None
                    alts += inner
                else:
                    alts.append(alt)
            if alts:
                branches.append(alts)
        wanted = ALL_TYPES
        if parent_type is not None:
            pt = {parent_type} if isinstance(parent_type, str) else set(parent_type)
            wanted = [t for t in ALL_TYPES if t in pt or (t == "number" and "integer" in pt)]
        excluded = set()
        for t in wanted:
            kinds = [[self._classify(alt, t) for alt in b] for b in branches]
            live = [(b, k) for b, k in zip(branches, kinds) if any(x != "none" for x in k)]
            full = [b for b, k in live if "all" in k]
            if len(full) >= 2:
                excluded.add(t)
                continue
            if full and len(live) > 1:
                return None
            for i in range(len(live)):
                for j in range(i + 1, len(live)):
                    for a in live[i][0]:
                        for b in live[j][0]:
                            if not self._disjoint_on(a, b, t):
                                return None
        return excluded

    def _classify(self, s: dict, t: str) -> str:
        types = s.get("type")
        if types is not None:
            types = {types} if isinstance(types, str) else set(types)
            if t == "number" and "number" not in types:
                if "integer" not in types:
                    return "none"
                return "partial"
            if t != "number" and t not in types:
                return "none"
        if "const" in s or "enum" in s:
            values = [s["const"]] if "const" in s else s.get("enum") or []
            return "partial" if any(_type_of(v) == t for v in values) else "none"
        if set(s) & (self._TYPE_KEYWORDS.get(t, set()) | self._ANY_TYPE_KEYWORDS):
            return "partial"
        if t == "string" and s.get("format") in _FORMATS:
            return "partial"
        return "all"

    def _disjoint_on(self, a: dict, b: dict, t: str) -> bool:
        def values(s):
            if "const" in s:
                return {_canon(s["const"])}
            if "enum" in s and isinstance(s["enum"], list):
                return {_canon(v) for v in s["enum"]}
            return None

        va, vb = values(a), values(b)
        if va is not None and vb is not None and not (va & vb):
            return True
        if t == "object":
            pa, pb = a.get("properties") or {}, b.get("properties") or {}
            ra, rb = set(a.get("required") or []), set(b.get("required") or [])
            for k in set(pa) & set(pb) & ra & rb:
                sa, sb = pa[k], pb[k]
                if isinstance(sa, dict) and isinstance(sb, dict):
                    xa, xb = values(sa), values(sb)
                    if xa is not None and xb is not None and not (xa & xb):
                        return True
                    ta, tb = sa.get("type"), sb.get("type")
                    if ta is not None and tb is not None and "$ref" not in sa and \
                            "$ref" not in sb:
                        ta = {ta} if isinstance(ta, str) else set(ta)
                        tb = {tb} if isinstance(tb, str) else set(tb)
                        for x in (ta, tb):
                            if "number" in x:
                                x.add("integer")
                        if not (ta & tb):
                            return True
            for x, y, rx in ((a, b, ra), (b, a, rb)):
                if y.get("additionalProperties") is False and not y.get("patternProperties"):
                    if rx - set(y.get("properties") or {}):
                        return True
        if t == "number":
            def interval(s):
                lo = s.get("minimum", s.get("exclusiveMinimum"))
                hi = s.get("maximum", s.get("exclusiveMaximum"))
                lo = lo if isinstance(lo, (int, float)) and not isinstance(lo, bool) else None
                hi = hi if isinstance(hi, (int, float)) and not isinstance(hi, bool) else None
                return lo, hi
            (la, ha), (lb, hb) = interval(a), interval(b)
            if ha is not None and lb is not None and ha < lb:
                return True
            if hb is not None and la is not None and hb < la:
                return True
        return False

    # --- values ----------------------------------------------------------------------------
    def value(self, schema, pointer: str, depth: int):
        """Nonterminal for the JSON values valid under `schema`."""
        if depth > MAX_INDENT_DEPTH and self.layout.indented:
            return self.new_nt("too_deep")  # no rules: nesting limit of the indented layout
        key_depth = depth if self.layout.indented else 0
        memo_key = (id(schema), key_depth)
        if isinstance(schema, dict) and memo_key in self.memo:
            return self.memo[memo_key][0]
        nt = self.new_nt(f"v{len(self.nonterminals)}")
        if isinstance(schema, dict):
            self.memo[memo_key] = (nt, schema)
        e = self.expand(schema, pointer)
        if e == "none":
            return nt
        if e == "any":
            self.rule(nt, [self.any_value(depth)])
            return nt
        for alt in e:
            if isinstance(alt, tuple):
                target, tptr = self._deref(alt[1], pointer)
                self.rule(nt, [self.value(target, tptr, depth)])
            else:
                self.alternative(nt, alt, pointer, depth)
        return nt

    def any_value(self, depth: int):
        key = ("any", depth if self.layout.indented else 0)
        if key in self.memo:
            return self.memo[key][0]
        nt = self.new_nt("any")
        self.memo[key] = (nt, None)
        self.alternative(nt, {}, "", depth)
        return nt

    def alternative(self, nt, s: dict, pointer: str, depth: int):
        """Adds rules nt -> (a value valid under dict schema s without combinators)."""
        if "const" in s or "enum" in s:
            self.literals(nt, s, pointer, depth)
            return
        if "not" in s:
            s = self.apply_not(s, pointer)
            if s is None:
                return
        for key in s:
            if key in UNSUPPORTED:
                if key == "uniqueItems" and s[key] is False:
                    continue
                if key in ("then", "else") and "if" not in s:
                    continue
                if key == "if" and "then" not in s and "else" not in s:
                    continue
                self.unsupported(key, pointer)
        types = s.get("type")
        if types is None:
            types = set(ALL_TYPES)
        else:
            tl = [types] if isinstance(types, str) else types
            if not isinstance(tl, list) or not all(isinstance(t, str) for t in tl):
                raise JsonSchemaError("type must be a string or an array of strings", pointer,
                                      "type")
            for t in tl:
                if t not in ALL_TYPES and t != "integer":
                    raise JsonSchemaError(f"unknown type {t!r}", pointer, "type")
            types = set(tl)
        if "integer" in types and "number" in types:
            types.discard("integer")
        for t in sorted(types):
            if t == "null":
                self.rule(nt, [self.term("null")])
            elif t == "boolean":
                self.rule(nt, [self.term("true|false")])
            elif t == "string":
                content = self.string_content(s, pointer, allow_chunks=True)
                if isinstance(content, tuple):
                    self.rule(nt, [self.chunked_string(content[1], content[2])])
                elif content is not None:
                    self.rule(nt, [self.term(f'"{content}"')])
            elif t in ("number", "integer"):
                rx = self.number_regex(s, pointer, integer=(t == "integer"))
                if rx is not None:
                    self.rule(nt, [self.term(rx)])
            elif t == "object":
                self.object(nt, s, pointer, depth)
            elif t == "array":
                self.array(nt, s, pointer, depth)

    def apply_not(self, s: dict, pointer: str):
        """`not` with only `type` (or a type-only $ref) removes those types; else unsupported."""
        neg = s["not"]
        if isinstance(neg, dict) and "$ref" in neg:
            resolved = self.single_alternative(neg, pointer)
            neg = neg if resolved is None else resolved
        rest = {k: v for k, v in s.items() if k != "not"}
        if neg is True or neg == {}:
            return None
        if neg is False:
            return rest
        if isinstance(neg, dict) and set(neg) - ANNOTATIONS == {"type"}:
            t = neg["type"]
            removed = {t} if isinstance(t, str) else set(t)
            types = rest.get("type", list(ALL_TYPES) + ["integer"])
            types = {types} if isinstance(types, str) else set(types)
            if "number" in types:
                types.add("integer")
            if "integer" in removed and "number" not in removed and "number" in types:
                self.unsupported("not", pointer, "a number that is not an integer")
                return rest
            if "number" in removed:
                removed.add("integer")
            rest["type"] = sorted(types - removed)
            if not rest["type"]:
                return None
            return rest
        self.unsupported("not", pointer, "only {\"not\": {\"type\": ...}} is supported")
        return rest

    def empty_container(self, pair: str, depth: int) -> list[int]:
        """`{}` / `[]`: the open and close tokens (no extra terminal), except in the indented
        layout, where the empty form has no line break."""
        lay = self.layout
        if lay.indented:
            return [self.term(lay.empty(pair))]
        return [self.term(lay.open(pair[0], depth)), self.term(lay.close(pair[1], depth))]

    def literals(self, nt, s: dict, pointer: str, depth: int) -> None:
        """Rules for the enum / const values of s that are valid under all of s (exact: each
        value is checked against every sibling keyword, including ones the grammar could not
        enforce, such as `not` or `uniqueItems`)."""
        values = [s["const"]] if "const" in s else s["enum"]
        if not isinstance(values, list):
            raise JsonSchemaError("enum must be an array", pointer, "enum")
        sources = s.get(_MERGED_FROM, (s,))
        keyword = "const" if "const" in s else "enum"
        floats = all(src.get("type") is None or "number" in (
            [src["type"]] if isinstance(src["type"], str) else src["type"]) for src in sources)
        strings = []
        seen = set()
        for v in values:
            if _canon(v) in seen or not all(
                    self.values.is_valid(v, source, pointer, keyword) for source in sources):
                continue
            seen.add(_canon(v))
            if isinstance(v, str):
                strings.append('"' + _literal_units(v) + '"')
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                self.rule(nt, [self.term(_number_literal(v, floats))])
            else:
                self.rule(nt, [self.literal_value(v, depth)])
        if strings:
            self.rule(nt, [self.term("|".join(sorted(set(strings))))])

    def literal_value(self, v, depth):
        if isinstance(v, str):
            return self.term('"' + _literal_units(v) + '"')
        if v is None or isinstance(v, (bool, int, float)):  # nested: the value's own text
            return self.term(re.escape(json.dumps(v)))
        nt = self.new_nt("lit")
        lay = self.layout
        if isinstance(v, list):
            if not v:
                self.rule(nt, self.empty_container("[]", depth))
                return nt
            rhs = [self.term(lay.open("[", depth))]
            for i, x in enumerate(v):
                if i:
                    rhs.append(self.term(lay.comma(depth)))
                rhs.append(self.literal_value(x, depth + 1))
            rhs.append(self.term(lay.close("]", depth)))
        else:
            if not v:
                self.rule(nt, self.empty_container("{}", depth))
                return nt
            rhs = [self.term(lay.open("{", depth))]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    rhs.append(self.term(lay.comma(depth)))
                rhs.append(self.term('"' + _literal_units(k) + '"' + lay.colon()))
                rhs.append(self.literal_value(x, depth + 1))
            rhs.append(self.term(lay.close("}", depth)))
        self.rule(nt, rhs)
        return nt

    # --- strings ---------------------------------------------------------------------------
    def string_content(self, s: dict, pointer: str, allow_chunks: bool = False):
        min_len = _count(s, "minLength", pointer, 0)
        max_len = _count(s, "maxLength", pointer, None)
        if max_len is not None and max_len < min_len:
            return None
        pattern = s.get("pattern")
        fmt = s.get("format")
        if fmt is not None and fmt not in _FORMATS:
            fmt = None  # an annotation
        if pattern is not None and fmt is not None:
            self.unsupported("format", pointer, "together with pattern")
            fmt = None
        if pattern is not None or fmt is not None:
            source = pattern if pattern is not None else _FORMATS[fmt]
            keyword = "pattern" if pattern is not None else "format"
            if not isinstance(source, str):
                raise JsonSchemaError("pattern must be a string", pointer, "pattern")
            try:
                return pattern_to_units(source, min_len, max_len)
            except _PatternError as e:
                if "minLength/maxLength" in str(e):
                    self.unsupported("maxLength" if max_len is not None else "minLength",
                                     pointer, str(e))
                    return pattern_to_units(source)
                self.unsupported(keyword, pointer, f"{source!r}: {e}")
                # lenient: fall through to the length-only string
        if allow_chunks and (min_len > STRING_CHUNK or (max_len or 0) > STRING_CHUNK):
            return ("chunked", min_len, max_len)
        if max_len is not None and max_len > MAX_COUNT:
            self.unsupported("maxLength", pointer, f"{max_len} above the {MAX_COUNT} limit")
            max_len = None
        if min_len > MAX_COUNT:
            self.unsupported("minLength", pointer, f"{min_len} above the {MAX_COUNT} limit")
            min_len = 0
        if min_len == 0 and max_len is None:
            return f"{ANY_UNIT}*"
        if max_len is None:
            return f"{ANY_UNIT}{{{min_len},}}"
        if min_len == max_len:
            return f"{ANY_UNIT}{{{min_len}}}"
        return f"{ANY_UNIT}{{{min_len},{max_len}}}"

    def chunked_string(self, min_len: int, max_len: int | None):
        """A string of min_len..max_len code points as lexemes of STRING_CHUNK units.

        Maximal munch makes the split unique: every lexeme but the last is a full chunk of
        exactly K units, the last has 0..K-1 units and the closing quote. The chunk count is
        kept by rules, so the lexer holds K counting states whatever the length (a small NFA,
        few fresh DFA states), and the length is exact.
        """
        key = ("chunked", min_len, max_len)
        if key in self.memo:
            return self.memo[key][0]
        k = STRING_CHUNK

        def tail(lead: str, lo: int, hi: int):
            reps = f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
            return self.term(f'{lead}{ANY_UNIT}{reps}"')

        if max_len is None:
            last = max(1, -(-min_len // k))  # the chain loops on its last element
        else:
            last = max_len // k
        chain = [self.new_nt(f"str{j}") for j in range(last + 1)]
        for j, sym in enumerate(chain):
            lead = '"' if j == 0 else ""
            if max_len is None or (j + 1) * k <= max_len:
                nxt = chain[min(j + 1, last)]
                self.rule(sym, [self.term(f"{lead}{ANY_UNIT}{{{k}}}"), nxt])
            lo = max(0, min_len - j * k)
            hi = k - 1 if max_len is None else min(k - 1, max_len - j * k)
            if lo <= hi:
                self.rule(sym, [tail(lead, lo, hi)])

        self.memo[key] = (chain[0], None)
        return chain[0]

    # --- numbers ---------------------------------------------------------------------------
    def number_regex(self, s: dict, pointer: str, integer: bool) -> str | None:
        lo = hi = None
        lo_strict = hi_strict = False
        if "minimum" in s:
            lo = _to_decimal(s["minimum"], pointer, "minimum")
        if "maximum" in s:
            hi = _to_decimal(s["maximum"], pointer, "maximum")
        em, eM = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
        if isinstance(em, bool):
            lo_strict = em and lo is not None
        elif em is not None:
            v = _to_decimal(em, pointer, "exclusiveMinimum")
            if lo is None or v >= lo:
                lo, lo_strict = v, True
        if isinstance(eM, bool):
            hi_strict = eM and hi is not None
        elif eM is not None:
            v = _to_decimal(eM, pointer, "exclusiveMaximum")
            if hi is None or v <= hi:
                hi, hi_strict = v, True
        mult = s.get("multipleOf")
        zero_fraction = False
        max_frac = None
        step = None
        if mult is not None:
            m = _to_decimal(mult, pointer, "multipleOf")
            if m <= 0:
                raise JsonSchemaError("multipleOf must be > 0", pointer, "multipleOf")
            if m == m.to_integral_value():
                zero_fraction = not integer  # a number: 6000.0 is a multiple of 1 too
                integer = True
                step = int(m)
            elif not integer and m.normalize().as_tuple().digits == (1,):
                max_frac = -m.normalize().as_tuple().exponent
            else:
                self.unsupported("multipleOf", pointer, f"{mult}")
        if integer:
            ilo = None if lo is None else (int(math.floor(lo)) + 1 if lo_strict and lo ==
                                           lo.to_integral_value() else int(math.ceil(lo)))
            ihi = None if hi is None else (int(math.ceil(hi)) - 1 if hi_strict and hi ==
                                           hi.to_integral_value() else int(math.floor(hi)))
            if ilo is not None and ihi is not None and ilo > ihi:
                return None
            if step and step > 1:
                rx = self.multiples(ilo, ihi, step, pointer)
            elif ilo is None and ihi is None:
                rx = INTEGER_RX
            else:
                rx = _int_range(ilo, ihi)
            return f"(?:{rx})(?:\\.0+)?" if zero_fraction and rx is not None else rx
        if lo is None and hi is None and max_frac is None:
            return NUMBER_RX
        return _number_range(lo, lo_strict, hi, hi_strict, max_frac)

    def multiples(self, lo, hi, k, pointer) -> str | None:
        if lo is not None and hi is not None:
            first = -(-lo // k) * k
            if first > hi:
                return None
            count = (hi - first) // k + 1
            if count <= 2000:
                values = [str(v) for v in range(first, hi + 1, k)]
                return "(?:" + "|".join(values) + ")"
        a = b = 0
        r = k
        while r % 2 == 0:
            r //= 2
            a += 1
        while r % 5 == 0:
            r //= 5
            b += 1
        if r != 1 or (lo is not None and lo not in (0, 1)) or hi is not None:
            self.unsupported("multipleOf", pointer, f"multipleOf {k} with this range")
            return _int_range(lo, hi) if (lo is not None or hi is not None) else INTEGER_RX
        n = max(a, b)
        ends = sorted({str(v).zfill(n) for v in range(0, 10 ** n, k)})
        tail = "(?:" + "|".join(ends) + ")"
        small = [str(v) for v in range(k, 10 ** n, k)]
        body = f"[1-9][0-9]*{tail}" + ("|" + "|".join(small) if small else "")
        nonneg_pos = f"(?:{body})"
        if lo is None:
            return f"(?:0|-?{nonneg_pos})"
        return f"(?:0|{nonneg_pos})" if lo == 0 else nonneg_pos

    # --- objects ---------------------------------------------------------------------------
    def key_terminal(self, content_regex: str):
        return self.term('"' + _wrap(content_regex) + '"' + self.layout.colon())

    def object(self, nt, s: dict, pointer: str, depth: int):
        lay = self.layout
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise JsonSchemaError("properties must be an object", pointer, "properties")
        required = s.get("required") or []
        if self.draft4 and isinstance(required, bool):
            required = []
        if not isinstance(required, list):
            raise JsonSchemaError("required must be an array", pointer, "required")
        required_order = list(dict.fromkeys(required))
        required = set(required)
        patterns = s.get("patternProperties") or {}
        if not isinstance(patterns, dict):
            raise JsonSchemaError("patternProperties must be an object", pointer,
                                  "patternProperties")
        if _ADDITIONAL_PARTS in s:
            parts = s[_ADDITIONAL_PARTS]
        else:
            additional = s.get("additionalProperties",
                               True if self.additional_default else False)
            parts = [(tuple(patterns), additional)]
        names = s.get("propertyNames")
        min_p = _count(s, "minProperties", pointer, 0)
        max_p = _count(s, "maxProperties", pointer, None)
        name_check = None if names is True or names == {} else names

        def matching_patterns(name):
            return [ps for p, ps in patterns.items() if self.key_matches(p, name, pointer)]

        def undeclared_schemas(name):
            """The schemas of a name no property declares: its patterns', plus each part's
            additionalProperties where none of that part's patterns matches."""
            subs = matching_patterns(name) + [
                a for part_patterns, a in parts
                if not any(self.key_matches(p, name, pointer) for p in part_patterns)]
            return [x for x in subs if x is not True and x != {}]

        declared = []
        all_names = list(props) + [k for k in required_order if k not in props]
        for k in all_names:
            if name_check is not None and not self.name_ok(k, name_check, pointer):
                if k in required:
                    return  # a required name propertyNames refuses: no valid object
                continue
            if k in props:
                v, vptr = props[k], f"{pointer}/properties/{_ptr_escape(k)}"
                matching = matching_patterns(k)
                if matching:
                    v = {"allOf": [v] + matching}
            else:  # required but not declared: the extra-property schemas apply
                subs, vptr = undeclared_schemas(k), pointer
                if any(x is False for x in subs):
                    return  # a required name no schema allows: no valid object
                v = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
            declared.append((k, v, vptr))
        declared_names = set(all_names)
        # extra key classes: (key content regex, value schema, pointer)
        extras = []
        free = all(a is True or a == {} for _, a in parts) and all(
            ps is True or ps == {} for ps in patterns.values())
        if patterns and not free:
            if name_check is not None:
                self.unsupported("propertyNames", pointer, "together with patternProperties")
            try:
                extras = self.pattern_key_classes(patterns, parts, declared_names, pointer)
            except _PatternError as e:
                self.unsupported("patternProperties", pointer, str(e))
                extras = [] if any(a is False for _, a in parts) else [
                    (self.not_names(sorted(declared_names)), True,
                     f"{pointer}/additionalProperties")]
        else:
            subs = [a for _, a in parts if a is not True and a != {}]
            content = self.key_content(None, name_check, pointer, declared_names, None)
            if content is not None and not any(a is False for a in subs):
                v = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
                extras.append((content, v, f"{pointer}/additionalProperties"))
        counting = bool(min_p) or max_p is not None
        cap = max_p if max_p is not None else min_p
        if counting and cap > 64:
            self.unsupported("maxProperties" if max_p is not None else "minProperties",
                             pointer, "above 64")
            counting = False
        n = len(declared)
        req_after = [False] * (n + 1)
        for i in range(n - 1, -1, -1):
            req_after[i] = req_after[i + 1] or declared[i][0] in required
        members = {}
        pair_nt = []
        for k, v, vptr in declared:
            p = self.new_nt("prop")
            self.rule(p, [self.key_terminal(_literal_units(k)), self.value(v, vptr, depth + 1)])
            pair_nt.append(p)
        extra_nt = []
        for content, v, vptr in extras:
            if v is False:
                continue
            p = self.new_nt("extra")
            self.rule(p, [self.key_terminal(content), self.value(v, vptr, depth + 1)])
            extra_nt.append(p)
        comma = self.term(lay.comma(depth))

        def count_ok(c):
            return (not counting) or (c >= min_p and (max_p is None or c <= max_p))

        def can_add(c):
            return (not counting) or max_p is None or c < max_p

        def clamp(c):
            if not counting:
                return 0
            return c if max_p is not None else min(c, min_p)

        # Nonterminals: R(i, c) rest after c items with next declared index i (comma-led);
        # NX(i, c) choose next declared >= i (comma-led); F(i, c)/FN first item (no comma).
        def get(kind, i, c):
            key = (kind, i, c)
            if key in members:
                return members[key]
            sym = self.new_nt(f"{kind}{i}_{c}")
            members[key] = sym
            lead = [comma] if kind in ("R", "NX") else []
            if kind in ("R", "F"):
                if kind == "R" and not req_after[i] and count_ok(c):
                    self.rule(sym, [])
                if i < n or True:
                    if i < n:
                        self.rule(sym, [get("NX" if kind == "R" else "FN", i, c)])
                if can_add(c):
                    for e in extra_nt:
                        self.rule(sym, lead + [e, get("R", i, clamp(c + 1))])
            else:  # NX / FN
                if i >= n:
                    return sym
                if can_add(c):
                    self.rule(sym, lead + [pair_nt[i], get("R", i + 1, clamp(c + 1))])
                if declared[i][0] not in required:
                    self.rule(sym, [get(kind, i + 1, c)])
            return sym

        first = get("F", 0, 0)
        self.rule(nt, [self.term(lay.open("{", depth)), first, self.term(lay.close("}",
                                                                                   depth))])
        if not req_after[0] and count_ok(0):
            self.rule(nt, self.empty_container("{}", depth))

    def pattern_key_classes(self, patterns: dict, parts: list, declared: set, pointer):
        """[(key content regex, value schema, pointer)] for the keys that are not declared:
        one class per set of matching patterns (their schemas all apply, and the
        additionalProperties of every part none of whose patterns match), including the
        empty set."""
        groups: dict = {}  # patterns with the same schema and parts form one alternation
        for p, ps in patterns.items():
            member_of = tuple(i for i, (part_patterns, _) in enumerate(parts)
                              if p in part_patterns)
            groups.setdefault((_canon(ps), member_of), []).append((p, ps))
        if len(groups) > 4:
            raise _PatternError("more than 4 patternProperties with different schemas")
        items = [("|".join(f"(?:{p})" for p, _ in group) if len(group) > 1 else group[0][0],
                  group[0][1], {p for p, _ in group}) for group in groups.values()]
        nodes = [_pattern_node(p) for p, _, _ in items]
        if declared:
            nodes.append(_names_node(sorted(declared)))
        dfa = _Dfa(nodes)
        n = len(items)
        out = []
        for mask in range(1 << n):
            matched = set().union(*(items[i][2] for i in range(n) if mask >> i & 1))
            subs = [items[i][1] for i in range(n) if mask >> i & 1] + [
                a for part_patterns, a in parts if not matched & set(part_patterns)]
            subs = [x for x in subs if x is not True and x != {}]
            if any(x is False for x in subs):
                continue

            def accept(vec, mask=mask):
                return (all(vec[i] == bool(mask >> i & 1) for i in range(n))
                        and not (declared and vec[n]))

            rx = dfa.regex(accept)
            if rx is not None:
                schema = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
                where = "patternProperties" if mask else "additionalProperties"
                out.append((rx, schema, f"{pointer}/{where}"))
        return out

    def name_ok(self, name: str, names_schema, pointer: str) -> bool:
        """Whether a property name is valid under propertyNames (exact)."""
        return self.values.is_valid(name, names_schema, pointer, "propertyNames")

    def key_content(self, content, names_schema, pointer, declared: set, pattern):
        """Content regex of extra keys: `content` (None: any name not in `declared`), further
        restricted by a propertyNames schema; None when no key is allowed."""
        if names_schema is None:
            return content if content is not None else self.not_names(sorted(declared))
        if names_schema is False:
            return None
        s = self.single_alternative(names_schema, pointer)
        if s is None:
            self.unsupported("propertyNames", pointer, "a schema with alternatives")
            return content if content is not None else self.not_names(sorted(declared))
        if "enum" in s or "const" in s:
            values = [s["const"]] if "const" in s else s["enum"]
            keep = [v for v in values if isinstance(v, str) and v not in declared
                    and self.name_ok(v, names_schema, pointer)
                    and (pattern is None or re.search(pattern, v))]
            return "|".join(_literal_units(v) for v in keep) if keep else None
        allowed = {"type", "pattern", "maxLength", "minLength", "format"}
        if not set(s) - ANNOTATIONS <= allowed or (content is not None or declared):
            self.unsupported("propertyNames", pointer,
                             "only enum/const, or a string schema when no property is declared")
            return content if content is not None else self.not_names(sorted(declared))
        if s.get("type", "string") != "string" and "string" not in s.get("type", ()):
            return None
        return self.string_content(s, pointer)

    def single_alternative(self, schema, pointer: str) -> dict | None:
        """`schema` with its references resolved and its combinators merged, as one dict
        ({} for any value), or None if it has several alternatives or none."""
        for depth in range(41):
            e = self.expand(schema, pointer, depth)
            if e == "any":
                return {}
            if e == "none" or len(e) != 1:
                return None
            if isinstance(e[0], dict):
                return e[0]
            schema, pointer = self.resolve_ref(e[0][1], pointer)
        raise JsonSchemaError("$ref/allOf nesting too deep", pointer, "$ref")

    def not_names(self, names: list[str]) -> str:
        """Content regex for strings (in units) that differ from every name."""
        key = ("not_names", tuple(names))
        if key in self.memo:
            return self.memo[key][0]
        rx = _not_names(tuple(names))
        self.memo[key] = (rx, None)
        return rx

    # --- arrays ----------------------------------------------------------------------------
    def array(self, nt, s: dict, pointer: str, depth: int):
        lay = self.layout
        items = s.get("items")
        prefix = s.get("prefixItems")
        rest = True
        if isinstance(items, list):  # draft <= 2019 tuple form
            prefix = items
            rest = s.get("additionalItems", True)
            rest_ptr = f"{pointer}/additionalItems"
        else:
            if items is not None:
                rest = items
            rest_ptr = f"{pointer}/items"
        prefix = list(prefix or [])
        min_i = _count(s, "minItems", pointer, 0)
        max_i = _count(s, "maxItems", pointer, None)
        rest_none = rest is False or self.expand(rest, rest_ptr) == "none"
        if rest_none:
            max_i = len(prefix) if max_i is None else min(max_i, len(prefix))
        if max_i is not None and max_i < min_i:
            return
        if max_i is not None and max_i > MAX_COUNT:
            self.unsupported("maxItems", pointer, f"{max_i} above {MAX_COUNT}")
            max_i = None
        if min_i > MAX_COUNT:
            self.unsupported("minItems", pointer, f"{min_i} above {MAX_COUNT}")
            min_i = 0
        item_syms = [self.value(p, f"{pointer}/prefixItems/{i}", depth + 1)
                     for i, p in enumerate(prefix)]
        rest_sym = None if rest_none else self.value(rest, rest_ptr, depth + 1)
        comma = self.term(lay.comma(depth))
        counted = max(len(prefix), min_i) if max_i is None else max_i
        states = {}

        def item(c):
            return item_syms[c] if c < len(item_syms) else rest_sym

        # S(c): after c items; S(c) -> eps if c >= min; -> , item(c) S(c+1)
        def get(c):
            if c > counted:
                c = counted  # unbounded tail: loop
            if c in states:
                return states[c]
            sym = self.new_nt(f"A{c}")
            states[c] = sym
            if c >= min_i and (max_i is None or c <= max_i):
                self.rule(sym, [])
            if (max_i is None or c < max_i) and item(c) is not None:
                self.rule(sym, [comma, item(c), get(c + 1)])
            return sym

        if (max_i is None or max_i >= 1) and item(0) is not None:
            self.rule(nt, [self.term(lay.open("[", depth)), item(0), get(1),
                           self.term(lay.close("]", depth))])
        if min_i == 0:
            self.rule(nt, self.empty_container("[]", depth))


def json_schema_to_ir(schema: Any, *, whitespace="flexible",
                      additional_properties_default: bool = True,
                      lenient: bool = False) -> GrammarIR:
    """Lowers a JSON Schema (a dict/bool, or its JSON text) to a `GrammarIR`.

    See the module docstring for the semantics and the coverage table.

    Raises:
      JsonSchemaError: an invalid schema, a bad `$ref`, or a keyword that cannot be enforced
        (unless `lenient`), naming the keyword and its JSON pointer.
    """
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except ValueError as e:
            raise JsonSchemaError(f"not valid JSON: {e}") from None
    if not isinstance(schema, (dict, bool)):
        raise JsonSchemaError(f"a schema must be an object or a boolean, not "
                              f"{type(schema).__name__}")
    lowering = _Lowering(schema, whitespace, additional_properties_default, lenient)
    start = lowering.new_nt("start")
    try:
        root = lowering.value(schema, "", 0)
    except RecursionError:
        raise JsonSchemaError("schema nesting too deep") from None
    lowering.rule(start, [root])
    return lowering.finish(start)
