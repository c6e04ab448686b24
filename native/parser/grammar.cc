// Grammar construction: validation, pruning of useless rules, nullable symbols, dotted-rule
// numbering and per-nonterminal prediction closures.
//
// Design note. The Earley parser predicts a nonterminal many times (every set that expects it),
// so everything that depends only on the grammar is computed here once:
//   * productive / reachable pruning (fixpoints, O(|rules| * |rhs|) per round): after it, every
//     item of every Earley set lies on a derivation of some terminal string, so "the set is not
//     empty" means "the prefix is viable" — the property masks rely on;
//   * nullable nonterminals (fixpoint), for Aycock-Horspool's nullable completion;
//   * PredictionClosure(N): all cores added, with origin = the current set, when N is predicted
//     (breadth-first over leftmost nonterminals, stepping over nullable ones). Cost
//     O(N * cores) in the worst case, a few milliseconds for a 1,500-rule grammar;
//   * SuffixYield(core): the fewest terminals the rest of a dotted rule derives (a Bellman-Ford
//     fixpoint of the shortest yield per nonterminal, O(rounds * |cores|)), for
//     EarleyParser::MinTerminalsToAccept.
#include "native/parser/grammar.h"

#include <algorithm>

namespace jaxguide {

Grammar::Grammar(const GrammarSpec& spec)
    : num_terminals_(spec.terminal_names.size()),
      terminal_names_(spec.terminal_names),
      nonterminal_names_(spec.nonterminal_names) {
  const size_t t_count = num_terminals_;
  const size_t n_count = nonterminal_names_.size();
  if (t_count + n_count + 1 > kMaxSymbols) {
    throw GrammarError("grammar has " + std::to_string(t_count + n_count) +
                       " symbols; the limit is " + std::to_string(kMaxSymbols));
  }
  if (n_count == 0) throw GrammarError("grammar has no rules");
  if (spec.start < 0 || static_cast<size_t>(spec.start) >= n_count) {
    throw GrammarError("start nonterminal " + std::to_string(spec.start) + " is out of range");
  }
  const int32_t symbol_limit = static_cast<int32_t>(t_count + n_count);
  for (const GrammarSpec::Rule& rule : spec.rules) {
    if (rule.lhs < 0 || static_cast<size_t>(rule.lhs) >= n_count) {
      throw GrammarError("rule left-hand side " + std::to_string(rule.lhs) + " is out of range");
    }
    for (int32_t symbol : rule.rhs) {
      if (symbol < 0 || symbol >= symbol_limit) {
        throw GrammarError("rule symbol " + std::to_string(symbol) + " is out of range");
      }
    }
  }
  auto nt = [&](int32_t symbol) { return static_cast<size_t>(symbol) - t_count; };

  // Productive symbols: derive at least one terminal string (a terminal whose regex matches
  // nothing does not).
  std::vector<bool> productive(n_count, false);
  auto productive_symbol = [&](int32_t s) {
    const auto index = static_cast<size_t>(s);
    if (index >= t_count) return static_cast<bool>(productive[nt(s)]);
    return index >= spec.empty_terminals.size() || !spec.empty_terminals[index];
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const GrammarSpec::Rule& rule : spec.rules) {
      if (productive[rule.lhs]) continue;
      if (std::all_of(rule.rhs.begin(), rule.rhs.end(), productive_symbol)) {
        productive[rule.lhs] = changed = true;
      }
    }
  }
  if (!productive[spec.start]) {
    std::string empty;
    size_t listed = 0;
    for (size_t t = 0; t < spec.empty_terminals.size() && t < t_count; ++t) {
      if (!spec.empty_terminals[t]) continue;
      if (listed++ < 5) empty += (empty.empty() ? "" : ", ") + terminal_names_[t];
    }
    if (listed > 5) empty += ", ...";
    throw GrammarError("the grammar's language is empty: the start rule '" +
                       nonterminal_names_[spec.start] + "' derives no string" +
                       (empty.empty() ? std::string()
                                      : " (terminals whose pattern matches nothing: " + empty +
                                            ")"));
  }
  auto usable = [&](const GrammarSpec::Rule& rule) {
    return productive[rule.lhs] && std::all_of(rule.rhs.begin(), rule.rhs.end(),
                                               productive_symbol);
  };
  // Reachable from the start through usable rules.
  std::vector<bool> reachable(n_count, false);
  reachable[spec.start] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (const GrammarSpec::Rule& rule : spec.rules) {
      if (!reachable[rule.lhs] || !usable(rule)) continue;
      for (int32_t s : rule.rhs) {
        if (static_cast<size_t>(s) >= t_count && !reachable[nt(s)]) {
          reachable[nt(s)] = changed = true;
        }
      }
    }
  }

  // Kept rules, then the augmented start S' -> S as the last rule / nonterminal.
  std::vector<const std::vector<int32_t>*> rhs_of;
  for (const GrammarSpec::Rule& rule : spec.rules) {
    if (!reachable[rule.lhs] || !usable(rule)) continue;
    rule_lhs_.push_back(static_cast<int32_t>(t_count) + rule.lhs);
    rhs_of.push_back(&rule.rhs);
  }
  nonterminal_names_.push_back("<start>");
  const std::vector<int32_t> start_rhs = {static_cast<int32_t>(t_count) + spec.start};
  rule_lhs_.push_back(static_cast<int32_t>(t_count + n_count));
  rhs_of.push_back(&start_rhs);

  for (size_t r = 0; r < rule_lhs_.size(); ++r) {
    rule_core_begin_.push_back(static_cast<uint32_t>(core_next_.size()));
    for (int32_t symbol : *rhs_of[r]) {
      core_next_.push_back(symbol);
      core_rule_.push_back(static_cast<uint32_t>(r));
    }
    core_next_.push_back(kNoSymbol);
    core_rule_.push_back(static_cast<uint32_t>(r));
    if (core_next_.size() > kMaxCores) {
      throw GrammarError("grammar has over " + std::to_string(kMaxCores) + " dotted rules");
    }
  }
  start_core_ = rule_core_begin_.back();

  const size_t all_nt = nonterminal_names_.size();
  nullable_.assign(all_nt, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rule_lhs_.size(); ++r) {
      const size_t lhs_nt = nt(rule_lhs_[r]);
      if (nullable_[lhs_nt]) continue;
      const bool all = std::all_of(rhs_of[r]->begin(), rhs_of[r]->end(), [&](int32_t s) {
        return static_cast<size_t>(s) >= t_count && nullable_[nt(s)];
      });
      if (all) nullable_[lhs_nt] = changed = true;
    }
  }

  ComputeSuffixYields(rhs_of);

  std::vector<std::vector<uint32_t>> rules_of(all_nt);
  for (size_t r = 0; r < rule_lhs_.size(); ++r) {
    rules_of[nt(rule_lhs_[r])].push_back(static_cast<uint32_t>(r));
  }
  prediction_closure_.resize(all_nt);
  predicted_nonterminals_.resize(all_nt);
  predicted_terminals_.assign(all_nt, TerminalSet(t_count));
  std::vector<uint32_t> seen_core(core_next_.size(), 0);
  std::vector<uint32_t> seen_nt(all_nt, 0);
  uint32_t stamp = 0;
  for (size_t n = 0; n < all_nt; ++n) {
    ++stamp;
    std::vector<uint32_t>& closure = prediction_closure_[n];
    auto add_core = [&](uint32_t core) {
      if (seen_core[core] != stamp) {
        seen_core[core] = stamp;
        closure.push_back(core);
      }
    };
    auto predict = [&](size_t m) {
      if (seen_nt[m] == stamp) return;
      seen_nt[m] = stamp;
      predicted_nonterminals_[n].push_back(static_cast<uint32_t>(m));
      for (uint32_t r : rules_of[m]) add_core(rule_core_begin_[r]);
    };
    predict(n);
    for (size_t i = 0; i < closure.size(); ++i) {
      const int32_t symbol = core_next_[closure[i]];
      if (symbol == kNoSymbol) continue;
      if (IsTerminal(symbol)) {
        predicted_terminals_[n].Insert(static_cast<size_t>(symbol));
        continue;
      }
      predict(nt(symbol));
      if (nullable_[nt(symbol)]) add_core(closure[i] + 1);
    }
    std::sort(closure.begin(), closure.end());
  }
}

void Grammar::ComputeSuffixYields(const std::vector<const std::vector<int32_t>*>& rhs_of) {
  const size_t t_count = num_terminals_;
  auto add = [](uint32_t a, uint32_t b) { return std::min(kNoYield, a + b); };
  std::vector<uint32_t> yield(nonterminal_names_.size(), kNoYield);
  auto symbol_yield = [&](int32_t s) {
    return IsTerminal(s) ? 1u : yield[static_cast<size_t>(s) - t_count];
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rule_lhs_.size(); ++r) {
      uint32_t total = 0;
      for (int32_t s : *rhs_of[r]) total = add(total, symbol_yield(s));
      uint32_t& best = yield[static_cast<size_t>(rule_lhs_[r]) - t_count];
      if (total < best) {
        best = total;
        changed = true;
      }
    }
  }
  core_suffix_yield_.assign(core_next_.size(), 0);
  for (size_t r = 0; r < rule_lhs_.size(); ++r) {
    const uint32_t first = rule_core_begin_[r];
    const uint32_t last = first + static_cast<uint32_t>(rhs_of[r]->size());  // completed
    for (uint32_t c = last; c-- > first;) {
      core_suffix_yield_[c] = add(symbol_yield(core_next_[c]), core_suffix_yield_[c + 1]);
    }
  }
}

const std::string& Grammar::SymbolName(int32_t symbol) const {
  if (IsTerminal(symbol)) return terminal_names_[static_cast<size_t>(symbol)];
  return nonterminal_names_[static_cast<size_t>(symbol) - num_terminals_];
}

std::string Grammar::CoreToString(uint32_t core) const {
  const uint32_t rule = core_rule_[core];
  std::string out = SymbolName(rule_lhs_[rule]) + " ->";
  for (uint32_t c = rule_core_begin_[rule];; ++c) {
    if (c == core) out += " .";
    if (core_next_[c] == kNoSymbol) break;
    out += " " + SymbolName(core_next_[c]);
  }
  return out;
}

}  // namespace jaxguide
