// CodePointSet operations. Every mutation appends ranges and re-canonicalizes: O(r log r) for r
// ranges, which is fine at parse time (classes have at most a few thousand ranges).
#include "native/lexer/code_point_set.h"

#include <algorithm>

namespace jaxguide {

CodePointSet CodePointSet::Single(uint32_t code_point) { return Range(code_point, code_point); }

CodePointSet CodePointSet::Range(uint32_t lo, uint32_t hi) {
  CodePointSet set;
  set.AddRange(lo, hi);
  return set;
}

CodePointSet CodePointSet::FromTable(RangeTable table) {
  CodePointSet set;
  set.ranges_.assign(table.ranges, table.ranges + table.size);
  set.Canonicalize();
  return set;
}

CodePointSet CodePointSet::All() { return Range(0, kMaxCodePoint); }

void CodePointSet::AddRange(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return;
  // Fast paths: appending in order (the common case while parsing a class), or extending the
  // last range (adjacent elementary intervals, as automaton constructions add them).
  if (ranges_.empty() || lo > ranges_.back().hi + 1) {
    ranges_.push_back({lo, hi});
    return;
  }
  if (lo >= ranges_.back().lo) {
    ranges_.back().hi = std::max(ranges_.back().hi, hi);
    return;
  }
  ranges_.push_back({lo, hi});
  Canonicalize();
}

void CodePointSet::AddSet(const CodePointSet& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  Canonicalize();
}

void CodePointSet::Complement() {
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (const CodePointRange& r : ranges_) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  ranges_ = std::move(out);
}

void CodePointSet::Subtract(const CodePointSet& other) {
  if (other.ranges_.empty() || ranges_.empty()) return;
  // One merge of the two sorted range lists: each range of this loses the parts that ranges of
  // `other` cover (the pieces stay sorted, disjoint and non-adjacent: canonical). One
  // allocation (hot: an except-words automaton subtracts per trie node).
  std::vector<CodePointRange> out;
  out.reserve(ranges_.size() + other.ranges_.size());
  const std::vector<CodePointRange>& cut = other.ranges_;
  size_t j = 0;  // the first range of `other` that may reach the current range
  for (const CodePointRange& a : ranges_) {
    while (j < cut.size() && cut[j].hi < a.lo) ++j;
    uint64_t lo = a.lo;  // (64 bits: past kMaxCodePoint without wrapping)
    for (size_t k = j; k < cut.size() && cut[k].lo <= a.hi && lo <= a.hi; ++k) {
      if (cut[k].lo > lo) out.push_back({static_cast<uint32_t>(lo), cut[k].lo - 1});
      lo = std::max<uint64_t>(lo, uint64_t{cut[k].hi} + 1);
    }
    if (lo <= a.hi) out.push_back({static_cast<uint32_t>(lo), a.hi});
  }
  ranges_ = std::move(out);
}

void CodePointSet::AddPythonCaseVariants() {
  const CaseOrbitTable orbits = PythonCaseOrbits();
  std::vector<CodePointRange> added;
  for (size_t i = 0; i < orbits.size; ++i) {
    const CaseOrbitEntry& entry = orbits.entries[i];
    if (!Contains(entry.code_point)) continue;
    // Walk the whole orbit: a member's class is every code point on its cycle.
    uint32_t cp = entry.next;
    while (cp != entry.code_point) {
      added.push_back({cp, cp});
      const CaseOrbitEntry* found = std::lower_bound(
          orbits.entries, orbits.entries + orbits.size, cp,
          [](const CaseOrbitEntry& e, uint32_t value) { return e.code_point < value; });
      cp = found->next;
    }
  }
  ranges_.insert(ranges_.end(), added.begin(), added.end());
  Canonicalize();
}

void CodePointSet::AddAsciiCaseVariants() {
  std::vector<CodePointRange> added;
  for (const CodePointRange& r : ranges_) {
    const uint32_t upper_lo = std::max<uint32_t>(r.lo, 'A');
    const uint32_t upper_hi = std::min<uint32_t>(r.hi, 'Z');
    if (upper_lo <= upper_hi) added.push_back({upper_lo + 32, upper_hi + 32});
    const uint32_t lower_lo = std::max<uint32_t>(r.lo, 'a');
    const uint32_t lower_hi = std::min<uint32_t>(r.hi, 'z');
    if (lower_lo <= lower_hi) added.push_back({lower_lo - 32, lower_hi - 32});
  }
  ranges_.insert(ranges_.end(), added.begin(), added.end());
  Canonicalize();
}

bool CodePointSet::Contains(uint32_t code_point) const {
  auto it = std::upper_bound(
      ranges_.begin(), ranges_.end(), code_point,
      [](uint32_t value, const CodePointRange& r) { return value < r.lo; });
  return it != ranges_.begin() && std::prev(it)->hi >= code_point;
}

uint64_t CodePointSet::Size() const {
  uint64_t n = 0;
  for (const CodePointRange& r : ranges_) n += uint64_t{r.hi} - r.lo + 1;
  return n;
}

bool CodePointSet::operator==(const CodePointSet& other) const {
  if (ranges_.size() != other.ranges_.size()) return false;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    if (ranges_[i].lo != other.ranges_[i].lo || ranges_[i].hi != other.ranges_[i].hi) return false;
  }
  return true;
}

void CodePointSet::SplitAtAscii(CodePointSet* ascii, CodePointSet* above) const {
  ascii->ranges_.clear();
  above->ranges_.clear();
  for (const CodePointRange& r : ranges_) {  // sorted and disjoint: each side appends
    if (r.lo < 0x80) ascii->ranges_.push_back({r.lo, std::min<uint32_t>(r.hi, 0x7F)});
    if (r.hi >= 0x80) above->ranges_.push_back({std::max<uint32_t>(r.lo, 0x80), r.hi});
  }
}

size_t CodePointSet::Hash() const {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const CodePointRange& r : ranges_) {
    h = (h ^ r.lo) * 0x100000001B3ull;
    h = (h ^ r.hi) * 0x100000001B3ull;
  }
  return static_cast<size_t>(h ^ (h >> 31));
}

void CodePointSet::Canonicalize() {
  std::sort(ranges_.begin(), ranges_.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  size_t out = 0;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    if (out > 0 && ranges_[i].lo <= uint64_t{ranges_[out - 1].hi} + 1) {
      ranges_[out - 1].hi = std::max(ranges_[out - 1].hi, ranges_[i].hi);
    } else {
      ranges_[out++] = ranges_[i];
    }
  }
  ranges_.resize(out);
}

}  // namespace jaxguide
