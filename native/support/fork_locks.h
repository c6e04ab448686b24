// ForkLocks: internal mutexes that stay usable in the child after fork().
//
// Contract. A mutex registered here (ForkLockRegistration, a member declared right after the
// mutex it registers) is locked by a pthread_atfork prepare handler before fork() and unlocked
// in the parent and in the child right after. So a child never inherits such a mutex locked by
// a thread that does not exist there (it would stay locked forever), nor the data it guards
// half-updated: fork() waits for the critical sections in progress to end.
//   * Levels: kOuter mutexes are locked before every kInner one. Code may hold a kOuter mutex
//     while taking a kInner one (ThreadPool::Shutdown's join lock, held while joining workers
//     that take inner locks), never two of one level at once, never the reverse.
//   * No registered mutex may be held while registering or unregistering one (constructing or
//     destroying an object that owns one): the prepare handler holds the registry's own lock.
//   * Within a level, mutexes are locked in registration order (stable, so no lock-order
//     inversion between two forks). Registering or unregistering costs one global lock round
//     trip (object construction / destruction); locking a registered mutex costs nothing more.
//   * Condition variables are not covered: code that may run in a forked child must not notify
//     one that threads of the parent may have been waiting on (ThreadPool checks for that), and
//     must not destroy one either (glibc's pthread_cond_destroy waits for those waiters, which
//     do not exist in the child): ForkSafeCondition leaks itself there instead.
#ifndef JAXGUIDE_NATIVE_SUPPORT_FORK_LOCKS_H_
#define JAXGUIDE_NATIVE_SUPPORT_FORK_LOCKS_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

namespace jaxguide {

enum class ForkLockLevel { kOuter = 0, kInner = 1 };

// Registers `mutex` for its lifetime (declare it after the mutex, so it unregisters first).
class ForkLockRegistration {
 public:
  explicit ForkLockRegistration(std::mutex* mutex, ForkLockLevel level = ForkLockLevel::kInner);
  ~ForkLockRegistration();
  ForkLockRegistration(const ForkLockRegistration&) = delete;
  ForkLockRegistration& operator=(const ForkLockRegistration&) = delete;

 private:
  std::mutex* mutex_;
  ForkLockLevel level_;
};

// Number of mutexes registered now (for tests).
size_t NumForkLocks();

// How many fork() calls lie between the start of this process's ancestry and now: 0 in a
// process that was not forked since jaxguide loaded, +1 in each child. A plain load.
uint64_t ForkGeneration();

// A std::condition_variable that is not destroyed in a fork() child of the process that made it
// (leaked there instead; see the contract above). Use get() like the variable itself.
class ForkSafeCondition {
 public:
  ForkSafeCondition() : generation_(ForkGeneration()) { new (storage_) std::condition_variable(); }
  ~ForkSafeCondition() {
    if (ForkGeneration() == generation_) get().~condition_variable();
  }
  ForkSafeCondition(const ForkSafeCondition&) = delete;
  ForkSafeCondition& operator=(const ForkSafeCondition&) = delete;
  std::condition_variable& get() {
    return *std::launder(reinterpret_cast<std::condition_variable*>(storage_));
  }

 private:
  alignas(std::condition_variable) unsigned char storage_[sizeof(std::condition_variable)];
  uint64_t generation_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_SUPPORT_FORK_LOCKS_H_
