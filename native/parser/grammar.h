// Grammar: the context-free part of a compiled grammar (rules over terminal and nonterminal
// ids), with the analyses the Earley parser needs precomputed.
//
// Contract. Built once from the IR that jaxguide/grammar.py produces; immutable afterwards and
// shared read-only by every parser (thread-safe). A nonterminal's prediction closure is computed
// the first time a parser predicts it (Prediction: once, under a lock, then read lock-free): a
// grammar's constructor does not pay for the closures of nonterminals no parse reaches. Symbols: terminals are 0 .. T-1, nonterminals
// are T .. T+N-1 (the IR's encoding). The constructor adds an augmented start rule
// S' -> S, drops rules that can derive no terminal string (non-productive; a terminal listed in
// GrammarSpec::empty_terminals counts as unproductive) or that cannot be reached from S, and
// throws GrammarError if S itself derives nothing (the language is empty). Prediction blocks
// (what an Earley set predicts, PredictionBlockOf) are made on first use too and shared by
// every parser, under a lock, up to max_block_cores cores in all.
//
// Dotted rules ("cores") are numbered densely: rule r with k right-hand symbols owns cores
// core_begin(r) .. core_begin(r) + k, the last one being the completed rule. next_symbol(core)
// is kNoSymbol for completed cores, so advancing a dot is `core + 1`.
#ifndef JAXGUIDE_NATIVE_PARSER_GRAMMAR_H_
#define JAXGUIDE_NATIVE_PARSER_GRAMMAR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native/parser/terminal_set.h"
#include "native/support/error.h"
#include "native/support/fork_locks.h"

namespace jaxguide {

// The grammar IR as plain data (what Python hands over).
struct GrammarSpec {
  std::vector<std::string> terminal_names;
  std::vector<std::string> nonterminal_names;
  struct Rule {
    int32_t lhs;               // nonterminal index (0-based, not offset by T)
    std::vector<int32_t> rhs;  // symbols: < T terminal, >= T nonterminal (offset by T)
  };
  std::vector<Rule> rules;
  int32_t start = 0;  // nonterminal index
  // empty_terminals[t]: terminal t matches no string (its regex's language is empty), so it is
  // unproductive like a nonterminal that derives nothing. Missing entries are false.
  std::vector<bool> empty_terminals = {};
};

class Grammar {
 public:
  static constexpr int32_t kNoSymbol = -1;
  // Size limits (GrammarError beyond): keep every index in 32 bits with room to spare.
  static constexpr size_t kMaxSymbols = size_t{1} << 20;
  static constexpr size_t kMaxCores = size_t{1} << 24;

  // The cores all prediction blocks may hold together (~12 bytes each), the nonterminals of
  // the keys that name them counted too; past it PredictionBlockOf answers nullptr.
  static constexpr size_t kMaxBlockCores = size_t{1} << 20;

  explicit Grammar(const GrammarSpec& spec, size_t max_block_cores = kMaxBlockCores);

  size_t num_terminals() const { return num_terminals_; }
  size_t num_nonterminals() const { return nonterminal_names_.size(); }
  size_t num_rules() const { return rule_lhs_.size(); }
  size_t num_cores() const { return core_next_.size(); }
  bool IsTerminal(int32_t symbol) const {
    return symbol >= 0 && static_cast<size_t>(symbol) < num_terminals_;
  }

  // The augmented start rule S' -> S: its cores are start_core() (dot at 0) and
  // start_core() + 1 (complete; an Earley set holding it with origin 0 accepts).
  uint32_t start_core() const { return start_core_; }

  int32_t next_symbol(uint32_t core) const { return core_next_[core]; }
  uint32_t rule_of(uint32_t core) const { return core_rule_[core]; }
  // The nonterminal a rule defines (as a symbol, i.e. offset by T).
  int32_t lhs(uint32_t rule) const { return rule_lhs_[rule]; }
  uint32_t core_begin(uint32_t rule) const { return rule_core_begin_[rule]; }
  bool IsNullable(int32_t symbol) const {
    return !IsTerminal(symbol) && nullable_[symbol - static_cast<int32_t>(num_terminals_)];
  }

  // What predicting `nonterminal` adds. closure: the cores (dot positions, origin = the
  // predicting set) of its rules at dot 0, transitively of the rules of nonterminals predicted
  // by those, and the dots advanced over nullable nonterminals; sorted. nonterminals: those
  // predicted within it (0-based, not offset by T), itself included: a set holding the closure
  // has predicted each of them.
  struct Prediction {
    std::vector<uint32_t> closure;
    std::vector<uint32_t> nonterminals;
  };
  const Prediction& PredictionOf(int32_t nonterminal) const {
    const size_t n = static_cast<size_t>(nonterminal) - num_terminals_;
    const Prediction* known = predictions_[n].load(std::memory_order_acquire);
    return known != nullptr ? *known : ComputePrediction(n);
  }
  // What an Earley set predicts (its items whose origin is the set itself): the union of the
  // predictions of the nonterminals its other items wait for. Every set of every parser that
  // predicts the same cores shares one block (blocks of equal cores are one: equal ids).
  struct PredictionBlock {
    uint32_t id;                  // distinct per distinct `cores`
    std::vector<uint32_t> cores;  // sorted
    // (next symbol, core) for the cores whose dot is not at the end, sorted.
    std::vector<std::pair<int32_t, uint32_t>> waiting;
    TerminalSet allowed;  // the terminals some core expects next
  };
  // The block of `nonterminals` (distinct nonterminal symbols, offset by T, sorted), made on
  // first use; nullptr once the blocks made hold max_block_cores cores (the caller predicts
  // item by item then). Thread-safe; a block lives as long as the grammar.
  const PredictionBlock* PredictionBlockOf(const std::vector<int32_t>& nonterminals) const;
  // A hash of a vector of ids (symbols, cores, set indices), for maps keyed by one.
  struct SymbolsHash {
    template <typename T>
    size_t operator()(const std::vector<T>& symbols) const {
      uint64_t h = symbols.size();
      for (const T s : symbols) h = (h ^ static_cast<uint32_t>(s)) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };

  // The fewest terminals a string derived from the symbols after the dot of `core` can have
  // (0 for a completed core; kNoYield never, since useless rules were pruned). Saturates at
  // kNoYield.
  static constexpr uint32_t kNoYield = 0x3FFFFFFFu;
  uint32_t SuffixYield(uint32_t core) const { return core_suffix_yield_[core]; }

  const std::string& SymbolName(int32_t symbol) const;
  // "lhs -> a b . c" for debugging and error messages.
  std::string CoreToString(uint32_t core) const;

 private:
  void ComputeSuffixYields(const std::vector<const std::vector<int32_t>*>& rhs_of);
  // Computes, stores and returns the prediction of nonterminal n (0-based); O(its closure).
  const Prediction& ComputePrediction(size_t n) const;

  size_t num_terminals_;
  std::vector<std::string> terminal_names_;
  std::vector<std::string> nonterminal_names_;  // the augmented start is the last one
  std::vector<int32_t> rule_lhs_;
  std::vector<uint32_t> rule_core_begin_;
  std::vector<int32_t> core_next_;
  std::vector<uint32_t> core_rule_;
  std::vector<bool> nullable_;
  std::vector<std::vector<uint32_t>> rules_of_;  // per nonterminal (0-based), its rules
  // predictions_[n]: null until ComputePrediction(n) stores what owned_predictions_ holds.
  std::unique_ptr<std::atomic<const Prediction*>[]> predictions_;
  mutable std::mutex prediction_mutex_;  // guards the rest and the blocks below
  ForkLockRegistration prediction_fork_lock_{&prediction_mutex_};  // (fork_locks.h)
  mutable std::vector<std::unique_ptr<const Prediction>> owned_predictions_;
  mutable std::vector<uint32_t> seen_core_, seen_nt_;  // stamps of ComputePrediction's walks
  mutable uint32_t stamp_ = 0;
  std::vector<uint32_t> core_suffix_yield_;
  uint32_t start_core_ = 0;

  size_t max_block_cores_;
  // Guarded by prediction_mutex_ (PredictionBlockOf takes it after PredictionOf's own turns).
  mutable std::vector<std::unique_ptr<const PredictionBlock>> owned_blocks_;
  mutable size_t block_cores_ = 0;
  mutable std::unordered_map<std::vector<int32_t>, const PredictionBlock*, SymbolsHash>
      block_by_nonterminals_;
  mutable std::unordered_map<std::vector<uint32_t>, const PredictionBlock*, SymbolsHash>
      block_by_cores_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_PARSER_GRAMMAR_H_
