// Tests for Utf8Class: exhaustive agreement with a reference UTF-8 encoder on interesting sets.
#include "native/lexer/utf8_class.h"

#include <string>
#include <vector>

#include "native/support/testing.h"

namespace jaxguide {
namespace {

std::string Encode(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// Runs the automaton on `bytes`: kAccept exactly at the end, else the last result.
int32_t Run(const Utf8Class& c, const std::string& bytes) {
  uint32_t node = Utf8Class::kStartNode;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int32_t r = c.Step(node, static_cast<uint8_t>(bytes[i]));
    if (r < 0) return i + 1 == bytes.size() ? r : Utf8Class::kReject;
    node = static_cast<uint32_t>(r);
  }
  return static_cast<int32_t>(node);
}

void CheckExhaustive(const CodePointSet& set) {
  const Utf8Class c(set);
  int mismatches = 0;
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const bool expected = set.Contains(cp) && !(cp >= 0xD800 && cp <= 0xDFFF);
    const bool got = Run(c, Encode(cp)) == Utf8Class::kAccept;
    if (expected != got && ++mismatches < 5) JG_EXPECT_EQ(expected, got);
  }
  JG_EXPECT_EQ(mismatches, 0);
}

JG_TEST(Utf8Class, AsciiRange) { CheckExhaustive(CodePointSet::Range('a', 'z')); }

JG_TEST(Utf8Class, RangeBoundariesAcrossLengths) {
  CodePointSet set = CodePointSet::Range(0x70, 0x90);
  set.AddRange(0x7F0, 0x810);
  set.AddRange(0xFFF0, 0x10010);
  set.AddRange(0x10FFF0, 0x10FFFF);
  set.AddRange(0x3041, 0x30FF);
  CheckExhaustive(set);
}

JG_TEST(Utf8Class, AllCodePointsExcludeSurrogates) {
  CheckExhaustive(CodePointSet::All());
  const Utf8Class all(CodePointSet::All());
  // ED A0 80 would be U+D800: rejected at the second byte.
  const int32_t after_ed = all.Step(Utf8Class::kStartNode, 0xED);
  JG_ASSERT_TRUE(after_ed > 0);
  JG_EXPECT_EQ(all.Step(static_cast<uint32_t>(after_ed), 0xA0), Utf8Class::kReject);
  JG_EXPECT_TRUE(all.Step(static_cast<uint32_t>(after_ed), 0x9F) > 0);
}

JG_TEST(Utf8Class, RejectsOverlongAndInvalidLeads) {
  const Utf8Class all(CodePointSet::All());
  for (int b : {0xC0, 0xC1, 0xF5, 0xF8, 0xFF, 0x80, 0xBF}) {
    JG_EXPECT_EQ(all.Step(Utf8Class::kStartNode, static_cast<uint8_t>(b)), Utf8Class::kReject);
  }
  // E0 80..9F would be overlong 3-byte forms; F0 80..8F overlong 4-byte; F4 90+ above U+10FFFF.
  const int32_t e0 = all.Step(Utf8Class::kStartNode, 0xE0);
  JG_EXPECT_EQ(all.Step(static_cast<uint32_t>(e0), 0x9F), Utf8Class::kReject);
  const int32_t f0 = all.Step(Utf8Class::kStartNode, 0xF0);
  JG_EXPECT_EQ(all.Step(static_cast<uint32_t>(f0), 0x8F), Utf8Class::kReject);
  const int32_t f4 = all.Step(Utf8Class::kStartNode, 0xF4);
  JG_EXPECT_EQ(all.Step(static_cast<uint32_t>(f4), 0x90), Utf8Class::kReject);
  // Sharing: the "any two continuation bytes" suffix is one node, so `.` is small.
  JG_EXPECT_LE(all.num_nodes(), size_t{10});
}

JG_TEST(Utf8Class, SurrogatesOnlyIsEmpty) {
  JG_EXPECT_TRUE(Utf8Class(CodePointSet::Range(0xD800, 0xDFFF)).Empty());
  JG_EXPECT_TRUE(Utf8Class(CodePointSet()).Empty());
  JG_EXPECT_FALSE(Utf8Class(CodePointSet::Single(0xE9)).Empty());
}

JG_TEST(Utf8Class, PythonWordExhaustive) {
  CheckExhaustive(CodePointSet::FromTable(PythonWordTable()));
}

// Nodes are numbered in the order a breadth-first walk first meets them (lead bytes in
// order, then each node's continuation bytes in order): the numbering the lexer's states are
// built on, whatever shortcuts the construction takes.
void CheckBreadthFirstNumbering(const CodePointSet& set) {
  const Utf8Class c(set);
  uint32_t next_id = 1;
  std::vector<uint32_t> queue;
  auto meet = [&](int32_t node) {
    if (node < 0 || static_cast<uint32_t>(node) < next_id) return;
    JG_EXPECT_EQ(static_cast<uint32_t>(node), next_id);
    queue.push_back(next_id++);
  };
  for (uint32_t b = 0x80; b < 0x100; ++b) meet(c.Step(Utf8Class::kStartNode, static_cast<uint8_t>(b)));
  for (size_t i = 0; i < queue.size(); ++i) {
    for (uint32_t d = 0; d < 64; ++d) meet(c.Step(queue[i], static_cast<uint8_t>(0x80 | d)));
  }
  JG_EXPECT_EQ(static_cast<size_t>(next_id), c.num_nodes());
}

JG_TEST(Utf8Class, NodesNumberedBreadthFirst) {
  CodePointSet json_char = CodePointSet::All();
  json_char.Subtract(CodePointSet::Range(0, 0x1F));
  json_char.Subtract(CodePointSet::Single('"'));
  json_char.Subtract(CodePointSet::Single('\\'));
  CodePointSet cut = CodePointSet::Range(0x70, 0x90);
  cut.AddRange(0x7F0, 0x810);
  cut.AddRange(0xFFF0, 0x10010);
  cut.AddRange(0x3041, 0x30FF);
  for (const CodePointSet& set : {json_char, cut, CodePointSet::All(),
                                  CodePointSet::FromTable(PythonWordTable()),
                                  CodePointSet::Range(0x100, 0x10FFFF)}) {
    CheckBreadthFirstNumbering(set);
  }
}

// Same nodes, steps, boundaries and emptiness.
bool SameClass(const Utf8Class& a, const Utf8Class& b) {
  if (a.num_nodes() != b.num_nodes() || a.Empty() != b.Empty()) return false;
  for (uint32_t node = 0; node < a.num_nodes(); ++node) {
    for (int byte = 0; byte < 256; ++byte) {
      if (a.Step(node, static_cast<uint8_t>(byte)) != b.Step(node, static_cast<uint8_t>(byte))) {
        return false;
      }
    }
  }
  Utf8Class::ByteBits x{}, y{};
  a.MarkByteBoundaries(&x);
  b.MarkByteBoundaries(&y);
  return x == y;
}

JG_TEST(Utf8Class, CopiedFromAClassWithTheSameCodePointsAboveAscii) {
  CodePointSet key_char = CodePointSet::Range(0x20, 0x10FFFF);  // a JSON key character
  key_char.Subtract(CodePointSet::Single('"'));
  key_char.Subtract(CodePointSet::Single('\\'));
  const Utf8Class known(key_char);
  std::vector<CodePointSet> variants;
  for (uint32_t drop : {uint32_t{'a'}, uint32_t{'~'}, uint32_t{' '}}) {
    CodePointSet v = key_char;
    v.Subtract(CodePointSet::Single(drop));
    variants.push_back(v);
  }
  CodePointSet no_ascii = key_char;
  no_ascii.Subtract(CodePointSet::Range(0, 0x7F));
  variants.push_back(no_ascii);
  CodePointSet more = key_char;
  more.AddRange(0, 0x1F);
  variants.push_back(more);
  for (const CodePointSet& v : variants) {
    JG_EXPECT_TRUE(SameClass(Utf8Class(v, known), Utf8Class(v)));
  }
  JG_EXPECT_TRUE(!SameClass(Utf8Class(variants[0], known), known));
  // SharedUtf8Class copies a variant from a class it holds: the same automaton.
  ClearSharedUtf8Classes();
  SharedUtf8Class(key_char);
  JG_EXPECT_TRUE(SameClass(*SharedUtf8Class(variants[0]), Utf8Class(variants[0])));
}

JG_TEST(Utf8Class, ByteBoundaries) {
  Utf8Class::ByteBits boundary{};
  Utf8Class(CodePointSet::Range('0', '9')).MarkByteBoundaries(&boundary);
  int count = 0;
  for (uint64_t word : boundary) count += __builtin_popcountll(word);
  JG_EXPECT_EQ(count, 2);  // at '0' and after '9'
  JG_EXPECT_TRUE((boundary[0] >> '0') & 1);
  JG_EXPECT_TRUE((boundary[0] >> ('9' + 1)) & 1);
  // A class past ASCII: its lead bytes and the continuation bytes where its ranges cut.
  Utf8Class::ByteBits wide{};
  Utf8Class(CodePointSet::Range(0x3B1, 0x3C9)).MarkByteBoundaries(&wide);  // Greek small
  const auto has = [&wide](uint32_t b) { return ((wide[b >> 6] >> (b & 63)) & 1) != 0; };
  // 0x3B1 = CE B1 .. 0x3BF = CE BF, 0x3C0 = CF 80 .. 0x3C9 = CF 89: two lead bytes, two nodes
  JG_EXPECT_TRUE(has(0xCE) && has(0xCF) && has(0xD0));
  JG_EXPECT_TRUE(has(0x80) && has(0xC0) && has(0xB1) && has(0x8A));
  JG_EXPECT_TRUE(!has(0x81) && !has(0xB2) && !has(0xCD) && !has(0xD1));
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
