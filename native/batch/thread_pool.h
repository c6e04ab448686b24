// ThreadPool and ParallelTask: a persistent pool of worker threads that run tasks made of
// independent items, claimed one at a time (dynamic load balancing).
//
// Contract.
//   * A ParallelTask has num_items() items; RunItem(i) is called exactly once for each i, on
//     some worker (or on a thread that calls Help()), then Finish() once, and only then does
//     done() turn true and Wait() return. RunItem and Finish must not throw (an escaping
//     exception is swallowed so that no worker ever dies, but the item counts as finished).
//   * Tasks are started in submission order (FIFO); workers move to the next task once every
//     item of the current one is claimed, so several tasks may be running at once.
//   * ThreadPool is thread-safe. Its destructor and Shutdown() let every submitted task finish,
//     then join the workers. A task submitted after Shutdown() runs on the submitting thread,
//     so no task is ever left undone.
//   * After fork(), the child has none of the parent's workers: a pool used in a forked child
//     runs every task on the submitting thread, and its destructor joins nothing (and notifies
//     no condition variable the parent's workers waited on). The pool's mutexes are held across
//     fork() (fork_locks.h), so the child finds them unlocked. A task that was running at the
//     fork never finishes in the child: orphaned() tells (Wait() there would block forever).
//   * The pool never holds the Python GIL and knows nothing of Python.
#ifndef JAXGUIDE_NATIVE_BATCH_THREAD_POOL_H_
#define JAXGUIDE_NATIVE_BATCH_THREAD_POOL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "native/support/fork_locks.h"

namespace jaxguide {

class ParallelTask {
 public:
  explicit ParallelTask(size_t num_items);
  virtual ~ParallelTask() = default;
  ParallelTask(const ParallelTask&) = delete;
  ParallelTask& operator=(const ParallelTask&) = delete;

  size_t num_items() const { return num_items_; }
  // Items not yet claimed by any thread (a snapshot).
  size_t unclaimed() const {
    const size_t next = next_.load(std::memory_order_relaxed);
    return next < num_items_ ? num_items_ - next : 0;
  }
  // True once every item ran and Finish() returned (acquire: their writes are visible).
  bool done() const { return done_.load(std::memory_order_acquire); }
  // True if the task is not done and was submitted in another process: this one is a fork()
  // child, where the threads that claimed its items do not exist, so it never finishes here.
  bool orphaned() const;
  void Wait() const;
  // Waits at most `timeout`; returns done().
  bool WaitFor(std::chrono::nanoseconds timeout) const;
  // Claims and runs items on the calling thread until none is left to claim (others may still
  // be running theirs). Lets a waiting thread help instead of sleeping.
  void Help();

 protected:
  // Runs item `index` (0 <= index < num_items()). Must not throw.
  virtual void RunItem(size_t index) = 0;
  // Called once after the last item, before done() turns true. Must not throw.
  virtual void Finish() {}

 private:
  friend class ThreadPool;
  // Marks the task done when it has no items (nothing would ever finish it otherwise).
  void CompleteIfEmpty();
  void ItemFinished();

  const size_t num_items_;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> remaining_;
  std::atomic<bool> done_{false};
  std::atomic<int64_t> submit_pid_{-1};  // the process that submitted it (-1: not yet)
  mutable std::mutex mutex_;
  mutable ForkSafeCondition done_cv_;  // never destroyed in a fork() child
};

class ThreadPool {
 public:
  // num_threads == 0: DefaultNumThreads().
  explicit ThreadPool(size_t num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The cores this process may run on (its CPU affinity mask), at least 1.
  static size_t DefaultNumThreads();

  size_t num_threads() const { return num_threads_; }
  // Queues `task`; workers start on it at once (or after the tasks queued before it).
  void Submit(std::shared_ptr<ParallelTask> task);
  // Lets every submitted task finish, then joins the workers. Idempotent.
  void Shutdown();
  bool is_shut_down() const;
  // Whether this process is a fork() child of the one whose workers these are.
  bool forked() const { return InForkedChild(); }

 private:
  void WorkerLoop();
  bool InForkedChild() const;

  const size_t num_threads_;
  const int64_t owner_pid_;  // the process whose workers these are
  mutable std::mutex mutex_;
  ForkLockRegistration fork_lock_{&mutex_};  // held across fork() (fork_locks.h)
  ForkSafeCondition work_cv_;  // never destroyed (nor notified) in a fork() child
  std::deque<std::shared_ptr<ParallelTask>> queue_;  // front: the task being claimed from
  bool stopping_ = false;
  size_t idle_ = 0;  // workers waiting for work
  std::vector<std::thread> workers_;
  std::mutex join_mutex_;  // serializes Shutdown() callers
  ForkLockRegistration join_fork_lock_{&join_mutex_, ForkLockLevel::kOuter};
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_BATCH_THREAD_POOL_H_
