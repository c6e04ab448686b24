// Matcher: the grammar state of one sequence — accept tokens, roll back, and compute the mask of
// allowed next tokens.
//
// Semantics (../shared/DESIGN.md). A token is allowed iff the bytes so far plus the token's
// bytes remain a prefix of the grammar's language; EOS is allowed iff the bytes so far are a
// complete sentence. Lexemes: a terminal's lexeme ends where the terminal matches and the next
// byte cannot continue it (maximal munch), or at its first match for lazy terminals; %ignore
// terminals may occur between any two terminals.
//
// Contract. Not thread-safe (one matcher per sequence; different matchers may run on different
// threads, sharing their CompiledGrammar). Methods never throw once constructed: a bad token
// returns false and changes nothing; an exceeded work budget or internal fault puts the matcher
// into an error state (error() says why) in which only EOS is allowed.
//
// Work budget. Every public call (Reset and construction included) builds the lexer DFA states
// it needs lazily, and may charge up to mask_step_budget lexer steps of that construction
// (LexerDfa::kBuildWorkWeight per NFA instruction visited or thread stepped) to a per-call
// meter, and as much (plus kEarleyStepsPerByte per byte it reads) of the work of the Earley sets
// it builds (EarleyParser::kWorkWeight per item added or found again) to another; past either
// the call stops, puts the matcher in its error state and answers as it does there (an accept
// refuses its token, a query answers false / nothing), except ShortestLexemeCompletion, a
// bounded search, which answers nullopt and leaves the state (past its DFA build meter).
// A mask's walk charges both to one meter with its own lexer steps (kDefaultMaskStepBudget).
#ifndef JAXGUIDE_NATIVE_MATCHER_MATCHER_H_
#define JAXGUIDE_NATIVE_MATCHER_MATCHER_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "native/matcher/compiled_grammar.h"
#include "native/matcher/lexeme_end_memo.h"
#include "native/matcher/subtree_memo.h"
#include "native/matcher/unique_items.h"
#include "native/parser/earley_parser.h"

namespace jaxguide {

class Matcher {
 public:
  // Work budget of one mask computation, in lexer-thread steps (one byte through one lexing
  // hypothesis) of the parser-driven walk; a mask over a 128k vocabulary typically takes
  // 10^3 - 10^6. The lexer-only walk that fills a cached LexemeMask is linear in the trie and
  // not counted. Lexer DFA states built during the mask are (LexerDfa::kBuildWorkWeight steps
  // per NFA instruction visited), so a mask stays bounded however large the NFA. Every other
  // call charges the DFA states it builds (only those) to a budget of the same size.
  static constexpr LexerDfa::StateId kUnknownState = 0xFFFFFFFFu;
  static constexpr uint64_t kDefaultMaskStepBudget = uint64_t{50} * 1000 * 1000;
  // A call's allowance for Earley work grows by this much per byte it reads (accepts of long
  // texts: JSON takes ~15 per byte; a highly ambiguous grammar ~10^5 - 10^7).
  static constexpr uint64_t kEarleyStepsPerByte = 256;
  // Earley sets a mask walk built that are kept for the next mask (see FillNextTokenBitmask).
  static constexpr size_t kMaxRetainedSets = 4096;
  // uniqueItems (unique_items.h): the bytes (lexer steps that keep the output alive) a search
  // may try, per token, for a continuation under which an item at risk differs from the
  // earlier items of its array. Past it the token is allowed unproven (a possible dead end,
  // never a duplicate).
  static constexpr size_t kUniqueSearchSteps = 512;

  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar,
                   uint64_t mask_step_budget = kDefaultMaskStepBudget);
  Matcher(const Matcher& other) = default;  // fork: an independent copy of the state
  Matcher& operator=(const Matcher& other) = default;

  // Advances by one token. EOS is accepted iff IsAccepting() (then IsTerminated()). Returns
  // false, changing nothing, if the token is not allowed (or the matcher is terminated).
  bool AcceptToken(uint32_t token_id);
  // Token healing: the output must start with `prefix` (bytes of the prompt's last token(s),
  // removed from the prompt by heal_prompt) before the grammar's text begins; a token may span
  // the end of the prefix and the grammar's first bytes. Only on a fresh matcher (else returns
  // false); Reset keeps the prefix.
  bool RequirePrefix(std::string prefix);
  std::string_view pending_prefix() const {
    return std::string_view(required_prefix_).substr(prefix_pos_);
  }
  // Advances by raw bytes (all or nothing), counted as one step for Rollback.
  bool AcceptBytes(std::string_view bytes);
  // Undoes the last `num_steps` accepted tokens / byte strings (clamped to what exists).
  void Rollback(size_t num_steps);
  void Reset();

  // Whether the bytes so far are a complete sentence (EOS allowed).
  bool IsAccepting();
  bool IsTerminated() const { return terminated_; }
  size_t num_steps() const { return step_rows_.size() - 1; }

  // The fewest grammar terminals (lexemes) still to write before the output is a sentence: 0
  // when IsAccepting(), else the parser's shortest completion (EarleyParser::
  // MinTerminalsToAccept) over the lexing hypotheses, a lexeme in progress taken as any
  // terminal it can still become, plus one while it cannot end as that terminal yet (its rest
  // is one more piece to write; how many bytes is not counted). A guide for steering output
  // toward its end (the random walks of jaxguide.testing finish with it), not a byte count;
  // Grammar::kNoYield in the error state.
  uint32_t MinTerminalsToAccept();

  // The shortest bytes that finish the lexeme in progress as a terminal the parser takes next
  // (or an %ignore'd one), over the lexing hypotheses: "" when no lexeme is in progress or it
  // can end here; nullopt when none is found within `max_states` lexer states (a breadth-first
  // search over byte classes, one byte per class, printable ASCII preferred) or within the
  // call's budget for building lexer DFA states (mask_step_budget; the matcher stays as it
  // is), or in the error state. Not a promise that the bytes are accepted (a follow
  // restriction may refuse them): AcceptBytes decides. With MinTerminalsToAccept, how walks
  // steer out of a string whose pattern needs more text before its closing quote.
  static constexpr size_t kDefaultCompletionStates = 4096;
  std::optional<std::string> ShortestLexemeCompletion(
      size_t max_states = kDefaultCompletionStates);

  // Whether one token is allowed now, without computing a mask.
  bool IsTokenAllowed(uint32_t token_id);
  // What the grammar forces next, without changing the state: a sequence of pieces, each
  // either bytes (every continuation of the output starts with them) or one special token (the
  // only thing allowed at that point). Stops where the output may end (EOS allowed), where
  // more than one byte or special token is possible, or after max_bytes forced bytes.
  struct ForcedPiece {
    std::string bytes;             // non-empty, or
    int64_t special_token = -1;    // a special-token terminal's token id
  };
  std::vector<ForcedPiece> ComputeForced(size_t max_bytes = 256);
  // Writes the allowed-token bitmask into `row` (bitmask_width uint32 words, little-endian bits:
  // token t is bit t % 32 of word t / 32).
  void FillNextTokenBitmask(uint32_t* row);

  const TokenizerInfo& tokenizer() const { return grammar_->tokenizer(); }
  bool has_error() const { return !error_.empty(); }
  // Work counters (for benchmarks and tests): Earley items created, Earley sets alive, lexing
  // hypotheses (threads) standing after the accepted bytes.
  uint64_t earley_items_created() const { return parser_.items_created(); }
  size_t earley_sets() const { return parser_.num_sets(); }
  size_t lexing_threads() const { return current_.size(); }
  const std::string& error() const { return error_; }

 private:
  struct Thread {
    uint32_t set;             // Earley set where the current lexeme started
    LexerDfa::StateId lexer;  // lexer state after the lexeme's bytes so far
    bool operator==(const Thread& o) const { return set == o.set && lexer == o.lexer; }
  };

  LexerDfa::StateId StartStateOf(uint32_t set);
  // Advances every thread of `from` by `byte` into `to` (cleared first): one thread per lexer
  // state, sorted by lexer state (MergeSameLexerState), so equal rows are equal vectors.
  // Returns !to->empty().
  // `memoize`: a boundary crossed by one thread may use and fill boundary_memo_ when a mask's
  // memo is on (the trie walk passes false, see WalkSubtrees).
  bool Step(const std::vector<Thread>& from, uint8_t byte, std::vector<Thread>* to,
            bool memoize = true);
  bool ThreadsAccept(const std::vector<Thread>& threads);
  // The Earley sets reached when the current lexemes of `threads` end here (no byte follows):
  // a thread with no pending lexeme, or one whose lexeme matches a terminal (scanned, or
  // skipped if %ignore'd). Deduplicated.
  void LexemeEnds(const std::vector<Thread>& threads, std::vector<uint32_t>* sets);
  // Advances `threads` by a special token that the grammar names as a terminal; false if no
  // thread allows it (threads is then empty) or the token is no such terminal.
  bool AdvanceSpecial(uint32_t token_id, std::vector<Thread>* threads);
  // Keeps `row` (the grammar's mask, before value checks) as the mask of the current threads
  // (see FillNextTokenBitmask).
  void RememberMask(const uint32_t* row);
  // The mask while required prefix bytes are pending (see RequirePrefix).
  void WalkPendingPrefix(uint32_t* row);
  // Sets the bits of the special-token terminals allowed now.
  void SetSpecialTokenBits(uint32_t* row);
  // Commits the state that `advance(&threads)` reaches from the current one (one step for
  // Rollback); false, changing nothing, if it fails.
  template <typename Advance>
  bool Accept(const Advance& advance, size_t prefix_pos);
  // Splits `bytes` into the part that consumes the pending required prefix (false if it does
  // not match it) and the rest, for the grammar.
  bool SplitPrefix(std::string_view bytes, size_t* prefix_pos, std::string_view* rest) const;
  // The ways the lexeme of `thread` (a matching one) can end, one per matched terminal, with
  // what does not depend on the next byte (the scan's result filled in at first use), kept in
  // lexeme_ends_ for the mask fill in progress: [*begin, *end).
  void LexemeEndsOf(const Thread& thread, LexemeEndMemo::Ending** begin,
                    LexemeEndMemo::Ending** end);
  // Replaces threads that share a lexer state by one thread over their merged Earley sets,
  // leaving them sorted by lexer state.
  void MergeSameLexerState(std::vector<Thread>* threads);
  // Advances `threads` by `bytes`; false if they all die (threads is then unspecified).
  // With `unique`, the output's unique arrays are checked too (unique_items.h): false when a
  // byte repeats an item (unique is then partly advanced: the caller restores it).
  bool AdvanceBytes(std::string_view bytes, std::vector<Thread>* threads,
                    UniqueItems* unique = nullptr);
  // Checked containers: cuts forced `pieces` (ComputeForced) before a byte the scanner
  // refuses; the first `prefix_bytes` (healed bytes) are not the grammar's and are skipped;
  // `scanned`: what the parser scanned with each forced byte after them, in order.
  void DropRepeatedItems(std::vector<ForcedPiece>* pieces, size_t prefix_bytes,
                         const std::vector<UniqueItems::Scanned>& scanned);
  // uniqueItems: clears the bits of the tokens in `row` after which every continuation repeats
  // an item of a unique array (or that repeat one themselves).
  void FilterUniqueItems(uint32_t* row);
  // Whether `bytes` (a token's, past any pending prefix) keep every unique array's items
  // distinct and leave a continuation under which they stay so (ItemsCanDiffer). The Earley
  // sets it builds are dropped, unless `keep_sets` (the caller drops them). `now`: unique_'s
  // checkpoint as it stands, when the caller holds one (else one is taken).
  bool TokenKeepsItemsUnique(std::string_view bytes, bool keep_sets = false,
                             const UniqueItems::Checkpoint* now = nullptr);
  // Whether the output, at `threads` and unique_, can go on (as the grammar allows) to where no
  // unique array's item is at risk of repeating (UniqueItems::AtRisk): a depth-first search over
  // bytes, closing bytes first, charging each live step to *budget; true when the budget runs
  // out. unique_ is left as it was; the Earley sets built stay (the caller truncates them).
  // `after_space`: the last byte was JSON white space.
  bool ItemsCanDiffer(const std::vector<Thread>& threads, size_t* budget,
                      bool after_space = false);
  // The checkpoint of unique_ to keep with a step (empty when the grammar has no unique array).
  UniqueItems::Checkpoint UniqueCheckpoint() const {
    return grammar_->has_value_checks() ? unique_.Save() : UniqueItems::Checkpoint{};
  }
  bool IsEos(uint32_t token_id) const;
  void SetEosBits(uint32_t* row) const;
  // Parser sets of the committed state (those beyond are retained from the last mask walk).
  size_t committed_sets() const { return step_rows_.back().num_sets; }
  // Pops parser sets >= num_sets and their cached lexer start states.
  void TruncateSets(size_t num_sets);
  void SetError(const std::string& message);
  // Throws BudgetExceededError: the call's build meter ran out (BuildBudgetMessage), else the
  // lexer DFA's own budget (max_states / max_memory_bytes).
  [[noreturn]] void ThrowLexerBudget() const;
  std::string MaskBudgetMessage() const;
  std::string BuildBudgetMessage() const;
  // Installs, for the scope of one public call, the meter that charges the lexer DFA states
  // the call builds to mask_step_budget_ (see the contract above); a nested call shares the
  // outer one's. Defined in matcher.cc.
  class CallMeter;
  void WriteEosOnly(uint32_t* row) const;
  // Sets the lexer-only bits below trie node `node` for `thread` (in its state after the
  // node's bytes) from the grammar's LexemeMask cache and walks the cached frontier with the
  // parser. Returns false, doing nothing, when the cache is full.
  // `trie`: which trie `node` indexes (CompiledGrammar::TrieOf).
  bool WalkCachedSubtree(uint32_t node, const Thread& thread, uint32_t* row, uint8_t trie = 0);
  // Whether from `thread`, every JSON-string text of 1..max_chars characters leaves some
  // thread alive, across whatever lexeme boundaries it meets (the parser decides those): the
  // parser-aware form of CompiledGrammar::StringTextCharsWithoutBoundary, for a string whose
  // lexemes are split by length (a chunk of a long string ends within the slice's reach).
  // Breadth-first over thread rows at character boundaries, each row expanded once, one byte
  // per kind (CompiledGrammar::text_char_forms): kReadsAny, kDies (some text leaves no thread),
  // or kRanOut past kTextCheckMaxRows rows. Charged to the mask's budget like the walk.
  static constexpr size_t kTextCheckMaxRows = 64;
  enum class TextSearch { kReadsAny, kDies, kRanOut };
  TextSearch ReadsAnyTextAcrossBoundaries(const Thread& thread, size_t max_chars);
  // WalkCachedSubtree for each of `threads` (independent lexing hypotheses: a token is allowed
  // iff it is allowed from one of them, so the mask is the OR of their masks). Leaves in
  // `uncached` the threads the full cache could not take (to be walked the plain way).
  void WalkCachedThreads(uint32_t node, std::vector<Thread> threads, uint32_t* row,
                         uint8_t trie, std::vector<Thread>* uncached);
  // WalkCachedSubtree through subtree_memo_: the stored answer of (node, thread) when there is
  // one, else the walk (captured into the memo on the key's second visit). Same result.
  bool WalkMemoizedSubtree(uint32_t node, const Thread& thread, uint32_t* row, uint8_t trie);
  // The memo's answer for the tokens set in `scratch` (all below `node` of TrieOf(trie)), in
  // the smaller form (SubtreeMemo::Answer); also sets them in `row`. O(min(subtree, row width
  // + tokens)).
  SubtreeMemo::Answer TakeAnswer(uint32_t node, uint8_t trie, const uint32_t* scratch,
                                 uint32_t* row) const;
  // Sets in `row` the tokens of a stored answer of `node` (duplicates too).
  void SetAnswerBits(uint32_t node, uint8_t trie, const SubtreeMemo::Answer& answer,
                     uint32_t* row) const;
  // Walks trie nodes [begin, end) (whole subtrees) from walk_rows_[depth(begin) - 1], setting
  // the bits of allowed tokens in `row`.
  void WalkSubtrees(size_t begin, size_t end, uint32_t* row, uint8_t trie_id = 0);

  std::shared_ptr<const CompiledGrammar> grammar_;
  EarleyParser parser_;
  uint64_t mask_step_budget_;
  uint64_t steps_ = 0;
  // The build meter of the call in progress (nullptr between calls).
  BuildMeter* meter_ = nullptr;
  // The committed state: the threads after the last accepted step, and per accepted step the
  // threads and the parser size before it (for Rollback).
  std::vector<Thread> current_;
  struct StepRow {
    std::vector<Thread> threads;
    size_t num_sets;
    size_t prefix_pos = 0;  // bytes of required_prefix_ consumed
    UniqueItems::Checkpoint unique = {};
  };
  std::vector<StepRow> step_rows_;
  std::vector<LexerDfa::StateId> start_state_of_set_;
  struct TerminalSetHash {
    size_t operator()(const TerminalSet& set) const { return set.Hash(); }
  };
  // Per [accepting set?]: start states by allowed terminals.
  std::array<std::unordered_map<TerminalSet, LexerDfa::StateId, TerminalSetHash>, 2>
      start_state_by_terminals_;
  bool terminated_ = false;
  // uniqueItems beyond the grammar (only when the grammar has unique arrays), and whether the
  // byte Step is reading ended a lexeme of a terminal that opens one.
  UniqueItems unique_;
  UniqueItems::Scanned scanned_;  // what Step's last byte scanned (containers it opened)
  // ItemsCanDiffer's proven answers by state, while FilterUniqueItems checks a mask's tokens
  // (the Earley sets they name stand until it returns); null otherwise.
  std::unordered_map<std::string, bool>* unique_search_memo_ = nullptr;
  size_t unique_search_items_before_ = 0;  // unique_'s items when the memo was made
  // Token healing: bytes the output must start with before the grammar's text (see
  // RequirePrefix), and how many of them were consumed.
  std::string required_prefix_;
  size_t prefix_pos_ = 0;
  std::string error_;
  // Scratch rows of the trie walk, one per depth.
  std::vector<std::vector<Thread>> walk_rows_;
  std::vector<uint32_t> merge_scratch_;
  // The lexer states of the current threads when they all stand on the initial set (the key of
  // the grammar's shared first-lexeme masks).
  std::vector<LexerDfa::StateId> first_lexeme_states_;
  // Set by Step when it leaves the fast path (a lexeme may end before the byte).
  bool crossed_boundary_ = false;
  // Memo of Step from one thread across a lexeme boundary during one mask fill: (set, lexer
  // state, byte) -> the threads after it (at most two), for the uniqueItems checks that follow
  // the walk (the walk itself reads lexeme_ends_ instead: a probe of this table, a cache miss
  // most of the time, cost it about what it saved). Entries are valid for one fill
  // (generation); a copy starts empty.
  class BoundaryMemo {
   public:
    struct Entry {
      uint64_t state_byte = 0;
      uint32_t set = 0;
      uint32_t generation = 0;
      uint32_t size = 0;
      Thread threads[2];
    };
    static constexpr size_t kEntries = 2048;  // power of two
    BoundaryMemo() = default;
    BoundaryMemo(const BoundaryMemo&) {}
    BoundaryMemo& operator=(const BoundaryMemo&) {
      generation_ = 0;
      return *this;
    }
    void Begin() {
      if (++last_generation_ == 0) {  // wrapped: forget every entry
        std::fill(table_.begin(), table_.end(), Entry{});
        last_generation_ = 1;
      }
      generation_ = last_generation_;
    }
    void End() { generation_ = 0; }
    // The slot of (thread, byte), or nullptr outside a mask fill.
    Entry* SlotFor(const Thread& from, uint8_t byte) {
      if (generation_ == 0) return nullptr;
      if (table_.empty()) table_.resize(kEntries);  // on first use (most matchers never)
      const uint64_t h = (Key(from, byte) ^ (uint64_t{from.set} << 21)) * 0x9E3779B97F4A7C15ull;
      return &table_[h >> (64 - 11)];
    }
    bool Hit(const Entry& e, const Thread& from, uint8_t byte) const {
      return e.generation == generation_ && e.set == from.set && e.state_byte == Key(from, byte);
    }
    void Store(Entry* e, const Thread& from, uint8_t byte, const std::vector<Thread>& to) {
      if (to.size() > 2) return;
      // Field by field: an Entry built aside and copied in costs a store-forwarding stall.
      e->state_byte = Key(from, byte);
      e->set = from.set;
      e->generation = generation_;
      e->size = static_cast<uint32_t>(to.size());
      for (size_t i = 0; i < to.size(); ++i) e->threads[i] = to[i];
    }

   private:
    static uint64_t Key(const Thread& from, uint8_t byte) {
      return (uint64_t{from.lexer} << 8) | byte;
    }
    std::vector<Entry> table_;
    uint32_t generation_ = 0;
    uint32_t last_generation_ = 0;
  };
  BoundaryMemo boundary_memo_;
  // Per mask fill: how each thread's lexeme can end (see LexemeEndsOf), and its scratch.
  LexemeEndMemo lexeme_ends_;
  std::vector<LexemeEndMemo::Ending> ends_scratch_;
  // Answers of subtrees walked from one thread, across masks (matcher_mask.cc), and the
  // zeroed scratch rows that captures write into, one per nesting level in use.
  SubtreeMemo subtree_memo_;
  std::vector<std::vector<uint32_t>> capture_rows_;
  size_t capture_depth_ = 0;
  // The last mask and the threads it was computed for (see FillNextTokenBitmask): a mask is a
  // function of the threads alone while their Earley sets stand (TruncateSets drops it).
  std::vector<uint32_t> last_mask_;
  std::vector<Thread> last_mask_threads_;
  uint32_t last_mask_max_set_ = 0;
  bool last_mask_valid_ = false;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_MATCHER_H_
