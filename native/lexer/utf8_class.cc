// Utf8Class construction.
//
// Design note. A UTF-8 code point of length n is a lead byte followed by n - 1 continuation
// bytes of 6 payload bits each. After the lead byte, what remains to be read is described
// exactly by (r, S): r continuation bytes still to come and S, the set of their possible payload
// values (integers in [0, 64^r)), restricted to code points of the class. Reading continuation
// byte 0x80 | d keeps the values of S in [d * 64^(r-1), (d + 1) * 64^(r-1)) and shifts them down.
// Nodes are hash-consed on (r, S), which yields the minimal automaton: the classic UTF-8 range
// splitting (RE2's UTF-8 compiler, Rust's utf8-ranges) falls out of it without enumerating
// byte-range sequences, and shared suffixes ("any 2 continuation bytes") are one node. Overlong
// forms are impossible because the code point interval of each lead byte is clipped to the
// values that need that many bytes; surrogates are clipped out of 3-byte leads.
//
// Complexity: O(nodes * 64 * log(ranges)) time. A class whose ranges have k endpoints produces
// O(k) nodes per length (each endpoint splits at most one node per depth), so even \w (about 700
// ranges) builds in well under a millisecond.
#include "native/lexer/utf8_class.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "native/support/fork_locks.h"

namespace jaxguide {
namespace {

using Ranges = std::vector<CodePointRange>;

// Values of `set` in [lo, hi], shifted down by `base`.
Ranges Slice(const Ranges& set, uint32_t lo, uint32_t hi, uint32_t base) {
  Ranges out;
  auto it = std::upper_bound(set.begin(), set.end(), lo,
                             [](uint32_t value, const CodePointRange& r) { return value < r.lo; });
  if (it != set.begin()) --it;
  for (; it != set.end() && it->lo <= hi; ++it) {
    if (it->hi < lo) continue;
    out.push_back({std::max(it->lo, lo) - base, std::min(it->hi, hi) - base});
  }
  return out;
}

}  // namespace

Utf8Class::Utf8Class(const CodePointSet& set) {
  start_.fill(kReject);
  // Key (remaining bytes, payload set) -> node id.
  std::map<std::pair<uint32_t, std::vector<uint64_t>>, int32_t> ids;
  std::vector<std::pair<uint32_t, Ranges>> pending;  // node id - 1 -> (r, S) to expand

  auto node_for = [&](uint32_t remaining, Ranges values) -> int32_t {
    if (values.empty()) return kReject;
    if (remaining == 0) return kAccept;  // values == {0}: the code point is complete
    std::vector<uint64_t> key;
    key.reserve(values.size());
    for (const CodePointRange& r : values) key.push_back((uint64_t{r.lo} << 32) | r.hi);
    auto [it, inserted] = ids.emplace(std::make_pair(remaining, std::move(key)),
                                      static_cast<int32_t>(pending.size() + 1));
    if (inserted) {
      pending.emplace_back(remaining, std::move(values));
      continuation_.resize(pending.size() * 64, kReject);
    }
    return it->second;
  };

  const Ranges& ranges = set.ranges();
  AcceptAscii(set);
  if (ranges.empty() || ranges.back().hi < 0x80) {  // ASCII only (literals, most classes)
    empty_ = ranges.empty();
    ComputeByteBoundaries();
    return;
  }
  // Lead bytes: 0xC2..0xDF (2 bytes), 0xE0..0xEF (3), 0xF0..0xF4 (4).
  struct LeadRange {
    uint32_t first, last, length, payload_mask, min_code_point;
  };
  constexpr LeadRange kLeads[] = {{0xC2, 0xDF, 2, 0x1F, 0x80},
                                  {0xE0, 0xEF, 3, 0x0F, 0x800},
                                  {0xF0, 0xF4, 4, 0x07, 0x10000}};
  for (const LeadRange& lead : kLeads) {
    const uint32_t shift = 6 * (lead.length - 1);
    for (uint32_t b = lead.first; b <= lead.last; ++b) {
      const uint32_t base = (b & lead.payload_mask) << shift;
      const uint32_t lo = std::max(base, lead.min_code_point);
      const uint32_t hi = std::min(base + (1u << shift) - 1, CodePointSet::kMaxCodePoint);
      if (lo > hi) continue;
      Ranges values;
      if (lead.length == 3 && lo <= 0xDFFF && hi >= 0xD800) {  // clip out surrogates
        values = Slice(ranges, lo, 0xD7FF, base);
        Ranges upper = Slice(ranges, 0xE000, hi, base);
        values.insert(values.end(), upper.begin(), upper.end());
      } else {
        values = Slice(ranges, lo, hi, base);
      }
      start_[b] = node_for(lead.length - 1, std::move(values));
    }
  }
  // Expand nodes breadth-first (pending grows while we iterate). The block of payload values
  // of continuation byte d is either cut by an endpoint of S (sliced: its own node), wholly
  // inside one range (the node "any r - 1 bytes", looked up once per length) or outside S
  // (reject). node_for is asked in the same order as slicing every block would, so nodes are
  // numbered the same; most blocks of a large class skip the slice.
  constexpr int32_t kUnknown = std::numeric_limits<int32_t>::min();
  std::array<int32_t, 4> any_bytes;  // [r]: the node of every r-byte continuation
  any_bytes.fill(kUnknown);
  for (size_t i = 0; i < pending.size(); ++i) {
    const uint32_t remaining = pending[i].first;
    const Ranges values = pending[i].second;  // copy: node_for may reallocate `pending`
    const uint32_t block = 1u << (6 * (remaining - 1));
    size_t k = 0;  // the first range of `values` not wholly below the current block
    for (uint32_t d = 0; d < 64; ++d) {
      const uint32_t lo = d * block;
      const uint32_t hi = lo + block - 1;
      while (k < values.size() && values[k].hi < lo) ++k;
      int32_t next = kReject;  // no value of S in the block
      if (k < values.size() && values[k].lo <= lo && values[k].hi >= hi) {
        int32_t& whole = any_bytes[remaining - 1];
        if (whole == kUnknown) whole = node_for(remaining - 1, Ranges{{0, block - 1}});
        next = whole;
      } else if (k < values.size() && values[k].lo <= hi) {
        next = node_for(remaining - 1, Slice(values, lo, hi, lo));
      }
      continuation_[i * 64 + d] = next;
    }
  }
  for (int32_t entry : start_) {
    if (entry != kReject) empty_ = false;
  }
  ComputeByteBoundaries();
}

void Utf8Class::AcceptAscii(const CodePointSet& set) {
  for (const CodePointRange& r : set.ranges()) {
    if (r.lo >= 0x80) break;
    for (uint32_t b = r.lo; b <= std::min<uint32_t>(r.hi, 0x7F); ++b) start_[b] = kAccept;
  }
}

void Utf8Class::ComputeByteBoundaries() {
  const auto mark = [this](uint32_t b) { byte_boundaries_[b >> 6] |= uint64_t{1} << (b & 63); };
  for (uint32_t b = 1; b < 256; ++b) {
    if (start_[b] != start_[b - 1]) mark(b);
  }
  if (continuation_.empty()) return;
  mark(0x80);
  mark(0xC0);
  // Continuation bytes 0x80 + d: word 2, bit d (d = 1..63).
  uint64_t differs = 0;
  for (size_t node = 0; node * 64 < continuation_.size(); ++node) {
    const int32_t* row = &continuation_[node * 64];
    for (uint32_t d = 1; d < 64; ++d) differs |= uint64_t{row[d] != row[d - 1]} << d;
  }
  byte_boundaries_[2] |= differs;
}

Utf8Class::Utf8Class(const CodePointSet& set, const Utf8Class& same_above_ascii)
    : start_(same_above_ascii.start_), continuation_(same_above_ascii.continuation_) {
  // Nodes come from lead bytes only (0xC2 and up): the other class's, numbered as `set`'s own
  // construction numbers them. Only the ASCII entries differ.
  std::fill(start_.begin(), start_.begin() + 0x80, kReject);
  AcceptAscii(set);
  empty_ = std::all_of(start_.begin(), start_.end(), [](int32_t e) { return e == kReject; });
  ComputeByteBoundaries();
}

namespace {

// The code points of `set` from U+0080 up (what decides a class's nodes); empty for an ASCII set.
CodePointSet AboveAscii(const CodePointSet& set) {
  if (set.Empty() || set.ranges().back().hi < 0x80) return CodePointSet();
  CodePointSet upper = set;
  upper.Subtract(CodePointSet::Range(0, 0x7F));
  return upper;
}

// Classes by their set, and by their set above ASCII (a class differing from a known one in
// ASCII only is copied from it: the costly part of a large class is its non-ASCII nodes).
struct ClassTable {
  using Entry = std::pair<CodePointSet, std::shared_ptr<const Utf8Class>>;
  std::unordered_map<size_t, std::vector<Entry>> by_set, by_upper;

  static std::shared_ptr<const Utf8Class> Find(
      const std::unordered_map<size_t, std::vector<Entry>>& map, const CodePointSet& set) {
    auto found = map.find(set.Hash());
    if (found == map.end()) return nullptr;
    for (const auto& [key, cls] : found->second) {
      if (key == set) return cls;
    }
    return nullptr;
  }
  void Add(const CodePointSet& set, const CodePointSet& upper,
           const std::shared_ptr<const Utf8Class>& cls) {
    by_set[set.Hash()].emplace_back(set, cls);
    if (!upper.Empty() && Find(by_upper, upper) == nullptr) {
      by_upper[upper.Hash()].emplace_back(upper, cls);
    }
  }
};

struct SharedUtf8ClassCache {
  std::mutex mutex;
  ForkLockRegistration fork_lock{&mutex};  // held across fork() (fork_locks.h)
  ClassTable shared;  // bounded by kSharedUtf8ClassBytes, emptied by ClearSharedUtf8Classes
  size_t bytes = 0;
  ClassTable pinned;  // never emptied (PinnedUtf8Class)
};

SharedUtf8ClassCache& TheSharedUtf8ClassCache() {
  // Never destroyed: safe during static teardown.
  static SharedUtf8ClassCache* const cache = new SharedUtf8ClassCache();
  return *cache;
}

}  // namespace

void ClearSharedUtf8Classes() {
  SharedUtf8ClassCache& cache = TheSharedUtf8ClassCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.shared = ClassTable();
  cache.bytes = 0;
}

std::shared_ptr<const Utf8Class> SharedUtf8Class(const CodePointSet& set) {
  SharedUtf8ClassCache* const cache = &TheSharedUtf8ClassCache();
  {
    std::lock_guard<std::mutex> lock(cache->mutex);
    if (auto pinned = ClassTable::Find(cache->pinned.by_set, set)) return pinned;
    if (auto shared = ClassTable::Find(cache->shared.by_set, set)) return shared;
  }
  // Not built yet: a class with the same code points above ASCII, if one is known.
  const CodePointSet upper = AboveAscii(set);
  std::shared_ptr<const Utf8Class> same_above_ascii;
  if (!upper.Empty()) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    same_above_ascii = ClassTable::Find(cache->pinned.by_upper, upper);
    if (same_above_ascii == nullptr) {
      same_above_ascii = ClassTable::Find(cache->shared.by_upper, upper);
    }
  }
  // Built outside the lock (a large class takes a while); a racing duplicate is harmless.
  auto built = same_above_ascii != nullptr
                   ? std::make_shared<const Utf8Class>(set, *same_above_ascii)
                   : std::make_shared<const Utf8Class>(set);
  const size_t bytes = built->MemoryBytes() + set.ranges().size() * sizeof(CodePointRange);
  std::lock_guard<std::mutex> lock(cache->mutex);
  if (cache->bytes + bytes > kSharedUtf8ClassBytes) {
    cache->shared = ClassTable();
    cache->bytes = 0;
  }
  cache->shared.Add(set, upper, built);
  cache->bytes += bytes;
  return built;
}

std::shared_ptr<const Utf8Class> PinnedUtf8Class(const CodePointSet& set) {
  std::shared_ptr<const Utf8Class> cls = SharedUtf8Class(set);
  SharedUtf8ClassCache* const cache = &TheSharedUtf8ClassCache();
  std::lock_guard<std::mutex> lock(cache->mutex);
  if (auto pinned = ClassTable::Find(cache->pinned.by_set, set)) return pinned;
  cache->pinned.Add(set, AboveAscii(set), cls);
  return cls;
}

}  // namespace jaxguide
