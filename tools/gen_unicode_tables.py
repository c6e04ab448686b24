#!/usr/bin/env python3
"""Generates native/lexer/unicode_tables.cc from this Python's `re` and `unicodedata`.

The lexer must agree with Python's `re` on str patterns (Lark terminals) and with ECMA-262 on
JSON Schema `pattern`s. Rather than re-deriving Python's rules, the tables are read off the
running interpreter:

  * `\\d`, `\\w`, `\\s` (Unicode str semantics): the code points that `re.match(r"\\d", ch)`
    etc. accept.
  * Case-insensitive equivalence (re.IGNORECASE on str patterns): two code points are equivalent
    when `_sre.unicode_tolower` maps them to the same code point, or when their lowered forms are
    linked by `re._casefix._EXTRA_CASES` (the special cases Python documents: 'i'/'ı', 's'/'ſ',
    'µ'/'μ', the Greek symbol forms, ...). Each equivalence class with more than one member is an
    orbit: the table maps every member to the next member (cyclically).
  * General categories (`\\p{Lu}` etc. in ECMA mode): `unicodedata.category` for every code point.

Usage:  python tools/gen_unicode_tables.py [--out native/lexer/unicode_tables.cc]
The Unicode version of the interpreter is written into the file (kUnicodeVersion).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
import unicodedata

import _sre
from re._casefix import _EXTRA_CASES

MAX_CODE_POINT = 0x10FFFF
ROOT = pathlib.Path(__file__).resolve().parent.parent


def ranges_of(predicate) -> list[tuple[int, int]]:
    """Sorted disjoint [lo, hi] ranges of the code points satisfying predicate."""
    out: list[tuple[int, int]] = []
    start = None
    for cp in range(MAX_CODE_POINT + 2):
        inside = cp <= MAX_CODE_POINT and predicate(cp)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def regex_class(expr: str):
    compiled = re.compile(expr)
    return lambda cp: compiled.match(chr(cp)) is not None


def case_orbits() -> list[list[int]]:
    """Equivalence classes (size > 1) of Python's case-insensitive matching of str patterns."""
    by_lower: dict[int, list[int]] = {}
    for cp in range(MAX_CODE_POINT + 1):
        by_lower.setdefault(_sre.unicode_tolower(cp), []).append(cp)
    # Union-find over lowered code points linked by _EXTRA_CASES.
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for lo, others in _EXTRA_CASES.items():
        for other in others:
            a, b = find(lo), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    merged: dict[int, set[int]] = {}
    for lo, members in by_lower.items():
        merged.setdefault(find(lo), set()).update(members)
    orbits = sorted(sorted(m) for m in merged.values() if len(m) > 1)
    # Sanity: every orbit really is case-insensitively equal in Python's re, both ways.
    for orbit in orbits:
        for a in orbit:
            pattern = re.compile("(?i)" + re.escape(chr(a)))
            for b in orbit:
                assert pattern.fullmatch(chr(b)), (hex(a), hex(b))
    return orbits


def emit_ranges(name: str, ranges: list[tuple[int, int]]) -> str:
    lines = [f"const CodePointRange {name}[] = {{"]
    row: list[str] = []
    for lo, hi in ranges:
        row.append(f"{{0x{lo:X}, 0x{hi:X}}},")
        if len(row) == 6:
            lines.append("    " + " ".join(row))
            row = []
    if row:
        lines.append("    " + " ".join(row))
    lines.append("};")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "native/lexer/unicode_tables.cc"))
    args = parser.parse_args()

    sections: list[str] = []
    tables: list[tuple[str, str]] = []  # (C++ accessor name, array name)

    for accessor, expr in (("PythonDigit", r"\d"), ("PythonWord", r"\w"), ("PythonSpace", r"\s")):
        array = f"k{accessor}Ranges"
        sections.append(emit_ranges(array, ranges_of(regex_class(expr))))
        tables.append((accessor, array))

    categories: dict[str, list[int]] = {}
    category_of = [unicodedata.category(chr(cp)) for cp in range(MAX_CODE_POINT + 1)]
    names = sorted(set(category_of))
    category_entries = []
    for name in names:
        array = f"kCategory{name}Ranges"
        sections.append(emit_ranges(array, ranges_of(lambda cp, n=name: category_of[cp] == n)))
        category_entries.append(f'    {{"{name}", {{{array}, sizeof({array}) / '
                                f"sizeof({array}[0])}}}},")
    del categories

    orbit_pairs: list[tuple[int, int]] = []
    for orbit in case_orbits():
        for i, cp in enumerate(orbit):
            orbit_pairs.append((cp, orbit[(i + 1) % len(orbit)]))
    orbit_pairs.sort()
    orbit_lines = ["const CaseOrbitEntry kPythonCaseOrbitEntries[] = {"]
    row: list[str] = []
    for cp, nxt in orbit_pairs:
        row.append(f"{{0x{cp:X}, 0x{nxt:X}}},")
        if len(row) == 6:
            orbit_lines.append("    " + " ".join(row))
            row = []
    if row:
        orbit_lines.append("    " + " ".join(row))
    orbit_lines.append("};")

    accessors = []
    for accessor, array in tables:
        accessors.append(f"RangeTable {accessor}Table() {{\n"
                         f"  return {{{array}, sizeof({array}) / sizeof({array}[0])}};\n}}")

    text = f"""// GENERATED by tools/gen_unicode_tables.py from Python {sys.version.split()[0]}
// (unicodedata {unicodedata.unidata_version}). Do not edit; re-run the script instead.
// clang-format off
#include "native/lexer/unicode_tables.h"

namespace jaxguide {{
namespace {{

{chr(10).join(sections)}

{chr(10).join(orbit_lines)}

const GeneralCategoryTable kGeneralCategoryTables[] = {{
{chr(10).join(category_entries)}
}};

}}  // namespace

const char kUnicodeVersion[] = "{unicodedata.unidata_version}";

{chr(10).join(accessors)}

CaseOrbitTable PythonCaseOrbits() {{
  return {{kPythonCaseOrbitEntries,
          sizeof(kPythonCaseOrbitEntries) / sizeof(kPythonCaseOrbitEntries[0])}};
}}

const GeneralCategoryTable* GeneralCategoryTables(size_t* count) {{
  *count = sizeof(kGeneralCategoryTables) / sizeof(kGeneralCategoryTables[0]);
  return kGeneralCategoryTables;
}}

}}  // namespace jaxguide
"""
    pathlib.Path(args.out).write_text(text)
    print(f"wrote {args.out}: Unicode {unicodedata.unidata_version}, {len(orbit_pairs)} case "
          f"orbit entries, {len(names)} categories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
