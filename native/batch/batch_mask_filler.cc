// BatchMaskFiller: one ParallelTask per batch operation, one item per matcher.
//
// Design note. What: a decode step needs B masks (B up to a few hundred) between two forward
// passes; each is an independent Matcher::FillNextTokenBitmask into its own row, so rows are
// the unit of parallel work, claimed dynamically by the pool's workers (thread_pool.cc says why
// dynamically). Accepting the sampled tokens and rolling back are batched the same way.
//
// Ownership: a Matcher is not thread-safe, so an operation must own its matchers while it
// runs. A process-wide registry holds the MatcherSet of every unfinished operation; starting an
// operation checks it against them (a merge of sorted address lists, O(B) per operation in
// flight, usually one) and fails with MatcherBusyError instead of letting two threads touch one
// matcher. Fills are also checked against each other's bitmask rows (memory ranges; sorted
// only when two fills are in flight at once), so one row is never written by two operations.
// The registry entry is dropped in Finish(), before the task reports done, so a caller that saw
// done() can use the matchers and rows at once. Single-matcher calls from the binding claim
// their matcher in the same registry for their duration (MatcherClaim), so two threads never
// run one matcher at once either: the second caller gets MatcherBusyError.
//
// Failures stay in their row: Matcher methods do not throw by contract (an error state with an
// EOS-only mask), and anything that escapes anyway (std::bad_alloc) is caught per row, turned
// into an EOS-only mask and recorded in that row's error. No exception reaches a worker.
//
// Cost per operation: sorting the B addresses when a MatcherSet is built (the binding reuses
// the set while the batch's matchers stay the same), one registry check, one pool submission;
// per row the mask itself plus clearing the words past the matcher's bitmask width.
#include "native/batch/batch_mask_filler.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <utility>

#include "native/support/fork_locks.h"

namespace jaxguide {
namespace {

class InFlightRegistry {
 public:
  // Throws MatcherBusyError if a matcher of `op`, or a bitmask row it writes, belongs to an
  // operation already registered.
  void Register(const BatchOperation* op) {
    std::lock_guard<std::mutex> lock(mutex_);
    const MatcherSet& set = op->matchers();
    for (const Matcher* claimed : claimed_) {
      if (set.Contains(claimed)) {
        throw MatcherBusyError("a matcher of this batch is in use by a call on another thread "
                               "(a Matcher is not shared between threads; fork() one per thread)");
      }
    }
    for (const BatchOperation* active : active_) {
      if (set.Overlaps(active->matchers())) {
        size_t position = 0;
        while (position < set.size() && !active->matchers().Contains(set[position])) ++position;
        throw MatcherBusyError("matcher at position " + std::to_string(position) +
                               " of this batch is still in use by an unfinished batch operation "
                               "(wait for its handle before using the matcher again)");
      }
      if (op->RowsOverlapLocked(*active)) {
        throw MatcherBusyError(
            "a bitmask row of this fill is still being written by an unfinished fill (the same "
            "rows of one buffer passed to two operations in flight); wait for its handle first");
      }
    }
    active_.push_back(op);
    count_.store(active_.size(), std::memory_order_release);
  }

  void Unregister(const BatchOperation* op) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find(active_.begin(), active_.end(), op);
    if (it != active_.end()) active_.erase(it);
    count_.store(active_.size(), std::memory_order_release);
  }

  // Throws MatcherBusyError if `matcher` belongs to an unfinished operation or another claim.
  void Claim(const Matcher* matcher) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(claimed_.begin(), claimed_.end(), matcher) != claimed_.end()) {
      throw MatcherBusyError("this Matcher is in use by a call on another thread (a Matcher is "
                             "not shared between threads; fork() one per thread)");
    }
    for (const BatchOperation* active : active_) {
      if (active->matchers().Contains(matcher)) {
        throw MatcherBusyError("this Matcher is in use by a batch operation that has not "
                               "finished: wait for its handle before using the matcher");
      }
    }
    claimed_.push_back(matcher);
  }

  void Release(const Matcher* matcher) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find(claimed_.begin(), claimed_.end(), matcher);
    if (it != claimed_.end()) claimed_.erase(it);
  }

  bool Contains(const Matcher* matcher) const {
    if (count_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const BatchOperation* active : active_) {
      if (active->matchers().Contains(matcher)) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mutex_;
  ForkLockRegistration fork_lock_{&mutex_};  // held across fork(): a child's claims work
  std::vector<const BatchOperation*> active_;  // one per operation in flight
  std::vector<const Matcher*> claimed_;        // one per single-matcher call in progress
  std::atomic<size_t> count_{0};               // active_.size(), read without the lock
};

InFlightRegistry& Registry() {
  static InFlightRegistry* registry = new InFlightRegistry();  // never destroyed: used at exit
  return *registry;
}

void WriteEosOnly(const Matcher& matcher, uint32_t* row, size_t row_words) {
  std::memset(row, 0, row_words * sizeof(uint32_t));
  for (const uint32_t id : matcher.tokenizer().eos_token_ids()) {
    row[id >> 5] |= uint32_t{1} << (id & 31);
  }
}

}  // namespace

MatcherSet::MatcherSet(std::vector<Matcher*> matchers) : matchers_(std::move(matchers)) {
  std::vector<std::pair<const Matcher*, size_t>> order;
  order.reserve(matchers_.size());
  for (size_t i = 0; i < matchers_.size(); ++i) {
    if (matchers_[i] == nullptr) {
      throw std::invalid_argument("matcher at position " + std::to_string(i) + " is null");
    }
    order.emplace_back(matchers_[i], i);
  }
  std::sort(order.begin(), order.end());
  sorted_.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && order[i].first == order[i - 1].first) {
      const size_t a = std::min(order[i].second, order[i - 1].second);
      const size_t b = std::max(order[i].second, order[i - 1].second);
      throw std::invalid_argument("the same matcher is at positions " + std::to_string(a) +
                                  " and " + std::to_string(b) +
                                  " of the batch; each sequence needs its own Matcher (fork())");
    }
    sorted_.push_back(order[i].first);
  }
}

bool MatcherSet::Overlaps(const MatcherSet& other) const {
  if (this == &other) return !sorted_.empty();
  auto a = sorted_.begin();
  auto b = other.sorted_.begin();
  while (a != sorted_.end() && b != other.sorted_.end()) {
    if (*a == *b) return true;
    if (std::less<const Matcher*>()(*a, *b)) {
      ++a;
    } else {
      ++b;
    }
  }
  return false;
}

bool MatcherSet::Contains(const Matcher* matcher) const {
  return std::binary_search(sorted_.begin(), sorted_.end(), matcher, std::less<const Matcher*>());
}

bool IsMatcherInFlight(const Matcher* matcher) { return Registry().Contains(matcher); }

MatcherClaim::MatcherClaim(const Matcher* matcher) : matcher_(matcher) {
  Registry().Claim(matcher);
}

MatcherClaim::~MatcherClaim() { Registry().Release(matcher_); }

BatchOperation::BatchOperation(Kind kind, std::shared_ptr<const MatcherSet> matchers)
    : ParallelTask(matchers->size()),
      kind_(kind),
      matchers_(std::move(matchers)),
      errors_(matchers_->size()) {}

void BatchOperation::RunItem(size_t index) {
  Matcher& matcher = *(*matchers_)[index];
  try {
    switch (kind_) {
      case Kind::kFill:
        FillRow(index);
        break;
      case Kind::kAcceptAndFill:
        accepted_[index] = matcher.AcceptToken(tokens_[index]);
        if (!accepted_[index] && !matcher.has_error()) {
          WriteEosOnly(matcher, rows_[index], row_words_);
          errors_[index] = "token " + std::to_string(tokens_[index]) +
                           " is not allowed here; the matcher is unchanged";
          break;
        }
        FillRow(index);
        break;
      case Kind::kAccept:
        accepted_[index] = matcher.AcceptToken(tokens_[index]);
        if (matcher.has_error()) errors_[index] = matcher.error();
        break;
      case Kind::kRollback:
        matcher.Rollback(num_steps_[index]);
        break;
    }
  } catch (const std::exception& e) {
    // Matcher methods do not throw by contract; std::bad_alloc still may.
    try {
      errors_[index] = e.what()[0] != '\0' ? e.what() : "internal error";
    } catch (...) {
    }
    if (!rows_.empty()) WriteEosOnly(matcher, rows_[index], row_words_);
  } catch (...) {
    try {
      errors_[index] = "unknown internal error";
    } catch (...) {
    }
    if (!rows_.empty()) WriteEosOnly(matcher, rows_[index], row_words_);
  }
}

void BatchOperation::FillRow(size_t index) {
  Matcher& matcher = *(*matchers_)[index];
  uint32_t* row = rows_[index];
  matcher.FillNextTokenBitmask(row);
  const size_t width = matcher.tokenizer().bitmask_width();
  if (row_words_ > width) std::memset(row + width, 0, (row_words_ - width) * sizeof(uint32_t));
  if (matcher.has_error()) errors_[index] = matcher.error();
}

void BatchOperation::Finish() {
  if (registered_) Registry().Unregister(this);
}

bool BatchOperation::RowsOverlapLocked(const BatchOperation& other) const {
  if (rows_.empty() || other.rows_.empty()) return false;
  // Row memory ranges [row, row + row_words): sorted once per operation, on first need (only
  // when two fills are in flight at once), under the registry's lock.
  for (const BatchOperation* op : {this, &other}) {
    if (op->sorted_rows_.size() != op->rows_.size()) {
      op->sorted_rows_.assign(op->rows_.begin(), op->rows_.end());
      std::sort(op->sorted_rows_.begin(), op->sorted_rows_.end(), std::less<const uint32_t*>());
    }
  }
  const auto& a = sorted_rows_;
  const auto& b = other.sorted_rows_;
  const std::less<const uint32_t*> less;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (!less(a[i] + row_words_ - 1, b[j])) {
      if (!less(b[j] + other.row_words_ - 1, a[i])) return true;
      ++j;
    } else {
      ++i;
    }
  }
  return false;
}

BatchMaskFiller::BatchMaskFiller(std::shared_ptr<ThreadPool> pool) : pool_(std::move(pool)) {
  if (pool_ == nullptr) throw std::invalid_argument("BatchMaskFiller needs a ThreadPool");
}

std::shared_ptr<BatchOperation> BatchMaskFiller::FillNextTokenBitmaskAsync(
    std::shared_ptr<const MatcherSet> matchers, std::vector<uint32_t*> rows, size_t row_words,
    std::optional<std::vector<uint32_t>> tokens) {
  const size_t n = matchers->size();
  if (rows.size() != n) {
    throw std::invalid_argument(std::to_string(n) + " matchers but " + std::to_string(rows.size()) +
                                " rows");
  }
  if (tokens && tokens->size() != n) {
    throw std::invalid_argument(std::to_string(n) + " matchers but " +
                                std::to_string(tokens->size()) + " tokens");
  }
  for (size_t i = 0; i < n; ++i) {
    if (rows[i] == nullptr) throw std::invalid_argument("row " + std::to_string(i) + " is null");
    const size_t width = (*matchers)[i]->tokenizer().bitmask_width();
    if (width > row_words) {
      throw std::invalid_argument("bitmask width " + std::to_string(row_words) +
                                  " words is below the tokenizer's " + std::to_string(width) +
                                  " (matcher at position " + std::to_string(i) + ")");
    }
  }
  const bool accept = tokens.has_value();
  auto op = std::shared_ptr<BatchOperation>(new BatchOperation(
      accept ? BatchOperation::Kind::kAcceptAndFill : BatchOperation::Kind::kFill,
      std::move(matchers)));
  op->rows_ = std::move(rows);
  op->row_words_ = row_words;
  if (accept) {
    op->tokens_ = std::move(*tokens);
    op->accepted_.assign(n, 0);
  }
  Start(op);
  return op;
}

std::shared_ptr<BatchOperation> BatchMaskFiller::AcceptTokens(
    std::shared_ptr<const MatcherSet> matchers, std::vector<uint32_t> tokens) {
  if (tokens.size() != matchers->size()) {
    throw std::invalid_argument(std::to_string(matchers->size()) + " matchers but " +
                                std::to_string(tokens.size()) + " tokens");
  }
  auto op = std::shared_ptr<BatchOperation>(
      new BatchOperation(BatchOperation::Kind::kAccept, std::move(matchers)));
  op->accepted_.assign(tokens.size(), 0);
  op->tokens_ = std::move(tokens);
  Run(op);
  return op;
}

std::shared_ptr<BatchOperation> BatchMaskFiller::Rollback(
    std::shared_ptr<const MatcherSet> matchers, std::vector<size_t> num_steps) {
  if (num_steps.size() != matchers->size()) {
    throw std::invalid_argument(std::to_string(matchers->size()) + " matchers but " +
                                std::to_string(num_steps.size()) + " step counts");
  }
  auto op = std::shared_ptr<BatchOperation>(
      new BatchOperation(BatchOperation::Kind::kRollback, std::move(matchers)));
  op->num_steps_ = std::move(num_steps);
  Run(op);
  return op;
}

void BatchMaskFiller::Start(const std::shared_ptr<BatchOperation>& op) {
  Registry().Register(op.get());
  op->registered_ = true;
  pool_->Submit(op);
}

void BatchMaskFiller::Run(const std::shared_ptr<BatchOperation>& op) {
  Start(op);
  op->Help();
  op->Wait();
}

}  // namespace jaxguide
