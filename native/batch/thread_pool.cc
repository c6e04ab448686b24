// ThreadPool: persistent workers that claim items of the front task from an atomic counter.
//
// Design note. What: the pool behind batch mask filling, where one mask can cost 1000x another
// (a JSON string continuation hits a cached lexeme mask; a keyword-vs-identifier position walks
// the whole 128k-token trie through the parser). Static partitioning would leave threads idle
// behind the slowest slice, so every item (a row of the batch) is claimed on its own with one
// fetch_add on the task's counter: a thread that finishes early takes the next row, and the
// tail of a batch is at most one row's cost. Rows cost 10 us - 10 ms, so the atomic per row
// is noise (contention is one cache line touched a few hundred times per batch).
//
// Why persistent workers: starting threads per decode step would cost 10-50 us each, the whole
// handoff budget. Workers sleep on a condition variable between tasks. A submission wakes one
// worker, and every worker that wakes to a task with items left wakes up to two more (a binary
// fan-out: all of 16 workers run after 4 wake-up latencies), so the submitting (Python) thread
// pays for one futex wake whatever the pool size, and workers never wake for nothing.
//
// Completion: the thread that finishes the last item runs Finish(), then sets done under the
// task's mutex and notifies waiters while still holding it, so a waiter that wakes and drops
// the task can never race the notification. Workers hold a shared_ptr to the task while they
// run it, so a task outlives any worker touching it.
//
// Cost: per task one queue push and at most min(items, num_threads) wake-ups, one of them on
// the submitting thread; per item one fetch_add and one fetch_sub.
#include "native/batch/thread_pool.h"

#include <algorithm>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif
#include <unistd.h>

namespace jaxguide {

ParallelTask::ParallelTask(size_t num_items) : num_items_(num_items), remaining_(num_items) {}

bool ParallelTask::orphaned() const {
  if (done()) return false;
  const int64_t pid = submit_pid_.load(std::memory_order_relaxed);
  return pid >= 0 && pid != static_cast<int64_t>(getpid());
}

void ParallelTask::Wait() const {
  if (done()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.get().wait(lock, [this] { return done(); });
}

bool ParallelTask::WaitFor(std::chrono::nanoseconds timeout) const {
  if (done()) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  return done_cv_.get().wait_for(lock, timeout, [this] { return done(); });
}

void ParallelTask::Help() {
  for (;;) {
    // Stop claiming once past the end (the counter then only grows by one per caller).
    if (next_.load(std::memory_order_relaxed) >= num_items_) return;
    const size_t index = next_.fetch_add(1, std::memory_order_relaxed);
    if (index >= num_items_) return;
    try {
      RunItem(index);
    } catch (...) {
      // Contract violation by RunItem; keep the worker alive and the task finishing.
    }
    ItemFinished();
  }
}

void ParallelTask::ItemFinished() {
  // acq_rel: the last finisher sees every other item's writes before Finish() and done.
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  try {
    Finish();
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(mutex_);
  done_.store(true, std::memory_order_release);
  done_cv_.get().notify_all();
}

void ParallelTask::CompleteIfEmpty() {
  if (num_items_ != 0 || done()) return;
  try {
    Finish();
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(mutex_);
  done_.store(true, std::memory_order_release);
  done_cv_.get().notify_all();
}

size_t ThreadPool::DefaultNumThreads() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return static_cast<size_t>(count);
  }
#endif
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(size_t num_threads)
    : num_threads_(num_threads == 0 ? DefaultNumThreads() : num_threads),
      owner_pid_(static_cast<int64_t>(getpid())) {
  workers_.reserve(num_threads_);
  try {
    for (size_t i = 0; i < num_threads_; ++i) {
      workers_.emplace_back([this] { WorkerLoop(); });
#if defined(__linux__)
      pthread_setname_np(workers_.back().native_handle(), "jaxguide-batch");
#endif
    }
  } catch (...) {
    Shutdown();
    throw;
  }
}

ThreadPool::~ThreadPool() { Shutdown(); }

bool ThreadPool::is_shut_down() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

void ThreadPool::Submit(std::shared_ptr<ParallelTask> task) {
  task->submit_pid_.store(static_cast<int64_t>(getpid()), std::memory_order_relaxed);
  const size_t num_items = task->num_items();
  if (num_items == 0) {
    task->CompleteIfEmpty();
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_ && !InForkedChild()) {
      queue_.push_back(std::move(task));
      task = nullptr;
      wake = idle_ > 0;
    }
  }
  if (task != nullptr) {  // shut down (or forked): run it here rather than never
    task->Help();
    return;
  }
  // Wake one worker; it wakes more (WorkerLoop), so this thread pays a single wake-up.
  if (wake) work_cv_.get().notify_one();
}

void ThreadPool::Shutdown() {
  std::lock_guard<std::mutex> join_lock(join_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  if (InForkedChild()) {
    // The workers were not copied into this process: nothing to join, and nothing to notify
    // (the condition variable may still count the parent's sleeping workers as waiters, and
    // glibc's notify can block on those). Leak the handles (destroying a joinable std::thread
    // would terminate the process).
    new std::vector<std::thread>(std::move(workers_));
    workers_.clear();
    return;
  }
  work_cv_.get().notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  workers_.clear();
}

bool ThreadPool::InForkedChild() const { return static_cast<int64_t>(getpid()) != owner_pid_; }

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::shared_ptr<ParallelTask> task;
    size_t wake = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty() && !stopping_) {
        ++idle_;
        work_cv_.get().wait(lock, [this] { return stopping_ || !queue_.empty(); });
        --idle_;
      }
      if (queue_.empty()) return;  // stopping, and every task handed out
      task = queue_.front();
      // Fan out: wake up to two more sleeping workers while items are left for them.
      wake =
          std::min<size_t>({idle_, size_t{2}, task->unclaimed() > 0 ? task->unclaimed() - 1 : 0});
    }
    for (size_t i = 0; i < wake; ++i) work_cv_.get().notify_one();
    task->Help();
    // Every item of `task` is claimed: retire it so that workers move on to the next task.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!queue_.empty() && queue_.front() == task) queue_.pop_front();
  }
}

}  // namespace jaxguide
