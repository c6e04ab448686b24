// Tests for LexerDfa: full match and prefix viability, multi-terminal states, start states per
// terminal subset, anchors, budgets (states, memory, NFA size; bounded repetition stays small),
// and concurrent use of one shared cache from many threads.
#include "native/lexer/lexer_dfa.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "native/lexer/code_point_dfa.h"
#include "native/lexer/regex_error.h"
#include "native/lexer/regex_parser.h"
#include "native/support/error.h"
#include "native/support/testing.h"

namespace jaxguide {
namespace {

using StateId = LexerDfa::StateId;

bool FullMatch(const std::string& pattern, const std::string& text, RegexOptions regex = {}) {
  LexerOptions options;
  options.regex = regex;
  LexerDfa dfa(std::vector<std::string>{pattern}, options);
  return dfa.IsMatch(dfa.Feed(dfa.StartState(), text));
}

bool Viable(const std::string& pattern, const std::string& text) {
  LexerDfa dfa(std::vector<std::string>{pattern});
  return !dfa.IsDead(dfa.Feed(dfa.StartState(), text));
}

JG_TEST(LexerDfa, FullMatchBasics) {
  JG_EXPECT_TRUE(FullMatch("abc", "abc"));
  JG_EXPECT_FALSE(FullMatch("abc", "ab"));
  JG_EXPECT_FALSE(FullMatch("abc", "abcd"));
  JG_EXPECT_TRUE(FullMatch("a|bc|", ""));
  JG_EXPECT_TRUE(FullMatch("(ab)*", "ababab"));
  JG_EXPECT_FALSE(FullMatch("(ab)*", "aba"));
  JG_EXPECT_TRUE(FullMatch("[0-9]{2,3}", "123"));
  JG_EXPECT_FALSE(FullMatch("[0-9]{2,3}", "1234"));
  JG_EXPECT_FALSE(FullMatch("[0-9]{2,3}", "1"));
  JG_EXPECT_TRUE(FullMatch("(a*)*b", "aaab"));
  JG_EXPECT_TRUE(FullMatch("\\d+", "\xD9\xA0"));  // ARABIC-INDIC DIGIT ZERO (Python \d)
  JG_EXPECT_TRUE(FullMatch(".", "\xE2\x82\xAC"));  // €
  JG_EXPECT_FALSE(FullMatch(".", "\n"));
  JG_EXPECT_TRUE(FullMatch("(?s).", "\n"));
  JG_EXPECT_TRUE(FullMatch("(?i)k", "\xE2\x84\xAA"));  // KELVIN SIGN
  JG_EXPECT_TRUE(FullMatch("(?i)STRASSE", "stra\xC5\xBFse"));  // long s
  JG_EXPECT_FALSE(FullMatch("(?i)ss", "\xC3\x9F"));  // ß is one code point, no full folding
  JG_EXPECT_TRUE(FullMatch("\xC3\xA9+", "\xC3\xA9\xC3\xA9"));
}

JG_TEST(LexerDfa, NeverAcceptsInvalidUtf8) {
  for (const char* text : {"\xC3", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80",
                           "\xFF", "\xE2\x82"}) {
    JG_EXPECT_FALSE(FullMatch("(?s).*", text));
  }
  JG_EXPECT_TRUE(Viable("(?s).*", "\xE2\x82"));   // a valid prefix of €
  JG_EXPECT_FALSE(Viable("(?s).*", "\xED\xA0"));  // would be a surrogate
  JG_EXPECT_FALSE(Viable("[a-z\xC3\xA9]", "\xC3\xA8"));
  JG_EXPECT_TRUE(Viable("[a-z\xC3\xA9]", "\xC3"));
}

JG_TEST(LexerDfa, DeadIsExact) {
  JG_EXPECT_TRUE(Viable("abc", "ab"));
  JG_EXPECT_FALSE(Viable("abc", "abd"));
  JG_EXPECT_FALSE(Viable("[^\\x00-\\U0010FFFF]x|y", "x"));  // empty class blocks the branch
  JG_EXPECT_FALSE(Viable("a^b", "a"));                       // ^ after a character never holds
  JG_EXPECT_FALSE(Viable("(?:a\\Z)b|c", "a"));               // nothing may follow \Z
  JG_EXPECT_TRUE(Viable("(?:a\\Z)b|ad", "a"));
  LexerDfa dfa(std::vector<std::string>{"[]"}, [] {
    LexerOptions o;
    o.regex.dialect = RegexDialect::kEcma;
    o.regex.ecma_search = false;
    return o;
  }());
  JG_EXPECT_TRUE(dfa.IsDead(dfa.StartState()));
}

JG_TEST(LexerDfa, EcmaSearchSemantics) {
  LexerOptions options;
  options.regex.dialect = RegexDialect::kEcma;
  LexerDfa dfa(std::vector<std::string>{"ab", "^ab", "ab$", "^ab$", "^a|b$"}, options);
  auto matched = [&](const std::string& text) {
    return dfa.MatchedTerminals(dfa.Feed(dfa.StartState(), text));
  };
  JG_EXPECT_TRUE((matched("xaby") == std::vector<uint32_t>{0}));
  JG_EXPECT_TRUE((matched("abx") == std::vector<uint32_t>{0, 1, 4}));
  JG_EXPECT_TRUE((matched("xab") == std::vector<uint32_t>{0, 2, 4}));
  JG_EXPECT_TRUE((matched("ab") == std::vector<uint32_t>{0, 1, 2, 3, 4}));
  JG_EXPECT_TRUE((matched("xb\n") == std::vector<uint32_t>{}));
}

JG_TEST(LexerDfa, MultiTerminalStatesAndSubsets) {
  const std::vector<std::string> terminals = {"if", "[a-z]+", "[0-9]+", "\\s+", "i"};
  LexerDfa dfa(terminals);
  JG_EXPECT_EQ(dfa.num_terminals(), size_t{5});
  StateId s = dfa.Next(dfa.StartState(), 'i');
  JG_EXPECT_TRUE((dfa.MatchedTerminals(s) == std::vector<uint32_t>{1, 4}));
  JG_EXPECT_TRUE((dfa.PossibleTerminals(s) == std::vector<uint32_t>{0, 1, 4}));
  s = dfa.Next(s, 'f');
  JG_EXPECT_TRUE((dfa.MatchedTerminals(s) == std::vector<uint32_t>{0, 1}));
  s = dfa.Next(s, 'x');
  JG_EXPECT_TRUE((dfa.MatchedTerminals(s) == std::vector<uint32_t>{1}));
  JG_EXPECT_TRUE(dfa.IsDead(dfa.Next(s, '1')));

  // Restricted start states are cached per distinct subset and see only their terminals.
  const StateId digits = dfa.StartState({2});
  JG_EXPECT_EQ(digits, dfa.StartState({2, 2}));
  JG_EXPECT_TRUE(dfa.IsDead(dfa.Next(digits, 'a')));
  JG_EXPECT_TRUE((dfa.MatchedTerminals(dfa.Next(digits, '7')) == std::vector<uint32_t>{2}));
  const StateId words = dfa.StartState({1, 0});
  JG_EXPECT_TRUE((dfa.PossibleTerminals(dfa.Next(words, 'i')) == std::vector<uint32_t>{0, 1}));
  JG_EXPECT_TRUE(dfa.IsDead(dfa.StartState(std::vector<uint32_t>{})));
  JG_EXPECT_EQ(dfa.StartState({0, 1, 2, 3, 4}), dfa.StartState());
  JG_EXPECT_THROWS(dfa.StartState({5}), std::out_of_range);
}

// A start state means "no byte read yet" (the matcher relies on it to tell an empty lexeme from
// a pending one), so it is never reached by bytes, even where the threads after some bytes are
// the same as before any (a regex that opens with a starred atom).
JG_TEST(LexerDfa, StartStatesAreNeverReachedByBytes) {
  LexerDfa dfa(std::vector<std::string>{"[^\\n]*\\n", "a*c", "[0-9]*\\.[0-9]+", "a+c"});
  for (const uint32_t terminal : {0u, 1u, 2u, 3u}) {
    const StateId start = dfa.StartState({terminal});
    for (const char* text : {"a", "aa", "abc", "1", "12"}) {
      const StateId after = dfa.Feed(start, text);
      JG_EXPECT_TRUE(after != start);
      JG_EXPECT_TRUE(dfa.IsDead(after) || dfa.Next(after, 'a') != start);
    }
  }
  const StateId all = dfa.StartState();
  JG_EXPECT_TRUE(dfa.Next(all, 'a') != all);
  // Otherwise the start state behaves as before: same matches after the same bytes.
  JG_EXPECT_TRUE((dfa.MatchedTerminals(dfa.Feed(all, "abc\n")) == std::vector<uint32_t>{0}));
  JG_EXPECT_TRUE((dfa.MatchedTerminals(dfa.Feed(all, "aac")) == std::vector<uint32_t>{1, 3}));
  JG_EXPECT_TRUE((dfa.PossibleTerminals(all) == std::vector<uint32_t>{0, 1, 2, 3}));
  JG_EXPECT_TRUE(dfa.MatchedTerminals(all).empty());
}

JG_TEST(LexerDfa, RegexErrorNamesTerminal) {
  try {
    LexerDfa dfa(std::vector<std::string>{"a", "b(?=c)"});
    JG_EXPECT_TRUE(false);
  } catch (const RegexError& e) {
    JG_EXPECT_EQ(e.pattern_index(), size_t{1});
    JG_EXPECT_EQ(e.offset(), size_t{1});
  }
}

JG_TEST(LexerDfa, BoundedRepetitionStaysSmall) {
  // 1000 counted copies: the NFA is linear, and a walk of n bytes builds at most n + 1 states,
  // each holding at most a couple of threads.
  LexerDfa dfa(std::vector<std::string>{"[a-z]{0,1000}", ".{5,200}", "\\w{3,700}x"});
  StateId s = dfa.StartState();
  for (int i = 0; i < 650; ++i) s = dfa.Next(s, 'q');
  JG_EXPECT_TRUE((dfa.MatchedTerminals(s) == std::vector<uint32_t>{0}));
  JG_EXPECT_TRUE((dfa.PossibleTerminals(s) == std::vector<uint32_t>{0, 2}));
  JG_EXPECT_TRUE((dfa.MatchedTerminals(dfa.Next(s, 'x')) == std::vector<uint32_t>{0, 2}));
  for (int i = 650; i < 1000; ++i) s = dfa.Next(s, 'q');
  JG_EXPECT_TRUE((dfa.MatchedTerminals(s) == std::vector<uint32_t>{0}));
  JG_EXPECT_TRUE(dfa.IsDead(dfa.Next(s, 'q')));
  JG_EXPECT_LE(dfa.num_states(), size_t{1010});
  JG_EXPECT_LE(dfa.MemoryBytes(), size_t{8} << 20);
  JG_EXPECT_LE(dfa.nfa().insts().size(), size_t{6000});
}

JG_TEST(LexerDfa, NfaBudget) {
  LexerOptions options;
  options.max_nfa_instructions = 10000;
  JG_EXPECT_THROWS(LexerDfa(std::vector<std::string>{"(?:a{100}){101}"}, options),
                   BudgetExceededError);
  LexerDfa ok(std::vector<std::string>{"(?:a{100}){99}"}, options);
  JG_EXPECT_TRUE(ok.IsMatch(ok.Feed(ok.StartState(), std::string(9900, 'a'))));
}

JG_TEST(LexerDfa, CountedRepetitionOfCompoundBodies) {
  // Copies of a repeated body are relocated copies of its first compilation: nested repeats,
  // alternations and loops inside the body must behave in every copy.
  const std::string body = "(?:ab|c(?:d|e)*|x{2,3})";
  for (const char* counts : {"{3}", "{0,40}", "{2,5}", "{1,}"}) {
    const std::string pattern = body + counts;
    JG_EXPECT_TRUE(FullMatch(pattern, "abcdexx"));
    JG_EXPECT_FALSE(FullMatch(pattern, "abx"));
  }
  JG_EXPECT_TRUE(FullMatch(body + "{0,40}", ""));
  JG_EXPECT_FALSE(FullMatch(body + "{2,5}", "ab"));
  JG_EXPECT_TRUE(FullMatch(body + "{2,5}", "abxxx"));
  JG_EXPECT_FALSE(FullMatch(body + "{2,5}", "ababababab" "ab"));
  std::string forty;
  for (int i = 0; i < 40; ++i) forty += (i % 3 == 0) ? "ab" : (i % 3 == 1) ? "cdd" : "xxx";
  JG_EXPECT_TRUE(FullMatch(body + "{0,40}", forty));
  JG_EXPECT_FALSE(FullMatch(body + "{0,40}", forty + "c"));
  JG_EXPECT_TRUE(FullMatch("(?:a(?:b{1,2}c){2}){3}", "abcbbc" "abbcbc" "abcbc"));
  JG_EXPECT_FALSE(FullMatch("(?:a(?:b{1,2}c){2}){3}", "abcbbc" "abbcbc" "abc"));
  JG_EXPECT_FALSE(Viable(body + "{2}", "abababab"));
}

JG_TEST(LexerDfa, StateBudgetGivesErrorStateNotHang) {
  // (a|b)*a(a|b){16} needs 2^17 states; allow 1000.
  LexerOptions options;
  options.max_states = 1000;
  LexerDfa dfa(std::vector<std::string>{"(?:a|b)*a(?:a|b){16}"}, options);
  StateId s = dfa.StartState();
  uint32_t x = 12345;
  bool hit_error = false;
  for (int i = 0; i < 100000 && !hit_error; ++i) {
    x = x * 1103515245u + 12345u;
    s = dfa.Next(s, (x >> 16) & 1 ? 'a' : 'b');
    hit_error = dfa.IsError(s);
  }
  JG_EXPECT_TRUE(hit_error);
  JG_EXPECT_TRUE(dfa.budget_exceeded());
  JG_EXPECT_LE(dfa.num_states(), size_t{1000});
  JG_EXPECT_FALSE(dfa.IsDead(s));
  JG_EXPECT_EQ(dfa.Next(s, 'a'), LexerDfa::kErrorState);  // absorbing
  JG_EXPECT_TRUE(dfa.MatchedTerminals(s).empty());

  LexerOptions small_memory;
  small_memory.max_memory_bytes = 64 << 10;
  LexerDfa limited(std::vector<std::string>{"(?:a|b)*a(?:a|b){16}"}, small_memory);
  s = limited.StartState();
  for (int i = 0; i < 100000 && !limited.IsError(s); ++i) {
    x = x * 1103515245u + 12345u;
    s = limited.Next(s, (x >> 16) & 1 ? 'a' : 'b');
  }
  JG_EXPECT_TRUE(limited.IsError(s));
  JG_EXPECT_LE(limited.MemoryBytes(), size_t{64} << 10);
}

JG_TEST(LexerDfa, BuildMeterStopsAStateBuildWithoutCachingIt) {
  // Each state of this pattern holds most of its ~50k NFA instructions.
  LexerDfa dfa(std::vector<std::string>{"(?:(?:.|a*|b{20,}){10,}){25}"});
  const StateId start = dfa.StartState();
  const size_t states = dfa.num_states();
  uint64_t used = 0;
  BuildMeter meter{&used, 1000};
  {
    const LexerDfa::ScopedBuildMeter scope(&meter);
    JG_EXPECT_EQ(dfa.Next(start, 'b'), LexerDfa::kErrorState);
    JG_EXPECT_TRUE(meter.exceeded);
    JG_EXPECT_LE(uint64_t{1000}, used);
    // Exhausted: later builds fail at once; StartState of a new set too.
    JG_EXPECT_EQ(dfa.Next(start, 'c'), LexerDfa::kErrorState);
  }
  JG_EXPECT_EQ(dfa.num_states(), states);  // nothing was interned
  JG_EXPECT_FALSE(dfa.budget_exceeded());   // the DFA's own budget is untouched
  // Without a meter (or with room) the same transitions build normally.
  const StateId after_b = dfa.Next(start, 'b');
  JG_EXPECT_TRUE(after_b > LexerDfa::kErrorState);
  uint64_t used_big = 0;
  BuildMeter roomy{&used_big, uint64_t{1} << 40};
  const LexerDfa::ScopedBuildMeter scope(&roomy);
  JG_EXPECT_TRUE(dfa.Next(start, 'c') > LexerDfa::kErrorState);
  JG_EXPECT_FALSE(roomy.exceeded);
  JG_EXPECT_LE(LexerDfa::kBuildWorkWeight, used_big);  // charged for the build
  const uint64_t charged = used_big;
  JG_EXPECT_EQ(dfa.Next(start, 'c'), dfa.Next(start, 'c'));  // cached: nothing more charged
  JG_EXPECT_EQ(used_big, charged);
}

JG_TEST(LexerDfa, TerminalsMatchingNothing) {
  // (`$` is accepted only at the end of a pattern.)
  LexerDfa dfa(std::vector<std::string>{"a^b", "a^|b^", "[^\\s\\S]", "a$", "^a", "(?:a^)?b",
                                        "x*$", "(?:^a)*^b", "(?:a^b)*c[^\\s\\S]"});
  const std::vector<bool> empty = dfa.nfa().TerminalsMatchingNothing();
  const std::vector<bool> expected = {true, true, true, false, false, false, false, false, true};
  JG_ASSERT_TRUE(empty.size() == expected.size());
  for (size_t t = 0; t < empty.size(); ++t) JG_EXPECT_EQ(empty[t], expected[t]);
}

JG_TEST(LexerDfa, ByteClassesShrinkRows) {
  LexerDfa dfa(std::vector<std::string>{"[0-9]+", "[a-f]+"});
  JG_EXPECT_EQ(dfa.num_byte_classes(), size_t{5});  // <0, 0-9, :-`, a-f, >f
}

JG_TEST(LexerDfa, ConcurrentSharedCache) {
  // Many threads walk the same cold DFA at once; every result must equal a single-threaded
  // reference computed on a separate DFA.
  const std::vector<std::string> terminals = {
      "[a-zA-Z_][a-zA-Z0-9_]*", "\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?", "\"(?:[^\"\\\\]|\\\\.)*\"",
      "\\s+", "(?i)select|from|where", ".{3,40}x"};
  LexerDfa shared(terminals);
  LexerDfa reference(terminals);
  std::vector<std::string> inputs;
  uint32_t x = 7;
  const char alphabet[] = "abcSELECTxyz019.eE+-\" \\\xC3\xA9_\n";
  for (int i = 0; i < 64; ++i) {
    std::string text;
    for (int k = 0; k < 60; ++k) {
      x = x * 1664525u + 1013904223u;
      text += alphabet[(x >> 8) % (sizeof(alphabet) - 1)];
    }
    inputs.push_back(text);
  }
  std::vector<std::vector<StateId>> expected_matched_sizes(inputs.size());
  std::vector<std::vector<uint32_t>> expected(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    StateId s = reference.StartState();
    for (char c : inputs[i]) {
      s = reference.Next(s, static_cast<uint8_t>(c));
      for (uint32_t t : reference.PossibleTerminals(s)) expected[i].push_back(t);
      expected[i].push_back(1000 + static_cast<uint32_t>(reference.MatchedTerminals(s).size()));
    }
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&, w] {
      for (int round = 0; round < 4; ++round) {
        for (size_t j = 0; j < inputs.size(); ++j) {
          const size_t i = (j * 7 + static_cast<size_t>(w) * 13 + static_cast<size_t>(round)) %
                           inputs.size();
          std::vector<uint32_t> got;
          StateId s = w % 2 == 0 ? shared.StartState() : shared.StartState({0, 1, 2, 3, 4, 5});
          for (char c : inputs[i]) {
            s = shared.Next(s, static_cast<uint8_t>(c));
            for (uint32_t t : shared.PossibleTerminals(s)) got.push_back(t);
            got.push_back(1000 + static_cast<uint32_t>(shared.MatchedTerminals(s).size()));
          }
          if (got != expected[i]) mismatches.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : workers) t.join();
  JG_EXPECT_EQ(mismatches.load(), 0);
  JG_EXPECT_EQ(shared.num_states(), reference.num_states());
}

JG_TEST(LexerDfa, LazyTerminalsStopAtTheirFirstMatch) {
  LexerOptions options;
  options.lazy_terminals = {true, false};
  const LexerDfa lazy(std::vector<std::string>{"<.*>", "<[a-z>]*"}, options);
  LexerDfa::StateId s = lazy.Feed(lazy.StartState({0}), "<a>");
  JG_EXPECT_TRUE(lazy.IsMatch(s));
  // The lazy terminal matched "<a>"; it cannot grow into "<a>b>".
  JG_EXPECT_TRUE(lazy.IsDead(lazy.Feed(s, "b>")));
  // The same pattern without the flag (maximal munch is the caller's business) keeps going.
  const LexerDfa greedy(std::vector<std::string>{"<.*>"});
  JG_EXPECT_TRUE(greedy.IsMatch(greedy.Feed(greedy.StartState(), "<a>b>")));
  // A greedy terminal in the same lexer is unaffected by its lazy neighbour.
  s = lazy.Feed(lazy.StartState(), "<a>");
  JG_EXPECT_TRUE(lazy.MatchedTerminals(s) == (std::vector<uint32_t>{0, 1}));
  s = lazy.Feed(s, "b>");
  JG_EXPECT_TRUE(lazy.MatchedTerminals(s) == (std::vector<uint32_t>{1}));
}

JG_TEST(LexerDfa, LazyTerminalMatchingTheEmptyStringReadsItsFirstByte) {
  // An empty match is no lexeme: `.*?` reads one byte (its first non-empty match) and stops
  // there, as `.+?` does. It used to stop at the start state and never read a byte.
  LexerOptions options;
  options.lazy_terminals = {true, true};
  const LexerDfa lazy(std::vector<std::string>{".*?", "x+?"}, options);
  const LexerDfa::StateId start = lazy.StartState({0});
  JG_EXPECT_TRUE(lazy.IsMatch(start));
  const uint32_t step = lazy.NextWithBoundary(start, 'a');
  JG_EXPECT_TRUE((step & LexerDfa::kBoundaryBit) == 0);  // no lexeme ends before the byte
  const LexerDfa::StateId s = lazy.Next(start, 'a');
  JG_EXPECT_TRUE(lazy.MatchedTerminals(s) == (std::vector<uint32_t>{0}));
  JG_EXPECT_TRUE(lazy.IsDead(lazy.Next(s, 'b')));
  JG_EXPECT_TRUE(lazy.IsDead(lazy.Feed(lazy.StartState({1}), "xx")));
}

JG_TEST(LexerDfa, ExplicitAutomatonTerminal) {
  // Multiples of 3 in decimal (leading zeros allowed here), as the residue automaton the JSON
  // Schema compiler builds for multipleOf, next to an ordinary regex terminal.
  auto automaton = std::make_shared<CodePointAutomaton>();
  automaton->states.resize(4);  // 0: start, 1 + r: residue r after at least one digit
  for (uint32_t from = 0; from < 4; ++from) {
    automaton->states[from].accept = from == 1;
    const uint32_t residue = from == 0 ? 0 : from - 1;
    for (uint32_t digit = 0; digit < 10; ++digit) {
      automaton->states[from].transitions.push_back(
          {CodePointSet::Single('0' + digit), 1 + (residue * 10 + digit) % 3});
    }
  }
  std::vector<RegexNode> terminals;
  terminals.push_back(RegexNode::Automaton(automaton));
  terminals.push_back(ParseRegex("[0-9]+x"));
  const LexerDfa dfa(terminals);
  for (int value = 0; value < 200; ++value) {
    const StateId s = dfa.Feed(dfa.StartState(), std::to_string(value));
    JG_EXPECT_TRUE(dfa.IsMatch(s) == (value % 3 == 0));
    JG_EXPECT_TRUE(dfa.MatchedTerminals(s) ==
                   (value % 3 == 0 ? std::vector<uint32_t>{0} : std::vector<uint32_t>{}));
    JG_EXPECT_TRUE(dfa.MatchedTerminals(dfa.Next(s, 'x')) == std::vector<uint32_t>{1});
  }
  JG_EXPECT_TRUE(dfa.IsDead(dfa.Feed(dfa.StartState(), "3a")));
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
