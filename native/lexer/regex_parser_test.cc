// Tests for ParseRegex and CodePointSet: structure, escapes, classes, flags, case folding and
// clear errors (with positions) for everything unsupported.
#include "native/lexer/regex_parser.h"

#include <algorithm>
#include <string>
#include <vector>

#include "native/lexer/regex_error.h"
#include "native/support/testing.h"

namespace jaxguide {
namespace {

std::string Ast(const std::string& pattern, RegexOptions options = {}) {
  return ParseRegex(pattern, options).ToString();
}

RegexOptions Ecma(bool search = false) {
  RegexOptions options;
  options.dialect = RegexDialect::kEcma;
  options.ecma_search = search;
  return options;
}

// The error offset for `pattern`, or -1 if it parses.
long ErrorOffset(const std::string& pattern, RegexOptions options = {}) {
  try {
    ParseRegex(pattern, options);
  } catch (const RegexError& e) {
    return static_cast<long>(e.offset());
  }
  return -1;
}

JG_TEST(CodePointSet, CanonicalUnionComplementSubtract) {
  CodePointSet set = CodePointSet::Range('a', 'f');
  set.AddRange('d', 'k');
  set.AddRange('l', 'm');  // adjacent: merged
  set.Add('0');
  JG_EXPECT_EQ(set.ranges().size(), size_t{2});
  JG_EXPECT_EQ(set.Size(), uint64_t{14});
  CodePointSet inverse = set;
  inverse.Complement();
  JG_EXPECT_FALSE(inverse.Contains('a'));
  JG_EXPECT_TRUE(inverse.Contains('n'));
  JG_EXPECT_EQ(inverse.Size() + set.Size(), uint64_t{0x110000});
  inverse.Complement();
  JG_EXPECT_TRUE(inverse == set);
  set.Subtract(CodePointSet::Range('c', 'e'));
  JG_EXPECT_FALSE(set.Contains('d'));
  JG_EXPECT_TRUE(set.Contains('f'));
  JG_EXPECT_TRUE(set.Contains('b'));
}

// A seeded xorshift generator for the randomized tests: next(bound) is in [0, bound).
struct XorShift {
  uint64_t seed;
  uint32_t operator()(uint32_t bound) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return static_cast<uint32_t>(seed % bound);
  }
};

JG_TEST(CodePointSet, SubtractEqualsMembershipOnRandomSets) {
  // Random sets of up to 6 ranges over a small alphabet (and near the top of the code space):
  // a - b holds exactly the code points of a not in b, canonically (equal to its rebuild).
  XorShift next{88172645463325252ull};
  for (int round = 0; round < 2000; ++round) {
    const uint32_t base = round % 2 == 0 ? 0 : CodePointSet::kMaxCodePoint - 40;
    auto random_set = [&]() {
      CodePointSet set;
      for (uint32_t n = next(7); n > 0; --n) {
        const uint32_t lo = base + next(41);
        set.AddRange(lo, lo + next(6));
      }
      return set;
    };
    const CodePointSet a = random_set();
    const CodePointSet b = random_set();
    CodePointSet difference = a;
    difference.Subtract(b);
    CodePointSet rebuilt;
    for (uint32_t c = base; c <= base + 46 && c <= CodePointSet::kMaxCodePoint; ++c) {
      if (a.Contains(c) && !b.Contains(c)) rebuilt.Add(c);
    }
    JG_EXPECT_TRUE(difference == rebuilt);
    JG_EXPECT_EQ(difference.ranges().size(), rebuilt.ranges().size());
  }
}

JG_TEST(CodePointSet, AddRangeStaysCanonicalOnRandomSequences) {
  // Ranges added in any order (appended, extending the last range, overlapping it, or before
  // it): the set holds exactly the code points added, as sorted, disjoint, non-adjacent ranges.
  XorShift next{2463534242ull};
  for (int round = 0; round < 2000; ++round) {
    CodePointSet set;
    std::vector<bool> member(64, false);
    uint32_t at = 0;
    for (uint32_t n = 1 + next(8); n > 0; --n) {
      // Mostly near the end of what was added so far (the fast paths), sometimes anywhere.
      const uint32_t lo = next(4) == 0 ? next(50) : std::min<uint32_t>(49, at + next(4));
      const uint32_t hi = lo + next(8);
      set.AddRange(lo, hi);
      for (uint32_t c = lo; c <= hi; ++c) member[c] = true;
      at = std::max(at, hi);
    }
    for (uint32_t c = 0; c < 64; ++c) JG_EXPECT_EQ(set.Contains(c), bool{member[c]});
    const auto& ranges = set.ranges();
    for (size_t i = 0; i < ranges.size(); ++i) {
      JG_EXPECT_TRUE(ranges[i].lo <= ranges[i].hi);
      if (i > 0) JG_EXPECT_TRUE(ranges[i - 1].hi + 1 < ranges[i].lo);
    }
  }
}

JG_TEST(CodePointSet, PythonCaseVariants) {
  CodePointSet k = CodePointSet::Single('k');
  k.AddPythonCaseVariants();
  JG_EXPECT_TRUE(k.Contains('K'));
  JG_EXPECT_TRUE(k.Contains(0x212A));  // KELVIN SIGN
  CodePointSet s = CodePointSet::Single('S');
  s.AddPythonCaseVariants();
  JG_EXPECT_TRUE(s.Contains(0x17F));  // LATIN SMALL LETTER LONG S
  CodePointSet sharp = CodePointSet::Single(0xDF);  // ß: only its capital U+1E9E
  sharp.AddPythonCaseVariants();
  JG_EXPECT_TRUE(sharp.Contains(0x1E9E));
  JG_EXPECT_FALSE(sharp.Contains('s'));
  CodePointSet ascii = CodePointSet::Single('k');
  ascii.AddAsciiCaseVariants();
  JG_EXPECT_EQ(ascii.Size(), uint64_t{2});
}

JG_TEST(RegexParser, Structure) {
  JG_EXPECT_EQ(Ast("ab"), std::string("(cat [0x61] [0x62])"));
  JG_EXPECT_EQ(Ast("a|b|"), std::string("(alt [0x61] [0x62] ())"));
  JG_EXPECT_EQ(Ast("a*?b+c??"),
               std::string("(cat (rep 0 inf [0x61]) (rep 1 inf [0x62]) (rep 0 1 [0x63]))"));
  JG_EXPECT_EQ(Ast("a{2,5}b{3}c{2,}d{,4}"),
               std::string("(cat (rep 2 5 [0x61]) (rep 3 3 [0x62]) (rep 2 inf [0x63]) "
                           "(rep 0 4 [0x64]))"));
  JG_EXPECT_EQ(Ast("(?:a)(?P<n>b)(c)(?#note)"), std::string("(cat [0x61] [0x62] [0x63])"));
  // `{` that does not start a quantifier is a literal, as in Python.
  JG_EXPECT_EQ(Ast("a{x}"), std::string("(cat [0x61] [0x7B] [0x78] [0x7D])"));
  JG_EXPECT_EQ(Ast("x{}"), std::string("(cat [0x78] [0x7B] [0x7D])"));
  JG_EXPECT_EQ(Ast("^a$"), std::string("(cat ^ [0x61] $)"));
}

// A comment group is skipped, not an atom (as in sre): a quantifier after it repeats the item
// before it, and one with nothing before it (or after a repeat) is an error.
JG_TEST(RegexParser, CommentGroupsAreNotAtoms) {
  JG_EXPECT_EQ(Ast("a(?#x){2}"), std::string("(rep 2 2 [0x61])"));
  JG_EXPECT_EQ(Ast("a(?#x)*"), std::string("(rep 0 inf [0x61])"));
  JG_EXPECT_EQ(Ast("a(?#x)+"), std::string("(rep 1 inf [0x61])"));
  JG_EXPECT_EQ(Ast("a(?#x)??"), std::string("(rep 0 1 [0x61])"));
  JG_EXPECT_EQ(Ast("ab(?#x)(?#y){,2}"), std::string("(cat [0x61] (rep 0 2 [0x62]))"));
  JG_EXPECT_EQ(Ast("(?x)a (?#x) {2}"), std::string("(rep 2 2 [0x61])"));
  JG_EXPECT_EQ(Ast("(?#x)"), std::string("()"));
  JG_EXPECT_EQ(Ast("(?#x)(?i)k"), std::string("[0x4B 0x6B 0x212A]"));  // still leading flags
  JG_EXPECT_EQ(ErrorOffset("(?#x)*"), 5L);      // nothing to repeat
  JG_EXPECT_EQ(ErrorOffset("a|(?#x)*"), 7L);    // nothing to repeat
  JG_EXPECT_EQ(ErrorOffset("a*(?#x)?"), 7L);    // multiple repeat
  JG_EXPECT_EQ(ErrorOffset("a{2}(?#x)+"), 9L);  // multiple repeat
  JG_EXPECT_EQ(ErrorOffset("a(?#x"), 1L);       // unterminated comment
}

JG_TEST(RegexParser, EscapesAndClasses) {
  JG_EXPECT_EQ(Ast("\\n\\t\\x41\\u00e9\\U0001F600\\0\\101\\.\\*"),
               std::string("(cat [0xA] [0x9] [0x41] [0xE9] [0x1F600] [0x0] [0x41] [0x2E] "
                           "[0x2A])"));
  JG_EXPECT_EQ(Ast("[a-c\\d_]"), Ast("[_0-9a-c\\d]"));
  JG_EXPECT_EQ(Ast("[]a]"), std::string("[0x5D 0x61]"));
  JG_EXPECT_EQ(Ast("[-a]"), std::string("[0x2D 0x61]"));
  JG_EXPECT_EQ(Ast("[a-]"), std::string("[0x2D 0x61]"));
  JG_EXPECT_EQ(Ast("[\\b]"), std::string("[0x8]"));
  JG_EXPECT_EQ(Ast("[\\1]"), std::string("[0x1]"));  // octal inside a class
  JG_EXPECT_EQ(Ast("[^\\x00-\\U0010FFFF]"), std::string("[]"));
  JG_EXPECT_EQ(Ast("."), std::string("[0x0-0x9 0xB-0x10FFFF]"));
  JG_EXPECT_EQ(Ast("(?s)."), std::string("[0x0-0x10FFFF]"));
  JG_EXPECT_EQ(Ast("(?s:.)."), std::string("(cat [0x0-0x10FFFF] [0x0-0x9 0xB-0x10FFFF])"));
  // Python \d is Unicode (includes e.g. ARABIC-INDIC DIGIT ZERO); (?a) makes it ASCII.
  JG_EXPECT_TRUE(ParseRegex("\\d").set.Contains(0x660));
  JG_EXPECT_FALSE(ParseRegex("(?a)\\d").set.Contains(0x660));
  JG_EXPECT_TRUE(ParseRegex("\\w").set.Contains(0xE9));
  JG_EXPECT_TRUE(ParseRegex("\\s").set.Contains(0x1C));
  JG_EXPECT_FALSE(ParseRegex("\\S").set.Contains(' '));
}

JG_TEST(RegexParser, Flags) {
  JG_EXPECT_EQ(Ast("(?i)k"), std::string("[0x4B 0x6B 0x212A]"));
  JG_EXPECT_EQ(Ast("(?i:a)b"), std::string("(cat [0x41 0x61] [0x62])"));
  JG_EXPECT_EQ(Ast("(?i)(?-i:a)b"), std::string("(cat [0x61] [0x42 0x62])"));
  JG_EXPECT_EQ(Ast("(?x) a b # comment\n c"), std::string("(cat [0x61] [0x62] [0x63])"));
  JG_EXPECT_EQ(Ast("(?x)[ ]"), std::string("[0x20]"));
  JG_EXPECT_EQ(Ast("(?ia)k"), std::string("[0x4B 0x6B]"));
  // Case folding applies to literals and ranges, not to \w (sre semantics).
  JG_EXPECT_TRUE(ParseRegex("(?i)[a-z]").set.Contains(0x212A));
  JG_EXPECT_FALSE(ParseRegex("(?i)[^k]").set.Contains(0x212A));
  RegexOptions options;
  options.ignore_case = true;
  JG_EXPECT_EQ(Ast("s", options), std::string("[0x53 0x73 0x17F]"));
}

JG_TEST(RegexParser, EcmaDialect) {
  JG_EXPECT_FALSE(ParseRegex("\\d", Ecma()).set.Contains(0x660));
  JG_EXPECT_FALSE(ParseRegex("\\w", Ecma()).set.Contains(0xE9));
  JG_EXPECT_TRUE(ParseRegex("\\s", Ecma()).set.Contains(0xFEFF));
  JG_EXPECT_FALSE(ParseRegex(".", Ecma()).set.Contains('\r'));
  JG_EXPECT_EQ(Ast("\\uD83D\\uDE00", Ecma()), std::string("[0x1F600]"));
  JG_EXPECT_EQ(Ast("\\u{1F600}\\cJ", Ecma()), std::string("(cat [0x1F600] [0xA])"));
  JG_EXPECT_EQ(Ast("[]", Ecma()), std::string("[]"));
  JG_EXPECT_EQ(Ast("\\_\\/", Ecma()), std::string("(cat [0x5F] [0x2F])"));  // identity escapes
  JG_EXPECT_EQ(Ast("[^]", Ecma()), std::string("[0x0-0x10FFFF]"));
  JG_EXPECT_EQ(Ast("(?<year>\\d)", Ecma()), std::string("[0x30-0x39]"));
  JG_EXPECT_TRUE(ParseRegex("\\p{Lu}", Ecma()).set.Contains('A'));
  JG_EXPECT_FALSE(ParseRegex("\\p{Lu}", Ecma()).set.Contains('a'));
  JG_EXPECT_TRUE(ParseRegex("\\p{L}", Ecma()).set.Contains(0x4E2D));
  JG_EXPECT_TRUE(ParseRegex("\\p{Letter}", Ecma()).set == ParseRegex("\\p{L}", Ecma()).set);
  JG_EXPECT_EQ(Ast("\\p{gc=Nd}", Ecma()), Ast("\\p{Decimal_Number}", Ecma()));
  JG_EXPECT_FALSE(ParseRegex("\\P{N}", Ecma()).set.Contains('7'));
  // Search semantics: wrapped in [\s\S]* ... [\s\S]*.
  JG_EXPECT_EQ(Ast("a", Ecma(true)),
               std::string("(cat (rep 0 inf [0x0-0x10FFFF]) [0x61] (rep 0 inf [0x0-0x10FFFF]))"));
}

JG_TEST(RegexParser, ClearErrorsWithPositions) {
  JG_EXPECT_EQ(ErrorOffset("ab(?=c)"), 2);
  JG_EXPECT_EQ(ErrorOffset("(?!c)"), 0);
  JG_EXPECT_EQ(ErrorOffset("x(?<=c)"), 1);
  JG_EXPECT_EQ(ErrorOffset("x(?<!c)"), 1);
  JG_EXPECT_EQ(ErrorOffset("(a)\\1"), 3);
  JG_EXPECT_EQ(ErrorOffset("(?P<n>a)(?P=n)"), 8);
  JG_EXPECT_EQ(ErrorOffset("(a)?(?(1)b|c)"), 4);
  JG_EXPECT_EQ(ErrorOffset("(?>ab)"), 0);
  JG_EXPECT_EQ(ErrorOffset("a*+"), 2);
  JG_EXPECT_EQ(ErrorOffset("a\\b"), 1);
  JG_EXPECT_EQ(ErrorOffset("\\Ba"), 0);
  JG_EXPECT_EQ(ErrorOffset("a$b"), 1);
  JG_EXPECT_EQ(ErrorOffset("(?m)a^b"), 5);
  JG_EXPECT_EQ(ErrorOffset("a(?i)b"), 1);
  JG_EXPECT_EQ(ErrorOffset("*a"), 0);
  JG_EXPECT_EQ(ErrorOffset("a**"), 2);
  JG_EXPECT_EQ(ErrorOffset("a{3,2}"), 2);
  JG_EXPECT_EQ(ErrorOffset("(ab"), 0);
  JG_EXPECT_EQ(ErrorOffset("ab)"), 2);
  JG_EXPECT_EQ(ErrorOffset("[ab"), 0);
  JG_EXPECT_EQ(ErrorOffset("[z-a]"), 1);
  JG_EXPECT_EQ(ErrorOffset("[\\d-z]"), 1);
  JG_EXPECT_EQ(ErrorOffset("\\q"), 0);
  JG_EXPECT_EQ(ErrorOffset("\\N{DIGIT ONE}"), 0);
  JG_EXPECT_EQ(ErrorOffset("\\p{L}"), 0);  // not Python syntax
  JG_EXPECT_EQ(ErrorOffset("é(?=x)"), 1);  // offsets are in code points
  JG_EXPECT_EQ(ErrorOffset("(?<n>a)"), 1);
  JG_EXPECT_EQ(ErrorOffset("\\k<n>", Ecma()), 0);
  JG_EXPECT_EQ(ErrorOffset("\\p{Script=Greek}", Ecma()), 0);
  JG_EXPECT_EQ(ErrorOffset("(?i)a", Ecma()), 1);
  JG_EXPECT_EQ(ErrorOffset("a\\1", Ecma()), 1);
  // Exact anchors are accepted anywhere they keep their meaning.
  JG_EXPECT_EQ(ErrorOffset("^a|^b$|c$"), -1);
  JG_EXPECT_EQ(ErrorOffset("(?:a$)?"), -1);
  JG_EXPECT_EQ(ErrorOffset("\\Aa\\Zb"), -1);
  JG_EXPECT_EQ(ErrorOffset("a^b"), -1);
  JG_EXPECT_EQ(ErrorOffset("a$b", Ecma()), -1);
  // Nesting limit.
  JG_EXPECT_TRUE(ErrorOffset(std::string(600, '(') + std::string(600, ')')) >= 0);
}

JG_TEST(RegexParser, ErrorMessageNamesFeature) {
  try {
    ParseRegex("ab(?<=c)");
    JG_EXPECT_TRUE(false);
  } catch (const RegexError& e) {
    JG_EXPECT_EQ(std::string(e.what()), std::string("lookbehind assertions are not supported at "
                                                    "position 2"));
    JG_EXPECT_EQ(std::string(e.WithPatternIndex(7).what()).substr(0, 11),
                 std::string("pattern 7: "));
  }
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
