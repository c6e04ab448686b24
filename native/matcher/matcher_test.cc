// Matcher unit tests: a tiny JSON-like grammar; masks agree with per-token IsTokenAllowed, and
// many threads sharing one CompiledGrammar (lexer cache, lexeme-mask cache) compute the same
// masks as one thread (run under TSan by tests/test_native.py); the string-slice check.
#include "native/matcher/matcher.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "native/lexer/lexer_dfa.h"
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

// Follow restrictions and special-token terminals. start: EQ EQ? NAME END_TOKEN, where EQ is
// "=" not followed by "=" (so "==" cannot be two EQs) and END_TOKEN is special token 3.
JG_TEST(Matcher, FollowRestrictionAndSpecialTokenTerminal) {
  const std::vector<std::string> tokens = {"=", "==", "a", "", "=a", "", "x"};
  std::string flat;
  std::vector<uint32_t> offsets = {0};
  for (const std::string& token : tokens) {
    flat += token;
    offsets.push_back(static_cast<uint32_t>(flat.size()));
  }
  auto tokenizer =
      std::make_shared<const TokenizerInfo>(flat, offsets, 32, std::vector<uint32_t>{5});
  CompiledGrammarSpec spec;
  spec.terminals = {{"EQ", "=", false, "="}, {"NAME", "[a-z]+", false}, {"END", "[^\\s\\S]"}};
  spec.nonterminal_names = {"start"};
  spec.rules = {{0, {0, 1, 2}}, {0, {0, 0, 1, 2}}};
  spec.start = 0;
  spec.special_tokens = {{2, 3}};
  auto grammar = std::make_shared<const CompiledGrammar>(spec, tokenizer);
  Matcher matcher(grammar);
  // Forced: "=" (a second "=" may not follow it, so a letter must: several are possible).
  const std::vector<Matcher::ForcedPiece> forced = matcher.ComputeForced();
  JG_EXPECT_EQ(forced.size(), size_t{1});
  JG_EXPECT_TRUE(forced[0].bytes == "=" && forced[0].special_token == -1);
  JG_EXPECT_TRUE(matcher.IsTokenAllowed(0));   // "="
  JG_EXPECT_TRUE(!matcher.IsTokenAllowed(1));  // "==": EQ may not be followed by "="
  JG_EXPECT_TRUE(matcher.IsTokenAllowed(4));   // "=a"
  JG_EXPECT_TRUE(!matcher.IsTokenAllowed(3));  // the special token: not before EQ NAME
  JG_EXPECT_TRUE(matcher.AcceptToken(4));
  std::vector<uint32_t> row(tokenizer->bitmask_width());
  matcher.FillNextTokenBitmask(row.data());
  JG_EXPECT_EQ(row[0], (1u << 2) | (1u << 3) | (1u << 6));  // NAME goes on, or the special
  JG_EXPECT_TRUE(!matcher.AcceptToken(5));      // EOS: not a sentence yet
  JG_EXPECT_TRUE(matcher.AcceptToken(3));
  JG_EXPECT_TRUE(matcher.IsAccepting());
  matcher.FillNextTokenBitmask(row.data());
  JG_EXPECT_EQ(row[0], 1u << 5);  // only EOS
  matcher.Rollback(1);
  JG_EXPECT_TRUE(!matcher.IsAccepting());
  JG_EXPECT_TRUE(matcher.IsTokenAllowed(3));
}

// start: LINE* (start: | start LINE). After "abc" the lexer threads of LINE are the same as
// before any byte (the regex opens with a starred atom), yet a lexeme is pending: EOS must wait
// for its end.
JG_TEST(Matcher, PendingLexemeBlocksEosWhenItsRegexOpensWithAStar) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[^\\n]*\\n", "\n"}, {"a*c", "c"}, {"[0-9a]*\\.[0-9]+", ".1"}, {"[a-z]*;", ";"}};
  for (const auto& [line, end] : cases) {
    CompiledGrammarSpec spec;
    spec.terminals = {{"LINE", line, false}};
    spec.nonterminal_names = {"start"};
    spec.rules = {{0, {}}, {0, {1, 0}}};
    spec.start = 0;
    Matcher matcher(std::make_shared<const CompiledGrammar>(spec, Vocabulary()));
    JG_EXPECT_TRUE(matcher.IsAccepting());  // the empty sentence
    JG_ASSERT_TRUE(matcher.AcceptBytes("a"));
    JG_EXPECT_FALSE(matcher.IsAccepting());
    JG_EXPECT_FALSE((Mask(&matcher)[0] >> 15) & 1);  // no EOS bit
    JG_EXPECT_FALSE(matcher.AcceptToken(15));        // EOS
    JG_ASSERT_TRUE(matcher.AcceptBytes("aa"));
    JG_EXPECT_FALSE(matcher.IsAccepting());
    JG_ASSERT_TRUE(matcher.AcceptBytes(end));
    JG_EXPECT_TRUE(matcher.IsAccepting());
    JG_EXPECT_TRUE(matcher.AcceptToken(15));
  }
}

// start: STR "," NUM ; %ignore WS. Terminals still to write: a lexeme in progress counts as the
// terminal it becomes, plus one while it cannot end yet (a string still missing "wifi", an
// unclosed one), so closing a lexeme is progress; whitespace costs nothing.
JG_TEST(Matcher, MinTerminalsToAcceptCountsUnfinishedLexemes) {
  CompiledGrammarSpec spec;
  spec.terminals = {{"STR", "\"[a-z]*wifi[a-z]*\"", false},
                    {"COMMA", ",", false},
                    {"NUM", "[0-9]+", false},
                    {"WS", " +", false}};
  spec.nonterminal_names = {"start"};
  spec.rules = {{0, {0, 1, 2}}};
  spec.start = 0;
  spec.ignore = {3};
  Matcher matcher(std::make_shared<const CompiledGrammar>(spec, Vocabulary()));
  const std::vector<std::pair<std::string, uint32_t>> steps = {
      {"", 3}, {" ", 3}, {"\"", 3}, {"ab", 3}, {"wifi", 3}, {"x", 3},
      {"\"", 2}, {" ", 2}, {",", 1}, {"1", 0}, {"2", 0}};
  for (const auto& [bytes, expected] : steps) {
    JG_ASSERT_TRUE(matcher.AcceptBytes(bytes));
    JG_EXPECT_EQ(matcher.MinTerminalsToAccept(), expected);
  }
  JG_EXPECT_TRUE(matcher.IsAccepting());
  JG_EXPECT_TRUE(matcher.AcceptToken(15));  // EOS
  JG_EXPECT_EQ(matcher.MinTerminalsToAccept(), 0u);
}

// The shortest completion of a pending lexeme: what a string still needs before its closing
// quote (the pattern's "1.2.3" part, digits and dots only), "" at a boundary or where the
// lexeme can end, and the bytes are accepted and end the lexeme.
JG_TEST(Matcher, ShortestLexemeCompletionFinishesThePendingLexeme) {
  CompiledGrammarSpec spec;
  spec.terminals = {{"VERSION", "\"[^\"]*[0-9]+\\.[0-9]+\\.[0-9]+[^\"]*\"", false},
                    {"COMMA", ",", false},
                    {"NUM", "[0-9]+", false}};
  spec.nonterminal_names = {"start"};
  spec.rules = {{0, {0, 1, 2}}};
  spec.start = 0;
  Matcher matcher(std::make_shared<const CompiledGrammar>(spec, Vocabulary()));
  JG_EXPECT_TRUE(matcher.ShortestLexemeCompletion() == std::string());  // no lexeme yet
  JG_ASSERT_TRUE(matcher.AcceptBytes("\"x1."));
  const std::optional<std::string> rest = matcher.ShortestLexemeCompletion();
  JG_ASSERT_TRUE(rest.has_value());
  JG_EXPECT_EQ(*rest, std::string("0.0\""));
  JG_EXPECT_EQ(matcher.MinTerminalsToAccept(), 3u);
  JG_ASSERT_TRUE(matcher.AcceptBytes(*rest));
  JG_EXPECT_EQ(matcher.MinTerminalsToAccept(), 2u);
  JG_ASSERT_TRUE(matcher.AcceptBytes(",1"));
  JG_EXPECT_TRUE(matcher.ShortestLexemeCompletion() == std::string());  // NUM can end here
  // A budget too small for the search: nullopt, and the matcher is unharmed.
  matcher.Rollback(2);
  JG_EXPECT_FALSE(matcher.ShortestLexemeCompletion(/*max_states=*/1).has_value());
  JG_EXPECT_FALSE(matcher.has_error());
  JG_EXPECT_TRUE(matcher.ShortestLexemeCompletion() == std::optional<std::string>("0.0\""));
}

// start: NAME ":" ; %ignore COMMENT, WS, as in lark.lark. A comment runs to the end of the line
// and the `:` must come on the same line, so a comment between NAME and `:` leads nowhere:
// it is refused there (else output could run on forever without a way to finish), and
// allowed where the input may end. Whitespace still may come before the `:`.
JG_TEST(Matcher, IgnoredLexemesThatLeadNowhereAreRefused) {
  CompiledGrammarSpec spec;
  spec.terminals = {{"NAME", "[A-Z]+", false},
                    {"COLON", ":", false},
                    {"COMMENT", "[ \\n]*#[^\\n]*", false},
                    {"WS", " +", false}};
  spec.nonterminal_names = {"start"};
  spec.rules = {{0, {0, 1}}};
  spec.start = 0;
  spec.ignore = {2, 3};
  auto grammar = std::make_shared<const CompiledGrammar>(spec, Vocabulary());
  Matcher matcher(grammar);
  JG_EXPECT_FALSE(matcher.AcceptBytes("# x\n"));  // a newline starts only another comment
  JG_ASSERT_TRUE(matcher.AcceptBytes("JOB"));
  JG_EXPECT_FALSE(matcher.AcceptBytes("#"));
  JG_EXPECT_FALSE(matcher.AcceptBytes("\n#"));
  JG_ASSERT_TRUE(matcher.AcceptBytes(" "));
  JG_EXPECT_FALSE(matcher.AcceptBytes("#"));
  JG_ASSERT_TRUE(matcher.AcceptBytes(":"));
  JG_ASSERT_TRUE(matcher.AcceptBytes(" # done"));  // the input may end here
  JG_EXPECT_TRUE(matcher.IsAccepting());
  JG_EXPECT_TRUE(matcher.AcceptBytes("\n# more"));
  JG_EXPECT_TRUE(matcher.IsAccepting());
  // Where a newline may come next (start: NAME NL ":"), the same comment leads on.
  spec.terminals.push_back({"NL", "\\n", false});
  spec.rules = {{0, {0, 4, 1}}};
  Matcher with_newline(std::make_shared<const CompiledGrammar>(spec, Vocabulary()));
  JG_ASSERT_TRUE(with_newline.AcceptBytes("JOB # why\n:"));
  JG_EXPECT_TRUE(with_newline.IsAccepting());
}

// One-terminal-per-pattern grammar (start: any of them) over the tiny vocabulary.
std::shared_ptr<const CompiledGrammar> TerminalsGrammar(const std::vector<std::string>& patterns) {
  CompiledGrammarSpec spec;
  for (size_t i = 0; i < patterns.size(); ++i) {
    spec.terminals.push_back({"T" + std::to_string(i), patterns[i], false});
  }
  spec.nonterminal_names = {"start"};
  for (size_t i = 0; i < patterns.size(); ++i) {
    spec.rules.push_back({0, {static_cast<int32_t>(i)}});
  }
  spec.start = 0;
  return std::make_shared<const CompiledGrammar>(spec, Vocabulary());
}

size_t TextCharsAfterQuote(const std::vector<std::string>& patterns) {
  auto grammar = TerminalsGrammar(patterns);
  const LexerDfa& lexer = grammar->lexer();
  return grammar->StringTextCharsWithoutBoundary(lexer.Feed(lexer.StartState(), "\""), 16);
}

JG_TEST(CompiledGrammar, StringTextCharsWithoutBoundary) {
  const std::string text = "[^\"\\\\\\x00-\\x1f]";
  JG_EXPECT_EQ(TextCharsAfterQuote({"\"(?:" + text + "|\\\\.)*\""}), size_t{16});
  JG_EXPECT_EQ(TextCharsAfterQuote({"\"" + text + "{0,5}\""}), size_t{5});
  JG_EXPECT_EQ(TextCharsAfterQuote({"\"[a-z]*\""}), size_t{0});
  // Non-ASCII characters count: a string of ASCII only is not free text.
  JG_EXPECT_EQ(TextCharsAfterQuote({"\"[ -~]*\""}), size_t{0});
  // A terminal that ends after 3 characters crosses a boundary at the 4th (maximal munch).
  JG_EXPECT_EQ(TextCharsAfterQuote({"\"" + text + "{3}"}), size_t{3});
  // Many literal keys next to a free string: every prefix is a lexer state, so the exploration
  // stops at its budget and claims only the depths it finished (sound, shorter).
  std::vector<std::string> keyed = {"\"(?:" + text + "|\\\\.)*\""};
  for (char c = 'a'; c <= 'l'; ++c) keyed.push_back("\"" + std::string(16, c) + "x\"");
  const size_t keyed_chars = TextCharsAfterQuote(keyed);
  JG_EXPECT_TRUE(keyed_chars >= 1);
  JG_EXPECT_TRUE(keyed_chars < 16);
}

// The lexer-only cache's frontier (trie nodes before whose byte the lexeme may end) leaves out
// the bytes no thread can read in any parser state: NUMBER cannot read `a` or `x` and no
// terminal starts with them; `,` and ` ` (an ignored terminal) start lexemes and stay.
JG_TEST(CompiledGrammar, LexemeMaskFrontierLeavesOutBytesNoLexemeReads) {
  auto grammar = ListGrammar(Vocabulary());
  const LexerDfa& lexer = grammar->lexer();
  const LexemeMask* cached = grammar->LexemeMaskOf(0, lexer.Feed(lexer.StartState(), "1"));
  JG_ASSERT_TRUE(cached != nullptr);
  std::string bytes;
  for (const auto& [node, state] : cached->frontier) {
    bytes += static_cast<char>(grammar->TrieOf(0).nodes()[node].byte());
  }
  JG_EXPECT_EQ(bytes.find('a'), std::string::npos);
  JG_EXPECT_EQ(bytes.find('x'), std::string::npos);
  JG_EXPECT_TRUE(bytes.find(',') != std::string::npos);
  JG_EXPECT_TRUE(bytes.find(' ') != std::string::npos);
  JG_EXPECT_TRUE(grammar->NoLexemeStartsWith('a'));
  JG_EXPECT_FALSE(grammar->NoLexemeStartsWith(' '));
}

// Lexer DFA states built outside masks count against the matcher's per-call budget: in
// `(?:[a-z]*x){200}` the state after n x's holds a thread in each of n + 1 copies, so one
// call that reads 150 x's builds ~10^4 threads, while each single byte builds at most ~200.
JG_TEST(Matcher, DfaStatesBuiltByAnyCallCountAgainstItsBudget) {
  const std::vector<std::string> patterns = {"(?:[a-z]*x){200}"};
  const std::string xs(150, 'x');
  {
    Matcher roomy(TerminalsGrammar(patterns));
    JG_EXPECT_TRUE(roomy.AcceptBytes(xs));
    JG_EXPECT_FALSE(roomy.has_error());
  }
  constexpr uint64_t kBudget = 20000;
  Matcher matcher(TerminalsGrammar(patterns), kBudget);  // a cold DFA
  JG_ASSERT_TRUE(!matcher.has_error());
  Matcher probe = matcher;
  JG_EXPECT_FALSE(probe.AcceptBytes(xs));
  JG_EXPECT_TRUE(probe.has_error());
  JG_EXPECT_TRUE(probe.error().find("building lexer DFA states") != std::string::npos);
  JG_EXPECT_TRUE(probe.error().find(std::to_string(kBudget)) != std::string::npos);
  JG_EXPECT_EQ(probe.num_steps(), size_t{0});  // refused, as a whole
  // Nothing was cached from the failed build, and the budget is per call: byte by byte, the
  // same text is accepted.
  for (const char c : xs) JG_ASSERT_TRUE(matcher.AcceptBytes(std::string(1, c)));
  JG_EXPECT_FALSE(matcher.has_error());
  // The error state refuses everything until Reset.
  JG_EXPECT_FALSE(probe.AcceptBytes("x"));
  probe.Reset();
  JG_EXPECT_FALSE(probe.has_error());
  // The completion search (200 states, ~2 * 10^4 threads) stops at the budget as at its
  // max_states: nullopt, and the matcher is unharmed.
  matcher.Rollback(matcher.num_steps());
  JG_ASSERT_TRUE(matcher.AcceptBytes("a"));
  JG_EXPECT_FALSE(matcher.ShortestLexemeCompletion(size_t{1} << 40).has_value());
  JG_EXPECT_FALSE(matcher.has_error());
  JG_EXPECT_TRUE(matcher.AcceptBytes("x"));
  Matcher unbounded(TerminalsGrammar(patterns));
  JG_ASSERT_TRUE(unbounded.AcceptBytes("a"));
  const std::optional<std::string> rest = unbounded.ShortestLexemeCompletion(size_t{1} << 40);
  JG_ASSERT_TRUE(rest.has_value());
  JG_EXPECT_EQ(*rest, std::string(200, 'x'));
}

}  // namespace
}  // namespace jaxguide


JG_TEST_MAIN()
