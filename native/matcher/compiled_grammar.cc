// CompiledGrammar construction: the Grammar (rules) and one LexerDfa over all terminals.
#include "native/matcher/compiled_grammar.h"

#include <algorithm>
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

bool CompiledGrammar::LexemeMayEnd(LexerDfa::StateId state, LexerDfa::StateId next) const {
  if (!lexer_->IsMatch(state)) return false;
  const std::vector<uint32_t>& possible = lexer_->PossibleTerminals(next);
  for (const uint32_t terminal : lexer_->MatchedTerminals(state)) {
    if (lazy_[terminal] || !std::binary_search(possible.begin(), possible.end(), terminal)) {
      return true;
    }
  }
  return false;
}

std::shared_ptr<const LexemeMask> CompiledGrammar::LexemeMaskOf(LexerDfa::StateId state) const {
  {
    std::lock_guard<std::mutex> lock(lexeme_masks_mutex_);
    const auto found = lexeme_masks_.find(state);
    if (found != lexeme_masks_.end()) return found->second;
    if (lexeme_masks_.size() >= kMaxLexemeMasks) return nullptr;
  }
  // Walk the trie with the lexer alone (outside the lock; a concurrent duplicate walk is
  // harmless, the first result stored wins).
  auto mask = std::make_shared<LexemeMask>();
  mask->bits.assign(tokenizer_->bitmask_width(), 0);
  const TokenTrie& trie = tokenizer_->trie();
  const auto& nodes = trie.nodes();
  std::vector<LexerDfa::StateId> at_depth(trie.max_depth() + 1);
  at_depth[0] = state;
  for (size_t i = 1; i < nodes.size();) {
    const TokenTrie::Node& node = nodes[i];
    const LexerDfa::StateId parent = at_depth[node.depth - 1];
    const LexerDfa::StateId next = lexer_->Next(parent, node.byte());
    if (LexemeMayEnd(parent, next)) {
      mask->frontier.emplace_back(static_cast<uint32_t>(i), parent);
      i += node.subtree_size();
      continue;
    }
    if (lexer_->IsError(next)) throw BudgetExceededError("lexer DFA budget exceeded");
    if (lexer_->IsDead(next)) {
      i += node.subtree_size();
      continue;
    }
    at_depth[node.depth] = next;
    if (node.has_token()) {
      mask->bits[node.token >> 5] |= uint32_t{1} << (node.token & 31);
      for (uint32_t id : trie.DuplicateTokens(node))
        mask->bits[id >> 5] |= uint32_t{1} << (id & 31);
    }
    ++i;
  }
  std::lock_guard<std::mutex> lock(lexeme_masks_mutex_);
  return lexeme_masks_.emplace(state, std::move(mask)).first->second;
}

LexerDfa::StateId CompiledGrammar::StartState(const TerminalSet& allowed) const {
  TerminalSet with_ignore = allowed;
  with_ignore.UnionWith(ignore_);
  std::vector<uint32_t> ids;
  with_ignore.ForEach([&](size_t t) { ids.push_back(static_cast<uint32_t>(t)); });
  return lexer_->StartState(ids);
}

}  // namespace jaxguide
