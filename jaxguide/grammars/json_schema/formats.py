"""`format`: asserted by default (`formats="assert"`), each format an exact ECMA pattern or refused.

Design note. "Exact" is measured against `jsonschema`'s FormatChecker of draft 2020-12 with the
`format-nongpl` extra (the oracle of `jaxguide.testing.oracles`): a pattern here admits a string
only if that checker accepts it, and every string it accepts, except where the checker is more
lenient than the RFC it implements; there the pattern is the RFC (stricter, never looser):

  date, date-time, time  RFC 3339 as `rfc3339_validator` reads it (years 0001-9999, month
                 lengths, leap years; `T`/`Z` any case; no leap second: the checker refuses
                 second 60 everywhere, so does the pattern). Exact.
  duration       RFC 3339 appendix A (integers only; `isoduration` also takes fractions).
  email          RFC 5321 Mailbox: dot-atom or quoted local part, `@`, a domain of LDH labels
                 or an IPv4 address literal (`[1.2.3.4]`; not `[IPv6:...]`, whose regex would
                 double the time to the first mask). The checker only asks for an `@`. With a
                 maxLength, the local part is bounded (64 atext, or 62 quoted units) as RFC
                 5321 bounds it and the domain kept within the hostname tiers (`BOUNDED`), so
                 no text exceeds 381 characters and a maxLength from 381 up is implied.
                 idn-email: the same with any non-ASCII code point in atoms, quoted strings
                 and labels (RFC 6531).
  hostname       LDH labels of 1-63 characters, no hyphen at either end, an optional final
                 dot, as `fqdn` checks them (but ASCII only: its `\\d` is Unicode-wide and its
                 case folding takes the Kelvin sign). Its 253-character limit needs a count no
                 small regex keeps across labels, so n labels are admitted when each has at most
                 m characters for one of the tiers (n, m) in `_HOST_TIERS` (n * (m + 1) - 1 <=
                 253): exact up to 3 labels, and longer names whose labels are short; a valid
                 name outside every tier (4+ labels, one of them long) is rejected.
  ipv4, ipv6     Python's `ipaddress` (no leading zeros, no zone id). Exact.
  uri, uri-reference  RFC 3986 `URI` / `URI-reference` as `rfc3986_validator` writes them,
                 except dotted quads inside an IPv6 literal, which take no leading zeros.
  iri, iri-reference  `rfc3987_syntax`'s grammar, which is RFC 3987 with `ucschar` and
                 `iprivate` limited to the BMP and an IPv6 literal of exactly 7 groups around
                 `::` (`[::1]` is refused): exact, so narrower than the RFC.
  uri-template   RFC 6570 level 4 syntax (operators `+ # . / ; ? &`, prefixes `:1`-`:999`,
                 explode `*`), limited to what `uri_template` accepts: varnames start with an
                 ALPHA / DIGIT / `_` and prefixes have at most 3 digits (it refuses `{%41}`,
                 `{x:1000}`); its extensions (defaults `{x=1}`, `{,x}`, trailing joiners,
                 literals with spaces or quotes) are not admitted.
  json-pointer   RFC 6901. Exact.
  relative-json-pointer  the draft `jsonschema` implements, with its checker's reading of the
                 leading integer: no digit may follow a 0 (it refuses `100`, `10/a` is fine),
                 and ASCII digits only (its `isdigit` takes any Unicode digit).
  uuid           RFC 4122's hex-and-hyphens form (Python's `UUID` also takes braces, `urn:`
                 prefixes and extra hyphens).
  host-name, ip-address, color  draft 3's names, in every draft: hostname, ipv4, and CSS 3
                 colors as `webcolors` reads them (`#rgb`, `#rrggbb`, the 147 names in any
                 ASCII case).

Checkers built on Python's `re.match(...$)` (rfc3339_validator, rfc3986_validator, fqdn,
webcolors) also accept a final newline, which no pattern here admits. `format` with `pattern`:
one pattern, their product automaton (`automata.intersection_pattern`).

Refused (`REFUSED`, a `JsonSchemaError` naming the format; lenient: ignored): `regex` (the
strings `re.compile` accepts are not a regular language) and `idn-hostname` (IDNA 2008's
label length is measured after Punycode, with per-code-point tables and bidi rules: no exact
regex). Every other name (`int32`, draft 3's `utc-millisec`, `phone`, `style`, custom names) has
no checker in any draft of `jsonschema` and stays an annotation, as the specification says for
unknown formats. With `formats="annotation"` no format is enforced nor refused.
"""

from __future__ import annotations

FORMAT_MODES = ("assert", "annotation")

# A calendar date (years 0001-9999, month lengths, leap years), as datetime.date accepts it.
_YEAR = r"(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-"
         f"(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)")

# RFC 3339 full-time without leap seconds (second 60 is valid only at 23:59 UTC, which depends
# on the offset; `jsonschema`'s checker refuses it everywhere).
_TIME = (r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
         r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")

_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_V4 = f"{_DEC_OCTET}(?:\\.{_DEC_OCTET}){{3}}"
_H16 = r"[0-9a-fA-F]{1,4}"
_LS32 = f"(?:{_H16}:{_H16}|{_V4})"
# RFC 4291 text forms, as Python's ipaddress.IPv6Address parses them.
_V6 = "(?:" + "|".join([
    f"(?:{_H16}:){{6}}{_LS32}",
    f"::(?:{_H16}:){{5}}{_LS32}",
    f"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    f"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    f"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    f"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    f"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    f"(?:(?:{_H16}:){{0,6}}{_H16})?::",
]) + ")"
# rfc3987_syntax's IPv6 literal: 8 groups, or exactly 7 around `::`.
_V6_IRI = "(?:" + "|".join(
    [f"(?:{_H16}:){{6}}{_LS32}", f"::(?:{_H16}:){{5}}{_LS32}"]
    + [f"(?:{_H16}:){{{k}}}{_H16}::(?:{_H16}:){{{4 - k}}}{_LS32}" for k in range(4)]
    + [f"(?:{_H16}:){{4}}{_H16}::{_LS32}", f"(?:{_H16}:){{5}}{_H16}::{_H16}",
       f"(?:{_H16}:){{6}}{_H16}::"]) + ")"


def _label(m: int) -> str:
    """An LDH label of 1..m characters, no hyphen at either end."""
    return "[A-Za-z0-9]" if m == 1 else f"[A-Za-z0-9](?:[A-Za-z0-9-]{{0,{m - 2}}}[A-Za-z0-9])?"


# (at most n labels, each of at most m characters): n * (m + 1) - 1 <= 253.
_HOST_TIERS = ((3, 63), (4, 62), (6, 41), (8, 30), (12, 20), (16, 14), (25, 9), (36, 6), (50, 4),
               (63, 3), (84, 2), (127, 1))
_HOSTNAME = ("(?:" + "|".join(f"{_label(m)}(?:\\.{_label(m)}){{0,{n - 1}}}"
                              for n, m in _HOST_TIERS) + ")\\.?")

# RFC 5321 Mailbox (RFC 6531 with `extra`: the non-ASCII code points).
_ATEXT = r"A-Za-z0-9!#$%&'*+/=?^_`{|}~\-"
_NON_ASCII = "\u0080-\ud7ff\ue000-\U0010ffff"


def _mailbox(extra: str, bounded: bool = False) -> str:
    """RFC 5321 Mailbox (the checker asks for an `@` only). `bounded`: the local part at most
    64 atext (127 characters with dots) or 62 quoted units, the domain within `_HOST_TIERS`, so
    no text exceeds 381 characters and a maxLength from 381 up is implied."""
    if bounded:
        dot_atom = f"[{_ATEXT}{extra}](?:\\.?[{_ATEXT}{extra}]){{0,63}}"
        quoted = f'"(?:[ !#-\\[\\]-~{extra}]|\\\\[ -~]){{0,62}}"'
        labels = [f"[A-Za-z0-9{extra}](?:[A-Za-z0-9{extra}-]{{0,{m - 2}}}[A-Za-z0-9{extra}])?"
                  if m > 1 else f"[A-Za-z0-9{extra}]" for _, m in _HOST_TIERS]
        domain = "|".join(f"{label}(?:\\.{label}){{0,{n - 1}}}"
                          for (n, _), label in zip(_HOST_TIERS, labels))
    else:
        dot_atom = f"[{_ATEXT}{extra}]+(?:\\.[{_ATEXT}{extra}]+)*"
        quoted = f'"(?:[ !#-\\[\\]-~{extra}]|\\\\[ -~])*"'
        label = f"[A-Za-z0-9{extra}](?:[A-Za-z0-9{extra}-]{{0,61}}[A-Za-z0-9{extra}])?"
        domain = f"{label}(?:\\.{label})*"
    literal = f"\\[{_V4}\\]"  # an IPv6 literal would double the time to the first mask
    return f"(?:{dot_atom}|{quoted})@(?:{domain}|{literal})"


# RFC 3986 (appendix A), as rfc3986_validator writes it. An IPv4 host is a reg-name too.
_UNRESERVED_SUB_DELIMS = r"A-Za-z0-9\-._~!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = f"(?:[{_UNRESERVED_SUB_DELIMS}:@]|{_PCT})"
_QUERY = f"(?:[{_UNRESERVED_SUB_DELIMS}:@/?]|{_PCT})*"
_IP_LITERAL = f"\\[(?:{_V6}|v[0-9A-Fa-f]+\\.[{_UNRESERVED_SUB_DELIMS}:]+)\\]"
_AUTHORITY = (f"(?:(?:[{_UNRESERVED_SUB_DELIMS}:]|{_PCT})*@)?"
              f"(?:{_IP_LITERAL}|(?:[{_UNRESERVED_SUB_DELIMS}]|{_PCT})*)(?::[0-9]*)?")
_PATHS = f"/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"  # path-absolute
_TAIL = f"(?:\\?{_QUERY})?(?:#{_QUERY})?"
_URI = (f"[A-Za-z][A-Za-z0-9+\\-.]*:(?://{_AUTHORITY}(?:/{_PCHAR}*)*|{_PATHS}"
        f"|{_PCHAR}+(?:/{_PCHAR}*)*)?{_TAIL}")
# URI-reference = URI / relative-ref, the authority written once (half the lexer's work):
# [scheme ":"] (authority path / absolute path), scheme ":" [rootless path], noscheme path.
_SCHEME = r"[A-Za-z][A-Za-z0-9+\-.]*"
_URI_REFERENCE = (f"(?:(?:{_SCHEME}:)?(?://{_AUTHORITY}(?:/{_PCHAR}*)*|{_PATHS})"
                  f"|{_SCHEME}:(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"
                  f"|(?:[{_UNRESERVED_SUB_DELIMS}@]|{_PCT})+(?:/{_PCHAR}*)*)?{_TAIL}")

# RFC 3987 as rfc3987_syntax's grammar reads it (ucschar and iprivate in the BMP only).
_UCS_BMP = "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
_IUNRES_SUB = _UNRESERVED_SUB_DELIMS + _UCS_BMP
_IPCHAR = f"(?:[{_IUNRES_SUB}:@]|{_PCT})"
_IQUERY = f"(?:[{_IUNRES_SUB}:@/?\ue000-\uf8ff]|{_PCT})*"
_IFRAGMENT = f"(?:[{_IUNRES_SUB}:@/?]|{_PCT})*"
_IAUTHORITY = (f"(?:(?:[{_IUNRES_SUB}:]|{_PCT})*@)?"
               f"(?:\\[(?:{_V6_IRI}|v[0-9A-Fa-f]+\\.[{_UNRESERVED_SUB_DELIMS}:]+)\\]"
               f"|(?:[{_IUNRES_SUB}]|{_PCT})*)(?::[0-9]*)?")
_ITAIL = f"(?:\\?{_IQUERY})?(?:#{_IFRAGMENT})?"
_IABSOLUTE = f"/(?:{_IPCHAR}+(?:/{_IPCHAR}*)*)?"
_IRI = (f"[A-Za-z][A-Za-z0-9+\\-.]*:(?://{_IAUTHORITY}(?:/{_IPCHAR}*)*|{_IABSOLUTE}"
        f"|{_IPCHAR}+(?:/{_IPCHAR}*)*)?{_ITAIL}")
_IRI_REFERENCE = (f"(?:(?:{_SCHEME}:)?(?://{_IAUTHORITY}(?:/{_IPCHAR}*)*|{_IABSOLUTE})"
                  f"|{_SCHEME}:(?:{_IPCHAR}+(?:/{_IPCHAR}*)*)?"
                  f"|(?:[{_IUNRES_SUB}@]|{_PCT})+(?:/{_IPCHAR}*)*)?{_ITAIL}")

# RFC 6570 level 4, within what uri_template accepts (see the design note).
_UCS_ALL = (_UCS_BMP + "".join(f"{chr(p << 16)}-{chr((p << 16) + 0xFFFD)}"
                               for p in range(1, 14)) + "\U000e1000-\U000efffd")
_PRIVATE_ALL = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_LITERAL = f"(?:[!#$&(-;=?-\\[\\]_a-z~{_UCS_ALL}{_PRIVATE_ALL}]|{_PCT})"
_VARNAME = f"[A-Za-z0-9_](?:\\.?(?:[A-Za-z0-9_]|{_PCT}))*"
_VARSPEC = f"{_VARNAME}(?::[1-9][0-9]{{0,2}}|\\*)?"
_URI_TEMPLATE = f"(?:{_LITERAL}|\\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\\}})*"

_JSON_POINTER = "(?:/(?:[^~/]|~[01])*)*"

_CSS3_COLORS = """
aliceblue antiquewhite aqua aquamarine azure beige bisque black blanchedalmond blue
blueviolet brown burlywood cadetblue chartreuse chocolate coral cornflowerblue cornsilk
crimson cyan darkblue darkcyan darkgoldenrod darkgray darkgreen darkgrey darkkhaki
darkmagenta darkolivegreen darkorange darkorchid darkred darksalmon darkseagreen
darkslateblue darkslategray darkslategrey darkturquoise darkviolet deeppink deepskyblue
dimgray dimgrey dodgerblue firebrick floralwhite forestgreen fuchsia gainsboro ghostwhite
gold goldenrod gray green greenyellow grey honeydew hotpink indianred indigo ivory khaki
lavender lavenderblush lawngreen lemonchiffon lightblue lightcoral lightcyan
lightgoldenrodyellow lightgray lightgreen lightgrey lightpink lightsalmon lightseagreen
lightskyblue lightslategray lightslategrey lightsteelblue lightyellow lime limegreen linen
magenta maroon mediumaquamarine mediumblue mediumorchid mediumpurple mediumseagreen
mediumslateblue mediumspringgreen mediumturquoise mediumvioletred midnightblue mintcream
mistyrose moccasin navajowhite navy oldlace olive olivedrab orange orangered orchid
palegoldenrod palegreen paleturquoise palevioletred papayawhip peachpuff peru pink plum
powderblue purple red rosybrown royalblue saddlebrown salmon sandybrown seagreen seashell
sienna silver skyblue slateblue slategray slategrey snow springgreen steelblue tan teal
thistle tomato turquoise violet wheat white whitesmoke yellow yellowgreen
""".split()
_COLOR = ("(?:#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})|" + "|".join(
    "".join(f"[{c}{c.upper()}]" for c in name) for name in _CSS3_COLORS) + ")")

_DURATION_TIME = r"T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"

# The formats enforced, as anchored ECMA patterns (JSON Schema searches; these are anchored).
FORMATS = {name: f"^{body}$" for name, body in {
    "date": _DATE,
    "time": _TIME,
    "date-time": f"{_DATE}[Tt]{_TIME}",
    "duration": (f"P(?:[0-9]+W|(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)"
                 f"(?:{_DURATION_TIME})?|{_DURATION_TIME})"),
    "email": _mailbox(""),
    "idn-email": _mailbox(_NON_ASCII),
    "hostname": _HOSTNAME,
    "host-name": _HOSTNAME,
    "ipv4": _V4,
    "ip-address": _V4,
    "ipv6": _V6,
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "uri": _URI,
    "uri-reference": _URI_REFERENCE,
    "iri": _IRI,
    "iri-reference": _IRI_REFERENCE,
    "uri-template": _URI_TEMPLATE,
    "json-pointer": _JSON_POINTER,
    "relative-json-pointer": f"(?:0|[1-9]+0?)(?:#|{_JSON_POINTER})",
    "color": _COLOR,
}.items()}
ENFORCED_FORMATS = frozenset(FORMATS)
# Length-bounded variants, used when a maxLength must be implied (email with maxLength 1024):
# the plain ones cost less to lex.
BOUNDED = {"email": f"^{_mailbox('', True)}$", "idn-email": f"^{_mailbox(_NON_ASCII, True)}$"}

# Formats that no exact regex expresses: asserting them is an error (see the design note).
# The library's own patterns (formats), which depend on no schema: what is built from them alone
# (their NFAs, `automata.pattern_nfa`; their unit regexes, `pattern.pattern_units_memo`) is
# built once per process and kept by `clear_caches`.
LIBRARY_PATTERNS = frozenset(FORMATS.values()) | frozenset(BOUNDED.values())

REFUSED = {
    "regex": "the regexes re.compile accepts are not a regular language",
    "idn-hostname": "IDNA 2008 (label length after Punycode, code point tables, bidi rules) "
                    "has no exact regex",
}


def asserted(name, mode: str) -> bool:
    """Whether `format: name` constrains strings under `mode` (enforced or refused)."""
    return mode == "assert" and isinstance(name, str) and (name in FORMATS or name in REFUSED)
