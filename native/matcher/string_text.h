// StringTextAnalysis: which lexer states read any JSON-string text without a lexeme boundary,
// decided on the NFA once per grammar (design note in string_text.cc).
//
// Contract. "String text" is the character class of TokenizerInfo's string slices: every code
// point from U+0020 up except `"`, `\` and U+007F. ReadsAnyText(state) == true promises that
// from `state`, every string of such characters, of any length, keeps the lexer alive and never
// reaches a state where a terminal has matched (so no lexeme boundary falls inside it): then a
// mask may take the string slice's tokens whole. false means "not proven" (the caller explores
// instead). Immutable after construction; thread-safe.
#ifndef JAXGUIDE_NATIVE_MATCHER_STRING_TEXT_H_
#define JAXGUIDE_NATIVE_MATCHER_STRING_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "native/lexer/code_point_set.h"
#include "native/lexer/lexer_dfa.h"
#include "native/support/fork_locks.h"

namespace jaxguide {

class StringTextAnalysis {
 public:
  // Work budget of one ReadsAnyText call, in NFA instructions visited (closures, the search
  // for a reachable match, groups read): what it has not proven within it is "not proven".
  // Results are memoized per grammar, so a position pays only for what earlier ones did not
  // explore; after kMaxFailures calls ran out of budget, the grammar answers false at once.
  static constexpr uint64_t kMaxQueryWork = uint64_t{1} << 17;
  static constexpr size_t kMaxFailures = 8;
  // A terminal whose groups ran out of work once (a pattern whose subsets of threads blow up,
  // such as an unanchored `pattern` of several words) is retried with this much only: a
  // later position may still be provable (past the words, any text), most are not, and each
  // full retry cost a millisecond or two of a mask for nothing.
  static constexpr uint64_t kRetryWork = kMaxQueryWork / 32;
  // At most this many thread groups explored by one proof of survival.
  static constexpr size_t kMaxGroupStates = 4096;

  explicit StringTextAnalysis(const Nfa& nfa);

  // See the contract above. `threads` and `matched`: the lexer state's (LexerDfa::Threads,
  // IsMatch). Thread-safe (calls are serialized; they are rare: the first mask at a lexer
  // state whose DFA exploration fell short).
  bool ReadsAnyText(const std::vector<uint64_t>& threads, bool matched) const;

 private:
  using Group = std::vector<uint32_t>;  // sorted kClass instructions of one terminal
  struct GroupHash {
    size_t operator()(const Group& group) const;
  };
  struct Successors {
    std::vector<uint32_t> threads;  // live kClass instructions, sorted
    bool matches = false;           // a kMatch is reached
  };
  class OutOfWork {};  // thrown inside a call that ran past kMaxQueryWork

  void Charge(uint64_t units) const;
  bool ReadsText(uint32_t inst) const;
  // succ(i): the threads after kClass instruction i reads a code point (the epsilon closure
  // of its out, not at the start of the text, as the lexer DFA builds it). Memoized.
  const Successors& Succ(uint32_t inst) const;
  // Whether a string of text characters read from `threads` reaches a kMatch.
  bool TextReachesMatch(const std::vector<uint32_t>& threads) const;
  // Whether `group` survives every string of text characters (memoized).
  bool SurvivesAnyText(const Group& group) const;
  // One code point per atom of the text that the classes of `group` tell apart.
  void TextAtoms(const Group& group, std::vector<uint32_t>* atoms) const;
  // The group after reading code point `c`: the union of succ(i) over the threads i whose
  // class holds c.
  void Read(const Group& group, uint32_t c, Group* next) const;

  const Nfa& nfa_;
  CodePointSet text_;
  mutable std::mutex mutex_;
  ForkLockRegistration fork_lock_{&mutex_};  // held across fork() (fork_locks.h)
  mutable uint64_t work_ = 0;  // of the call in progress
  mutable uint64_t work_limit_ = kMaxQueryWork;  // Charge throws past it
  mutable size_t failures_ = 0;
  mutable std::unordered_set<uint32_t> exhausted_terminals_;  // retried with kRetryWork
  mutable std::vector<int8_t> class_reads_text_;       // per class: -1 unknown
  mutable std::vector<int32_t> succ_index_;            // per instruction: -1 unknown
  mutable std::vector<Successors> succ_;
  mutable std::vector<uint8_t> no_match_;              // per instruction: proven, 1
  mutable std::vector<uint32_t> visit_mark_;           // Succ's, 2 per instruction (end_only)
  mutable uint32_t generation_ = 0;
  mutable std::vector<uint32_t> search_mark_;          // TextReachesMatch's, per instruction
  mutable uint32_t search_generation_ = 0;
  mutable std::unordered_map<Group, bool, GroupHash> survives_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_STRING_TEXT_H_
