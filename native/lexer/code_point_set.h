// CodePointSet: a set of Unicode code points (0..0x10FFFF) as sorted, disjoint, non-adjacent
// inclusive ranges. The regex parser builds every character class, escape and literal as one of
// these; the UTF-8 compiler (utf8_class.h) turns it into a byte automaton.
//
// Contract: after every public mutation the ranges are canonical (sorted, disjoint, merged), so
// two sets are equal iff their range vectors are equal (used to share compiled classes).
// Surrogates (U+D800..U+DFFF) may be members; they are dropped when compiling to UTF-8.
#ifndef JAXGUIDE_NATIVE_LEXER_CODE_POINT_SET_H_
#define JAXGUIDE_NATIVE_LEXER_CODE_POINT_SET_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "native/lexer/unicode_tables.h"

namespace jaxguide {

class CodePointSet {
 public:
  static constexpr uint32_t kMaxCodePoint = 0x10FFFF;

  CodePointSet() = default;
  static CodePointSet Single(uint32_t code_point);
  static CodePointSet Range(uint32_t lo, uint32_t hi);
  static CodePointSet FromTable(RangeTable table);
  static CodePointSet All();

  void Add(uint32_t code_point) { AddRange(code_point, code_point); }
  // Adds [lo, hi] (inclusive); lo > hi adds nothing. hi is clamped to kMaxCodePoint.
  void AddRange(uint32_t lo, uint32_t hi);
  void AddSet(const CodePointSet& other);
  // this = complement of this within [0, kMaxCodePoint].
  void Complement();
  // this = this minus other.
  void Subtract(const CodePointSet& other);
  // Adds every code point that Python's re.IGNORECASE (str patterns) treats as equal to a member.
  void AddPythonCaseVariants();
  // Adds the ASCII case variants of ASCII letters (re.IGNORECASE together with re.ASCII).
  void AddAsciiCaseVariants();

  bool Contains(uint32_t code_point) const;
  bool Empty() const { return ranges_.empty(); }
  // Number of code points in the set.
  uint64_t Size() const;
  const std::vector<CodePointRange>& ranges() const { return ranges_; }

  bool operator==(const CodePointSet& other) const;
  bool operator!=(const CodePointSet& other) const { return !(*this == other); }
  size_t Hash() const;
  // The set's code points below U+0080 into *ascii and the others into *above (both cleared
  // first): how the NFA compiler splits a transition set so that the large non-ASCII part is
  // one class shared across states.
  void SplitAtAscii(CodePointSet* ascii, CodePointSet* above) const;

 private:
  // Sorts and merges ranges_ (overlapping or adjacent ranges become one).
  void Canonicalize();

  std::vector<CodePointRange> ranges_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_CODE_POINT_SET_H_
