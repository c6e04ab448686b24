// EarleyParser: an Earley recognizer over terminal ids whose sets form a graph, not a line.
//
// Contract. One parser per sequence (not thread-safe; the Grammar it reads is shared). Sets are
// identified by index. Set 0 is the initial set (the start symbol predicted). Scan(k, t) returns
// the set reached from set k by the terminal t — independent of how many bytes t spanned, so it
// is memoized per (k, t) — or kNoSet if no item of k expects t. Every non-empty set is viable:
// the terminals read so far are a prefix of some sentence (the Grammar pruned useless rules).
// Sets are appended to an arena; Truncate(n) pops every set with index >= n (and the memo
// entries that lead to them), which is how the matcher rolls back and how the token-trie walk
// undoes its speculative scans. Sets below n are never modified by later scans.
//
// Budgets. A set may hold at most max_items_per_set items; exceeding it throws
// BudgetExceededError (the matcher turns that into its error state). The work of building sets
// (kWorkWeight per item added or found again by prediction and completion: a highly ambiguous
// grammar completes each of many items into many others) is charged to a work meter when one
// is installed (SetWorkMeter; the matcher installs its per-call mask step budget), and past its
// limit throws BudgetExceededError as well.
#ifndef JAXGUIDE_NATIVE_PARSER_EARLEY_PARSER_H_
#define JAXGUIDE_NATIVE_PARSER_EARLEY_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native/parser/grammar.h"
#include "native/parser/terminal_set.h"

namespace jaxguide {

class EarleyParser {
 public:
  static constexpr uint32_t kNoSet = 0xFFFFFFFFu;
  static constexpr size_t kDefaultMaxItemsPerSet = size_t{1} << 18;
  // Work units (the matcher's lexer steps) charged per item added or found again while a set is
  // built (~5-20 ns each: a hash probe, against ~1-2 ns for a cached lexer transition).
  static constexpr uint64_t kWorkWeight = 4;

  explicit EarleyParser(std::shared_ptr<const Grammar> grammar,
                        size_t max_items_per_set = kDefaultMaxItemsPerSet);

  const Grammar& grammar() const { return *grammar_; }

  // The set reached from `set` by `terminal`, or kNoSet. Memoized; may append a new set.
  uint32_t Scan(uint32_t set, uint32_t terminal);

  // The set for the union of several sets reached at the same point of the input by different
  // lexing hypotheses (standard Earley keeps one set per position; this restores that sharing,
  // which keeps ambiguous lexing polynomial). `sets` must be sorted and distinct, with at least
  // two members. The merged set is the closure of the members' items, those predicted in a
  // member being predicted again in the merged set. Memoized per `sets`.
  uint32_t Merge(const std::vector<uint32_t>& sets);

  // The fewest terminals still to read before the input read up to `set` is a sentence (0 if
  // the set accepts): exact for the parser (a shortest completion of some derivation), blind to
  // the lexer (a terminal counts 1 whatever its bytes). Grammar::kNoYield if `set` is kNoSet.
  // Cost: linear in the items of `set` and of the sets its items' origins lead back to, the
  // first time; those sets' tables are kept (until popped), so a later query pays only for
  // sets it has not seen.
  uint32_t MinTerminalsToAccept(uint32_t set) const;

  // Terminals some item of `set` expects next.
  const TerminalSet& AllowedTerminals(uint32_t set) const { return sets_[set].allowed; }
  // True if the terminals read up to `set` form a complete sentence.
  bool IsAccepting(uint32_t set) const { return sets_[set].accepting; }

  size_t num_sets() const { return num_sets_; }
  size_t NumItems(uint32_t set) const { return sets_[set].items.size(); }
  // Pops every set with index >= num_sets (num_sets >= 1: the initial set stays).
  void Truncate(size_t num_sets);
  // Items created since construction (a work counter for budgets and benchmarks).
  uint64_t items_created() const { return items_created_; }
  // Charges the work of building sets to *used (kWorkWeight per item added or found again);
  // once *used exceeds `limit`, the set being built is dropped and BudgetExceededError thrown.
  // nullptr: unmetered. The meter is not owned; clear it before it goes away.
  void SetWorkMeter(uint64_t* used, uint64_t limit) {
    work_used_ = used;
    work_limit_ = limit;
  }
  uint64_t* work_meter() const { return work_used_; }
  // Raises the installed meter's limit (a call that reads more input may do more work).
  void ExtendWorkLimit(uint64_t steps) { work_limit_ += steps; }

 private:
  struct Item {
    uint32_t core;
    uint32_t origin;  // set index where the item's rule was predicted
  };
  struct EarleySet {
    std::vector<Item> items;
    // (next symbol, item index) for every item whose dot is not at the end, sorted: the items
    // waiting for a given symbol are one equal_range.
    std::vector<std::pair<int32_t, uint32_t>> waiting;
    TerminalSet allowed;
    bool accepting = false;
    // Memo of Scan: (terminal, resulting set).
    std::vector<std::pair<uint32_t, uint32_t>> scans;
    // Signature of the set's future (see BuildSet): an order-independent hash of its waiting
    // items, origins equal to the set itself written as kSelf, and of `accepting`.
    uint64_t signature = 0;
    // The next older live set in this set's signature bucket (kNoSet: none); see sig_heads_.
    uint32_t same_bucket = kNoSet;
    bool indexed = false;  // in its signature bucket (a live set that is no duplicate)
    // MinTerminalsToAccept's table for this set (once up_done): nonterminal A -> the fewest
    // terminals after A completes here until the sentence can end.
    mutable std::unordered_map<int32_t, uint32_t> up;
    mutable bool up_done = false;

    // Empties the set for reuse, keeping the capacity of its vectors.
    void Clear(size_t num_terminals) {
      items.clear();
      waiting.clear();
      allowed.Reset(num_terminals);
      accepting = false;
      scans.clear();
      up.clear();
      up_done = false;
      indexed = false;
    }
  };

  // Builds a set from the kernel items in scratch_kernel_ and appends it; returns its index.
  // kernel_closed: the kernel is closed under completion and nullable advance (Merge), so
  // only predictions are added.
  uint32_t BuildSet(bool kernel_closed = false);
  // Closes `set` (index `index`) under prediction and completion from its kernel.
  void FillSet(EarleySet* set, uint32_t index, bool kernel_closed);
  // Adds an item that was not predicted in `set` (origin != the set's index), deduplicated.
  void AddItem(EarleySet* set, Item item);
  [[noreturn]] void ThrowWorkBudget() const;
  [[noreturn]] void ThrowItemBudget() const;
  // MinTerminalsToAccept's tables: of set j (its origins' first), and of `set` with every set
  // it needs.
  void ComputeUpTable(uint32_t j) const;
  void EnsureUpTables(uint32_t set) const;
  std::pair<const std::pair<int32_t, uint32_t>*, const std::pair<int32_t, uint32_t>*> Waiting(
      const EarleySet& set, int32_t symbol) const;

  std::shared_ptr<const Grammar> grammar_;
  size_t max_items_per_set_;
  // sets_[0, num_sets_) are the live sets; the rest are popped sets kept for reuse.
  std::vector<EarleySet> sets_;
  size_t num_sets_ = 0;
  // Memo of Merge: constituents -> merged set, and num_sets_ after the merge (creation order;
  // Truncate(n) pops the entries made while more than n sets stood).
  struct MergeEntry {
    std::vector<uint32_t> sets;
    uint32_t result;
    size_t created;
  };
  std::vector<MergeEntry> merges_;
  struct SetsHash {
    size_t operator()(const std::vector<uint32_t>& sets) const {
      uint64_t h = sets.size();
      for (const uint32_t s : sets) h = (h ^ s) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  // The same memo, indexed (entries leave with those of merges_).
  std::unordered_map<std::vector<uint32_t>, uint32_t, SetsHash> merge_index_;
  // Undo log of Scan memo entries: (source set, num_sets_ after the scan), in creation order;
  // Truncate(n) pops the entries made while more than n sets stood (the only ones that can
  // name a popped set: a scan may return an older, equivalent set).
  std::vector<std::pair<uint32_t, size_t>> scan_log_;
  // Live sets by signature, to find an equivalent of a set just built: per bucket (signature
  // modulo its power-of-two size) the newest live set, which chains to older ones through
  // EarleySet::same_bucket. Sets are pushed and popped as a stack, so a popped set is always
  // the head of its bucket (no allocation per set, unlike a node-based multimap).
  std::vector<uint32_t> sig_heads_;
  size_t BucketOf(uint64_t signature) const {
    return static_cast<size_t>(signature ^ (signature >> 32)) & (sig_heads_.size() - 1);
  }
  // Adds set `index` (the newest) to its bucket, growing (and refilling) the buckets as needed.
  void IndexSignature(uint32_t index);
  // SameFuture's scratch (the two sets' normalized waiting items).
  mutable std::vector<uint64_t> future_a_, future_b_;
  static constexpr uint32_t kSelf = 0xFFFFFFFEu;
  // The signature of set `index` (its waiting items and `accepting`).
  uint64_t Signature(uint32_t index) const;
  // Whether sets a and b have the same waiting items (origins equal to the set itself
  // matched as such) and the same `accepting`.
  bool SameFuture(uint32_t a, uint32_t b) const;
  uint64_t items_created_ = 0;
  uint64_t* work_used_ = nullptr;
  uint64_t work_limit_ = 0;

  // Scratch for BuildSet (reused to avoid allocation): kernel items, the dedup table of the
  // items that were not predicted in the set being built.
  std::vector<Item> scratch_kernel_;
  std::vector<uint64_t> dedup_keys_;
  std::vector<uint32_t> dedup_stamp_;
  uint32_t stamp_ = 0;
  size_t dedup_count_ = 0;
  // Per nonterminal / per core: the build_ number of the set being built when it was last
  // predicted / added as a predicted item (origin = that set). A new number per BuildSet.
  std::vector<uint32_t> predicted_stamp_;
  std::vector<uint32_t> core_stamp_;
  uint32_t build_ = 0;
  // FillSet's counting sort of the waiting index: per symbol a count (zero between builds),
  // and the symbols present in the set being built.
  std::vector<uint32_t> symbol_count_;
  std::vector<int32_t> symbols_present_;
  // Adds the prediction closure of `nonterminal` (a symbol) to `set` (index `index`).
  void Predict(EarleySet* set, uint32_t index, int32_t nonterminal);
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_PARSER_EARLEY_PARSER_H_
