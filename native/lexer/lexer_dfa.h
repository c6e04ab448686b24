// LexerDfa: N terminal regexes compiled to one lazily built, byte-level DFA that is shared by
// every matcher on every thread (design note in lexer_dfa.cc).
//
// A DFA state is the set of terminals' NFA threads alive after the bytes read so far. The
// grammar engine asks, at a terminal boundary, StartState(allowed terminals), feeds bytes with
// Next(), and reads MatchedTerminals() (terminals whose regex matches the bytes read, as a full
// match) and PossibleTerminals() (terminals for which the bytes read are still a prefix of some
// match; matched ones included). Everything is on raw bytes: only valid UTF-8 is ever matched.
//
// Contract:
//   * Next(s, b) is a lock-free table lookup once the transition exists: no allocation, no
//     hashing, no lock. A missing transition is computed once under a mutex and published with
//     a release store; concurrent callers of Next / Feed / StartState / the queries are safe.
//     The mutex is held across fork() (fork_locks.h): a forked child can use the DFA.
//   * kDeadState (0): no terminal can match any extension; IsDead is O(1) (s == 0). Dead is
//     exact: a state is dead iff no continuation of the bytes can be matched (the NFA keeps
//     only threads that can still reach a match).
//   * kErrorState (1): a budget ran out (max_states or max_memory_bytes) while building a state.
//     It is absorbing (Next(kErrorState, b) == kErrorState), has no matched or possible
//     terminals, and is NOT dead: callers must check IsError and report the budget (for example
//     a Matcher goes to its error state). Budget exhaustion is permanent for this object: states
//     already built keep working, new ones are refused (budget_exceeded() turns true).
//   * A start state (StartState) stands for "no byte read yet": Next never returns one, even
//     where the threads alive after some bytes equal those before any (a regex that opens with
//     a starred atom, `[^\n]*\n` after "abc"). So `state == StartState(set)` tells an empty
//     lexeme from a pending one, and the grammar engine relies on it.
//   * State ids are dense: every id < num_states() is valid. Ids stay valid for the lifetime of
//     the object (the cache is never flushed, so ids can be stored in matchers).
//   * Build meter: while a BuildMeter is installed on the calling thread (ScopedBuildMeter),
//     building a missing transition or start state adds its work (NFA instructions visited and
//     threads stepped or interned, kBuildWorkWeight lexer steps each) to the meter's counter.
//     Once the counter would pass the meter's limit the build stops: that call returns
//     kErrorState, caches nothing (the transition stays unknown, the DFA's budget untouched)
//     and sets meter.exceeded, so later calls under the same meter fail at once. The hot path
//     never reads the meter. Without a meter, building is unbounded (the Python lexer API;
//     every Matcher call and CompiledGrammar's compile-time searches install one).
//   * Construction throws RegexError (with the terminal index) for bad patterns and
//     BudgetExceededError if the NFA instruction budget is exceeded.
//
// Budgets (LexerOptions, defaults): max_states = 131072 DFA states, max_memory_bytes = 256 MiB
// for the transition table and state contents, max_nfa_instructions = 2^20 (bounds counted
// repetition expansion and, with it, the size of every DFA state's content: a state holds at
// most one thread per NFA instruction, 8 bytes each).
#ifndef JAXGUIDE_NATIVE_LEXER_LEXER_DFA_H_
#define JAXGUIDE_NATIVE_LEXER_LEXER_DFA_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "native/lexer/nfa.h"
#include "native/lexer/regex_ast.h"
#include "native/lexer/regex_parser.h"
#include "native/support/fork_locks.h"

namespace jaxguide {

struct LexerOptions {
  static constexpr size_t kDefaultMaxStates = size_t{1} << 17;
  static constexpr size_t kDefaultMaxMemoryBytes = size_t{256} << 20;
  // Hard ceiling for max_states (state ids are 32-bit and the chunk directory is preallocated).
  static constexpr size_t kMaxStatesLimit = size_t{1} << 26;

  RegexOptions regex;  // dialect and initial flags for the pattern-string constructor
  size_t max_states = kDefaultMaxStates;
  size_t max_memory_bytes = kDefaultMaxMemoryBytes;
  size_t max_nfa_instructions = Nfa::kDefaultMaxInstructions;
  // lazy_terminals[t]: terminal t has first-match lexemes (a lazy quantifier): once it matches,
  // its threads stop reading bytes, so it never matches a longer lexeme in the same run.
  // Missing entries are false (maximal munch, decided by the caller).
  std::vector<bool> lazy_terminals;
  // early_end_bytes[t]: bytes before which a lexeme of terminal t that matches may end even
  // though the byte could continue it (both hypotheses stay open; the boundary bit is set).
  // Each such byte gets a byte class of its own. Missing entries are empty.
  std::vector<std::string> early_end_bytes;
};

// A per-thread work meter for DFA construction (see the contract above). `used` is shared with
// the caller's own step count, so one budget bounds both.
struct BuildMeter {
  uint64_t* used;
  uint64_t limit;
  bool exceeded = false;
};

class LexerDfa {
 public:
  // Lexer steps charged per unit of construction work (an NFA instruction visited or a thread
  // stepped or interned: ~5-10 ns each against ~1-2 ns for a cached transition).
  static constexpr uint64_t kBuildWorkWeight = 4;

  // Installs `meter` on this thread for the scope (the previous one is restored after).
  class ScopedBuildMeter {
   public:
    explicit ScopedBuildMeter(BuildMeter* meter) : previous_(current_meter_) {
      current_meter_ = meter;
    }
    ~ScopedBuildMeter() { current_meter_ = previous_; }
    ScopedBuildMeter(const ScopedBuildMeter&) = delete;
    ScopedBuildMeter& operator=(const ScopedBuildMeter&) = delete;

   private:
    BuildMeter* previous_;
  };

  // The steps charged to this thread's meter so far (its `used` counter; 0 without a meter):
  // what a caller reads before and after some lookups to learn what building their states cost.
  static uint64_t MeteredSteps() {
    return current_meter_ == nullptr ? 0 : *current_meter_->used;
  }

  using StateId = uint32_t;
  static constexpr StateId kDeadState = 0;
  static constexpr StateId kErrorState = 1;

  // Parses every pattern with options.regex. Throws RegexError naming the terminal index.
  explicit LexerDfa(const std::vector<std::string>& patterns, const LexerOptions& options = {});
  // From already parsed terminals (each may have been parsed with its own dialect / flags);
  // terminal t copies programs[t] where that is non-null (Nfa's constructor).
  explicit LexerDfa(const std::vector<RegexNode>& terminals, const LexerOptions& options = {},
                    const Nfa::Programs& programs = {});
  ~LexerDfa();
  LexerDfa(const LexerDfa&) = delete;
  LexerDfa& operator=(const LexerDfa&) = delete;

  size_t num_terminals() const { return nfa_.num_terminals(); }

  // The state before any byte with every terminal allowed (precomputed, lock-free).
  StateId StartState() const { return start_all_; }
  // The state before any byte with only `allowed` terminals (any order, duplicates ignored).
  // Cached per distinct set, but takes a mutex: hot loops should keep the returned id.
  // Throws std::out_of_range for an id >= num_terminals(). Empty set -> kDeadState.
  StateId StartState(const std::vector<uint32_t>& allowed) const;

  // Set in NextWithBoundary()'s result when a lexeme read up to `state` may end just before
  // `byte`: some terminal matched in `state` is lazy (first match), cannot read `byte`
  // (maximal munch: it is not among the possible terminals after the byte), or lists `byte`
  // in LexerOptions::early_end_bytes. State ids stay
  // below kMaxStatesLimit, so the bit never collides with an id.
  static constexpr uint32_t kBoundaryBit = 0x80000000u;

  // The state after reading `byte` in `state`. Hot path: two loads when the transition exists.
  StateId Next(StateId state, uint8_t byte) const {
    return NextWithBoundary(state, byte) & ~kBoundaryBit;
  }
  // Next(state, byte) | (kBoundaryBit if the lexeme may end before `byte`): the grammar
  // engine's hot path learns in the same two loads whether the parser has to look at the byte.
  uint32_t NextWithBoundary(StateId state, uint8_t byte) const {
    return NextWithBoundary(state, RowOf(state), byte);
  }
  // For walkers that read many bytes from one state (a token-trie walk visits every child of a
  // node): the state's transition row, stable for the lifetime of the DFA, and the transition
  // through it without the directory lookup. `row` must be RowOf(state).
  using Row = const std::atomic<uint32_t>*;
  Row RowOf(StateId state) const { return MutableRowOf(state); }
  uint32_t NextWithBoundary(StateId state, Row row, uint8_t byte) const {
    const uint32_t next = row[byte_class_[byte]].load(std::memory_order_acquire);
    return next != kUnknown ? next : ComputeNext(state, byte);
  }
  // Next() over every byte; returns early once the state is dead or an error.
  StateId Feed(StateId state, std::string_view bytes) const;

  bool IsDead(StateId state) const { return state == kDeadState; }
  bool IsError(StateId state) const { return state == kErrorState; }
  // True if some terminal matches the bytes read (MatchedTerminals non-empty).
  bool IsMatch(StateId state) const { return !DataOf(state)->matched.empty(); }
  // Sorted terminal ids whose regex fully matches the bytes read.
  const std::vector<uint32_t>& MatchedTerminals(StateId state) const {
    return DataOf(state)->matched;
  }
  // Sorted terminal ids for which the bytes read are a prefix of a match (matched included).
  const std::vector<uint32_t>& PossibleTerminals(StateId state) const {
    return DataOf(state)->possible;
  }

  // The NFA threads of a built state (not the dead or error state): sorted
  // (instruction << 32) | Utf8Class node, node 0 (Utf8Class::kStartNode) between code points.
  const std::vector<uint64_t>& Threads(StateId state) const { return DataOf(state)->threads; }
  size_t num_states() const { return num_states_.load(std::memory_order_acquire); }
  // Bytes held by the DFA cache (transition rows and state contents), excluding the NFA.
  size_t MemoryBytes() const { return memory_bytes_.load(std::memory_order_relaxed); }
  bool budget_exceeded() const { return budget_exceeded_.load(std::memory_order_relaxed); }
  // The byte equivalence class of `byte` (bytes of one class behave alike in every state).
  uint8_t ByteClassOf(uint8_t byte) const { return byte_class_[byte]; }
  // Number of byte equivalence classes (= entries per transition row).
  size_t num_byte_classes() const { return stride_; }
  const Nfa& nfa() const { return nfa_; }
  const LexerOptions& options() const { return options_; }

 private:
  static constexpr uint32_t kUnknown = 0xFFFFFFFFu;
  static constexpr uint32_t kChunkShift = 8;  // 256 states per chunk
  static constexpr uint32_t kChunkStates = 1u << kChunkShift;

  struct StateData {
    std::vector<uint64_t> threads;  // sorted (instruction << 32) | Utf8Class node
    std::vector<uint32_t> matched;
    std::vector<uint32_t> possible;
    bool start = false;  // a start state (before any byte): part of the state's identity
  };

  std::atomic<uint32_t>* MutableRowOf(StateId state) const {
    return rows_[state >> kChunkShift].load(std::memory_order_acquire) +
           static_cast<size_t>(state & (kChunkStates - 1)) * stride_;
  }
  const StateData* DataOf(StateId state) const {
    return data_[state >> kChunkShift].load(std::memory_order_acquire)[state & (kChunkStates - 1)];
  }

  // The work units this thread's meter still allows (unbounded without a meter).
  static uint64_t BuildAllowance();
  // Charges `units` of work to this thread's meter; `stopped`: the build was cut short.
  static void ChargeBuild(uint64_t units, bool stopped);

  void Initialize();
  // Slow path of NextWithBoundary (takes the mutex); returns the packed transition.
  uint32_t ComputeNext(StateId state, uint8_t byte) const;
  // Adds the epsilon closure of `inst` to scratch_threads_ (mutex held). Returns false once
  // build_work_ passes build_allowance_ (the closure is then incomplete).
  bool AddClosure(uint32_t inst, bool at_begin) const;
  // Returns the state for scratch_threads_ (sorted here), creating it if needed (mutex held).
  // `start`: the state before any byte, kept apart from every state with the same threads
  // that bytes reach (see the contract above).
  StateId Intern(bool start = false) const;
  // Allocates state id `id`'s chunk if needed and stores its data (mutex held).
  void Install(StateId id, const StateData* data) const;

  LexerOptions options_;
  Nfa nfa_;
  std::array<uint8_t, 256> byte_class_{};
  size_t stride_ = 0;
  StateId start_all_ = kDeadState;

  // Chunked, never-moving storage: rows_[c] holds kChunkStates * stride_ transitions,
  // data_[c] kChunkStates state pointers. Directory slots are written once, under mutex_.
  std::unique_ptr<std::atomic<std::atomic<uint32_t>*>[]> rows_;
  std::unique_ptr<std::atomic<const StateData**>[]> data_;
  size_t num_chunks_ = 0;
  mutable std::atomic<size_t> num_states_{0};
  mutable std::atomic<size_t> memory_bytes_{0};
  mutable std::atomic<bool> budget_exceeded_{false};

  // Everything below is guarded by mutex_.
  mutable std::mutex mutex_;
  ForkLockRegistration fork_lock_{&mutex_};  // held across fork() (fork_locks.h)
  mutable std::vector<std::unique_ptr<StateData>> owned_;
  mutable std::unordered_multimap<uint64_t, StateId> by_content_;  // content hash -> ids
  mutable std::map<std::vector<uint32_t>, StateId> start_cache_;
  mutable std::vector<uint64_t> scratch_threads_;
  mutable std::vector<uint32_t> visit_mark_;  // per (instruction, end_only): generation seen
  mutable uint32_t generation_ = 0;
  mutable std::vector<std::pair<uint32_t, bool>> closure_stack_;
  // Work of the build in progress, and where it stops (mutex held; see BuildAllowance).
  mutable uint64_t build_work_ = 0;
  mutable uint64_t build_allowance_ = 0;

  static thread_local BuildMeter* current_meter_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_LEXER_DFA_H_
