// Matcher unit tests: a tiny JSON-like grammar; masks agree with per-token IsTokenAllowed, and
// many threads sharing one CompiledGrammar (lexer cache, lexeme-mask cache) compute the same
// masks as one thread (run under TSan by tests/test_native.py).
#include "native/matcher/matcher.h"

#include <memory>
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

std::shared_ptr<const TokenizerInfo> Vocabulary() {
  const std::vector<std::string> tokens = {"[",   "]", ",",  " ",  "\"",  "a",   "ab", "\"a",
                                           "a\"", "1", "12", "],", "[\"", "\",", "x",  ""};
  std::string flat;
  std::vector<uint32_t> offsets = {0};
  for (const std::string& token : tokens) {
    flat += token;
    offsets.push_back(static_cast<uint32_t>(flat.size()));
  }
  return std::make_shared<const TokenizerInfo>(flat, offsets, 64, std::vector<uint32_t>{15});
}

std::vector<uint32_t> Mask(Matcher* matcher) {
  std::vector<uint32_t> row(matcher->tokenizer().bitmask_width());
  matcher->FillNextTokenBitmask(row.data());
  return row;
}

const std::vector<uint32_t> kWalk = {0, 12, 5, 13, 9, 10, 2, 3, 7, 8, 1};  // [ [" a ", 1 12 , ...

JG_TEST(Matcher, MaskAgreesWithIsTokenAllowed) {
  auto grammar = ListGrammar(Vocabulary());
  Matcher matcher(grammar);
  for (uint32_t step = 0; step < 6; ++step) {
    const std::vector<uint32_t> mask = Mask(&matcher);
    for (uint32_t id = 0; id < 16; ++id) {
      const bool bit = (mask[id >> 5] >> (id & 31)) & 1;
      JG_EXPECT_EQ(bit, matcher.IsTokenAllowed(id));
    }
    JG_ASSERT_TRUE(matcher.AcceptToken(kWalk[step]));
  }
  JG_EXPECT_FALSE(matcher.has_error());
}

JG_TEST(Matcher, ConcurrentMatchersShareOneGrammar) {
  auto grammar = ListGrammar(Vocabulary());
  std::vector<std::vector<uint32_t>> reference;
  {
    Matcher matcher(grammar);
    for (uint32_t token : {0u, 4u, 5u, 6u, 4u, 2u, 9u}) {
      reference.push_back(Mask(&matcher));
      matcher.AcceptToken(token);
    }
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  auto fresh = ListGrammar(Vocabulary());  // cold caches, filled concurrently
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        Matcher matcher(fresh);
        size_t k = 0;
        for (uint32_t token : {0u, 4u, 5u, 6u, 4u, 2u, 9u}) {
          if (Mask(&matcher) != reference[k++]) ++mismatches[t];
          matcher.AcceptToken(token);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int m : mismatches) JG_EXPECT_EQ(m, 0);
}

JG_TEST(Matcher, RollbackRestoresMasks) {
  auto grammar = ListGrammar(Vocabulary());
  Matcher matcher(grammar);
  JG_ASSERT_TRUE(matcher.AcceptToken(0));
  const std::vector<uint32_t> after_open = Mask(&matcher);
  JG_ASSERT_TRUE(matcher.AcceptToken(9));
  JG_ASSERT_TRUE(matcher.AcceptToken(2));
  JG_EXPECT_TRUE(Mask(&matcher) != after_open);
  matcher.Rollback(2);
  JG_EXPECT_TRUE(Mask(&matcher) == after_open);
  JG_EXPECT_FALSE(matcher.AcceptToken(14));  // "x" is never allowed
  JG_EXPECT_EQ(matcher.num_steps(), 1u);
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
