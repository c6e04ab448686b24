// UniqueItems tests: the canonical form equates exactly the JSON values JSON Schema equates, the
// scanner refuses the byte that completes a repeated item (and only in arrays flagged unique),
// and AtRisk says when an item in progress can still become an earlier one.
#include "native/matcher/unique_items.h"

#include <cstdio>
#include <string>
#include <vector>

#include "native/support/testing.h"

namespace jaxguide {
namespace {

// Feeds `text`, flagging the byte after each `[` at the positions in `unique_opens` (offsets of
// the brackets) as the one the parser scanned the unique opening terminal with. Returns how
// many bytes were taken before a refusal (text.size() if none).
size_t Feed(UniqueItems* items, const std::string& text, const std::vector<size_t>& opens) {
  for (size_t i = 0; i < text.size(); ++i) {
    UniqueItems::Scanned scanned;
    for (const size_t open : opens) scanned.unique_array |= i == open + 1;
    if (!items->Feed(static_cast<uint8_t>(text[i]), scanned)) return i;
  }
  return text.size();
}

JG_TEST(UniqueItems, CanonicalFormsEquateEqualValues) {
  const std::vector<std::vector<std::string>> equal = {
      {"1", "1.0", "1e0", "10e-1", "0.1e1", "1.000", "1E+0"},
      {"0", "-0", "0.0", "0e5", "-0.0e-3"},
      {"120", "1.2e2", "12e1", "1200e-1"},
      {"\"a\"", "\"\\u0061\"", "\" a\"", "\"\\u0041\""},  // (distinct groups checked below)
      {"{\"a\":1,\"b\":2}", "{ \"b\" : 2 , \"a\" : 1.0 }", "{\"a\":3,\"b\":2,\"a\":1}"},
      {"[1,[2]]", "[ 1.0 , [ 2e0 ] ]"},
      {"\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\""},
      {"[\"\\ud83d\\n\",1]", "[\"\\uD83D\\u000a\",1.0]"},  // a lone half, then \n
  };
  // Within a group equal, except the string group, whose 3rd and 4th differ from the 1st.
  for (size_t g = 0; g < equal.size(); ++g) {
    const std::string first = UniqueItems::Canonical(equal[g][0]);
    for (size_t k = 1; k < equal[g].size(); ++k) {
      const bool same = UniqueItems::Canonical(equal[g][k]) == first;
      JG_EXPECT_EQ(same, g != 3 || k == 1);
    }
  }
  const std::vector<std::string> distinct = {"1", "true", "false", "null", "\"1\"", "[1]", "{}",
                                             "[]", "-1", "0.1", "10", "\"\"", "{\"1\":1}",
                                             "[\"\\ud83d\\n\"]", "[\"\\ud83d\"]",
                                             "[[]]", "[1,1]", "\"true\"", "1e400", "1e-400"};
  for (size_t i = 0; i < distinct.size(); ++i) {
    for (size_t j = i + 1; j < distinct.size(); ++j) {
      JG_EXPECT_TRUE(UniqueItems::Canonical(distinct[i]) != UniqueItems::Canonical(distinct[j]));
    }
  }
}

JG_TEST(UniqueItems, RefusesTheByteThatRepeatsAnItem) {
  struct Case {
    std::string text;
    size_t taken;  // bytes taken before the refusal
  };
  const std::vector<Case> cases = {
      {"[1, 2, 1]", 8},           // refused at `]`, which ends the number
      {"[1, 1.0 ,", 7},           // at the space after 1.0
      {"[\"a\", \"\\u0061\"]", 13},  // at the closing quote
      {"[true, true]", 7},        // a literal's first letter decides it
      {"[{\"a\":1}, {\"a\":1}]", 16},
      {"[[1, 2], [2, 1], [1, 2]]", 22},
      {"[1, 2, 3]", 9},
  };
  for (const Case& c : cases) {
    UniqueItems items;
    JG_EXPECT_EQ(Feed(&items, c.text, {0}), c.taken);
  }
  UniqueItems plain;  // not flagged: nothing is checked
  JG_EXPECT_EQ(Feed(&plain, "[1, 1]", {}), size_t{6});
  UniqueItems inner;  // [[1, 1]] flagged outer only, then the inner array only
  JG_EXPECT_EQ(Feed(&inner, "[[1, 1], [1, 1]]", {0}), size_t{14});
  UniqueItems nested;
  JG_EXPECT_EQ(Feed(&nested, "[[1, 1]]", {1}), size_t{6});
}

JG_TEST(UniqueItems, CheckpointsRestoreEveryItem) {
  UniqueItems items;
  JG_EXPECT_EQ(Feed(&items, "[\"x\", ", {0}), size_t{6});
  const UniqueItems::Checkpoint saved = items.Save();
  JG_EXPECT_EQ(Feed(&items, "\"y\", \"x\"", {}), size_t{7});
  items.Restore(saved);
  JG_EXPECT_EQ(Feed(&items, "\"y\", \"z\"", {}), size_t{8});  // "y" is not remembered twice
  items.Restore(saved);
  JG_EXPECT_EQ(Feed(&items, "\"x\"", {}), size_t{2});
}

JG_TEST(UniqueItems, AtRiskWhileAnItemCanStillBecomeAnEarlierOne) {
  struct Case {
    std::string text;  // fed with the outer array flagged unique
    bool at_risk;
  };
  const std::vector<Case> cases = {
      {"[", false},                      // no earlier item
      {"[\"ab\"", false},
      {"[\"ab\",", true},                // an item must follow
      {"[\"ab\", \"", true},
      {"[\"ab\", \"a", true},
      {"[\"ab\", \"ac", false},
      {"[\"ab\", \"ab", true},
      {"[\"ab\", \"\\u00", true},           // inside an escape: as far as it goes
      {"[\"ab\", 1", false},
      {"[12, 1", true},                  // 12, or 1.2e1
      {"[12, 2", false},
      {"[12, 120", true},                // 120e-1
      {"[12, 13", false},
      {"[12, -1", false},
      {"[0, 0.", true},
      {"[0, 0.5", false},
      {"[1.5, 15e", true},
      {"[{\"a\": 1, \"b\": 2}, {\"b\": 2", true},
      {"[{\"a\": 1, \"b\": 2}, {\"b\": 3", false},
      {"[{\"a\": 1, \"b\": 2}, {\"c", false},
      {"[{\"a\": 1, \"b\": 2}, {\"a\": 1, \"b\": 2, \"", true},  // a key may repeat
      {"[[1, 2], [1", true},
      {"[[1, 2], [2", false},
      {"[[1, 2], [1, 2, ", false},
      {"[true, f", false},               // decided at its first letter
  };
  for (const Case& c : cases) {
    UniqueItems items;
    const size_t taken = Feed(&items, c.text, {0});
    JG_EXPECT_EQ(taken, c.text.size());
    const bool at_risk = items.AtRisk();
    if (at_risk != c.at_risk) std::fprintf(stderr, "  case: %s\n", c.text.c_str());
    JG_EXPECT_EQ(at_risk, c.at_risk);
  }
}

// The state key (a search's memo key) ignores white space outside strings in the open items,
// never inside them, nor in what decides an item.
JG_TEST(UniqueItems, StateKeysIgnoreOnlyWhiteSpaceBetweenTokens) {
  auto key_of = [](const std::string& text) {
    UniqueItems items;
    JG_EXPECT_EQ(Feed(&items, text, {0}), text.size());
    std::string key;
    items.AppendStateKey(0, &key);
    return key;
  };
  JG_EXPECT_TRUE(key_of("[{\"a\": 1}, {\"a\":") == key_of("[{\"a\": 1}, { \"a\" :\n\t"));
  JG_EXPECT_TRUE(key_of("[[1, 2], [1,") == key_of("[[1, 2], [ 1 ,  "));
  JG_EXPECT_TRUE(key_of("[{\"a\": 1}, {\"a\": \"x") != key_of("[{\"a\": 1}, {\"a\": \"x "));
  JG_EXPECT_TRUE(key_of("[\"a\", \"b \\\" ") != key_of("[\"a\", \"b \\\""));
  JG_EXPECT_TRUE(key_of("[1, 2") != key_of("[1, 2 "));  // a number decided by the space
}

JG_TEST(UniqueItems, RemaindersAreTheRestOfEarlierStrings) {
  UniqueItems items;
  Feed(&items, "[\"abc\", \"abd\", \"x\", \"ab", {0});
  std::vector<std::string> remainders;
  JG_EXPECT_TRUE(items.AtRisk(&remainders));
  JG_EXPECT_EQ(remainders.size(), size_t{2});
  JG_EXPECT_TRUE(remainders[0] == "c" && remainders[1] == "d");
  UniqueItems keys;
  Feed(&keys, "[{\"name\": 1}, {\"na", {0});
  remainders.clear();
  JG_EXPECT_TRUE(keys.AtRisk(&remainders));
  JG_EXPECT_TRUE(remainders.size() == 1 && remainders[0] == "me");
}

// Feeds `text` with the object opened at offset 0 flagged keyed (property_order "any").
size_t FeedKeyed(UniqueItems* items, const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    UniqueItems::Scanned scanned;
    scanned.keyed_object = i == 1;
    if (!items->Feed(static_cast<uint8_t>(text[i]), scanned)) return i;
  }
  return text.size();
}

JG_TEST(UniqueItems, KeyedObjectsTakeEachKeyOnce) {
  struct Case {
    std::string text;
    size_t taken;
  };
  const std::vector<Case> cases = {
      {"{\"a\":1,\"b\":2}", 13},
      {"{\"a\":1,\"a\":2}", 9},            // refused at the second key's closing quote
      {"{\"a\":1,\"\\u0061\":2}", 14},     // the same key, escaped
      {"{\"a\":{\"a\":1,\"a\":2},\"b\":1}", 25},  // an inner plain object may repeat
      {"{\"a\":\"a\",\"b\":\"a\"}", 17},  // values are not keys
  };
  for (const Case& c : cases) {
    UniqueItems items;
    items.Configure(false, true);
    JG_EXPECT_EQ(FeedKeyed(&items, c.text), c.taken);
  }
}

JG_TEST(UniqueItems, KeyedObjectsAtRiskAndRemainders) {
  struct Case {
    std::string text;
    bool at_risk;
    std::vector<std::string> remainders;
  };
  const std::vector<Case> cases = {
      {"{\"ab\":1", false, {}},
      {"{\"ab\":1,", true, {}},            // a key must follow, and one is taken
      {"{\"ab\":1,\"a", true, {"b"}},
      {"{\"ab\":1,\"c", false, {}},
      {"{", false, {}},
  };
  for (const Case& c : cases) {
    UniqueItems items;
    items.Configure(false, true);
    JG_EXPECT_EQ(FeedKeyed(&items, c.text), c.text.size());
    std::vector<std::string> remainders;
    JG_EXPECT_EQ(items.AtRisk(&remainders), c.at_risk);
    JG_EXPECT_TRUE(remainders == c.remainders);
  }
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
