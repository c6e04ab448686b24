// ForkLocks: a registry of internal mutexes and the pthread_atfork handlers that lock them all
// around fork().
//
// Design note. What: after fork() the child has one thread, a copy of the forking one; a mutex
// that a worker thread (a batch fill building lexer DFA states, say) held at that moment stays
// locked in the child, and the first Matcher there that needs the same DFA hangs. Two ways out:
// re-create the mutexes in the child (the data they guard may then be half-updated: a DFA
// state half interned) or hold them all across the fork, as glibc does for malloc. We hold them:
// the prepare handler takes the registry lock, then every registered mutex (outer level first,
// registration order within a level), so fork() happens between critical sections; the parent
// and child handlers unlock them all. Critical sections are short (a DFA state build is bounded
// by the caller's budget; the others are a few pointer updates), so fork() waits little.
// Why a registry: mutexes live in objects created and destroyed at any time (one per lexer DFA,
// mask cache, thread pool), so the handler needs the live set; registration happens in
// constructors, never on a hot path. Lock order: no code holds two registered mutexes of one
// level, so any fixed order is deadlock-free; the registry lock is never taken while a
// registered mutex is held (the contract in the header).
// Condition variables cannot be handled that way (a waiter releases its mutex while it waits,
// and glibc's condvar keeps waiter counts that the child inherits but no thread there will
// ever decrement: destroying it, or notifying it, can block). The child handler bumps a fork
// generation, and ForkSafeCondition skips its destructor in a later generation (a leak of one
// object per condition variable alive at the fork).
#include "native/support/fork_locks.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <vector>

namespace jaxguide {
namespace {

std::atomic<uint64_t> fork_generation{0};

struct Registry {
  std::mutex mutex;  // guards the lists; held from prepare to parent / child
  std::vector<std::mutex*> levels[2];
};

Registry& TheRegistry() {
  static Registry* const registry = new Registry();  // never destroyed: used at exit and fork
  return *registry;
}

void Prepare() {
  Registry& registry = TheRegistry();
  registry.mutex.lock();
  for (const auto& level : registry.levels) {
    for (std::mutex* mutex : level) mutex->lock();
  }
}

void Release() {
  Registry& registry = TheRegistry();
  for (int level = 1; level >= 0; --level) {
    const auto& mutexes = registry.levels[level];
    for (auto it = mutexes.rbegin(); it != mutexes.rend(); ++it) (*it)->unlock();
  }
  registry.mutex.unlock();
}

void ReleaseInChild() {
  fork_generation.fetch_add(1, std::memory_order_relaxed);
  Release();
}

void InstallHandlers() {
  static const bool installed = [] {
    pthread_atfork(&Prepare, &Release, &ReleaseInChild);
    return true;
  }();
  (void)installed;
}

}  // namespace

ForkLockRegistration::ForkLockRegistration(std::mutex* mutex, ForkLockLevel level)
    : mutex_(mutex), level_(level) {
  InstallHandlers();
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.levels[static_cast<int>(level_)].push_back(mutex_);
}

ForkLockRegistration::~ForkLockRegistration() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto& mutexes = registry.levels[static_cast<int>(level_)];
  // Registration order is kept (erase, not swap-and-pop): prepare always locks in one order.
  const auto it = std::find(mutexes.rbegin(), mutexes.rend(), mutex_);
  if (it != mutexes.rend()) mutexes.erase(std::next(it).base());
}

uint64_t ForkGeneration() {
  InstallHandlers();
  return fork_generation.load(std::memory_order_relaxed);
}

size_t NumForkLocks() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return registry.levels[0].size() + registry.levels[1].size();
}

}  // namespace jaxguide
