// EarleyParser against an independent membership oracle (a fixpoint CYK over all substrings,
// which handles nullable and unit cycles) on hand-written and random grammars.
#include "native/parser/earley_parser.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "native/support/error.h"
#include "native/support/testing.h"

namespace jaxguide {
namespace {

// Terminals are 'a', 'b', 'c' (ids 0, 1, 2); nonterminals are upper-case letters.
constexpr int kTerminals = 3;

// Parses rules like "S -> S a | b |" (empty alternative allowed). Nonterminal letters are
// numbered in order of first appearance as a left-hand side; the first is the start.
GrammarSpec ParseRules(const std::vector<std::string>& lines) {
  GrammarSpec spec;
  spec.terminal_names = {"a", "b", "c"};
  std::vector<char> names;
  for (const std::string& line : lines) names.push_back(line[0]);
  auto symbol = [&](char c) -> int32_t {
    if (c >= 'a' && c <= 'c') return c - 'a';
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == c) return static_cast<int32_t>(kTerminals + i);
    }
    return -1;
  };
  for (char c : names) spec.nonterminal_names.push_back(std::string(1, c));
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string body = lines[n].substr(lines[n].find("->") + 2);
    std::vector<int32_t> rhs;
    for (char c : body + "|") {
      if (c == '|') {
        spec.rules.push_back({static_cast<int32_t>(n), rhs});
        rhs.clear();
      } else if (c != ' ') {
        rhs.push_back(symbol(c));
      }
    }
  }
  return spec;
}

// derives[i][j] = symbols deriving s[i:j]; fixpoint over all rules and splits.
bool OracleMember(const GrammarSpec& spec, const std::vector<int>& s) {
  const size_t n = s.size();
  const size_t symbols = kTerminals + spec.nonterminal_names.size();
  std::vector<std::vector<std::vector<bool>>> d(
      n + 1, std::vector<std::vector<bool>>(n + 1, std::vector<bool>(symbols, false)));
  for (size_t i = 0; i < n; ++i) d[i][i + 1][static_cast<size_t>(s[i])] = true;
  // Can rhs[k..] derive s[i:j]?
  std::function<bool(const std::vector<int32_t>&, size_t, size_t, size_t)> seq =
      [&](const std::vector<int32_t>& rhs, size_t k, size_t i, size_t j) -> bool {
    if (k == rhs.size()) return i == j;
    for (size_t m = i; m <= j; ++m) {
      if (d[i][m][static_cast<size_t>(rhs[k])] && seq(rhs, k + 1, m, j)) return true;
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t len = 0; len <= n; ++len) {
      for (size_t i = 0; i + len <= n; ++i) {
        for (const auto& rule : spec.rules) {
          const size_t lhs = kTerminals + static_cast<size_t>(rule.lhs);
          if (!d[i][i + len][lhs] && seq(rule.rhs, 0, i, i + len)) {
            d[i][i + len][lhs] = changed = true;
          }
        }
      }
    }
  }
  return d[0][n][kTerminals + static_cast<size_t>(spec.start)];
}

// Feeds s; returns -1 if rejected at some step, else 1 if accepting and 0 if only viable.
int ParserVerdict(EarleyParser* parser, const std::vector<int>& s) {
  uint32_t set = 0;
  for (int t : s) {
    set = parser->Scan(set, static_cast<uint32_t>(t));
    if (set == EarleyParser::kNoSet) return -1;
  }
  return parser->IsAccepting(set) ? 1 : 0;
}

void ForAllStrings(size_t max_length, const std::function<void(const std::vector<int>&)>& fn) {
  std::vector<int> s;
  std::function<void()> rec = [&]() {
    fn(s);
    if (s.size() == max_length) return;
    for (int t = 0; t < kTerminals; ++t) {
      s.push_back(t);
      rec();
      s.pop_back();
    }
  };
  rec();
}

// Checks membership on all strings up to max_length and the viability invariants, with sets'
// predictions in shared blocks (max_block_cores large), as items of their own (0), or a mix.
void CheckAgainstOracleWith(const GrammarSpec& spec, size_t max_length, size_t max_block_cores,
                            size_t min_block_cores) {
  auto grammar = std::make_shared<const Grammar>(spec, max_block_cores);
  EarleyParser parser(grammar, EarleyParser::kDefaultMaxItemsPerSet, min_block_cores);
  std::set<std::vector<int>> members;
  ForAllStrings(max_length, [&](const std::vector<int>& s) {
    if (OracleMember(spec, s)) members.insert(s);
  });
  ForAllStrings(max_length, [&](const std::vector<int>& s) {
    const int verdict = ParserVerdict(&parser, s);
    const bool member = members.count(s) > 0;
    JG_EXPECT_EQ(verdict == 1, member);
    // A rejected prefix has no member extension.
    if (verdict == -1) {
      for (const auto& m : members) {
        if (m.size() >= s.size() && std::equal(s.begin(), s.end(), m.begin())) {
          JG_EXPECT_TRUE(false);
          break;
        }
      }
    }
  });
  // MinTerminalsToAccept of each viable prefix = the shortest member extension (brute force
  // over the members up to max_length; beyond it, only "longer than what is left" is known).
  // Twice: with the sets of every prefix kept, then rolling back to the initial set before
  // each prefix (popped sets are reused with other contents: their cached tables must go).
  auto check_min_terminals = [&](bool truncate_each, const std::vector<int>& s) {
    if (truncate_each) parser.Truncate(1);
    uint32_t set = 0;
    for (int t : s) {
      if (set != EarleyParser::kNoSet) set = parser.Scan(set, static_cast<uint32_t>(t));
    }
    if (set == EarleyParser::kNoSet) return;
    size_t shortest = max_length + 1;
    for (const auto& m : members) {
      if (m.size() >= s.size() && std::equal(s.begin(), s.end(), m.begin())) {
        shortest = std::min(shortest, m.size() - s.size());
      }
    }
    const uint32_t got = parser.MinTerminalsToAccept(set);
    if (shortest <= max_length - s.size()) {
      JG_EXPECT_EQ(got, static_cast<uint32_t>(shortest));
    } else {
      JG_EXPECT_TRUE(got > max_length - s.size());
    }
  };
  for (const bool truncate_each : {false, true}) {
    ForAllStrings(max_length,
                  [&](const std::vector<int>& s) { check_min_terminals(truncate_each, s); });
  }
  JG_EXPECT_EQ(parser.MinTerminalsToAccept(EarleyParser::kNoSet), Grammar::kNoYield);
  // Rolling back to the initial set and replaying gives the same answers.
  parser.Truncate(1);
  JG_EXPECT_EQ(parser.num_sets(), 1u);
  ForAllStrings(3, [&](const std::vector<int>& s) {
    JG_EXPECT_EQ(ParserVerdict(&parser, s) == 1, members.count(s) > 0);
  });
}

void CheckAgainstOracle(const GrammarSpec& spec, size_t max_length) {
  // Every set's predictions in blocks (min_block_cores 0), in items of its own (no block
  // budget), a mix (a tiny budget; sets predicting little by item, the default threshold).
  for (const size_t max_block_cores : {Grammar::kMaxBlockCores, size_t{0}, size_t{6}}) {
    CheckAgainstOracleWith(spec, max_length, max_block_cores, 0);
  }
  CheckAgainstOracleWith(spec, max_length, Grammar::kMaxBlockCores, 3);
}

JG_TEST(EarleyParser, LeftAndRightRecursion) {
  CheckAgainstOracle(ParseRules({"S -> S a | b"}), 6);  // b a*
  CheckAgainstOracle(ParseRules({"S -> a S | b"}), 6);  // a* b
  CheckAgainstOracle(ParseRules({"S -> a S b |"}), 6);  // a^n b^n
}

JG_TEST(EarleyParser, NullableAndAmbiguous) {
  CheckAgainstOracle(ParseRules({"S -> A B A", "A -> a |", "B -> B b | A"}), 6);
  CheckAgainstOracle(ParseRules({"S -> S S | a | "}), 6);                 // exponentially ambiguous
  CheckAgainstOracle(ParseRules({"S -> A", "A -> B", "B -> A | c"}), 4);  // unit cycle
  CheckAgainstOracle(ParseRules({"S -> A A A A c", "A -> | a"}), 6);
}

JG_TEST(EarleyParser, RandomGrammarsAgreeWithOracle) {
  std::mt19937 rng(42);
  for (int round = 0; round < 60; ++round) {
    const int num_nt = 1 + static_cast<int>(rng() % 3);
    std::vector<std::string> lines;
    for (int n = 0; n < num_nt; ++n) {
      std::string line = std::string(1, static_cast<char>('S' + n)) + " ->";
      const int alternatives = 1 + static_cast<int>(rng() % 3);
      for (int a = 0; a < alternatives; ++a) {
        if (a > 0) line += " |";
        const int length = static_cast<int>(rng() % 4);
        for (int k = 0; k < length; ++k) {
          const int pick = static_cast<int>(rng() % (kTerminals + num_nt));
          line += " ";
          line += pick < kTerminals ? static_cast<char>('a' + pick)
                                    : static_cast<char>('S' + pick - kTerminals);
        }
      }
      lines.push_back(line);
    }
    try {
      CheckAgainstOracle(ParseRules(lines), 5);
    } catch (const GrammarError&) {
      // Empty language: the constructor says so; the oracle agrees (nothing derivable).
      JG_EXPECT_FALSE(OracleMember(ParseRules(lines), {}));
    }
  }
}

JG_TEST(EarleyParser, EmptyLanguageIsAnError) {
  JG_EXPECT_THROWS(Grammar{ParseRules({"S -> S a"})}, GrammarError);
  GrammarSpec bad = ParseRules({"S -> a"});
  bad.rules[0].rhs.push_back(99);
  JG_EXPECT_THROWS(Grammar{bad}, GrammarError);
}

JG_TEST(EarleyParser, ScansAreMemoizedAndTruncationUndoesThem) {
  auto grammar = std::make_shared<const Grammar>(ParseRules({"S -> a S | b"}));
  EarleyParser parser(grammar);
  const uint32_t s1 = parser.Scan(0, 0);
  JG_EXPECT_EQ(parser.Scan(0, 0), s1);
  JG_EXPECT_EQ(parser.num_sets(), 2u);
  JG_EXPECT_EQ(parser.Scan(0, 2), EarleyParser::kNoSet);  // 'c' never allowed
  const uint32_t s2 = parser.Scan(s1, 0);
  JG_EXPECT_EQ(parser.num_sets(), 3u);
  parser.Truncate(2);
  JG_EXPECT_EQ(parser.num_sets(), 2u);
  const uint32_t s2_again = parser.Scan(s1, 0);  // rebuilt at the same index
  JG_EXPECT_EQ(s2_again, s2);
  JG_EXPECT_TRUE(parser.IsAccepting(parser.Scan(s2_again, 1)));
  JG_EXPECT_TRUE(parser.AllowedTerminals(0).Contains(0));
  JG_EXPECT_FALSE(parser.AllowedTerminals(0).Contains(2));
}

JG_TEST(EarleyParser, ScanReturnsAnEquivalentLiveSet) {
  // S -> a R b, R -> R c | (lark's left-recursive repetition): after "a c", every further
  // "c" leads to a set with the same future, which is the set after "a c" itself.
  for (const size_t min_block_cores : {EarleyParser::kMinBlockCores, size_t{0}}) {
    auto grammar = std::make_shared<const Grammar>(ParseRules({"S -> a R b", "R -> R c |"}));
    EarleyParser parser(grammar, EarleyParser::kDefaultMaxItemsPerSet, min_block_cores);
    const uint32_t after_a = parser.Scan(0, 0);
    const uint32_t after_ac = parser.Scan(after_a, 2);
    JG_ASSERT_TRUE(after_ac != EarleyParser::kNoSet);
    const size_t sets = parser.num_sets();
    JG_EXPECT_EQ(parser.Scan(after_ac, 2), after_ac);  // no new set
    JG_EXPECT_EQ(parser.num_sets(), sets);
    JG_EXPECT_TRUE(parser.IsAccepting(parser.Scan(after_ac, 1)));
    // Truncating below the set drops the memo entry made later that names it.
    parser.Truncate(after_ac);
    JG_EXPECT_EQ(parser.num_sets(), static_cast<size_t>(after_ac));
    const uint32_t again = parser.Scan(after_a, 2);
    JG_EXPECT_EQ(again, after_ac);
    JG_EXPECT_EQ(parser.Scan(again, 2), again);
    JG_EXPECT_FALSE(parser.IsAccepting(again));
    JG_EXPECT_EQ(parser.MinTerminalsToAccept(again), 1u);
  }
}

JG_TEST(EarleyParser, PredictionBlocksAreSharedAndBounded) {
  // S -> a E | b E E ; E -> E c | c: the sets after "a" and after "b" predict the same items (E's
  // closure), one block of the grammar for both parsers; with no block budget each set holds
  // them as items of its own, and the answers are the same.
  const GrammarSpec spec = ParseRules({"S -> a E | b E E", "E -> E c | c"});
  auto shared = std::make_shared<const Grammar>(spec);
  auto unshared = std::make_shared<const Grammar>(spec, /*max_block_cores=*/0);
  const size_t items = EarleyParser::kDefaultMaxItemsPerSet;
  EarleyParser first(shared, items, 0), second(shared, items, 0), plain(unshared, items, 0);
  const uint32_t after_a = first.Scan(0, 0);
  const uint32_t after_b = second.Scan(0, 1);
  JG_EXPECT_EQ(first.NumItems(after_a), 3u);   // S -> a . E, E -> . E c, E -> . c
  JG_EXPECT_EQ(second.NumItems(after_b), 3u);  // S -> b . E E, the same two predictions
  JG_EXPECT_EQ(first.Scan(0, 0), after_a);
  JG_EXPECT_EQ(plain.NumItems(plain.Scan(0, 0)), 3u);
  const GrammarSpec::Rule e = spec.rules[2];
  const Grammar::PredictionBlock* block = shared->PredictionBlockOf({kTerminals + e.lhs});
  JG_ASSERT_TRUE(block != nullptr);
  JG_EXPECT_EQ(block->cores.size(), 2u);
  JG_EXPECT_TRUE(block->allowed.Contains(2) && !block->allowed.Contains(0));
  JG_EXPECT_TRUE(unshared->PredictionBlockOf({kTerminals + e.lhs}) == nullptr);
  for (EarleyParser* parser : {&first, &plain}) {
    uint32_t set = parser->Scan(0, 0);
    for (int i = 0; i < 3; ++i) set = parser->Scan(set, 2);
    JG_EXPECT_TRUE(parser->IsAccepting(set));
    JG_EXPECT_EQ(parser->Scan(set, 1), EarleyParser::kNoSet);
  }
}

JG_TEST(EarleyParser, SpareStorageGoesToTheNextParser) {
  // A parser that goes away leaves its sets' storage to the next one, of any grammar: the
  // next parser starts from it (sets of another grammar, cleared as popped sets are).
  auto big = std::make_shared<const Grammar>(ParseRules({"S -> S a | S b | c"}));
  auto other = std::make_shared<const Grammar>(ParseRules({"S -> a S b |"}));
  size_t before = 0;
  {
    EarleyParser parser(big);  // (may take spare storage of the tests before)
    before = EarleyParser::SpareBytes();
    uint32_t set = parser.Scan(0, 2);
    for (int i = 0; i < 40; ++i) set = parser.Scan(set, static_cast<uint32_t>(i % 2));
    JG_EXPECT_TRUE(parser.IsAccepting(set));
  }
  const size_t left = EarleyParser::SpareBytes();
  JG_EXPECT_TRUE(left > before);
  EarleyParser next(other);
  JG_EXPECT_TRUE(EarleyParser::SpareBytes() < left);
  JG_EXPECT_EQ(ParserVerdict(&next, {0, 0, 1, 1}), 1);
  JG_EXPECT_EQ(ParserVerdict(&next, {0, 1, 1}), -1);
  JG_EXPECT_EQ(ParserVerdict(&next, {2}), -1);
}

JG_TEST(EarleyParser, MergeIsTheUnionOfItsMembers) {
  // S -> A | a B ; A -> a a c ; B -> a d. After "a": set p1 (from the initial set). Merging the
  // initial set with p1 must accept both continuations: "a a c" (from set 0) and "a d" (p1).
  for (const size_t max_block_cores : {Grammar::kMaxBlockCores, size_t{0}}) {
    auto grammar = std::make_shared<const Grammar>(
        ParseRules({"S -> A | a B", "A -> a a c", "B -> a D", "D -> b"}), max_block_cores);
    EarleyParser parser(grammar, EarleyParser::kDefaultMaxItemsPerSet, 0);
    const uint32_t p1 = parser.Scan(0, 0);
    const uint32_t merged = parser.Merge({0, p1});
    JG_EXPECT_EQ(parser.Merge({0, p1}), merged);  // memoized
    // From the initial set: a a c.
    uint32_t s = parser.Scan(parser.Scan(merged, 0), 0);
    JG_ASSERT_TRUE(s != EarleyParser::kNoSet);
    JG_EXPECT_TRUE(parser.IsAccepting(parser.Scan(s, 2)));
    // From p1: a b (B -> a D, D -> b).
    s = parser.Scan(merged, 0);
    JG_EXPECT_TRUE(parser.IsAccepting(parser.Scan(s, 1)));
    // Nothing else: "c" cannot start either continuation.
    JG_EXPECT_EQ(parser.Scan(merged, 2), EarleyParser::kNoSet);
  }
}

JG_TEST(EarleyParser, ItemBudgetStopsWithAClearError) {
  // S -> S S | a | (empty): the set after "a a a ..." grows; a tiny budget must trip.
  for (const size_t min_block_cores : {EarleyParser::kMinBlockCores, size_t{0}}) {
    auto grammar = std::make_shared<const Grammar>(ParseRules({"S -> S S | a |"}));
    EarleyParser parser(grammar, /*max_items_per_set=*/16, min_block_cores);
    uint32_t set = 0;
    bool tripped = false;
    try {
      for (int i = 0; i < 50 && set != EarleyParser::kNoSet; ++i) set = parser.Scan(set, 0);
    } catch (const BudgetExceededError&) {
      tripped = true;
    }
    JG_EXPECT_TRUE(tripped);
    // The parser is still usable below the failed set.
    JG_EXPECT_TRUE(parser.num_sets() >= 1);
    parser.Truncate(1);
    JG_EXPECT_TRUE(parser.IsAccepting(0));
  }
}

JG_TEST(EarleyParser, WorkMeterChargesAndStopsWithAClearError) {
  // S -> S S | a: each "a" completes many items into many others (no set is large, the work
  // is). The meter is charged kWorkWeight per item added or found again and trips past its
  // limit, dropping the set being built; without a meter nothing is charged.
  for (const size_t min_block_cores : {EarleyParser::kMinBlockCores, size_t{0}}) {
    auto grammar = std::make_shared<const Grammar>(ParseRules({"S -> S S | a"}));
    EarleyParser parser(grammar, EarleyParser::kDefaultMaxItemsPerSet, min_block_cores);
    uint64_t used = 0;
    parser.SetWorkMeter(&used, uint64_t{1} << 40);
    uint32_t set = parser.Scan(0, 0);
    JG_EXPECT_TRUE(set != EarleyParser::kNoSet);
    JG_EXPECT_TRUE(used >= EarleyParser::kWorkWeight * parser.NumItems(set));
    const size_t sets = parser.num_sets();
    parser.SetWorkMeter(&used, used + 10);
    std::string message;
    try {
      for (int i = 0; i < 50 && set != EarleyParser::kNoSet; ++i) set = parser.Scan(set, 0);
    } catch (const BudgetExceededError& e) {
      message = e.what();
    }
    JG_EXPECT_TRUE(message.find("Earley parsing exceeded the budget") != std::string::npos);
    JG_EXPECT_EQ(parser.num_sets(), sets);  // no half-built set left behind
    parser.SetWorkMeter(nullptr, 0);
    const uint64_t before = used;
    JG_EXPECT_TRUE(parser.Scan(set, 0) != EarleyParser::kNoSet);
    JG_EXPECT_EQ(used, before);
  }
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
