// Unicode tables for the regex parser, generated from Python's `re` / `unicodedata` by
// tools/gen_unicode_tables.py (unicode_tables.cc is the generated file; its header names the
// Python and Unicode versions). Differential tests against Python `re` agree with the Python that
// generated the tables.
//
// Contract: every table is a sorted list of disjoint, non-adjacent inclusive code point ranges.
#ifndef JAXGUIDE_NATIVE_LEXER_UNICODE_TABLES_H_
#define JAXGUIDE_NATIVE_LEXER_UNICODE_TABLES_H_

#include <cstddef>
#include <cstdint>

namespace jaxguide {

struct CodePointRange {
  uint32_t lo;
  uint32_t hi;  // inclusive
};

struct RangeTable {
  const CodePointRange* ranges;
  size_t size;
};

// One step of a case orbit: `next` is the next member (cyclically, in increasing order) of the
// class of code points that Python's re.IGNORECASE treats as equal to `code_point`.
struct CaseOrbitEntry {
  uint32_t code_point;
  uint32_t next;
};

struct CaseOrbitTable {
  const CaseOrbitEntry* entries;  // sorted by code_point
  size_t size;
};

struct GeneralCategoryTable {
  const char* name;  // two-letter Unicode general category ("Lu", "Nd", "Cn", ...)
  RangeTable table;
};

// Unicode version of the tables (unicodedata.unidata_version of the generating Python).
extern const char kUnicodeVersion[];

// Python `re` str-pattern classes \d, \w, \s (Unicode semantics).
RangeTable PythonDigitTable();
RangeTable PythonWordTable();
RangeTable PythonSpaceTable();

// Python re.IGNORECASE equivalence (str patterns, without re.ASCII), as orbits.
CaseOrbitTable PythonCaseOrbits();

// All two-letter general categories (including Cn for unassigned code points and Cs).
const GeneralCategoryTable* GeneralCategoryTables(size_t* count);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_UNICODE_TABLES_H_
