// Tests for pinned terminals: an Nfa that copies pinned programs is instruction for instruction
// the Nfa that compiles the same regexes (classes interned in the same order, shared with other
// terminals), whichever terminals are pinned; pins survive ClearSharedUtf8Classes; a regex that
// does not parse pins nothing. Shaped terminals (a key's literals or an except-words form before
// a pinned suffix) compile to the parsed regex's instructions; other regexes are not shaped.
#include "native/lexer/pinned_terminals.h"

#include <cctype>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "native/lexer/regex_error.h"
#include "native/lexer/regex_parser.h"
#include "native/lexer/utf8_class.h"
#include "native/support/testing.h"

namespace jaxguide {
namespace {

// JSON-ish terminals with every instruction kind: classes, splits, counted and unbounded
// repetition (copied fragments), except-words and lookahead-product automata, anchors.
const std::vector<std::string>& Regexes() {
  static const std::vector<std::string> regexes = {
      R"re("(?:[^"\\\x00-\x1f\ud800-\udfff]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")re",
      R"re(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)re",
      R"re([ \t\n\r]{0,24},[ \t\n\r]{0,24})re",
      R"re(true|false)re",
      R"re("(?!(?:ab|cd)")(?:[^"\\]|\\.)*"[ \t]{0,4}:)re",
      R"re((?=(?:[a-z]+);)(?:[a-m0-9]*);)re",
      R"re(^é{2,5}(?:\w|ж)*$)re",
      R"re()re",
  };
  return regexes;
}

bool SameNfa(const Nfa& a, const Nfa& b) {
  if (a.insts().size() != b.insts().size() || a.classes().size() != b.classes().size() ||
      a.num_terminals() != b.num_terminals()) {
    return false;
  }
  for (uint32_t i = 0; i < a.insts().size(); ++i) {
    const NfaInst& x = a.inst(i);
    const NfaInst& y = b.inst(i);
    if (x.op != y.op || x.out != y.out || x.arg != y.arg) return false;
    if (a.terminal_of(i) != b.terminal_of(i) || a.live(i) != b.live(i)) return false;
  }
  for (uint32_t c = 0; c < a.classes().size(); ++c) {
    if (a.class_set(c) != b.class_set(c)) return false;
  }
  for (size_t t = 0; t < a.num_terminals(); ++t) {
    if (a.start(t) != b.start(t)) return false;
  }
  return true;
}

JG_TEST(PinnedTerminals, CopiedProgramsEqualCompiledRegexes) {
  std::vector<RegexNode> parsed;
  for (const std::string& regex : Regexes()) parsed.push_back(ParseRegex(regex));
  const Nfa compiled(parsed);
  // Every subset of the terminals pinned (the rest compiled), in one grammar.
  for (uint32_t subset = 1; subset < (1u << parsed.size()); ++subset) {
    Nfa::Programs programs(parsed.size());
    for (size_t t = 0; t < parsed.size(); ++t) {
      if ((subset >> t) & 1) programs[t] = Nfa::CompileProgram(parsed[t]);
    }
    JG_EXPECT_TRUE(SameNfa(compiled, Nfa(parsed, Nfa::kDefaultMaxInstructions, programs)));
  }
}

JG_TEST(PinnedTerminals, PinsAreFoundAndSurviveClearing) {
  const size_t before = NumPinnedTerminals();
  PinTerminalRegexes({Regexes()[0], Regexes()[1], Regexes()[0]});
  JG_EXPECT_EQ(NumPinnedTerminals(), before + 2);
  ClearSharedUtf8Classes();
  const auto program = FindPinnedTerminal(Regexes()[0]);
  JG_EXPECT_TRUE(program != nullptr);
  JG_EXPECT_TRUE(FindPinnedTerminal(Regexes()[2]) == nullptr);
  // The pinned classes are the ones SharedUtf8Class returns, even after clearing.
  for (size_t k = 0; k < program->classes.size(); ++k) {
    JG_EXPECT_TRUE(SharedUtf8Class(program->class_sets[k]) == program->classes[k]);
  }
  // A regex that does not parse: an error, and nothing of that call pinned.
  bool threw = false;
  try {
    PinTerminalRegexes({Regexes()[3], "(unclosed"});
  } catch (const RegexError&) {
    threw = true;
  }
  JG_EXPECT_TRUE(threw);
  JG_EXPECT_TRUE(FindPinnedTerminal(Regexes()[3]) == nullptr);
  JG_EXPECT_EQ(NumPinnedTerminals(), before + 2);
}

// ---- Shaped terminals -------------------------------------------------------------------------

const std::string kFlexibleSuffix = R"re("[ \t\n\r]{0,4}:[ \t\n\r]{0,4})re";
const std::string kJsonUnit =
    R"re((?:[ \x21\x23-\x5b\x5d-\ud7ff\ue000-\U0010ffff]|\\"|\\\\|\\/|\\b|\\f|\\n|\\r|\\t|)re"
    R"re(\\u(?:00[0-1][0-9a-fA-F]|007[fF]|00[8-9a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|)re"
    R"re([1-9a-cA-C][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}|[e-fE-F][0-9a-fA-F]{3})|)re"
    R"re(\\u(?:[dD][8-9a-bA-B][0-9a-fA-F]{2})\\u(?:[dD][c-fC-F][0-9a-fA-F]{2})))re";
const std::string kSimpleUnit = R"re((?:[^"\\]|\\.))re";

void PinShapes() {
  PinTerminalSuffixes({kFlexibleSuffix, "\":", "\": "}, {kJsonUnit, kSimpleUnit});
}

// Every printable ASCII character, as a key name's literal: bare where it is no regex syntax,
// escaped (as re.escape writes it) where it is, and escaped anyway.
std::vector<std::string> ShapedRegexes() {
  std::vector<std::string> regexes = {
      "\"apiVersion" + kFlexibleSuffix, "\"a\":", "\"x-kubernetes-patch\": ",
      "\"a b\\-c\\.d\\ e\\#f\\&g\\~h\\$i\"" + std::string(":"),
      "\"(?!(?:apiVersion|kind|metadata)\")" + kJsonUnit + "*" + kFlexibleSuffix,
      "\"(?!(?:a)\")" + kJsonUnit + "*\":",
      "\"(?!(?:x\\-y|a\\ b|z)\")" + kSimpleUnit + "*\": ",
      "\"(?!(?:b|a|ab|abc)\")" + kSimpleUnit + "*" + kFlexibleSuffix,
  };
  for (int c = 0x20; c < 0x7F; ++c) {
    const std::string bare(1, static_cast<char>(c));
    if (std::string_view("\\.^$*+?{}[]()|\"").find(bare) == std::string_view::npos) {
      regexes.push_back("\"k" + bare + "k\":");
    }
    const bool alnum = std::isalnum(c) != 0;
    if (!alnum) regexes.push_back("\"k\\" + bare + kFlexibleSuffix);
  }
  return regexes;
}

// Regexes with a pinned suffix that are not of a shape (the parser reads them).
std::vector<std::string> UnshapedRegexes() {
  return {
      "\"[ab]\":", "\"a|b\":", "\"a\\d\":", "\"a\\\":", "\"a*\":", "\"é\":", kFlexibleSuffix,
      "\"(?!(?:|a)\")" + kJsonUnit + "*\":",             // an empty word
      "\"(?!(?:a\\\"b)\")" + kJsonUnit + "*\":",         // the stop in a word
      "\"(?!(?:a|[bc])\")" + kJsonUnit + "*\":",         // a class in a word
      "\"(?!(?:a)\")(?:[^\"])*\":",                      // a unit not pinned
      "\"(?!(?:a)\")" + kJsonUnit + "+\":",              // not a star
      "\"k\":x",                                          // no pinned suffix
  };
}

JG_TEST(ShapedTerminals, ShapesCompileToTheParsedRegexesNfa) {
  PinShapes();
  std::vector<RegexNode> shaped;
  std::vector<RegexNode> parsed;
  for (const std::string& regex : ShapedRegexes()) {
    std::optional<RegexNode> node = ShapedTerminal(regex);
    JG_ASSERT_TRUE(node.has_value());
    const RegexNode alone = ParseRegex(regex);
    JG_EXPECT_TRUE(SameNfa(Nfa({*node}), Nfa({alone})));
    shaped.push_back(std::move(*node));
    parsed.push_back(alone);
  }
  // All in one grammar: classes interned across terminals in the same order.
  JG_EXPECT_TRUE(SameNfa(Nfa(shaped), Nfa(parsed)));
  for (const std::string& regex : UnshapedRegexes()) {
    JG_EXPECT_FALSE(ShapedTerminal(regex).has_value());
  }
}

JG_TEST(ShapedTerminals, ExceptWordsClassesArePinnedWithTheirUnit) {
  // An "any key but" terminal whose trie nodes each have one child compiles to pinned classes
  // only (each literal, the unit's sets split at U+0080, the start's ASCII set but one
  // character): the ones SharedUtf8Class returns even after clearing.
  PinShapes();
  for (const std::string& regex : {"\"(?!(?:apiVersion)\")" + kJsonUnit + "*\":",
                                   "\"(?!(?:x\\-y)\")" + kSimpleUnit + "*\": "}) {
    ClearSharedUtf8Classes();
    const auto program = Nfa::CompileProgram(ParseRegex(regex));
    ClearSharedUtf8Classes();
    JG_EXPECT_TRUE(program->classes.size() > 10);
    for (size_t k = 0; k < program->classes.size(); ++k) {
      JG_EXPECT_TRUE(SharedUtf8Class(program->class_sets[k]) == program->classes[k]);
    }
  }
}

JG_TEST(ShapedTerminals, OnlyPlainSuffixesAndGroupUnitsPin) {
  PinShapes();
  const size_t before = NumPinnedSuffixes();
  PinShapes();  // again: nothing new
  JG_EXPECT_EQ(NumPinnedSuffixes(), before);
  // (RegexError, what an unparseable one throws, is an invalid_argument too)
  for (const char* bad : {"a|b", "*a", "{2}", "^a", "a$", "", "(?=a)a", "(?:)"}) {
    JG_EXPECT_THROWS(PinTerminalSuffixes({bad}, {}), std::invalid_argument);
  }
  JG_EXPECT_THROWS(PinTerminalSuffixes({"\";"}, {"[ab]"}), std::invalid_argument);
  JG_EXPECT_EQ(NumPinnedSuffixes(), before);  // nothing of a call that threw
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
