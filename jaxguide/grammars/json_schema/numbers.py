"""Regexes of JSON number texts: integer ranges, decimal ranges, multipleOf, literal values.

Design note. Integer ranges are exact regexes by the digit-range construction (canonical
`-?(0|[1-9][0-9]*)`). Decimal ranges are exact over texts without exponent (integer part, then
a fraction compared digit by digit; `max_frac` caps the significant fraction digits for
`multipleOf: 10^-k`, trailing zeros taken after it). Every regex uses explicit ASCII classes
(`[0-9]`, never Python's Unicode-wide `\\d`).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal

from jaxguide.grammars.json_schema.limits import MAX_ENUMERATED_MULTIPLES
from jaxguide.grammars.json_schema.units import literal_set_units


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


def int_range(lo: int | None, hi: int | None) -> str | None:
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


def number_range(lo: Decimal | None, lo_strict: bool, hi: Decimal | None, hi_strict: bool,
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
# Numbers that are not integers, without exponent (1.5e1 is 15: an exponent would need the
# digits it shifts compared): a nonzero fraction digit.
NON_INTEGER_RX = r"-?(?:0|[1-9][0-9]*)\.[0-9]*[1-9][0-9]*"


def number_literal(value: int | float, floats: bool) -> str:
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


def multiples_regex(lo: int | None, hi: int | None, k: int) -> str | None:
    """Regex for the canonical integers in [lo, hi] that are multiples of k > 1 (None if
    none): enumerated when at most `MAX_ENUMERATED_MULTIPLES`, else by last digits, which
    needs k = 2^a 5^b and a range from 0 or 1 up (unbounded above); ValueError otherwise."""
    if lo is not None and hi is not None:
        first = -(-lo // k) * k
        if first > hi:
            return None
        count = (hi - first) // k + 1
        if count <= MAX_ENUMERATED_MULTIPLES:
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
        raise ValueError(f"multiples of {k} in [{lo}, {hi}] have no last-digit regex")
    n = max(a, b)
    ends = sorted({str(v).zfill(n) for v in range(0, 10 ** n, k)})
    tail = "(?:" + "|".join(ends) + ")"
    small = [str(v) for v in range(k, 10 ** n, k)]
    body = f"[1-9][0-9]*{tail}" + ("|" + "|".join(small) if small else "")
    nonneg_pos = f"(?:{body})"
    if lo is None:
        return f"(?:0|-?{nonneg_pos})"
    return f"(?:0|{nonneg_pos})" if lo == 0 else nonneg_pos


def many_numbers_regex(numbers, floats: bool) -> str:
    """`number_literal` of each of many numbers in one regex: the integers (nonzero, below
    2^53: their text and, with `floats`, `.0...`) as a digit trie, the others listed."""
    integers, others = set(), set()
    for v in numbers:
        if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
            v = int(v)
        if isinstance(v, int) and v != 0 and abs(v) < 2 ** 53:
            integers.add(json.dumps(v))
        else:
            others.add(number_literal(v, floats))
    parts = sorted(others)
    if integers:  # digits and "-" are their own JSON string units: the string trie serves
        parts.insert(0, "(?:" + literal_set_units(sorted(integers)) + ")" +
                     (r"(?:\.0+)?" if floats else ""))
    return "|".join(parts)


def number_regex(form) -> str | None:
    """Regex of the number texts of a `NumberForm` (its digit automaton aside); None if there
    is none."""
    if form.integer:
        lo, hi = form.minimum, form.maximum
        if lo is not None and hi is not None and lo > hi:
            return None
        if form.multiple_of and form.multiple_of > 1:
            rx = multiples_regex(lo, hi, form.multiple_of)
        elif lo is None and hi is None:
            rx = INTEGER_RX
        else:
            rx = int_range(lo, hi)
        return f"(?:{rx})(?:\\.0+)?" if form.zero_fraction and rx is not None else rx
    if form.non_integer:
        return NON_INTEGER_RX
    if form.minimum is None and form.maximum is None and form.fraction_digits is None:
        return NUMBER_RX
    return number_range(form.minimum, form.exclusive_minimum, form.maximum,
                        form.exclusive_maximum, form.fraction_digits)


def decimal_lcm(a, b) -> int | float | None:
    """The least common multiple of two positive decimal steps (the multiples of both are
    its multiples): lcm(a 10^q, b 10^q) / 10^q, q the most fraction digits of the two; as a
    float only when the float's shortest repr is that decimal (the normalizer reads steps by
    repr), else None (the merge is then unsupported)."""
    steps = []
    for x in (a, b):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or \
                x <= 0:
            return None
        steps.append(Decimal(repr(x)) if isinstance(x, float) else Decimal(x))
    q = max(max(0, -d.normalize().as_tuple().exponent) for d in steps)
    lcm = Decimal(math.lcm(*(int(d.scaleb(q)) for d in steps))).scaleb(-q).normalize()
    if lcm == lcm.to_integral_value():
        return int(lcm)
    as_float = float(lcm)
    return as_float if Decimal(repr(as_float)) == lcm else None
