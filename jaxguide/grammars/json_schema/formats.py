"""The `format` values jaxguide enforces, as ECMA patterns (anchored, ASCII classes only).

Design note. Dates have month lengths and leap years (years 0001-9999, as `datetime.date`
accepts them), times have no leap second (second 60 is valid only at 23:59 UTC, which depends
on the offset; `jsonschema`'s checker refuses it everywhere), email is the usual
dot-atom@hostname, uri is RFC 3986's `URI`. Other formats are annotations (not enforced).
"""

from __future__ import annotations

# A calendar date (years 0001-9999, month lengths, leap years), as datetime.date accepts it.
_YEAR = r"(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-"
         f"(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)")

# RFC 3339 full-time without leap seconds (second 60 is valid only at 23:59 UTC, which depends
# on the offset; `jsonschema`'s checker refuses it everywhere).
_TIME = (r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
         r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")

FORMATS = {
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
FORMATS["ipv6"] = "^(?:" + "|".join([
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
_IP_LITERAL = (r"\[(?:" + FORMATS["ipv6"][1:-1] +
               f"|v[0-9A-Fa-f]+\\.[{_UNRESERVED_SUB_DELIMS}:]+)\\]")
_AUTHORITY = (f"(?:(?:[{_UNRESERVED_SUB_DELIMS}:]|{_PCT})*@)?"
              f"(?:{_IP_LITERAL}|(?:[{_UNRESERVED_SUB_DELIMS}]|{_PCT})*)(?::[0-9]*)?")
FORMATS["uri"] = (
    f"^[A-Za-z][A-Za-z0-9+\\-.]*:(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"
    f"|{_PCHAR}+(?:/{_PCHAR}*)*)?(?:\\?{_QUERY})?(?:#{_QUERY})?$")
# The formats enforced exactly (the others are annotations).
ENFORCED_FORMATS = frozenset(FORMATS)
