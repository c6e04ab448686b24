// BatchMaskFiller: fills the rows of a uint32 [B, W] bitmask for B matchers on a ThreadPool,
// and accepts tokens / rolls back B matchers at once.
//
// Contract.
//   * A batch operation names B distinct matchers (a MatcherSet). While it runs, its matchers
//     (and a fill's bitmask rows) belong to it: starting another operation that names any of
//     them, or a fill writing any of those rows, throws MatcherBusyError (process-wide, whatever
//     the filler or pool), and IsMatcherInFlight() says so to callers that want to guard a
//     single-matcher call (MatcherClaim does: a claimed matcher is busy for operations too).
//     A matcher is free again once done() is true.
//   * The caller keeps every matcher, and the bitmask rows of a fill, alive and untouched until
//     the operation is done() (the Python binding holds references and waits in destructors).
//   * Rows never fail the batch: a row whose matcher is (or goes) into its error state, or whose
//     computation throws, gets an EOS-only mask and an error message of its own (errors()[i]);
//     the other rows are unaffected. Words of a row beyond its matcher's bitmask width are
//     cleared.
//   * Operations are started FIFO on the pool and may run concurrently with each other.
#ifndef JAXGUIDE_NATIVE_BATCH_BATCH_MASK_FILLER_H_
#define JAXGUIDE_NATIVE_BATCH_BATCH_MASK_FILLER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "native/batch/thread_pool.h"
#include "native/matcher/matcher.h"

namespace jaxguide {

// A matcher (or bitmask row) named by a batch operation is already in use by another one that
// has not finished.
class MatcherBusyError : public std::runtime_error {
 public:
  explicit MatcherBusyError(const std::string& message) : std::runtime_error(message) {}
};

// B distinct matchers in batch order, with their addresses sorted for overlap checks. Immutable;
// may be reused by many operations (the binding caches the last one).
class MatcherSet {
 public:
  // Throws std::invalid_argument if a matcher is null or appears twice (naming both positions).
  explicit MatcherSet(std::vector<Matcher*> matchers);

  size_t size() const { return matchers_.size(); }
  Matcher* operator[](size_t i) const { return matchers_[i]; }
  const std::vector<Matcher*>& matchers() const { return matchers_; }
  const std::vector<const Matcher*>& sorted() const { return sorted_; }
  // Whether some matcher is in both sets (O(size + other.size())).
  bool Overlaps(const MatcherSet& other) const;
  bool Contains(const Matcher* matcher) const;

 private:
  std::vector<Matcher*> matchers_;
  std::vector<const Matcher*> sorted_;
};

// Whether `matcher` belongs to an operation that has not finished (any filler, any pool).
bool IsMatcherInFlight(const Matcher* matcher);

// A single-matcher call's hold on its matcher (RAII), in the registry batch operations use:
// the constructor throws MatcherBusyError if the matcher belongs to an unfinished operation or
// to another claim (a call running on another thread); starting an operation that names a
// claimed matcher throws MatcherBusyError too. Costs one uncontended mutex round trip on each
// end. The Python binding claims around every Matcher method, so a Matcher used from several
// threads at once raises instead of racing.
class MatcherClaim {
 public:
  explicit MatcherClaim(const Matcher* matcher);
  ~MatcherClaim();
  MatcherClaim(const MatcherClaim&) = delete;
  MatcherClaim& operator=(const MatcherClaim&) = delete;

 private:
  const Matcher* matcher_;
};

// One batch operation (a ParallelTask whose items are the B matchers).
class BatchOperation : public ParallelTask {
 public:
  enum class Kind { kFill, kAccept, kAcceptAndFill, kRollback };

  Kind kind() const { return kind_; }
  const MatcherSet& matchers() const { return *matchers_; }
  // Read only once done(): per item an error message, empty when the item had none.
  const std::vector<std::string>& errors() const { return errors_; }
  // Read only once done() (kAccept, kAcceptAndFill): whether each token was accepted.
  const std::vector<uint8_t>& accepted() const { return accepted_; }
  // Whether this fill and `other` write overlapping bitmask memory. Only for the in-flight
  // registry, which calls it under its lock (it sorts the row lists on first use).
  bool RowsOverlapLocked(const BatchOperation& other) const;

 protected:
  void RunItem(size_t index) override;
  void Finish() override;

 private:
  friend class BatchMaskFiller;
  BatchOperation(Kind kind, std::shared_ptr<const MatcherSet> matchers);
  void FillRow(size_t index);

  const Kind kind_;
  std::shared_ptr<const MatcherSet> matchers_;
  std::vector<uint32_t*> rows_;                       // kFill, kAcceptAndFill: row of item i
  mutable std::vector<const uint32_t*> sorted_rows_;  // rows_, sorted (registry lock)
  size_t row_words_ = 0;                              // W
  std::vector<uint32_t> tokens_;                      // kAccept, kAcceptAndFill
  std::vector<size_t> num_steps_;                     // kRollback
  std::vector<std::string> errors_;
  std::vector<uint8_t> accepted_;
  bool registered_ = false;
};

class BatchMaskFiller {
 public:
  explicit BatchMaskFiller(std::shared_ptr<ThreadPool> pool);

  ThreadPool& pool() const { return *pool_; }
  const std::shared_ptr<ThreadPool>& shared_pool() const { return pool_; }

  // Starts writing matcher i's mask into rows[i] (row_words words each, >= the matcher's
  // bitmask width; distinct rows). With `tokens` (one per matcher), first accepts tokens[i]; a
  // token that is not allowed leaves the matcher unchanged and gives an EOS-only row with an
  // error. Throws std::invalid_argument on inconsistent sizes or a too narrow row, and
  // MatcherBusyError if a matcher is in flight elsewhere; nothing is started then.
  std::shared_ptr<BatchOperation> FillNextTokenBitmaskAsync(
      std::shared_ptr<const MatcherSet> matchers, std::vector<uint32_t*> rows, size_t row_words,
      std::optional<std::vector<uint32_t>> tokens = std::nullopt);

  // Accepts tokens[i] into matcher i (in parallel; the calling thread helps). Returns the
  // finished operation: accepted()[i] says whether the token was allowed.
  std::shared_ptr<BatchOperation> AcceptTokens(std::shared_ptr<const MatcherSet> matchers,
                                               std::vector<uint32_t> tokens);
  // Rolls matcher i back by num_steps[i] steps (the calling thread helps).
  std::shared_ptr<BatchOperation> Rollback(std::shared_ptr<const MatcherSet> matchers,
                                           std::vector<size_t> num_steps);

 private:
  // Registers `op` as in flight (throws MatcherBusyError on overlap) and submits it.
  void Start(const std::shared_ptr<BatchOperation>& op);
  // Start, then help and wait.
  void Run(const std::shared_ptr<BatchOperation>& op);

  std::shared_ptr<ThreadPool> pool_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_BATCH_BATCH_MASK_FILLER_H_
