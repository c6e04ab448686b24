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
// Representation. A set's items whose origin is the set itself (its predictions) are not stored
// item by item: the set names the grammar's shared PredictionBlock of the nonterminals its
// other items wait for (Grammar::PredictionBlockOf), and only the other items (the kernel,
// completions, nullable advances) are the set's own. A set that predicts few cores (below
// min_block_cores), or any set past the grammar's block budget, holds its predictions as
// items of its own.
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

  // Below min_block_cores cores (the closures a set predicts, summed) a set predicts item by
  // item instead of naming a shared block: a block's lookup costs more than a few items (JSON's
  // sets predict a handful; a SQL keyword's, a hundred).
  static constexpr size_t kMinBlockCores = 24;
  explicit EarleyParser(std::shared_ptr<const Grammar> grammar,
                        size_t max_items_per_set = kDefaultMaxItemsPerSet,
                        size_t min_block_cores = kMinBlockCores);
  EarleyParser(const EarleyParser& other) = default;
  EarleyParser& operator=(const EarleyParser& other) = default;
  EarleyParser(EarleyParser&& other) = default;
  EarleyParser& operator=(EarleyParser&& other) = default;
  // Leaves its sets' storage to the spare storage of later parsers (SpareSets).
  ~EarleyParser();

  // Spare set storage: the set arrays of parsers that went away, their vectors' capacity kept,
  // for new parsers to start from (a fresh matcher's first masks otherwise spend a third of
  // their time in the allocator). Process-wide, under a lock; an array holds the sets its last
  // parser used, at most kMaxSpareSets, and all hold at most kMaxSpareBytes (the rest is freed).
  static constexpr size_t kMaxSpareSets = 512;
  static constexpr size_t kMaxSpareBytes = size_t{8} << 20;
  // The bytes of spare storage held now (for tests).
  static size_t SpareBytes();

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
  // Items of `set`, its predicted ones included.
  size_t NumItems(uint32_t set) const {
    return sets_[set].items.size() + (sets_[set].block ? sets_[set].block->cores.size() : 0);
  }
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
  using PredictionBlock = Grammar::PredictionBlock;
  struct EarleySet {
    // The set's own items: those not in `block`.
    std::vector<Item> items;
    // (next symbol, item index) for every item of `items` whose dot is not at the end, sorted:
    // the items waiting for a given symbol are one equal_range.
    std::vector<std::pair<int32_t, uint32_t>> waiting;
    // The set's predicted items (origin = the set), or nullptr (none, or they are in `items`:
    // fewer than min_block_cores, or past the grammar's block budget).
    const PredictionBlock* block = nullptr;
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
      block = nullptr;
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
  // Fills the waiting index, `allowed` and `accepting` of a filled set.
  void IndexWaiting(EarleySet* set);
  // Adds an item that was not predicted in `set` (origin != the set's index), deduplicated.
  void AddItem(EarleySet* set, Item item);
  [[noreturn]] void ThrowWorkBudget() const;
  [[noreturn]] void ThrowItemBudget() const;
  // MinTerminalsToAccept's tables: of set j (its origins' first), and of `set` with every set
  // it needs.
  void ComputeUpTable(uint32_t j) const;
  void EnsureUpTables(uint32_t set) const;
  // Calls fn(core, origin) for every item of set `index` waiting for `symbol` (its own items
  // and its block's).
  template <typename Fn>
  void ForEachWaiting(uint32_t index, int32_t symbol, Fn&& fn) const;
  // Calls fn(core, origin) for every item of set `index`, its block's included.
  template <typename Fn>
  void ForEachItem(uint32_t index, Fn&& fn) const;
  // The block predicting the nonterminals `predicted_` holds (sorted), through the parser's own
  // map of the blocks it met (nullptr past the grammar's block budget).
  const PredictionBlock* BlockOfPredicted();

  struct SpareSets;
  static SpareSets& Spares();
  // The heap bytes a set array holds (its capacity), as SpareSets counts them.
  static size_t StorageBytes(const std::vector<EarleySet>& sets);

  std::shared_ptr<const Grammar> grammar_;
  size_t max_items_per_set_;
  size_t min_block_cores_;
  // sets_[0, num_sets_) are the live sets; the rest are popped sets kept for reuse.
  std::vector<EarleySet> sets_;
  size_t num_sets_ = 0;
  size_t sets_used_ = 0;  // the most sets live at once (sets_ beyond: inherited spare storage)
  // Memo of Merge: constituents -> merged set, and num_sets_ after the merge (creation order;
  // Truncate(n) pops the entries made while more than n sets stood).
  struct MergeEntry {
    std::vector<uint32_t> sets;
    uint32_t result;
    size_t created;
  };
  std::vector<MergeEntry> merges_;
  // The same memo, indexed (entries leave with those of merges_).
  std::unordered_map<std::vector<uint32_t>, uint32_t, Grammar::SymbolsHash> merge_index_;
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
  // The nonterminals the set being built predicts (its own items wait for them), and the
  // blocks this parser met by those nonterminals (the grammar's, behind its lock, on a miss).
  std::vector<int32_t> predicted_;
  std::unordered_map<std::vector<int32_t>, const PredictionBlock*, Grammar::SymbolsHash>
      blocks_met_;
  // Per nonterminal / per core: the build_ number of the set being built when it was last
  // predicted / added as a predicted item (origin = that set). A new number per BuildSet.
  std::vector<uint32_t> predicted_stamp_;
  std::vector<uint32_t> core_stamp_;
  // Per nonterminal: the build_ number of the set being built when an item of its own was found
  // waiting for it (it is in predicted_ then).
  std::vector<uint32_t> awaited_stamp_;
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
