// fork() while worker threads build lexer DFA states, fill mask caches and run batch fills:
// the child (single-threaded, under alarm()) must find every internal mutex usable (new
// transitions and start states on the shared DFA, a new grammar through the shared UTF-8 class
// cache, claims in the in-flight registry, a task on the parent's pool, run inline there) and a
// matcher of a batch in flight must stay busy in it. Also two threads sharing one
// BatchMaskFiller with disjoint matchers (the Python BatchMatcher used from several threads).
// Runs plain, under ASan+UBSan and under TSan (tests/test_native.py).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "native/batch/batch_mask_filler.h"
#include "native/support/fork_locks.h"
#include "native/support/testing.h"

namespace jaxguide {
namespace {

constexpr uint32_t kEos = 0;

std::shared_ptr<const TokenizerInfo> Vocabulary() {
  // Token 0 is EOS (no bytes); then every printable ASCII byte and a few pairs.
  std::string flat;
  std::vector<uint32_t> offsets = {0, 0};
  auto add = [&](const std::string& token) {
    flat += token;
    offsets.push_back(static_cast<uint32_t>(flat.size()));
  };
  for (char c = ' '; c <= '~'; ++c) add(std::string(1, c));
  for (const char* pair : {"ab", "a1", "1a", "{\"", "\":", "zz", "9 "}) add(pair);
  const size_t width = offsets.size() - 1;
  return std::make_shared<const TokenizerInfo>(flat, offsets, width, std::vector<uint32_t>{kEos});
}

// A grammar whose lexer keeps building states as the walks go deeper: WORD{1,3} words with
// counted repetitions, separated by spaces.
std::shared_ptr<const CompiledGrammar> Grammar(std::shared_ptr<const TokenizerInfo> tok,
                                               const std::string& word) {
  CompiledGrammarSpec spec;
  spec.terminals = {{"WORD", word, false}, {"SP", " ", false}};
  spec.nonterminal_names = {"start"};
  spec.rules = {{0, {0}}, {0, {0, 1, 2}}};  // start: WORD | WORD SP start
  spec.start = 0;
  return std::make_shared<const CompiledGrammar>(spec, std::move(tok));
}

// Walks `matcher` by the first allowed token of each mask, `steps` times.
void Walk(Matcher* matcher, size_t steps, uint32_t salt) {
  std::vector<uint32_t> row(matcher->tokenizer().bitmask_width());
  for (size_t s = 0; s < steps; ++s) {
    matcher->FillNextTokenBitmask(row.data());
    const uint32_t vocab = static_cast<uint32_t>(matcher->tokenizer().vocab_size());
    for (uint32_t k = 0; k < vocab; ++k) {
      const uint32_t id = 1 + (k + salt * 7 + static_cast<uint32_t>(s) * 13) % (vocab - 1);
      if ((row[id >> 5] >> (id & 31)) & 1) {
        matcher->AcceptToken(id);
        break;
      }
    }
  }
}

JG_TEST(Fork, ChildFindsEveryLockUsable) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Not under ASan or TSan: their allocators' own locks are not taken across fork() in this
  // toolchain, so a child forked while the builder threads allocate can block in malloc (ASan:
  // about 1 run in 3; TSan: about 1 in 70 under load, the child spinning in
  // DenseSlabAlloc::Refill), with or without jaxguide's fork handlers. The plain build runs it,
  // and tests/engine/test_fork.py forks the Python module during fills.
  return;
#endif
  auto tok = Vocabulary();
  auto grammar = Grammar(tok, "(?:[a-z0-9]{1,4}[{\":]?){1,6}");
  auto pool = std::make_shared<ThreadPool>(3);
  BatchMaskFiller filler(pool);
  std::atomic<bool> stop{false};
  // Background load: threads that build fresh DFAs (UTF-8 class cache, DFA mutexes) and walk.
  std::vector<std::thread> builders;
  for (uint32_t t = 0; t < 2; ++t) {
    builders.emplace_back([&, t] {
      for (uint32_t round = 0; !stop.load(); ++round) {
        auto fresh = Grammar(tok, "(?:[a-f" + std::to_string(round % 10) + "]{1,3} ?){1,5}");
        Matcher matcher(fresh);
        Walk(&matcher, 6, t + round);
      }
    });
  }
  for (int iteration = 0; iteration < 12; ++iteration) {
    std::vector<std::unique_ptr<Matcher>> matchers;
    std::vector<Matcher*> raw;
    for (int i = 0; i < 24; ++i) {
      matchers.push_back(std::make_unique<Matcher>(grammar));
      Walk(matchers.back().get(), static_cast<size_t>(i % 5), static_cast<uint32_t>(i));
      raw.push_back(matchers.back().get());
    }
    auto set = std::make_shared<const MatcherSet>(raw);
    const size_t words = tok->bitmask_width();
    std::vector<uint32_t> bitmask(raw.size() * words);
    std::vector<uint32_t*> rows;
    for (size_t i = 0; i < raw.size(); ++i) rows.push_back(bitmask.data() + i * words);
    auto op = filler.FillNextTokenBitmaskAsync(set, rows, words);
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(90);  // a hang is a failure, not a stuck test run (TSan under load is slow)
      int failures = 0;
      // The shared DFA: new states and start states on it (its mutex and the mask cache's).
      Matcher fresh(grammar);
      Walk(&fresh, 8, 99);
      if (fresh.has_error()) ++failures;
      // A new grammar (the UTF-8 class cache's mutex).
      Matcher other(Grammar(tok, "[A-Z]{2,9}"));
      Walk(&other, 3, 5);
      if (other.has_error()) ++failures;
      // A new operation on the parent's pool runs inline; a matcher of the fill in flight at
      // the fork stays busy.
      std::vector<std::unique_ptr<Matcher>> mine;
      mine.push_back(std::make_unique<Matcher>(grammar));
      auto mine_set = std::make_shared<const MatcherSet>(std::vector<Matcher*>{mine[0].get()});
      std::vector<uint32_t> row(words);
      auto child_op = filler.FillNextTokenBitmaskAsync(mine_set, {row.data()}, words);
      if (!child_op->done() || op->orphaned() != !op->done()) ++failures;
      try {
        MatcherClaim claim(raw[0]);
        if (!op->done()) ++failures;  // claimed a matcher of the orphaned fill
      } catch (const MatcherBusyError&) {
      }
      _exit(failures == 0 ? 0 : 1);
    }
    JG_ASSERT_TRUE(pid > 0);
    int status = 0;
    JG_ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
    JG_EXPECT_TRUE(WIFEXITED(status));
    JG_EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
    op->Wait();
    JG_EXPECT_FALSE(op->orphaned());
  }
  stop.store(true);
  for (std::thread& t : builders) t.join();
  JG_EXPECT_TRUE(NumForkLocks() > 0);
}

JG_TEST(Fork, RegistrationFollowsObjectLifetime) {
  { auto warm = Grammar(Vocabulary(), "y+"); }  // process-wide caches register once, on first use
  const size_t before = NumForkLocks();
  {
    // a DFA mutex, a mask-cache mutex and the rules' prediction mutex
    auto grammar = Grammar(Vocabulary(), "x+");
    JG_EXPECT_EQ(NumForkLocks(), before + 3);
    ThreadPool pool(1);  // its queue mutex and its join mutex
    JG_EXPECT_EQ(NumForkLocks(), before + 5);
  }
  JG_EXPECT_EQ(NumForkLocks(), before);
}

JG_TEST(SharedFiller, TwoThreadsDisjointMatchers) {
  auto tok = Vocabulary();
  auto grammar = Grammar(tok, "[a-z0-9]{1,8}");
  BatchMaskFiller filler(std::make_shared<ThreadPool>(2));
  const size_t words = tok->bitmask_width();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::unique_ptr<Matcher>> matchers;
      std::vector<Matcher*> raw;
      for (int i = 0; i < 8; ++i) {
        matchers.push_back(std::make_unique<Matcher>(grammar));
        raw.push_back(matchers.back().get());
      }
      auto set = std::make_shared<const MatcherSet>(raw);
      std::vector<uint32_t> bitmask(raw.size() * words);
      for (int round = 0; round < 20; ++round) {
        std::vector<uint32_t*> rows;
        for (size_t i = 0; i < raw.size(); ++i) rows.push_back(bitmask.data() + i * words);
        filler.FillNextTokenBitmaskAsync(set, rows, words)->Wait();
        for (size_t i = 0; i < raw.size(); ++i) {
          std::vector<uint32_t> expected(words);
          matchers[i]->FillNextTokenBitmask(expected.data());
          for (size_t w = 0; w < words; ++w) {
            if (expected[w] != rows[i][w]) mismatches.fetch_add(1);
          }
        }
        Walk(matchers[round % 8].get(), 1, t);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  JG_EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
