// Grammar construction: validation, pruning of useless rules, nullable symbols, dotted-rule
// numbering and per-nonterminal prediction closures.
//
// Design note. The Earley parser predicts a nonterminal many times (every set that expects it),
// so everything that depends only on the grammar is computed here once:
//   * productive / reachable pruning (worklists, linear in the rules): after it, every
//     item of every Earley set lies on a derivation of some terminal string, so "the set is not
//     empty" means "the prefix is viable" — the property masks rely on;
//   * nullable nonterminals (the same worklist), for Aycock-Horspool's nullable completion;
//   * PredictionClosure(N): all cores added, with origin = the current set, when N is predicted
//     (breadth-first over leftmost nonterminals, stepping over nullable ones). Cost
//     O(N * cores) in the worst case, a few milliseconds for a 1,500-rule grammar;
//   * PredictionBlockOf(D): the union of the closures of the nonterminals D, what an Earley set
//     whose items wait for D predicts. A parser keeps a set's predicted items implicit, as a
//     reference to its block: a grammar like SQL's predicts a hundred items after most
//     keywords, and a mask builds hundreds of such sets. Blocks are shared by all parsers
//     (under a lock; a parser keeps its own map of the blocks it met) and deduplicated by
//     their cores, so equal predictions are one block (EarleyParser compares blocks by id);
//     all of them together hold at most max_block_cores cores (and nonterminals of the keys);
//   * SuffixYield(core): the fewest terminals the rest of a dotted rule derives (the shortest
//     yield per nonterminal by Knuth's generalized Dijkstra, O(|cores| log)), for
//     EarleyParser::MinTerminalsToAccept.
#include "native/parser/grammar.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

namespace jaxguide {

namespace {

// For each nonterminal, the rules whose right side holds it (a rule once per occurrence), in
// compressed rows: rules[begin[n] .. begin[n + 1]). Rules with keep(r) false are left out.
struct NonterminalUses {
  std::vector<uint32_t> begin;
  std::vector<uint32_t> rules;
};

template <typename RhsOf, typename Keep>
NonterminalUses UsesOf(size_t num_rules, size_t t_count, size_t n_count, const RhsOf& rhs_of,
                       const Keep& keep) {
  NonterminalUses uses;
  uses.begin.assign(n_count + 1, 0);
  for (size_t r = 0; r < num_rules; ++r) {
    if (!keep(r)) continue;
    for (int32_t s : rhs_of(r)) {
      if (static_cast<size_t>(s) >= t_count) ++uses.begin[static_cast<size_t>(s) - t_count + 1];
    }
  }
  for (size_t n = 0; n < n_count; ++n) uses.begin[n + 1] += uses.begin[n];
  uses.rules.resize(uses.begin[n_count]);
  std::vector<uint32_t> next(uses.begin.begin(), uses.begin.end() - 1);
  for (size_t r = 0; r < num_rules; ++r) {
    if (!keep(r)) continue;
    for (int32_t s : rhs_of(r)) {
      if (static_cast<size_t>(s) >= t_count) {
        uses.rules[next[static_cast<size_t>(s) - t_count]++] = static_cast<uint32_t>(r);
      }
    }
  }
  return uses;
}

// The least fixpoint of "nonterminal N holds iff one of its rules has every symbol holding",
// by a worklist over rules with a count of symbols still missing: linear in the rules' total
// length (a round-robin fixpoint takes as many rounds as the grammar is deep, which is
// quadratic for long rule chains). `lhs_of(r)`: rule r's nonterminal (0-based); `rhs_of(r)`:
// its symbols; `terminal_holds(t)`: whether terminal t holds.
template <typename LhsOf, typename RhsOf, typename TerminalHolds>
std::vector<bool> LeastFixpoint(size_t num_rules, size_t t_count, size_t n_count,
                                const LhsOf& lhs_of, const RhsOf& rhs_of,
                                const TerminalHolds& terminal_holds) {
  constexpr uint32_t kBlocked = 0xFFFFFFFFu;
  std::vector<uint32_t> missing(num_rules, 0);
  std::vector<uint32_t> ready;
  for (size_t r = 0; r < num_rules; ++r) {
    for (int32_t s : rhs_of(r)) {
      const auto index = static_cast<size_t>(s);
      if (index >= t_count) {
        ++missing[r];
      } else if (!terminal_holds(index)) {
        missing[r] = kBlocked;
        break;
      }
    }
    if (missing[r] == 0) ready.push_back(static_cast<uint32_t>(r));
  }
  const NonterminalUses uses = UsesOf(num_rules, t_count, n_count, rhs_of,
                                      [&](size_t r) { return missing[r] != kBlocked; });
  std::vector<bool> holds(n_count, false);
  while (!ready.empty()) {
    const size_t n = lhs_of(ready.back());
    ready.pop_back();
    if (holds[n]) continue;
    holds[n] = true;
    for (uint32_t u = uses.begin[n]; u < uses.begin[n + 1]; ++u) {
      if (--missing[uses.rules[u]] == 0) ready.push_back(uses.rules[u]);
    }
  }
  return holds;
}

}  // namespace

Grammar::Grammar(const GrammarSpec& spec, size_t max_block_cores)
    : num_terminals_(spec.terminal_names.size()),
      terminal_names_(spec.terminal_names),
      nonterminal_names_(spec.nonterminal_names),
      max_block_cores_(max_block_cores) {
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
  // nothing does not). A worklist, linear in the rules' total length (a round-robin fixpoint
  // takes as many rounds as the grammar is deep: quadratic for long rule chains).
  auto terminal_ok = [&](size_t index) {
    return index >= spec.empty_terminals.size() || !spec.empty_terminals[index];
  };
  std::vector<bool> productive = LeastFixpoint(
      spec.rules.size(), t_count, n_count,
      [&](size_t r) { return static_cast<size_t>(spec.rules[r].lhs); },
      [&](size_t r) -> const std::vector<int32_t>& { return spec.rules[r].rhs; }, terminal_ok);
  auto productive_symbol = [&](int32_t s) {
    const auto index = static_cast<size_t>(s);
    if (index >= t_count) return static_cast<bool>(productive[nt(s)]);
    return terminal_ok(index);
  };
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
  // Reachable from the start through usable rules (breadth-first).
  std::vector<std::vector<uint32_t>> spec_rules_of(n_count);
  for (size_t r = 0; r < spec.rules.size(); ++r) {
    spec_rules_of[static_cast<size_t>(spec.rules[r].lhs)].push_back(static_cast<uint32_t>(r));
  }
  std::vector<bool> reachable(n_count, false);
  std::vector<size_t> frontier = {static_cast<size_t>(spec.start)};
  reachable[spec.start] = true;
  while (!frontier.empty()) {
    const size_t n = frontier.back();
    frontier.pop_back();
    for (uint32_t r : spec_rules_of[n]) {
      if (!usable(spec.rules[r])) continue;
      for (int32_t s : spec.rules[r].rhs) {
        if (static_cast<size_t>(s) >= t_count && !reachable[nt(s)]) {
          reachable[nt(s)] = true;
          frontier.push_back(nt(s));
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
  // A terminal is never nullable (lexemes are not empty).
  nullable_ = LeastFixpoint(
      rule_lhs_.size(), t_count, all_nt, [&](size_t r) { return nt(rule_lhs_[r]); },
      [&](size_t r) -> const std::vector<int32_t>& { return *rhs_of[r]; },
      [](size_t) { return false; });
  ComputeSuffixYields(rhs_of);

  rules_of_.resize(all_nt);
  for (size_t r = 0; r < rule_lhs_.size(); ++r) {
    rules_of_[nt(rule_lhs_[r])].push_back(static_cast<uint32_t>(r));
  }
  predictions_.reset(new std::atomic<const Prediction*>[all_nt]);
  for (size_t n = 0; n < all_nt; ++n) predictions_[n].store(nullptr, std::memory_order_relaxed);
}

const Grammar::Prediction& Grammar::ComputePrediction(size_t n) const {
  std::lock_guard<std::mutex> lock(prediction_mutex_);
  if (const Prediction* known = predictions_[n].load(std::memory_order_acquire)) return *known;
  if (seen_core_.empty()) {  // the first prediction: the walks' stamp arrays
    seen_core_.assign(core_next_.size(), 0);
    seen_nt_.assign(nonterminal_names_.size(), 0);
  }
  const uint32_t stamp = ++stamp_;
  auto prediction = std::make_unique<Prediction>();
  std::vector<uint32_t>& closure = prediction->closure;
  auto add_core = [&](uint32_t core) {
    if (seen_core_[core] != stamp) {
      seen_core_[core] = stamp;
      closure.push_back(core);
    }
  };
  auto predict = [&](size_t m) {
    if (seen_nt_[m] == stamp) return;
    seen_nt_[m] = stamp;
    prediction->nonterminals.push_back(static_cast<uint32_t>(m));
    for (uint32_t r : rules_of_[m]) add_core(rule_core_begin_[r]);
  };
  predict(n);
  for (size_t i = 0; i < closure.size(); ++i) {
    const int32_t symbol = core_next_[closure[i]];
    if (symbol == kNoSymbol || IsTerminal(symbol)) continue;
    const size_t m = static_cast<size_t>(symbol) - num_terminals_;
    predict(m);
    if (nullable_[m]) add_core(closure[i] + 1);
  }
  std::sort(closure.begin(), closure.end());
  const Prediction* stored = prediction.get();
  owned_predictions_.push_back(std::move(prediction));
  predictions_[n].store(stored, std::memory_order_release);
  return *stored;
}

const Grammar::PredictionBlock* Grammar::PredictionBlockOf(
    const std::vector<int32_t>& nonterminals) const {
  // The closures first: PredictionOf may take prediction_mutex_ itself (not reentrant).
  std::vector<const Prediction*> predictions;
  predictions.reserve(nonterminals.size());
  for (const int32_t n : nonterminals) predictions.push_back(&PredictionOf(n));
  std::lock_guard<std::mutex> lock(prediction_mutex_);
  const auto known = block_by_nonterminals_.find(nonterminals);
  if (known != block_by_nonterminals_.end()) return known->second;
  std::vector<uint32_t> cores;
  for (const Prediction* prediction : predictions) {
    cores.insert(cores.end(), prediction->closure.begin(), prediction->closure.end());
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  // The budget counts the keys too: many sets of nonterminals may name one block.
  const auto same = block_by_cores_.find(cores);
  if (same != block_by_cores_.end()) {
    if (block_cores_ + nonterminals.size() <= max_block_cores_) {
      block_cores_ += nonterminals.size();
      block_by_nonterminals_.emplace(nonterminals, same->second);
    }
    return same->second;
  }
  if (block_cores_ + cores.size() + nonterminals.size() > max_block_cores_) return nullptr;
  auto block = std::make_unique<PredictionBlock>();
  block->id = static_cast<uint32_t>(owned_blocks_.size());
  block->allowed.Reset(num_terminals_);
  for (const uint32_t core : cores) {
    const int32_t symbol = core_next_[core];
    if (symbol == kNoSymbol) continue;
    block->waiting.emplace_back(symbol, core);
    if (IsTerminal(symbol)) block->allowed.Insert(static_cast<size_t>(symbol));
  }
  std::sort(block->waiting.begin(), block->waiting.end());
  block->cores = cores;
  block_cores_ += cores.size() + nonterminals.size();
  const PredictionBlock* stored = block.get();
  owned_blocks_.push_back(std::move(block));
  block_by_cores_.emplace(std::move(cores), stored);
  block_by_nonterminals_.emplace(nonterminals, stored);
  return stored;
}

void Grammar::ComputeSuffixYields(const std::vector<const std::vector<int32_t>*>& rhs_of) {
  const size_t t_count = num_terminals_;
  const size_t n_count = nonterminal_names_.size();
  const size_t num_rules = rule_lhs_.size();
  auto add = [](uint32_t a, uint32_t b) { return std::min(kNoYield, a + b); };
  // Shortest yields by Knuth's generalization of Dijkstra's algorithm (a rule's yield is a sum,
  // never below any of its parts): a rule is a candidate for its nonterminal once every
  // nonterminal on its right side is final, and the smallest candidate is final. O(|rules|
  // log), where a round-robin Bellman-Ford fixpoint is quadratic on long rule chains.
  std::vector<uint32_t> yield(n_count, kNoYield);
  std::vector<uint32_t> missing(num_rules, 0);
  std::vector<uint32_t> partial(num_rules, 0);
  using Candidate = std::pair<uint32_t, uint32_t>;  // (yield, nonterminal)
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> candidates;
  auto lhs_nt = [&](size_t r) {
    return static_cast<uint32_t>(static_cast<size_t>(rule_lhs_[r]) - t_count);
  };
  for (size_t r = 0; r < num_rules; ++r) {
    for (int32_t s : *rhs_of[r]) {
      if (IsTerminal(s)) {
        partial[r] = add(partial[r], 1);
      } else {
        ++missing[r];
      }
    }
    if (missing[r] == 0) candidates.emplace(partial[r], lhs_nt(r));
  }
  const NonterminalUses uses = UsesOf(
      num_rules, t_count, n_count,
      [&](size_t r) -> const std::vector<int32_t>& { return *rhs_of[r]; },
      [](size_t) { return true; });
  std::vector<bool> final(n_count, false);
  while (!candidates.empty()) {
    const auto [value, n] = candidates.top();
    candidates.pop();
    if (final[n]) continue;
    final[n] = true;
    yield[n] = value;
    for (uint32_t u = uses.begin[n]; u < uses.begin[n + 1]; ++u) {
      const uint32_t r = uses.rules[u];
      partial[r] = add(partial[r], value);
      if (--missing[r] == 0) candidates.emplace(partial[r], lhs_nt(r));
    }
  }
  auto symbol_yield = [&](int32_t s) {
    return IsTerminal(s) ? 1u : yield[static_cast<size_t>(s) - t_count];
  };
  core_suffix_yield_.assign(core_next_.size(), 0);
  for (size_t r = 0; r < num_rules; ++r) {
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
