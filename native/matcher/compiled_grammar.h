// CompiledGrammar: a grammar compiled against a tokenizer — the rules (Grammar), the lexer over
// its terminals, the %ignore set, and the TokenizerInfo whose trie masks are walked over.
//
// Contract. Immutable after construction except for caches (the lexer's states, the lexer-only
// masks, the first-lexeme masks, the rules' prediction blocks), which are safe to use from
// many threads at once; one CompiledGrammar is shared by every Matcher of every sequence that
// uses the grammar.
#ifndef JAXGUIDE_NATIVE_MATCHER_COMPILED_GRAMMAR_H_
#define JAXGUIDE_NATIVE_MATCHER_COMPILED_GRAMMAR_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native/lexer/code_point_dfa.h"
#include "native/lexer/lexer_dfa.h"
#include "native/matcher/string_text.h"
#include "native/matcher/unique_items.h"
#include "native/parser/grammar.h"
#include "native/parser/terminal_set.h"
#include "native/support/fork_locks.h"
#include "native/tokenizer/tokenizer_info.h"

namespace jaxguide {

struct TerminalSpec {
  std::string name;
  std::string regex;  // Python `re` syntax
  bool lazy = false;  // first-match lexemes (else maximal munch)
  // Bytes that may not come right after a lexeme of this terminal (a trailing negative
  // lookahead of the source regex); the end of input is never restricted.
  std::string forbidden_next = {};
  // Bytes before which a matching lexeme may also end although the byte could continue it
  // (a lookahead that stops the lexeme early, e.g. before `${`); both lexings are kept.
  std::string may_end_before = {};
  // When set, the terminal's language is this automaton's (state 0 starts; the sets of one
  // state are non-empty and disjoint; targets are states) and `regex` is only its name for
  // messages: JSON Schema's digit automata (multipleOf), which no regex writes compactly.
  std::shared_ptr<const CodePointAutomaton> automaton = {};
};

struct CompiledGrammarSpec {
  std::vector<TerminalSpec> terminals;
  std::vector<std::string> nonterminal_names;
  std::vector<GrammarSpec::Rule> rules;
  int32_t start = 0;
  std::vector<int32_t> ignore;  // terminal ids
  // Special-token terminals: (terminal id, token id). Such a terminal is not lexed from bytes:
  // the token (which has no bytes) is allowed where the parser allows the terminal after the
  // current lexeme ends, and accepting it scans the terminal.
  std::vector<std::pair<int32_t, uint32_t>> special_tokens;
  // Terminals that open a JSON array whose items must differ (uniqueItems): the matcher checks
  // those arrays' items beyond the grammar (unique_items.h).
  std::vector<int32_t> unique_array_opens;
  // Terminals that open a JSON object whose keys the matcher checks (property_order "any"):
  // each key at most once (the grammar counts the required members).
  std::vector<int32_t> keyed_object_opens;
};

// The part of the masks below one trie node that depends on the lexer state alone (see
// CompiledGrammar::LexemeMaskOf).
struct LexemeMask {
  // The nonzero bitmask words (word index, bits), ascending by index, of the tokens below the
  // node whose every byte only continues the current lexeme (the lexeme cannot end before any
  // of them): allowed iff the lexer survives them, whatever the parser state.
  std::vector<std::pair<uint32_t, uint32_t>> words;
  // Trie nodes below the node before whose byte the lexeme may end (so the parser decides),
  // with the lexer state before that byte. Their subtrees are walked per mask. Left out: nodes
  // whose byte the lexeme cannot read and no terminal starts (dead in every parser state).
  std::vector<std::pair<uint32_t, LexerDfa::StateId>> frontier;

  // Root masks of states that read any JSON-string text of up to a slice's max_chars without a
  // boundary: that string slice (level slice - 1) is allowed as a whole and `words` /
  // `frontier` come from a walk of the slice's other tokens only. `trie`: which trie the
  // frontier nodes index (CompiledGrammar::TrieOf: 0 = all tokens, k = slice k - 1's rest).
  uint8_t slice = 0;
  uint8_t trie = 0;
  // Root masks without the longest slice: whether the search for it stopped at a lexeme
  // boundary (some text ends the lexeme; the next one may read on) rather than at a text the
  // lexer cannot read (dead). Only then can the parser let the longest slice through
  // (Matcher::ReadsAnyTextAcrossBoundaries).
  bool text_meets_boundary = false;
  // Set by a matcher whose search across that boundary ran out of rows (the next ones skip
  // it; a hint only, so relaxed atomics suffice).
  mutable std::atomic<bool> text_search_ran_out{false};

  size_t MemoryBytes() const {
    return sizeof(LexemeMask) + words.capacity() * sizeof(words[0]) +
           frontier.capacity() * sizeof(frontier[0]);
  }
};

// A concurrent, insert-only map (trie node, lexer state) -> LexemeMask: lock-free lookups (an
// open-addressing table of atomic pointers), bounded in entries and bytes. Entries live as
// long as the map, so returned pointers stay valid while the CompiledGrammar does.
class LexemeMaskCache {
 public:
  static constexpr size_t kMaxEntries = 8192;
  static constexpr size_t kMaxBytes = size_t{128} << 20;

  LexemeMaskCache();
  ~LexemeMaskCache();
  LexemeMaskCache(const LexemeMaskCache&) = delete;
  LexemeMaskCache& operator=(const LexemeMaskCache&) = delete;

  const LexemeMask* Find(uint64_t key) const;
  // Whether an insertion may still succeed (a soft bound: racing inserts may pass it together;
  // the table has room for twice kMaxEntries).
  bool HasRoom() const;
  // Inserts `mask` under `key` unless present; returns the stored mask (ours or the one a
  // concurrent insert stored first).
  const LexemeMask* Insert(uint64_t key, std::unique_ptr<LexemeMask> mask);

 private:
  struct Entry {
    uint64_t key;
    std::unique_ptr<LexemeMask> mask;
  };
  static constexpr size_t kSlots = 4 * kMaxEntries;  // power of two
  // The open-addressing table is cut into segments allocated on first insert (a missing
  // segment reads as empty slots), so a grammar pays for the few segments its entries touch
  // (most use a few dozen entries), not for 256 KiB of slots per compile.
  static constexpr size_t kSegmentSlots = 1024;
  static constexpr size_t kSegments = kSlots / kSegmentSlots;
  using Segment = std::array<std::atomic<Entry*>, kSegmentSlots>;
  std::atomic<Entry*>* SlotIfPresent(size_t slot) const;
  std::atomic<Entry*>& SlotForInsert(size_t slot);
  std::array<std::atomic<Segment*>, kSegments> segments_{};
  // Every stored entry (owned), so destruction does not scan the slots. Inserts are rare (one
  // per cold lexer-only walk), so a mutex here costs nothing measurable.
  std::mutex stored_mutex_;
  ForkLockRegistration stored_fork_lock_{&stored_mutex_};  // held across fork()
  std::vector<std::unique_ptr<Entry>> stored_;
  std::atomic<size_t> entries_{0};
  std::atomic<size_t> bytes_{0};
};

class CompiledGrammar {
 public:
  // LexemeMaskOf is used only for subtrees of at least this many trie nodes (smaller ones are
  // cheaper to walk than to look up).
  static constexpr uint32_t kMinCachedSubtree = 256;

  // Throws GrammarError (bad rules, empty language, a bad or unsupported terminal regex — the
  // message names the terminal) or BudgetExceededError.
  CompiledGrammar(const CompiledGrammarSpec& spec, std::shared_ptr<const TokenizerInfo> tokenizer);

  const Grammar& grammar() const { return *grammar_; }
  std::shared_ptr<const Grammar> shared_grammar() const { return grammar_; }
  const LexerDfa& lexer() const { return *lexer_; }
  bool IsLazy(uint32_t terminal) const { return lazy_[terminal]; }
  // Whether a lexeme of `terminal` may not end right before `byte` (TerminalSpec::forbidden_next).
  bool ForbidsNext(uint32_t terminal, uint8_t byte) const {
    return has_follow_restrictions_ &&
           ((forbidden_next_[terminal][byte >> 6] >> (byte & 63)) & 1) != 0;
  }
  // Whether a lexeme of `terminal` may end before `byte` even if `byte` continues it
  // (TerminalSpec::may_end_before).
  bool MayEndBefore(uint32_t terminal, uint8_t byte) const {
    return has_follow_restrictions_ &&
           ((may_end_before_[terminal][byte >> 6] >> (byte & 63)) & 1) != 0;
  }
  // The lexer state before a lexeme where the Earley set allows `allowed` (plus the %ignore'd
  // terminals that can lead somewhere there: see IgnoredThatLeadOn); `accepting`: whether the
  // set is a complete sentence. Thread-safe; the lexer caches the state per terminal set.
  LexerDfa::StateId StartState(const TerminalSet& allowed, bool accepting) const;
  // Whether no terminal's lexeme starts with `byte`: then no start state (a subset of every
  // terminal's) reads it. Builds that transition of the all-terminals start state on first use
  // (charged to the calling thread's build meter, as any transition); false where the build
  // ran out of budget (the error state is not dead).
  bool NoLexemeStartsWith(uint8_t byte) const {
    return lexer_->IsDead(lexer_->Next(lexer_->StartState(), byte));
  }
  // Whether no thread lives past `byte` in any parser state, where `step` is NextWithBoundary's
  // answer at a lexeme boundary: the lexeme cannot read the byte and no lexeme starts with it
  // (a letter after an operator), so the parser need not be asked.
  bool DeadAtBoundary(uint32_t step, uint8_t byte) const {
    return lexer_->IsDead(step & ~LexerDfa::kBoundaryBit) && NoLexemeStartsWith(byte);
  }
  // The %ignore'd terminals that a sentence can continue after at a point where the parser
  // allows `allowed` and the input is not a sentence yet (else every one): those with a lexeme
  // followed by a byte that starts an allowed terminal, or another such ignored lexeme. An
  // ignored lexeme that can only end before bytes nothing here starts (lark.lark's `# ...`
  // comment, which ends before a newline, after `NAME` that needs a `:` on the same line)
  // leads nowhere: allowing it would let output run on forever without a way to finish. Exact
  // for exclusion (an excluded terminal is never part of a sentence here); an included one may
  // still have lexemes that lead nowhere.
  TerminalSet IgnoredThatLeadOn(const TerminalSet& allowed) const;
  const TokenizerInfo& tokenizer() const { return *tokenizer_; }
  const TerminalSet& ignore() const { return ignore_; }
  // Containers the matcher checks beyond the grammar (unique_items.h): unique arrays
  // (CompiledGrammarSpec::unique_array_opens) and keyed objects (keyed_object_opens).
  // Whether the grammar has any; which of them `terminal` opens (null: none); and the tokens
  // whose bytes hold a `"` or a `\` / a `[` or a `{` (inside a string, the only ones that can
  // end it or write an escape; outside every checked container, the only ones that can open
  // one).
  bool has_value_checks() const { return !opens_.empty(); }
  bool has_unique_arrays() const { return has_unique_arrays_; }
  bool has_keyed_objects() const { return has_keyed_objects_; }
  const UniqueItems::Scanned* ChecksOpenedBy(uint32_t terminal) const {
    if (opens_.empty()) return nullptr;
    const UniqueItems::Scanned& opens = opens_[terminal];
    return opens.unique_array || opens.keyed_object ? &opens : nullptr;
  }
  const std::vector<uint32_t>& tokens_with_quote_or_backslash() const {
    return tokens_with_quote_or_backslash_;
  }
  const std::vector<uint32_t>& tokens_opening_containers() const {
    return tokens_opening_containers_;
  }
  // (token id, terminal id) of special-token terminals, sorted by token id.
  const std::vector<std::pair<uint32_t, uint32_t>>& special_tokens() const {
    return special_tokens_;
  }
  // The special-token terminals of `token_id` (a sorted range of special_tokens()).
  std::pair<const std::pair<uint32_t, uint32_t>*, const std::pair<uint32_t, uint32_t>*>
  SpecialTerminalsOf(uint32_t token_id) const;

  // The lexer-only part of the masks below trie node `node` (its descendants; node 0 is the
  // root: the whole vocabulary) for a single lexing thread in lexer state `state` after the
  // node's bytes. Computed by one trie walk on first use and cached per (node, state),
  // lock-free afterwards; thread-safe. Returns nullptr when the cache is full: the caller walks
  // the subtree itself. Throws BudgetExceededError if the lexer runs out of its budget.
  // `trie`: which trie `node` indexes (TrieOf).
  const LexemeMask* LexemeMaskOf(uint32_t node, LexerDfa::StateId state, uint8_t trie = 0) const;
  // 0: the tokenizer's trie; k >= 1: the trie of the tokens outside string slice k - 1.
  const TokenTrie& TrieOf(uint8_t trie) const {
    return trie == 0 ? tokenizer_->trie() : *tokenizer_->string_slice(trie - 1u).rest;
  }
  // The largest n <= max_chars such that from lexer state `state`, every JSON-string text of
  // up to n characters is read without a lexeme boundary and without the lexer dying (then
  // the string slice of up to n characters is allowed there, whatever the parser state).
  // Cost: one lexer transition per (state within max_chars characters, byte class of text),
  // at most kSliceCheckMaxStates states and, under a build meter (a Matcher's), at most
  // kSliceCheckMaxSteps steps of building them: beyond either, the answer is the depth fully
  // explored. (A state of an unanchored `pattern` of several words costs ~40 us to build, so
  // 64 of them cost more than the walk that a slice saves.) The answer only picks a slice:
  // the mask is the same either way.
  static constexpr size_t kSliceCheckMaxStates = 64;
  static constexpr uint64_t kSliceCheckMaxSteps = uint64_t{1} << 19;
  // Compile time: the work of building the lexer DFA states that the exit-byte searches of
  // all %ignore'd terminals need (ExitBytesOf), in lexer steps (LexerDfa's build meter, 4 per
  // NFA instruction visited; the size of a mask's budget), so a terminal whose states each
  // hold a huge NFA stops there instead of running for seconds. Beyond it, as beyond
  // kExitSearchStates, every byte may follow such a lexeme (the terminal is kept).
  static constexpr uint64_t kExitSearchBuildBudget = uint64_t{50} * 1000 * 1000;
  // `stopped_at_boundary` (optional): set when the answer is below max_chars because some text
  // meets a lexeme boundary there (false: the lexer dies on it, or the search ran out).
  size_t StringTextCharsWithoutBoundary(LexerDfa::StateId state, size_t max_chars,
                                        bool* stopped_at_boundary = nullptr) const;
  // The JSON-string text characters as paths of representative bytes: one form per valid
  // UTF-8 shape of a text character (the ASCII text ranges, then the multi-byte forms), each a
  // list of steps, each step one byte per kind of the bytes allowed at that position, where
  // bytes of a kind share their lexer byte class and their place in every terminal's follow
  // restrictions (so reading every step's bytes in turn meets every lexer transition and
  // lexeme ending that some text character takes). Built on first use; thread-safe.
  struct TextCharForm {
    std::vector<std::vector<uint8_t>> steps;
  };
  const std::vector<TextCharForm>& text_char_forms() const;
  // The NFA-level proof that a state reads any string text (string_text.h), built on first use
  // (where the exploration above falls short).
  const StringTextAnalysis& string_text() const;
  bool ReadsStringTextWithoutBoundary(LexerDfa::StateId state, size_t max_chars) const {
    return StringTextCharsWithoutBoundary(state, max_chars) >= max_chars;
  }

  // Masks of matchers that have scanned nothing yet: every thread on the initial Earley set
  // (no lexeme yet, the first lexeme in progress, or %ignore'd text before it). Such a mask is
  // a function of the threads' lexer states alone, so every matcher of the grammar shares it,
  // once one computed it: a new matcher's first mask (a walk of the whole trie from the start
  // symbol's set) is a copy, and so are those inside a first number or keyword. The grammar's
  // mask: no required prefix, before value checks such as uniqueItems filter it. `steps`: the
  // mask budget the walk used (a matcher with a smaller budget walks itself).
  struct FirstLexemeMask {
    std::vector<LexerDfa::StateId> lexer_states;  // the threads' states, in their order
    std::vector<uint32_t> row;
    uint64_t steps;
  };
  static constexpr size_t kMaxFirstLexemeMasks = 32;
  // The stored mask of these lexer states, or nullptr. Lock-free.
  const FirstLexemeMask* FirstLexemeMaskOf(const std::vector<LexerDfa::StateId>& states) const;
  // Stores a mask for `states` unless one is stored or kMaxFirstLexemeMasks are (then later
  // ones are walked each time). Lock-free.
  void OfferFirstLexemeMask(const std::vector<LexerDfa::StateId>& states, const uint32_t* row,
                            size_t width, uint64_t steps) const;

 private:
  // LexemeMaskOf's walk: fills mask->words and mask->frontier from the subtree of `node` (of
  // TrieOf(mask->trie)) read from lexer state `state`.
  void WalkLexerOnly(uint32_t node, LexerDfa::StateId state, LexemeMask* mask) const;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::shared_ptr<const Grammar> grammar_;
  std::unique_ptr<LexerDfa> lexer_;
  TerminalSet ignore_;
  std::vector<bool> lazy_;
  std::vector<std::array<uint64_t, 4>> forbidden_next_;  // per terminal, a 256-bit byte set
  std::vector<std::array<uint64_t, 4>> may_end_before_;  // per terminal, a 256-bit byte set
  bool has_follow_restrictions_ = false;
  std::vector<std::pair<uint32_t, uint32_t>> special_tokens_;
  TerminalSet special_terminals_;
  std::vector<UniqueItems::Scanned> opens_;  // per terminal (empty: no checked container)
  bool has_unique_arrays_ = false, has_keyed_objects_ = false;
  std::vector<uint32_t> tokens_with_quote_or_backslash_, tokens_opening_containers_;
  // Per %ignore'd terminal: the bytes that may follow one of its lexemes (maximal munch and
  // follow restrictions applied), and the bytes that may start one.
  using ByteSet = std::array<uint64_t, 4>;
  struct IgnoredTerminal {
    uint32_t terminal;
    ByteSet exits;
    ByteSet firsts;
  };
  static constexpr size_t kExitSearchStates = 4096;  // beyond: every byte may follow
  ByteSet ExitBytesOf(uint32_t terminal) const;
  std::vector<IgnoredTerminal> ignored_;
  mutable LexemeMaskCache lexeme_masks_;
  mutable std::once_flag string_text_once_;
  mutable std::once_flag text_char_forms_once_;
  mutable std::vector<TextCharForm> text_char_forms_;
  mutable std::unique_ptr<StringTextAnalysis> string_text_;
  mutable std::atomic<bool> string_text_ready_{false};
  // Filled in order, each slot by compare-and-swap; the offer that wins a slot owns its mask
  // through the same slot of first_lexeme_owned_.
  mutable std::array<std::atomic<const FirstLexemeMask*>, kMaxFirstLexemeMasks>
      first_lexeme_masks_{};
  mutable std::array<std::unique_ptr<const FirstLexemeMask>, kMaxFirstLexemeMasks>
      first_lexeme_owned_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_COMPILED_GRAMMAR_H_
