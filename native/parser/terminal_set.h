// TerminalSet: a small dense bitset over terminal ids (grammars have tens to a few hundred
// terminals). Equality and hashing make it usable as a cache key (e.g. the lexer start state
// for "only these terminals here").
#ifndef JAXGUIDE_NATIVE_PARSER_TERMINAL_SET_H_
#define JAXGUIDE_NATIVE_PARSER_TERMINAL_SET_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jaxguide {

class TerminalSet {
 public:
  TerminalSet() = default;
  explicit TerminalSet(size_t num_terminals) : words_((num_terminals + 63) / 64, 0) {}

  // Empties the set and sizes it for `num_terminals` (keeps the allocation when it fits).
  void Reset(size_t num_terminals) { words_.assign((num_terminals + 63) / 64, 0); }
  void Insert(size_t t) { words_[t >> 6] |= uint64_t{1} << (t & 63); }
  bool Contains(size_t t) const {
    return (t >> 6) < words_.size() && ((words_[t >> 6] >> (t & 63)) & 1) != 0;
  }
  // this |= other (other must have the same size or be empty).
  void UnionWith(const TerminalSet& other) {
    for (size_t i = 0; i < other.words_.size(); ++i) words_[i] |= other.words_[i];
  }
  bool Empty() const {
    for (uint64_t w : words_) {
      if (w != 0) return false;
    }
    return true;
  }
  // Calls fn(t) for every member in increasing order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      for (uint64_t w = words_[i]; w != 0; w &= w - 1) {
        fn(i * 64 + static_cast<size_t>(__builtin_ctzll(w)));
      }
    }
  }
  size_t Hash() const {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint64_t w : words_) h = (h ^ w) * 0x100000001B3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
  // The heap bytes the set holds.
  size_t capacity_bytes() const { return words_.capacity() * sizeof(uint64_t); }
  bool operator==(const TerminalSet& other) const { return words_ == other.words_; }
  bool operator!=(const TerminalSet& other) const { return words_ != other.words_; }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_PARSER_TERMINAL_SET_H_
