// ThreadPool and BatchMaskFiller unit tests (run plain, under ASan+UBSan and under TSan by
// tests/test_native.py): every item runs exactly once, batch masks equal sequential masks on
// random walks, failing rows stay in their row, matchers in flight are refused, concurrent
// fills / accepts / rollbacks from several threads over one pool agree with a sequential replay,
// and single-matcher calls claimed from several threads never overlap.
#include "native/batch/batch_mask_filler.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "native/support/testing.h"

namespace jaxguide {
namespace {

// start: value ; value: STRING | NUMBER | "[" (value ("," value)*)? "]" ; %ignore WS
std::shared_ptr<const CompiledGrammar> ListGrammar(std::shared_ptr<const TokenizerInfo> tok) {
  CompiledGrammarSpec spec;
  spec.terminals = {{"STRING", "\"[^\"]*\"", false}, {"NUMBER", "[0-9]+", false},
                    {"LSQB", "\\[", false},          {"RSQB", "\\]", false},
                    {"COMMA", ",", false},           {"WS", "[ ]+", false}};
  spec.nonterminal_names = {"start", "value", "items"};
  const int32_t value = 7, items = 8;  // symbols: terminals 0..5, nonterminals from 6
  spec.rules = {{0, {value}},          {1, {0}},           {1, {1}},
                {1, {2, 3}},           {1, {2, items, 3}}, {2, {value}},
                {2, {items, 4, value}}};
  spec.start = 0;
  spec.ignore = {5};
  return std::make_shared<const CompiledGrammar>(spec, std::move(tok));
}

constexpr uint32_t kEos = 15;

std::shared_ptr<const TokenizerInfo> Vocabulary() {
  const std::vector<std::string> tokens = {"[",   "]", ",",  " ",  "\"",  "a",   "ab", "\"a",
                                           "a\"", "1", "12", "],", "[\"", "\",", "x",  ""};
  std::string flat;
  std::vector<uint32_t> offsets = {0};
  for (const std::string& token : tokens) {
    flat += token;
    offsets.push_back(static_cast<uint32_t>(flat.size()));
  }
  // logits width 100: 4 words, wider than the 16 tokens need.
  return std::make_shared<const TokenizerInfo>(flat, offsets, 100, std::vector<uint32_t>{kEos});
}

std::vector<uint32_t> SequentialMask(Matcher* matcher, size_t words) {
  std::vector<uint32_t> row(words, 0);
  matcher->FillNextTokenBitmask(row.data());
  return row;
}

bool Bit(const uint32_t* row, uint32_t id) { return (row[id >> 5] >> (id & 31)) & 1; }

std::vector<uint32_t> AllowedNonEos(const uint32_t* row) {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < kEos; ++id) {
    if (Bit(row, id)) ids.push_back(id);
  }
  return ids;
}

std::shared_ptr<const MatcherSet> SetOf(std::vector<std::unique_ptr<Matcher>>& matchers) {
  std::vector<Matcher*> raw;
  for (auto& m : matchers) raw.push_back(m.get());
  return std::make_shared<const MatcherSet>(std::move(raw));
}

// A task that blocks its worker until Release(), to hold a queue position deterministically.
class Gate : public ParallelTask {
 public:
  Gate() : ParallelTask(1) {}
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }

 protected:
  void RunItem(size_t) override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

class CountingTask : public ParallelTask {
 public:
  explicit CountingTask(size_t n) : ParallelTask(n), counts_(n) {}
  std::vector<std::atomic<int>> counts_;
  std::atomic<int> finished_{0};

 protected:
  void RunItem(size_t index) override {
    if (index % 7 == 3) std::this_thread::sleep_for(std::chrono::microseconds(50));
    counts_[index].fetch_add(1);
  }
  void Finish() override { finished_.fetch_add(1); }
};

JG_TEST(ThreadPool, EveryItemRunsOnceFromConcurrentSubmitters) {
  ThreadPool pool(4);
  JG_EXPECT_EQ(pool.num_threads(), 4u);
  JG_EXPECT_TRUE(ThreadPool::DefaultNumThreads() >= 1u);
  std::vector<std::shared_ptr<CountingTask>> tasks[3];
  std::vector<std::thread> submitters;
  for (int s = 0; s < 3; ++s) {
    submitters.emplace_back([&, s] {
      for (size_t n : {0, 1, 3, 17, 200, 5}) {
        auto task = std::make_shared<CountingTask>(n);
        tasks[s].push_back(task);
        pool.Submit(task);
        if (n == 17) task->Help();  // the submitter may help
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  for (auto& list : tasks) {
    for (auto& task : list) {
      task->Wait();
      JG_EXPECT_TRUE(task->done());
      JG_EXPECT_EQ(task->finished_.load(), 1);
      for (auto& count : task->counts_) JG_EXPECT_EQ(count.load(), 1);
    }
  }
}

JG_TEST(ThreadPool, ShutdownFinishesQueuedTasksAndLaterOnesRunInline) {
  auto pool = std::make_unique<ThreadPool>(1);
  auto gate = std::make_shared<Gate>();
  pool->Submit(gate);
  auto queued = std::make_shared<CountingTask>(50);
  pool->Submit(queued);
  JG_EXPECT_FALSE(queued->WaitFor(std::chrono::milliseconds(5)));  // behind the gate
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gate->Release();
  });
  pool->Shutdown();  // waits for the gate and the queued task
  releaser.join();
  JG_EXPECT_TRUE(queued->done());
  JG_EXPECT_TRUE(pool->is_shut_down());
  auto late = std::make_shared<CountingTask>(10);
  pool->Submit(late);  // runs on this thread
  JG_EXPECT_TRUE(late->done());
  pool.reset();  // a second (implicit) Shutdown is harmless
}

JG_TEST(BatchMaskFiller, RandomWalksMatchSequentialMasks) {
  auto grammar = ListGrammar(Vocabulary());
  const size_t words = grammar->tokenizer().bitmask_width() + 2;  // a wider model row
  BatchMaskFiller filler(std::make_shared<ThreadPool>(3));
  std::mt19937 rng(7);
  for (size_t batch : {1, 5, 64, 256}) {
    std::vector<std::unique_ptr<Matcher>> matchers, mirror;
    for (size_t i = 0; i < batch; ++i) {
      matchers.push_back(std::make_unique<Matcher>(grammar));
      mirror.push_back(std::make_unique<Matcher>(grammar));
    }
    auto set = SetOf(matchers);
    std::vector<uint32_t> bitmask(batch * words, 0xDEADBEEFu);
    std::vector<uint32_t*> rows;
    std::vector<size_t> order(batch);  // a permutation of the rows
    for (size_t i = 0; i < batch; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < batch; ++i) rows.push_back(bitmask.data() + order[i] * words);
    for (int step = 0; step < 12; ++step) {
      auto op = filler.FillNextTokenBitmaskAsync(set, rows, words);
      op->Wait();
      std::vector<uint32_t> tokens(batch);
      std::vector<size_t> back(batch, 0);
      for (size_t i = 0; i < batch; ++i) {
        const std::vector<uint32_t> expected = SequentialMask(mirror[i].get(), words);
        JG_EXPECT_TRUE(std::equal(expected.begin(), expected.end(), rows[i]));
        JG_EXPECT_TRUE(op->errors()[i].empty());
        const std::vector<uint32_t> allowed = AllowedNonEos(rows[i]);
        tokens[i] = allowed.empty() ? kEos : allowed[rng() % allowed.size()];
        back[i] = rng() % 5 == 0 ? 1 + rng() % 2 : 0;
      }
      auto accepted = filler.AcceptTokens(set, tokens);
      for (size_t i = 0; i < batch; ++i) {
        JG_EXPECT_EQ(static_cast<bool>(accepted->accepted()[i]), mirror[i]->AcceptToken(tokens[i]));
      }
      filler.Rollback(set, back);
      for (size_t i = 0; i < batch; ++i) {
        mirror[i]->Rollback(back[i]);
        JG_EXPECT_EQ(matchers[i]->num_steps(), mirror[i]->num_steps());
      }
    }
  }
}

JG_TEST(BatchMaskFiller, AcceptAndFillInOneOperation) {
  auto grammar = ListGrammar(Vocabulary());
  const size_t words = grammar->tokenizer().bitmask_width();
  BatchMaskFiller filler(std::make_shared<ThreadPool>(2));
  std::vector<std::unique_ptr<Matcher>> matchers;
  for (int i = 0; i < 3; ++i) matchers.push_back(std::make_unique<Matcher>(grammar));
  std::vector<uint32_t> bitmask(3 * words);
  std::vector<uint32_t*> rows = {&bitmask[0], &bitmask[words], &bitmask[2 * words]};
  // "[" then "12" is fine; "]" first is not allowed; "1" then EOS.
  auto op = filler.FillNextTokenBitmaskAsync(SetOf(matchers), rows, words,
                                             std::vector<uint32_t>{0, 1, 9});
  op->Wait();
  JG_EXPECT_EQ(op->accepted()[0], 1);
  JG_EXPECT_EQ(op->accepted()[1], 0);
  JG_EXPECT_TRUE(op->errors()[0].empty());
  JG_EXPECT_TRUE(op->errors()[1].find("not allowed") != std::string::npos);
  JG_EXPECT_EQ(matchers[1]->num_steps(), 0u);
  JG_EXPECT_EQ(rows[1][0], uint32_t{1} << kEos);  // EOS-only
  Matcher reference(grammar);
  reference.AcceptToken(0);
  JG_EXPECT_TRUE(SequentialMask(&reference, words) ==
                 std::vector<uint32_t>(rows[0], rows[0] + words));
  JG_EXPECT_TRUE(Bit(rows[2], kEos) && Bit(rows[2], 9));  // after "1": more digits or EOS
}

JG_TEST(BatchMaskFiller, FailingRowGetsEosOnlyMaskAndItsOwnError) {
  auto grammar = ListGrammar(Vocabulary());
  const size_t words = grammar->tokenizer().bitmask_width() + 1;
  BatchMaskFiller filler(std::make_shared<ThreadPool>(2));
  // After "[" every next byte may end the lexeme: the mask walks the trie with the parser, which
  // takes more than one lexer step, so a budget of 1 fails at row 3 only.
  std::vector<std::unique_ptr<Matcher>> matchers;
  for (int i = 0; i < 8; ++i) {
    const uint64_t budget = i == 3 ? 1 : Matcher::kDefaultMaskStepBudget;
    matchers.push_back(std::make_unique<Matcher>(grammar, budget));
    JG_ASSERT_TRUE(matchers.back()->AcceptToken(0));
  }
  std::vector<uint32_t> bitmask(8 * words, 0xFFFFFFFFu);
  std::vector<uint32_t*> rows;
  for (int i = 0; i < 8; ++i) rows.push_back(bitmask.data() + i * words);
  auto op = filler.FillNextTokenBitmaskAsync(SetOf(matchers), rows, words);
  op->Wait();
  Matcher fresh(grammar);
  fresh.AcceptToken(0);
  const std::vector<uint32_t> good = SequentialMask(&fresh, words);
  for (int i = 0; i < 8; ++i) {
    if (i == 3) {
      JG_EXPECT_TRUE(op->errors()[i].find("budget") != std::string::npos);
      JG_EXPECT_EQ(rows[i][0], uint32_t{1} << kEos);
      for (size_t w = 1; w < words; ++w) JG_EXPECT_EQ(rows[i][w], 0u);
    } else {
      JG_EXPECT_TRUE(op->errors()[i].empty());
      JG_EXPECT_TRUE(std::equal(good.begin(), good.end(), rows[i]));
    }
  }
}

JG_TEST(BatchMaskFiller, RefusesDuplicatesBusyMatchersAndNarrowRows) {
  auto grammar = ListGrammar(Vocabulary());
  const size_t words = grammar->tokenizer().bitmask_width();
  auto pool = std::make_shared<ThreadPool>(1);
  BatchMaskFiller filler(pool);
  std::vector<std::unique_ptr<Matcher>> matchers;
  for (int i = 0; i < 4; ++i) matchers.push_back(std::make_unique<Matcher>(grammar));
  Matcher* a = matchers[0].get();
  Matcher* b = matchers[1].get();
  JG_EXPECT_THROWS(MatcherSet({a, b, a}), std::invalid_argument);
  JG_EXPECT_THROWS(MatcherSet({a, nullptr}), std::invalid_argument);
  std::vector<uint32_t> bitmask(4 * words);
  auto set = std::make_shared<const MatcherSet>(std::vector<Matcher*>{a, b});
  JG_EXPECT_THROWS(filler.FillNextTokenBitmaskAsync(set, {&bitmask[0], &bitmask[words]}, words - 1),
                   std::invalid_argument);
  JG_EXPECT_THROWS(filler.FillNextTokenBitmaskAsync(set, {&bitmask[0]}, words),
                   std::invalid_argument);
  JG_EXPECT_FALSE(IsMatcherInFlight(a));  // nothing was started by the refused calls

  auto gate = std::make_shared<Gate>();
  pool->Submit(gate);  // the only worker is now blocked: the fill below stays queued
  auto op = filler.FillNextTokenBitmaskAsync(set, {&bitmask[0], &bitmask[words]}, words);
  JG_EXPECT_TRUE(IsMatcherInFlight(a) && IsMatcherInFlight(b));
  JG_EXPECT_FALSE(IsMatcherInFlight(matchers[2].get()));
  auto overlapping =
      std::make_shared<const MatcherSet>(std::vector<Matcher*>{matchers[2].get(), b});
  JG_EXPECT_THROWS(filler.AcceptTokens(overlapping, {0, 0}), MatcherBusyError);
  JG_EXPECT_THROWS(filler.FillNextTokenBitmaskAsync(set, {&bitmask[0], &bitmask[words]}, words),
                   MatcherBusyError);
  // Other matchers, but the same bitmask rows: refused; other rows: fine.
  auto others = std::make_shared<const MatcherSet>(
      std::vector<Matcher*>{matchers[2].get(), matchers[3].get()});
  JG_EXPECT_THROWS(
      filler.FillNextTokenBitmaskAsync(others, {&bitmask[2 * words], &bitmask[words]}, words),
      MatcherBusyError);
  Matcher e(grammar);  // another matcher, another row: queued behind `op`, fine
  auto disjoint_rows = filler.FillNextTokenBitmaskAsync(
      std::make_shared<const MatcherSet>(std::vector<Matcher*>{&e}), {&bitmask[3 * words]}, words);
  JG_EXPECT_FALSE(op->done());
  // Disjoint matchers run meanwhile (the calling thread helps with synchronous operations).
  auto other = std::make_shared<const MatcherSet>(
      std::vector<Matcher*>{matchers[2].get(), matchers[3].get()});
  auto accepted = filler.AcceptTokens(other, {0, 9});
  JG_EXPECT_EQ(accepted->accepted()[0], 1);
  JG_EXPECT_FALSE(op->done());
  gate->Release();
  op->Wait();
  disjoint_rows->Wait();
  JG_EXPECT_FALSE(IsMatcherInFlight(a) || IsMatcherInFlight(&e));
  accepted = filler.AcceptTokens(set, {0, 0});
  JG_EXPECT_EQ(accepted->accepted()[1], 1);
}

// The contract the Python binding gives every Matcher method: a call claims its matcher, so
// several threads calling one matcher (and a batch operation naming it) never run it at once:
// the later caller gets MatcherBusyError. Under TSan any overlap would be a reported race.
JG_TEST(MatcherClaim, ConcurrentCallsOnOneMatcherAreSerializedOrRefused) {
  auto grammar = ListGrammar(Vocabulary());
  const size_t words = grammar->tokenizer().bitmask_width();
  Matcher shared(grammar);
  BatchMaskFiller filler(std::make_shared<ThreadPool>(2));
  auto set = std::make_shared<const MatcherSet>(std::vector<Matcher*>{&shared});
  std::atomic<int> ran{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<uint32_t> row(words);
      for (int i = 0; i < 2000; ++i) {
        try {
          if (t == 3 && i % 4 == 0) {  // a batch operation naming the same matcher
            std::vector<uint32_t> batch_row(words);
            filler.FillNextTokenBitmaskAsync(set, {batch_row.data()}, words)->Wait();
          } else {
            MatcherClaim claim(&shared);
            switch (rng() % 4) {
              case 0: shared.AcceptToken(rng() % 2 == 0 ? 0 : 9); break;  // "[" or "1"
              case 1: shared.FillNextTokenBitmask(row.data()); break;
              case 2: shared.Rollback(shared.num_steps() > 0 ? 1 : 0); break;
              default: shared.Reset(); break;
            }
          }
          ran.fetch_add(1);
        } catch (const MatcherBusyError&) {
          refused.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  JG_EXPECT_EQ(ran.load() + refused.load(), 8000);
  JG_EXPECT_TRUE(ran.load() > 0);
  {
    MatcherClaim claim(&shared);
    JG_EXPECT_THROWS(MatcherClaim again(&shared), MatcherBusyError);  // the same matcher
    JG_EXPECT_THROWS(filler.AcceptTokens(set, {0}), MatcherBusyError);
  }
  MatcherClaim free_again(&shared);  // every claim was released
  JG_EXPECT_FALSE(IsMatcherInFlight(&shared));
}

// Several client threads, each driving its own matchers through fills, accepts and rollbacks
// on one shared pool; each client replays the same decisions on private mirror matchers
// sequentially and compares.
JG_TEST(BatchMaskFiller, ConcurrentFillsAcceptsAndRollbacksStress) {
  auto grammar = ListGrammar(Vocabulary());
  const size_t words = grammar->tokenizer().bitmask_width();
  BatchMaskFiller filler(std::make_shared<ThreadPool>(4));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(100 + c);
      const size_t batch = 8 + 8 * c;
      std::vector<std::unique_ptr<Matcher>> matchers, mirror;
      for (size_t i = 0; i < batch; ++i) {
        matchers.push_back(std::make_unique<Matcher>(grammar));
        mirror.push_back(std::make_unique<Matcher>(grammar));
      }
      // Two halves in flight at once: fill one half while accepting into the other.
      std::vector<Matcher*> first, second;
      for (size_t i = 0; i < batch; ++i) (i % 2 ? second : first).push_back(matchers[i].get());
      auto set1 = std::make_shared<const MatcherSet>(first);
      auto set2 = std::make_shared<const MatcherSet>(second);
      std::vector<uint32_t> bitmask(batch * words);
      std::vector<uint32_t*> rows1, rows2;
      for (size_t i = 0; i < batch; ++i) (i % 2 ? rows2 : rows1).push_back(&bitmask[i * words]);
      for (int step = 0; step < 30; ++step) {
        auto fill1 = filler.FillNextTokenBitmaskAsync(set1, rows1, words);
        auto fill2 = filler.FillNextTokenBitmaskAsync(set2, rows2, words);
        fill1->Wait();
        std::vector<uint32_t> tokens1;
        for (size_t k = 0; k < first.size(); ++k) {
          const std::vector<uint32_t> allowed = AllowedNonEos(rows1[k]);
          tokens1.push_back(allowed.empty() ? kEos : allowed[rng() % allowed.size()]);
        }
        filler.AcceptTokens(set1, tokens1);  // while fill2 may still run
        fill2->Wait();
        std::vector<uint32_t> tokens2;
        for (size_t k = 0; k < second.size(); ++k) {
          const std::vector<uint32_t> allowed = AllowedNonEos(rows2[k]);
          tokens2.push_back(allowed.empty() ? kEos : allowed[rng() % allowed.size()]);
        }
        auto accept2 = filler.FillNextTokenBitmaskAsync(set2, rows2, words, tokens2);
        std::vector<size_t> back1(first.size());
        for (size_t& b : back1) b = rng() % 4 == 0 ? 1 : 0;
        filler.Rollback(set1, back1);
        accept2->Wait();
        // Replay sequentially.
        for (size_t k = 0; k < first.size(); ++k) {
          Matcher& m = *mirror[2 * k];
          if (!m.AcceptToken(tokens1[k]) && tokens1[k] != kEos) ++mismatches[c];
          m.Rollback(back1[k]);
          if (m.num_steps() != first[k]->num_steps()) ++mismatches[c];
        }
        for (size_t k = 0; k < second.size(); ++k) {
          Matcher& m = *mirror[2 * k + 1];
          m.AcceptToken(tokens2[k]);
          if (SequentialMask(&m, words) != std::vector<uint32_t>(rows2[k], rows2[k] + words)) {
            ++mismatches[c];
          }
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  for (int m : mismatches) JG_EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
