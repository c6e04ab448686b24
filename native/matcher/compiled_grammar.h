// CompiledGrammar: a grammar compiled against a tokenizer — the rules (Grammar), the lexer over
// its terminals, the %ignore set, and the TokenizerInfo whose trie masks are walked over.
//
// Contract. Immutable after construction except for the lexer's internal state cache, which is
// safe to use from many threads at once; one CompiledGrammar is shared by every Matcher of
// every sequence that uses the grammar.
#ifndef JAXGUIDE_NATIVE_MATCHER_COMPILED_GRAMMAR_H_
#define JAXGUIDE_NATIVE_MATCHER_COMPILED_GRAMMAR_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native/lexer/lexer_dfa.h"
#include "native/parser/grammar.h"
#include "native/parser/terminal_set.h"
#include "native/tokenizer/tokenizer_info.h"

namespace jaxguide {

struct TerminalSpec {
  std::string name;
  std::string regex;  // Python `re` syntax
  bool lazy = false;  // first-match lexemes (else maximal munch)
};

struct CompiledGrammarSpec {
  std::vector<TerminalSpec> terminals;
  std::vector<std::string> nonterminal_names;
  std::vector<GrammarSpec::Rule> rules;
  int32_t start = 0;
  std::vector<int32_t> ignore;  // terminal ids
};

// The part of a mask that depends on the lexer state alone (see CompiledGrammar::LexemeMask).
struct LexemeMask {
  // Tokens whose every byte only continues the current lexeme (LexemeMayEnd is false at each
  // byte): allowed iff the lexer survives them, whatever the parser state.
  std::vector<uint32_t> bits;  // bitmask_width words
  // Trie nodes before whose byte the lexeme may end (so the parser decides), with the lexer
  // state before that byte. Their subtrees are
  // walked per mask.
  std::vector<std::pair<uint32_t, LexerDfa::StateId>> frontier;
};

class CompiledGrammar {
 public:
  // At most this many lexer states keep a cached LexemeMask (each holds bitmask_width words).
  static constexpr size_t kMaxLexemeMasks = 1024;

  // Throws GrammarError (bad rules, empty language, a bad or unsupported terminal regex — the
  // message names the terminal) or BudgetExceededError.
  CompiledGrammar(const CompiledGrammarSpec& spec, std::shared_ptr<const TokenizerInfo> tokenizer);

  const Grammar& grammar() const { return *grammar_; }
  std::shared_ptr<const Grammar> shared_grammar() const { return grammar_; }
  const LexerDfa& lexer() const { return *lexer_; }
  bool IsLazy(uint32_t terminal) const { return lazy_[terminal]; }
  // The lexer state before a lexeme where the Earley set allows `allowed` (plus %ignore);
  // cached per distinct set of terminals (thread-safe).
  LexerDfa::StateId StartState(const TerminalSet& allowed) const;
  const TokenizerInfo& tokenizer() const { return *tokenizer_; }
  const TerminalSet& ignore() const { return ignore_; }

  // Whether a lexeme read up to lexer state `state` may end before the byte that leads to
  // `next`: some terminal matches in `state` and is lazy, or the byte cannot continue it
  // (maximal munch). When false, the byte only continues the lexeme: no parser step.
  bool LexemeMayEnd(LexerDfa::StateId state, LexerDfa::StateId next) const;

  // The lexer-only part of the mask of a single lexing thread in `state`, computed by one trie walk
  // on first use and cached per state (thread-safe). Returns nullptr when the cache is full: the
  // caller walks the whole trie. Throws BudgetExceededError if the lexer runs out of its budget
  // during the walk.
  std::shared_ptr<const LexemeMask> LexemeMaskOf(LexerDfa::StateId state) const;

 private:
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::shared_ptr<const Grammar> grammar_;
  std::unique_ptr<LexerDfa> lexer_;
  TerminalSet ignore_;
  std::vector<bool> lazy_;
  mutable std::mutex lexeme_masks_mutex_;
  mutable std::unordered_map<LexerDfa::StateId, std::shared_ptr<const LexemeMask>> lexeme_masks_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_COMPILED_GRAMMAR_H_
