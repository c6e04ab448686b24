// LexemeEndMemo: during one mask fill, the ways the lexeme of a lexing thread (Earley set,
// lexer state) can end, for the matcher's Step to read at every byte that crosses a boundary.
//
// Why. A mask walk crosses a lexeme boundary from the same thread before hundreds of bytes
// (every frontier node of a cached lexer-only subtree: after `600`, each byte that is not a
// digit ends the NUMBER), and the boundary memo (per thread and byte) cannot share across
// bytes. Per thread, what does not depend on the byte is kept here: each terminal the lexeme
// matches, whether it is lazy or %ignore'd, and (filled in at its first use, exactly where
// Step would compute it) the Earley set its scan reaches and the lexer start states after it.
// Step then pays two lexer transitions and the maximal-munch check per terminal and byte.
//
// Contract. Valid between Begin and End (one mask fill); entries name Earley sets, so the
// matcher calls Begin again (forgetting everything) if it pops sets meanwhile. Outside a fill,
// Find returns nullptr. A copy starts empty. Direct-mapped (a collision replaces the entry).
#ifndef JAXGUIDE_NATIVE_MATCHER_LEXEME_END_MEMO_H_
#define JAXGUIDE_NATIVE_MATCHER_LEXEME_END_MEMO_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jaxguide {

class LexemeEndMemo {
 public:
  static constexpr uint32_t kUnset = 0xFFFFFFFEu;  // `after` / start states not computed yet
  static constexpr size_t kSlots = 1024;           // power of two

  struct Ending {
    uint32_t terminal;
    bool lazy;
    bool ignored;
    bool allowed;                   // the parser allows the terminal at the thread's set
    uint32_t after = kUnset;        // the set Scan reaches (EarleyParser::kNoSet: none)
    uint32_t after_start = kUnset;  // the lexer start state of `after`
    uint32_t ignore_start = kUnset;  // the thread set's start state (for an ignored lexeme)
  };

  LexemeEndMemo() = default;
  LexemeEndMemo(const LexemeEndMemo&) {}
  LexemeEndMemo& operator=(const LexemeEndMemo&) {
    active_ = false;
    return *this;
  }

  // Starts a fill (or forgets every entry of the current one).
  void Begin() {
    if (slots_.empty()) slots_.resize(kSlots);
    if (++generation_ == 0) {  // wrapped: forget every slot
      for (Slot& slot : slots_) slot.generation = 0;
      generation_ = 1;
    }
    ends_.clear();
    active_ = true;
  }
  void End() { active_ = false; }
  bool active() const { return active_; }

  // Whether the ends of thread (set, lexer) are known in this fill; if so they are
  // [*begin, *end), valid (and writable: their lazily filled fields) until the next Add.
  bool Find(uint32_t set, uint32_t lexer, Ending** begin, Ending** end) {
    if (!active_) return false;
    Slot& slot = slots_[SlotOf(set, lexer)];
    if (slot.generation != generation_ || slot.set != set || slot.lexer != lexer) return false;
    *begin = ends_.data() + slot.offset;
    *end = *begin + slot.count;
    return true;
  }
  // Records the ends of thread (set, lexer) (when a fill is active) and returns where they are
  // kept: [*begin, *end), valid until the next Add. `ends` is copied.
  void Add(uint32_t set, uint32_t lexer, const std::vector<Ending>& ends, Ending** begin,
           Ending** end) {
    if (!active_) {
      scratch_ = ends;
      *begin = scratch_.data();
      *end = *begin + scratch_.size();
      return;
    }
    Slot& slot = slots_[SlotOf(set, lexer)];
    slot = Slot{set, lexer, generation_, static_cast<uint32_t>(ends_.size()),
                static_cast<uint32_t>(ends.size())};
    ends_.insert(ends_.end(), ends.begin(), ends.end());
    *begin = ends_.data() + slot.offset;
    *end = *begin + slot.count;
  }

 private:
  struct Slot {
    uint32_t set = 0, lexer = 0, generation = 0, offset = 0, count = 0;
  };
  static size_t SlotOf(uint32_t set, uint32_t lexer) {
    const uint64_t h = (uint64_t{set} << 32 | lexer) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> (64 - 10));
  }
  std::vector<Slot> slots_;
  std::vector<Ending> ends_;
  std::vector<Ending> scratch_;
  uint32_t generation_ = 0;
  bool active_ = false;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_LEXEME_END_MEMO_H_
