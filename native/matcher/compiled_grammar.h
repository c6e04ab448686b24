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
#include <string>
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

class CompiledGrammar {
 public:
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

 private:
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::shared_ptr<const Grammar> grammar_;
  std::unique_ptr<LexerDfa> lexer_;
  TerminalSet ignore_;
  std::vector<bool> lazy_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_COMPILED_GRAMMAR_H_
