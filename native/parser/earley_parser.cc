// Earley recognizer with Aycock-Horspool nullable handling and precomputed prediction closures.
//
// Design note. A set is built from its kernel (the items advanced over the scanned terminal) by
// a worklist: an item whose dot is before a nonterminal N adds N's precomputed prediction
// closure once per set (origin = this set) and, if N is nullable, the item advanced over N; a
// completed item (origin j != this set) advances every item of set j waiting for its left-hand
// side (one binary search in j's sorted `waiting` index). Completed items with origin == this
// set need no completion: their waiting items were advanced over the nullable symbol already.
// Items are deduplicated with an open-addressing table keyed by (core, origin). The predicted
// items (origin = this set), when they are many, are not added one by one: they are the
// grammar's prediction block of the nonterminals the other items wait for (the union of their
// closures), shared by every set that predicts them, so a set costs its kernel and
// completions, not its predictions (a SQL keyword predicts ~130 items; a mask over an
// identifier builds hundreds of such sets). A few predictions (JSON's sets) are cheaper added
// than looked up: below min_block_cores they are items of the set's own.
// Readers of a set's items (Scan, completion, MinTerminalsToAccept) read its own items and
// its block's (ForEachWaiting, ForEachItem). A parser that goes away leaves its set array
// (each set's vectors with their capacity) to the next parser (SpareSets): popped sets are
// reused that way within a parser already, and a new matcher's first masks would otherwise
// spend a third of their time allocating.
//
// Because sets refer to their origins by index and a scan depends only on (set, terminal), the
// sets form a graph shared by every lexing hypothesis of the matcher; Scan is memoized per
// (set, terminal). Complexity per set: O(items * log items) plus the closure sizes; a set's
// items are bounded by the budget (max_items_per_set).
//
// MinTerminalsToAccept: an item (A -> a . b, origin j) of the set still needs SuffixYield(b)
// terminals, then whatever completes A at j: up(j, A) = min over the items of set j waiting
// for A, (B -> c . A d, origin k), of SuffixYield(d) + up(k, B), with up(0, <start>) = 0.
// Origins never exceed the set that holds an item, so a set's up table needs only tables of
// earlier sets; each is computed once (sets below a truncation point never change) and kept
// with its set, so a query costs the items of the sets not asked about before. Within one set,
// items predicted there (origin j) chain nonterminals of the same set, a shortest-path problem
// solved by relaxation to a fixpoint.
#include "native/parser/earley_parser.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "native/support/error.h"
#include "native/support/fork_locks.h"

namespace jaxguide {
namespace {

constexpr uint64_t kKeyMultiplier = 0x9E3779B97F4A7C15ull;

uint64_t ItemKey(uint32_t core, uint32_t origin) {
  return (static_cast<uint64_t>(core) << 32) | origin;
}

}  // namespace

struct EarleyParser::SpareSets {
  std::mutex mutex;
  ForkLockRegistration fork_lock{&mutex};
  // (set array, its StorageBytes), guarded by mutex
  std::vector<std::pair<std::vector<EarleySet>, size_t>> arrays;
  size_t bytes = 0;  // guarded by mutex
};

EarleyParser::SpareSets& EarleyParser::Spares() {
  static SpareSets* const spares = new SpareSets();  // never destroyed (parsers may outlive
  return *spares;                                    // static destructors)
}

size_t EarleyParser::StorageBytes(const std::vector<EarleySet>& sets) {
  size_t bytes = sets.capacity() * sizeof(EarleySet);
  for (const EarleySet& set : sets) {
    bytes += set.items.capacity() * sizeof(Item) +
             set.waiting.capacity() * sizeof(set.waiting[0]) +
             set.scans.capacity() * sizeof(set.scans[0]) +
             set.allowed.capacity_bytes() + set.up.bucket_count() * sizeof(void*);
  }
  return bytes;
}

size_t EarleyParser::SpareBytes() {
  SpareSets& spares = Spares();
  std::lock_guard<std::mutex> lock(spares.mutex);
  return spares.bytes;
}

EarleyParser::~EarleyParser() {
  if (sets_.empty()) return;  // moved from
  // Only the sets this parser used go on (an inherited tail it never reached is freed), so
  // spare arrays keep the size their users need and leaving them costs what building them did.
  sets_.resize(std::min(sets_used_, kMaxSpareSets));
  const size_t bytes = StorageBytes(sets_);
  SpareSets& spares = Spares();
  std::lock_guard<std::mutex> lock(spares.mutex);
  if (spares.bytes + bytes > kMaxSpareBytes) return;  // freed as usual
  spares.bytes += bytes;
  spares.arrays.emplace_back(std::move(sets_), bytes);
}

EarleyParser::EarleyParser(std::shared_ptr<const Grammar> grammar, size_t max_items_per_set,
                           size_t min_block_cores)
    : grammar_(std::move(grammar)),
      max_items_per_set_(max_items_per_set),
      min_block_cores_(min_block_cores),
      predicted_stamp_(grammar_->num_nonterminals(), 0),
      core_stamp_(grammar_->num_cores(), 0),
      awaited_stamp_(grammar_->num_nonterminals(), 0),
      symbol_count_(grammar_->num_terminals() + grammar_->num_nonterminals(), 0) {
  {
    SpareSets& spares = Spares();
    std::lock_guard<std::mutex> lock(spares.mutex);
    if (!spares.arrays.empty()) {
      sets_ = std::move(spares.arrays.back().first);
      spares.bytes -= spares.arrays.back().second;
      spares.arrays.pop_back();
    }
  }
  dedup_keys_.assign(1024, 0);
  dedup_stamp_.assign(1024, 0);
  scratch_kernel_.push_back(Item{grammar_->start_core(), 0});
  BuildSet();
}

namespace {

// The entries of a sorted (symbol, x) index whose symbol is `symbol`.
template <typename Pair>
std::pair<const Pair*, const Pair*> EntriesOf(const std::vector<Pair>& index, int32_t symbol) {
  const Pair* begin = index.data();
  const Pair* end = begin + index.size();
  const Pair* lo = std::lower_bound(begin, end, symbol,
                                    [](const Pair& p, int32_t s) { return p.first < s; });
  const Pair* hi = lo;
  while (hi != end && hi->first == symbol) ++hi;
  return {lo, hi};
}

}  // namespace

template <typename Fn>
void EarleyParser::ForEachWaiting(uint32_t index, int32_t symbol, Fn&& fn) const {
  const EarleySet& set = sets_[index];
  const auto [lo, hi] = EntriesOf(set.waiting, symbol);
  for (const auto* p = lo; p != hi; ++p) {
    const Item& item = set.items[p->second];
    fn(item.core, item.origin);
  }
  if (set.block == nullptr) return;
  const auto [block_lo, block_hi] = EntriesOf(set.block->waiting, symbol);
  for (const auto* p = block_lo; p != block_hi; ++p) fn(p->second, index);
}

template <typename Fn>
void EarleyParser::ForEachItem(uint32_t index, Fn&& fn) const {
  const EarleySet& set = sets_[index];
  for (const Item& item : set.items) fn(item.core, item.origin);
  if (set.block == nullptr) return;
  for (const uint32_t core : set.block->cores) fn(core, index);
}

uint32_t EarleyParser::Scan(uint32_t set_index, uint32_t terminal) {
  for (const auto& [t, result] : sets_[set_index].scans) {
    if (t == terminal) return result;
  }
  uint32_t result = kNoSet;
  if (sets_[set_index].allowed.Contains(terminal)) {
    scratch_kernel_.clear();
    ForEachWaiting(set_index, static_cast<int32_t>(terminal), [&](uint32_t core, uint32_t origin) {
      scratch_kernel_.push_back(Item{core + 1, origin});
    });
    result = BuildSet();
  }
  sets_[set_index].scans.emplace_back(terminal, result);
  scan_log_.emplace_back(set_index, num_sets_);
  return result;
}

// The members' items other than their predictions are the merged set's kernel, and it is
// closed under completion and nullable advance: a member completed each of its items against
// sets older than itself (a completion with origin == the member is a nullable one, part of a
// prediction closure), and what it added has an origin other than the member (so it is in the
// kernel too). Only the predictions are redone, with the merged set as origin.
uint32_t EarleyParser::Merge(const std::vector<uint32_t>& sets) {
  const auto found = merge_index_.find(sets);
  if (found != merge_index_.end()) return found->second;
  uint32_t result = kNoSet;
  scratch_kernel_.clear();
  for (const uint32_t member : sets) {
    for (const Item& item : sets_[member].items) {
      // Items predicted in a member are predicted again, with the merged set as origin; items
      // whose origin is another member keep it (that set stays valid). The initial set's
      // kernel, <start> -> . S, has the initial set as its origin and is kept as it is.
      if (item.origin != member || item.core == grammar_->start_core()) {
        scratch_kernel_.push_back(item);
      }
    }
  }
  result = BuildSet(/*kernel_closed=*/true);
  merges_.push_back(MergeEntry{sets, result, num_sets_});
  merge_index_.emplace(sets, result);
  return result;
}

void EarleyParser::ThrowWorkBudget() const {
  throw BudgetExceededError("Earley parsing exceeded the budget of " +
                            std::to_string(work_limit_) +
                            " steps of one matcher call (mask step budget; the grammar is "
                            "too ambiguous here)");
}

void EarleyParser::ThrowItemBudget() const {
  throw BudgetExceededError("an Earley set exceeded its budget of " +
                            std::to_string(max_items_per_set_) +
                            " items (the grammar is too ambiguous here)");
}

void EarleyParser::AddItem(EarleySet* set, Item item) {
  if (work_used_ != nullptr && (*work_used_ += kWorkWeight) > work_limit_) ThrowWorkBudget();
  // Open addressing with linear probing; a slot is live iff its stamp equals stamp_.
  const uint64_t key = ItemKey(item.core, item.origin);
  const size_t mask = dedup_keys_.size() - 1;
  size_t slot = static_cast<size_t>((key * kKeyMultiplier) >> 40) & mask;
  while (dedup_stamp_[slot] == stamp_) {
    if (dedup_keys_[slot] == key) return;
    slot = (slot + 1) & mask;
  }
  if (set->items.size() >= max_items_per_set_) ThrowItemBudget();
  dedup_stamp_[slot] = stamp_;
  dedup_keys_[slot] = key;
  set->items.push_back(item);
  ++items_created_;
  if (++dedup_count_ * 2 > dedup_keys_.size()) {
    // Grow and rehash the live keys (the items of this set).
    const size_t size = dedup_keys_.size() * 2;
    dedup_keys_.assign(size, 0);
    dedup_stamp_.assign(size, 0);
    stamp_ = 1;
    for (const Item& live : set->items) {
      const uint64_t k = ItemKey(live.core, live.origin);
      size_t s = static_cast<size_t>((k * kKeyMultiplier) >> 40) & (size - 1);
      while (dedup_stamp_[s] == stamp_) s = (s + 1) & (size - 1);
      dedup_stamp_[s] = stamp_;
      dedup_keys_[s] = k;
    }
  }
}

uint32_t EarleyParser::BuildSet(bool kernel_closed) {
  const uint32_t index = static_cast<uint32_t>(num_sets_);
  if (scratch_kernel_.empty()) return kNoSet;
  // Popped sets keep their vectors' capacity and are reused: the trie walk pushes and pops
  // sets for every mask, so this saves the allocator most of its work.
  if (num_sets_ == sets_.size()) sets_.emplace_back();
  EarleySet& set = sets_[num_sets_++];
  sets_used_ = std::max(sets_used_, num_sets_);
  set.Clear(grammar_->num_terminals());
  if (++stamp_ == 0) {  // stamp wrapped: reset the table
    std::fill(dedup_stamp_.begin(), dedup_stamp_.end(), 0);
    stamp_ = 1;
  }
  dedup_count_ = 0;
  if (++build_ == 0) {  // wrapped: forget every mark
    std::fill(predicted_stamp_.begin(), predicted_stamp_.end(), 0);
    std::fill(core_stamp_.begin(), core_stamp_.end(), 0);
    std::fill(awaited_stamp_.begin(), awaited_stamp_.end(), 0);
    build_ = 1;
  }
  try {
    FillSet(&set, index, kernel_closed);
  } catch (...) {
    --num_sets_;  // never leave a half-built set behind
    throw;
  }
  // A set whose future is that of a live set is that set: drop the new one. (Inside a
  // repetition of one-byte lexemes, `"` string_char* `"`, each scan would otherwise build a
  // new set with the same items, and nothing after it could be shared.)
  set.signature = Signature(index);
  if (!sig_heads_.empty()) {
    for (uint32_t other = sig_heads_[BucketOf(set.signature)]; other != kNoSet;
         other = sets_[other].same_bucket) {
      if (sets_[other].signature == set.signature && SameFuture(other, index)) {
        --num_sets_;
        return other;
      }
    }
  }
  IndexSignature(index);
  return index;
}

void EarleyParser::IndexSignature(uint32_t index) {
  if (sig_heads_.size() < 2 * (size_t{index} + 1)) {
    // Grow to twice the live sets and rechain them oldest first (so heads are the newest).
    sig_heads_.assign(std::max<size_t>(1024, sig_heads_.size() * 2), kNoSet);
    while (sig_heads_.size() < 2 * (size_t{index} + 1)) sig_heads_.resize(sig_heads_.size() * 2);
    std::fill(sig_heads_.begin(), sig_heads_.end(), kNoSet);
    for (uint32_t live = 0; live < index; ++live) {
      if (!sets_[live].indexed) continue;
      uint32_t& head = sig_heads_[BucketOf(sets_[live].signature)];
      sets_[live].same_bucket = head;
      head = live;
    }
  }
  uint32_t& head = sig_heads_[BucketOf(sets_[index].signature)];
  sets_[index].same_bucket = head;
  sets_[index].indexed = true;
  head = index;
}

uint64_t EarleyParser::Signature(uint32_t index) const {
  const EarleySet& set = sets_[index];
  uint64_t sum = set.accepting ? 0x51ED27A3u : 0, mix = set.waiting.size();
  // Blocks of equal cores are one block (Grammar::PredictionBlockOf): its id stands for its
  // items.
  if (set.block != nullptr) sum += (uint64_t{set.block->id} + 1) * 0xD6E8FEB86659FD93ull;
  for (const auto& [symbol, i] : set.waiting) {
    const Item& item = set.items[i];
    const uint64_t origin = item.origin == index ? kSelf : item.origin;
    uint64_t h = (uint64_t{item.core} << 32 | origin) * kKeyMultiplier;
    h ^= h >> 29;
    sum += h;
    mix ^= h * 0xBF58476D1CE4E5B9ull;
  }
  return sum ^ (mix * 0x94D049BB133111EBull);
}

bool EarleyParser::SameFuture(uint32_t a, uint32_t b) const {
  const EarleySet& x = sets_[a];
  const EarleySet& y = sets_[b];
  if (x.accepting != y.accepting || x.block != y.block ||
      x.waiting.size() != y.waiting.size()) {
    return false;
  }
  auto normalize = [](const EarleySet& set, uint32_t index, std::vector<uint64_t>* keys) {
    keys->clear();
    for (const auto& entry : set.waiting) {
      const Item& item = set.items[entry.second];
      keys->push_back(ItemKey(item.core, item.origin == index ? kSelf : item.origin));
    }
    std::sort(keys->begin(), keys->end());
  };
  normalize(x, a, &future_a_);
  normalize(y, b, &future_b_);
  return future_a_ == future_b_;
}

void EarleyParser::Predict(EarleySet* set, uint32_t index, int32_t nonterminal) {
  const Grammar& g = *grammar_;
  const Grammar::Prediction& prediction = g.PredictionOf(nonterminal);
  for (const uint32_t nt : prediction.nonterminals) predicted_stamp_[nt] = build_;
  const std::vector<uint32_t>& closure = prediction.closure;
  if (work_used_ != nullptr && (*work_used_ += kWorkWeight * closure.size()) > work_limit_) {
    ThrowWorkBudget();
  }
  for (const uint32_t core : closure) {
    if (core_stamp_[core] == build_) continue;
    core_stamp_[core] = build_;
    if (set->items.size() >= max_items_per_set_) ThrowItemBudget();
    set->items.push_back(Item{core, index});
    ++items_created_;
  }
}

const Grammar::PredictionBlock* EarleyParser::BlockOfPredicted() {
  std::sort(predicted_.begin(), predicted_.end());
  const auto met = blocks_met_.find(predicted_);
  if (met != blocks_met_.end()) return met->second;
  const PredictionBlock* block = grammar_->PredictionBlockOf(predicted_);
  blocks_met_.emplace(predicted_, block);
  return block;
}

void EarleyParser::FillSet(EarleySet* set_ptr, uint32_t index, bool kernel_closed) {
  const Grammar& g = *grammar_;
  EarleySet& set = *set_ptr;
  for (const Item& item : scratch_kernel_) AddItem(&set, item);
  const size_t kernel_size = set.items.size();
  const int32_t t_count = static_cast<int32_t>(g.num_terminals());
  predicted_.clear();
  size_t predicted_cores = 0;  // the closures of predicted_, summed
  auto predict = [&](int32_t nonterminal) {
    uint32_t& stamp = awaited_stamp_[static_cast<size_t>(nonterminal - t_count)];
    if (stamp == build_) return;
    stamp = build_;
    predicted_.push_back(nonterminal);
    predicted_cores += g.PredictionOf(nonterminal).closure.size();
  };
  for (size_t i = 0; i < set.items.size(); ++i) {
    const Item item = set.items[i];
    // A completion with origin == index is a nullable one, handled where its waiting item
    // predicted it (the initial set's kernel, <start> -> . S, has origin 0 too: it predicts).
    if (item.origin == index && i >= kernel_size) continue;
    const int32_t symbol = g.next_symbol(item.core);
    if (kernel_closed) {
      // A merge's kernel is closed under completion and nullable advance already (see
      // Merge): only its predictions are new.
      if (symbol >= t_count) predict(symbol);
      continue;
    }
    if (symbol == Grammar::kNoSymbol) {
      const int32_t lhs = g.lhs(g.rule_of(item.core));
      ForEachWaiting(item.origin, lhs, [&](uint32_t core, uint32_t origin) {
        AddItem(&set, Item{core + 1, origin});
      });
      continue;
    }
    if (symbol < t_count) continue;
    predict(symbol);
    if (g.IsNullable(symbol)) AddItem(&set, Item{item.core + 1, item.origin});
  }
  // The predictions: the closures of predicted_ (transitive, nullable dots advanced), as the
  // grammar's shared block, or item by item when they are few or past its block budget.
  if (!predicted_.empty() && predicted_cores >= min_block_cores_) set.block = BlockOfPredicted();
  if (set.block != nullptr) {
    const size_t cores = set.block->cores.size();
    if (work_used_ != nullptr && (*work_used_ += kWorkWeight * cores) > work_limit_) {
      ThrowWorkBudget();
    }
    if (set.items.size() + cores > max_items_per_set_) ThrowItemBudget();
    items_created_ += cores;
  } else {
    for (const int32_t nonterminal : predicted_) {
      // (in a closure predicted already: nothing to add)
      if (predicted_stamp_[static_cast<size_t>(nonterminal - t_count)] != build_) {
        Predict(&set, index, nonterminal);
      }
    }
  }
  IndexWaiting(&set);
}

void EarleyParser::IndexWaiting(EarleySet* set_ptr) {
  const Grammar& g = *grammar_;
  EarleySet& set = *set_ptr;
  const int32_t t_count = static_cast<int32_t>(g.num_terminals());
  if (set.block != nullptr) set.allowed = set.block->allowed;
  // The waiting index, sorted by (symbol, item) with a counting sort over the symbols present.
  symbols_present_.clear();
  for (uint32_t i = 0; i < set.items.size(); ++i) {
    const Item& item = set.items[i];
    const int32_t symbol = g.next_symbol(item.core);
    if (symbol == Grammar::kNoSymbol) {
      if (item.core == g.start_core() + 1 && item.origin == 0) set.accepting = true;
      continue;
    }
    if (symbol_count_[symbol]++ == 0) symbols_present_.push_back(symbol);
    if (symbol < t_count) set.allowed.Insert(static_cast<size_t>(symbol));
  }
  std::sort(symbols_present_.begin(), symbols_present_.end());
  uint32_t offset = 0;
  for (const int32_t symbol : symbols_present_) {
    const uint32_t count = symbol_count_[symbol];
    symbol_count_[symbol] = offset;  // now the next free position of the symbol
    offset += count;
  }
  set.waiting.resize(offset);
  for (uint32_t i = 0; i < set.items.size(); ++i) {
    const int32_t symbol = g.next_symbol(set.items[i].core);
    if (symbol != Grammar::kNoSymbol) set.waiting[symbol_count_[symbol]++] = {symbol, i};
  }
  for (const int32_t symbol : symbols_present_) symbol_count_[symbol] = 0;
}

void EarleyParser::ComputeUpTable(uint32_t j) const {
  const Grammar& g = *grammar_;
  auto add = [](uint32_t a, uint32_t b) { return std::min(Grammar::kNoYield, a + b); };
  std::unordered_map<int32_t, uint32_t>& table = sets_[j].up;
  table.clear();
  if (j == 0) table[g.lhs(g.rule_of(g.start_core()))] = 0;
  struct Edge {
    int32_t from, to;
    uint32_t weight;
  };
  std::vector<Edge> edges;  // A completes -> B continues, within set j
  auto waiting = [&](int32_t symbol, uint32_t core, uint32_t origin) {
    if (g.IsTerminal(symbol)) return;
    const int32_t lhs = g.lhs(g.rule_of(core));
    const uint32_t weight = g.SuffixYield(core + 1);
    if (origin == j) {
      edges.push_back({symbol, lhs, weight});
      return;
    }
    const auto& outer = sets_[origin].up;  // computed: see UpTable
    const auto it = outer.find(lhs);
    if (it == outer.end()) return;
    uint32_t& best = table.try_emplace(symbol, Grammar::kNoYield).first->second;
    best = std::min(best, add(weight, it->second));
  };
  for (const auto& [symbol, index] : sets_[j].waiting) {
    waiting(symbol, sets_[j].items[index].core, sets_[j].items[index].origin);
  }
  if (sets_[j].block != nullptr) {
    for (const auto& [symbol, core] : sets_[j].block->waiting) waiting(symbol, core, j);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Edge& e : edges) {
      const auto to = table.find(e.to);
      if (to == table.end()) continue;
      const uint32_t cost = add(e.weight, to->second);
      uint32_t& best = table.try_emplace(e.from, Grammar::kNoYield).first->second;
      if (cost < best) {
        best = cost;
        changed = true;
      }
    }
  }
}

void EarleyParser::EnsureUpTables(uint32_t set) const {
  // Depth-first over item origins (iterative: origin chains are as long as the input), each
  // table computed once its origins' are.
  std::vector<uint32_t> stack = {set};
  std::vector<uint32_t> missing;
  while (!stack.empty()) {
    const uint32_t j = stack.back();
    if (sets_[j].up_done) {
      stack.pop_back();
      continue;
    }
    missing.clear();
    for (const Item& item : sets_[j].items) {
      if (item.origin != j && !sets_[item.origin].up_done) missing.push_back(item.origin);
    }
    if (missing.empty()) {
      ComputeUpTable(j);
      sets_[j].up_done = true;
      stack.pop_back();
      continue;
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    stack.insert(stack.end(), missing.begin(), missing.end());
  }
}

uint32_t EarleyParser::MinTerminalsToAccept(uint32_t set) const {
  if (set == kNoSet || set >= num_sets_) return Grammar::kNoYield;
  if (sets_[set].accepting) return 0;
  const Grammar& g = *grammar_;
  EnsureUpTables(set);
  uint32_t best = Grammar::kNoYield;
  ForEachItem(set, [&](uint32_t core, uint32_t origin) {
    const auto& table = sets_[origin].up;
    const auto it = table.find(g.lhs(g.rule_of(core)));
    if (it != table.end()) {
      best = std::min(best, std::min(Grammar::kNoYield, g.SuffixYield(core) + it->second));
    }
  });
  return best;
}

void EarleyParser::Truncate(size_t num_sets) {
  if (num_sets == 0) num_sets = 1;
  if (num_sets >= num_sets_) return;
  while (!scan_log_.empty() && scan_log_.back().second > num_sets) {
    const uint32_t source = scan_log_.back().first;
    if (source < num_sets) sets_[source].scans.pop_back();
    scan_log_.pop_back();
  }
  while (!merges_.empty() && merges_.back().created > num_sets) {
    merge_index_.erase(merges_.back().sets);
    merges_.pop_back();
  }
  for (size_t i = num_sets_; i-- > num_sets;) {  // newest first: each is its bucket's head
    if (!sets_[i].indexed) continue;
    sig_heads_[BucketOf(sets_[i].signature)] = sets_[i].same_bucket;
    sets_[i].indexed = false;
  }
  num_sets_ = num_sets;
}

}  // namespace jaxguide
