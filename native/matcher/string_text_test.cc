// StringTextAnalysis tests: every state it proves reads text is checked against the lexer DFA
// (all texts of up to 3 characters over a sample of character kinds, and the breadth-first
// exploration where it is cheap); it proves the key positions that exploration cannot.
#include "native/matcher/string_text.h"

#include <memory>
#include <string>
#include <vector>

#include "native/lexer/lexer_dfa.h"
#include "native/support/testing.h"

namespace jaxguide {
namespace {

const std::string kText = "[^\"\\\\\\x00-\\x1f\\x7f]";          // a string text character
const std::string kAny = "(?:" + kText + "|\\\\[\"\\\\nt])";  // one unit, escapes included

// Characters of every kind the text holds (ASCII, 2-, 3- and 4-byte UTF-8) and some it does
// not (escape, quote, control, DEL).
const std::vector<std::string> kSample = {"a", "p", "x", " ", "0", "\xc3\xa9", "\xe4\xb8\xad",
                                          "\xf0\x9f\x98\x80"};

// Whether every text of up to `depth` sample characters keeps `state` alive, without a
// boundary at any byte.
bool ReadsSampleTexts(const LexerDfa& lexer, LexerDfa::StateId state, int depth) {
  if (depth == 0) return true;
  for (const std::string& c : kSample) {
    LexerDfa::StateId s = state;
    for (const char byte : c) {
      const uint32_t next = lexer.NextWithBoundary(s, static_cast<uint8_t>(byte));
      if ((next & LexerDfa::kBoundaryBit) || next <= LexerDfa::kErrorState) return false;
      s = next;
    }
    if (!ReadsSampleTexts(lexer, s, depth - 1)) return false;
  }
  return true;
}

struct Case {
  std::vector<std::string> patterns;
  std::string prefix;  // bytes read from the start state (all terminals allowed)
  bool proven;         // what the analysis must answer
};

JG_TEST(StringTextAnalysis, ProofsHoldOnTheDfaAndCoverKeyPositions) {
  // "not one of ab, ac": leave the trie of names on any other character (the JSON Schema
  // compiler's shape for keys of additional properties), next to the literal names.
  const std::string not_names = "\"(?:(?:[^\"\\\\\\x00-\\x1f\\x7fa]|a[^\"\\\\\\x00-\\x1f\\x7fbc]"
                                "|a[bc]" + kText + ")" + kAny + "*|a|)\"";
  const std::vector<Case> cases = {
      {{"\"" + kAny + "*\""}, "\"", true},
      {{"\"" + kAny + "*\""}, "\"ab", true},
      {{"\"" + kText + "{0,5}\""}, "\"", false},  // room for 5 only
      {{"\"[a-z]*\""}, "\"", false},
      {{"\"[ -~]*\""}, "\"", false},              // ASCII only
      {{"\"" + kText + "{3}"}, "\"", false},      // matches after 3 characters
      {{"\"" + kAny + "*\"", "\"" + kText + "{2}x"}, "\"", false},  // a match inside text
      {{not_names, "\"ab\"", "\"ac\""}, "\"", true},
      {{not_names, "\"ab\"", "\"ac\""}, "\"a", true},
      {{not_names, "\"ab\"", "\"ac\""}, "\"ab", true},
      {{"\"ab\"", "\"ac\""}, "\"a", false},  // the literal names alone
      {{"\"a" + kAny + "*\""}, "\"", false},     // the first character must be `a`
  };
  for (const Case& c : cases) {
    const LexerDfa lexer(c.patterns);
    const StringTextAnalysis analysis(lexer.nfa());
    const LexerDfa::StateId state = lexer.Feed(lexer.StartState(), c.prefix);
    JG_ASSERT_TRUE(state > LexerDfa::kErrorState);
    const bool proven = analysis.ReadsAnyText(lexer.Threads(state), lexer.IsMatch(state));
    JG_EXPECT_EQ(proven, c.proven);
    if (proven) JG_EXPECT_TRUE(ReadsSampleTexts(lexer, state, 3));
  }
}

// Many literal names beside "any other name": the positions the breadth-first exploration of
// DFA states gives up on (each prefix of a name is a state of its own) are proven here.
JG_TEST(StringTextAnalysis, ProvesPositionsAmongManyNames) {
  std::vector<std::string> patterns = {"\"" + kAny + "*\""};
  for (int i = 0; i < 60; ++i) patterns.push_back("\"name" + std::to_string(i) + "x\"");
  const LexerDfa lexer(patterns);
  const StringTextAnalysis analysis(lexer.nfa());
  for (const std::string prefix : {"\"", "\"n", "\"name", "\"name1"}) {
    const LexerDfa::StateId state = lexer.Feed(lexer.StartState(), prefix);
    JG_EXPECT_TRUE(analysis.ReadsAnyText(lexer.Threads(state), lexer.IsMatch(state)));
    JG_EXPECT_TRUE(ReadsSampleTexts(lexer, state, 2));
  }
}

// A terminal whose groups blow up (the 13th character before the quote is `a`: 2^13 subsets
// of threads) is not proven; once it ran out of work it is retried with little, so the
// positions after it still prove the terminal beside it (a full retry ran out of work again
// and answered "not proven" for the whole state).
JG_TEST(StringTextAnalysis, ExhaustedTerminalDoesNotHideTheOthers) {
  const LexerDfa lexer({"\"" + kText + "*a" + kText + "{12}\"", "\"x" + kAny + "*\""});
  const StringTextAnalysis analysis(lexer.nfa());
  const LexerDfa::StateId first = lexer.Feed(lexer.StartState(), "\"");
  JG_ASSERT_TRUE(first > LexerDfa::kErrorState);
  JG_EXPECT_FALSE(analysis.ReadsAnyText(lexer.Threads(first), lexer.IsMatch(first)));
  for (const std::string prefix : {"\"x", "\"xa", "\"xyz", "\"xaaaa", "\"xqa b"}) {
    const LexerDfa::StateId state = lexer.Feed(lexer.StartState(), prefix);
    JG_ASSERT_TRUE(state > LexerDfa::kErrorState);
    JG_EXPECT_TRUE(analysis.ReadsAnyText(lexer.Threads(state), lexer.IsMatch(state)));
    JG_EXPECT_TRUE(ReadsSampleTexts(lexer, state, 2));
  }
}

// Generated pattern sets: whatever is proven holds on the DFA.
JG_TEST(StringTextAnalysis, GeneratedPatternsNeverProveWhatTheDfaRefutes) {
  const std::vector<std::string> pieces = {kText, "[a-z]", "[^a]", kAny, "[ -~]", "\\d",
                                           "\xc3\xa9", "x", "[^\"\\\\\\x00-\\x1f\\x7fpq]"};
  const std::vector<std::string> shapes = {"*", "+", "?", "{0,2}", ""};
  uint32_t seed = 12345;
  auto next = [&seed](size_t n) {
    seed = seed * 1103515245u + 12345u;
    return static_cast<size_t>((seed >> 16) % n);
  };
  int proven = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<std::string> patterns;
    const size_t count = 1 + next(3);
    for (size_t t = 0; t < count; ++t) {
      std::string body;
      const size_t parts = 1 + next(3);
      for (size_t p = 0; p < parts; ++p) {
        body += "(?:" + pieces[next(pieces.size())] + ")" + shapes[next(shapes.size())];
      }
      patterns.push_back("\"" + body + (next(2) ? "\"" : ""));
    }
    const LexerDfa lexer(patterns);
    const StringTextAnalysis analysis(lexer.nfa());
    const LexerDfa::StateId state = lexer.Feed(lexer.StartState(), "\"");
    if (state <= LexerDfa::kErrorState) continue;
    if (analysis.ReadsAnyText(lexer.Threads(state), lexer.IsMatch(state))) {
      ++proven;
      JG_EXPECT_TRUE(ReadsSampleTexts(lexer, state, 3));
    }
  }
  JG_EXPECT_TRUE(proven > 10);  // the generator reaches provable states
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
