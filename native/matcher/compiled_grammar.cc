// CompiledGrammar construction: the Grammar (rules) and one LexerDfa over all terminals.
#include "native/matcher/compiled_grammar.h"

#include <utility>

#include "native/lexer/regex_error.h"
#include "native/lexer/regex_parser.h"
#include "native/support/error.h"

namespace jaxguide {

CompiledGrammar::CompiledGrammar(const CompiledGrammarSpec& spec,
                                 std::shared_ptr<const TokenizerInfo> tokenizer)
    : tokenizer_(std::move(tokenizer)) {
  GrammarSpec rules;
  for (const TerminalSpec& terminal : spec.terminals) {
    rules.terminal_names.push_back(terminal.name);
    lazy_.push_back(terminal.lazy);
  }
  rules.nonterminal_names = spec.nonterminal_names;
  rules.rules = spec.rules;
  rules.start = spec.start;
  grammar_ = std::make_shared<const Grammar>(rules);

  ignore_ = TerminalSet(spec.terminals.size());
  for (int32_t t : spec.ignore) {
    if (t < 0 || static_cast<size_t>(t) >= spec.terminals.size()) {
      throw GrammarError("%ignore terminal id " + std::to_string(t) + " is out of range");
    }
    ignore_.Insert(static_cast<size_t>(t));
  }
  std::vector<RegexNode> parsed;
  parsed.reserve(spec.terminals.size());
  for (size_t i = 0; i < spec.terminals.size(); ++i) {
    try {
      parsed.push_back(ParseRegex(spec.terminals[i].regex));
    } catch (const RegexError& e) {
      throw GrammarError("terminal " + spec.terminals[i].name + " /" + spec.terminals[i].regex +
                         "/: " + e.message() + " at position " + std::to_string(e.offset()));
    }
  }
  LexerOptions options;
  options.lazy_terminals = lazy_;
  lexer_ = std::make_unique<LexerDfa>(parsed, options);
}

LexerDfa::StateId CompiledGrammar::StartState(const TerminalSet& allowed) const {
  TerminalSet with_ignore = allowed;
  with_ignore.UnionWith(ignore_);
  std::vector<uint32_t> ids;
  with_ignore.ForEach([&](size_t t) { ids.push_back(static_cast<uint32_t>(t)); });
  return lexer_->StartState(ids);
}

}  // namespace jaxguide
