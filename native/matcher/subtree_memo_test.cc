// SubtreeMemo unit tests: the visit policy (seen, captured if worth it, hit), the drop by
// Earley set; and a matcher whose masks come from the memo (a string whose every character is
// a lexeme: the same threads one byte later, mask after mask) against fresh matchers.
#include "native/matcher/subtree_memo.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "native/matcher/matcher.h"
#include "native/support/testing.h"

namespace jaxguide {
namespace {

JG_TEST(SubtreeMemo, SeenThenCapturedThenHit) {
  SubtreeMemo memo;
  const SubtreeMemo::Key key{7, 3, 42, 0};
  const SubtreeMemo::Answer* answer = nullptr;
  JG_EXPECT_TRUE(memo.Find(key, 1000, &answer) == SubtreeMemo::Visit::kWalk);
  memo.NoteWalk(key, 100);  // cheap for 1000 nodes: not worth a capture
  JG_EXPECT_TRUE(memo.Find(key, 1000, &answer) == SubtreeMemo::Visit::kWalk);
  memo.NoteWalk(key, 600);
  JG_EXPECT_TRUE(memo.Find(key, 1000, &answer) == SubtreeMemo::Visit::kCapture);
  memo.Store(key, {SubtreeMemo::Answer::Form::kRowWords, {5, 9}});
  JG_ASSERT_TRUE(memo.Find(key, 1000, &answer) == SubtreeMemo::Visit::kHit);
  JG_EXPECT_TRUE(answer->form == SubtreeMemo::Answer::Form::kRowWords);
  JG_EXPECT_EQ(answer->data.size(), size_t{2});
  JG_EXPECT_EQ(answer->data[1], uint64_t{9});
  // Another lexer state, trie or node is another key.
  JG_EXPECT_TRUE(memo.Find({7, 3, 43, 0}, 1000, &answer) == SubtreeMemo::Visit::kWalk);
  JG_EXPECT_TRUE(memo.Find({7, 3, 42, 1}, 1000, &answer) == SubtreeMemo::Visit::kWalk);
  JG_EXPECT_EQ(memo.size(), size_t{3});
}

JG_TEST(SubtreeMemo, PoppedSetsTakeTheirKeys) {
  SubtreeMemo memo;
  const SubtreeMemo::Answer* answer = nullptr;
  for (uint32_t set = 1; set <= 4; ++set) memo.Find({0, set, 9, 0}, 10, &answer);
  memo.DropSetsFrom(3);
  JG_EXPECT_EQ(memo.size(), size_t{2});
  JG_EXPECT_TRUE(memo.Find({0, 3, 9, 0}, 10, &answer) == SubtreeMemo::Visit::kWalk);
  memo.NoteWalk({0, 2, 9, 0}, 10);
  JG_EXPECT_TRUE(memo.Find({0, 2, 9, 0}, 10, &answer) == SubtreeMemo::Visit::kCapture);
  SubtreeMemo copy = memo;  // a copy starts empty
  JG_EXPECT_EQ(copy.size(), size_t{0});
}

// start: "\"" item* "\"" ; item: CHAR | ESC ; CHAR: /[^"\\]/ ; ESC: /\\./ — one lexeme per
// character, the Earley set the same after each.
std::shared_ptr<const CompiledGrammar> CharString(std::shared_ptr<const TokenizerInfo> tok) {
  CompiledGrammarSpec spec;
  spec.terminals = {{"QUOTE", "\"", false}, {"CHAR", "[^\"\\\\]", false},
                    {"ESC", "\\\\.", false}};
  spec.nonterminal_names = {"start", "items", "item"};
  const int32_t items = 4, item = 5;  // symbols: terminals 0..2, nonterminals from 3
  spec.rules = {{0, {0, items, 0}}, {0, {0, 0}}, {1, {item}}, {1, {items, item}},
                {2, {1}},           {2, {2}}};
  spec.start = 0;
  return std::make_shared<const CompiledGrammar>(spec, std::move(tok));
}

std::shared_ptr<const TokenizerInfo> CharVocabulary() {
  const std::vector<std::string> tokens = {"\"", "a",  "b",   "ab",  "ba", "a\"", "\\",
                                           "\\\"", "\"a", "aa", "\\a", "b\\", "",   "bb\""};
  std::string flat;
  std::vector<uint32_t> offsets = {0};
  for (const std::string& token : tokens) {
    flat += token;
    offsets.push_back(static_cast<uint32_t>(flat.size()));
  }
  return std::make_shared<const TokenizerInfo>(flat, offsets, 32, std::vector<uint32_t>{12});
}

// Every string of 1..4 characters over a, b, \\ and ", ids in an order unrelated to the trie's
// (so a mask's tokens spread over the row's words: answers stored as node bitsets), and the
// empty EOS.
std::shared_ptr<const TokenizerInfo> SpreadCharVocabulary() {
  const std::string alphabet = "ab\\\"";
  std::vector<std::string> tokens;
  for (size_t length = 1; length <= 4; ++length) {
    size_t count = 1;
    for (size_t i = 0; i < length; ++i) count *= alphabet.size();
    for (size_t code = 0; code < count; ++code) {
      std::string token;
      for (size_t i = 0, rest = code; i < length; ++i, rest /= alphabet.size()) {
        token += alphabet[rest % alphabet.size()];
      }
      tokens.push_back(token);
    }
  }
  tokens.push_back("");
  std::string flat;
  std::vector<uint32_t> offsets = {0};
  for (const std::string& token : tokens) {
    flat += token;
    offsets.push_back(static_cast<uint32_t>(flat.size()));
  }
  const auto eos = static_cast<uint32_t>(tokens.size() - 1);
  return std::make_shared<const TokenizerInfo>(flat, offsets, tokens.size(),
                                               std::vector<uint32_t>{eos});
}

std::vector<uint32_t> MaskOf(Matcher* matcher) {
  std::vector<uint32_t> row(matcher->tokenizer().bitmask_width());
  matcher->FillNextTokenBitmask(row.data());
  return row;
}

// Replays `walk` (token ids of `grammar`), comparing each mask with a fresh matcher's; a
// rollback after the tenth step pops sets, and their answers with them.
void ExpectMemoMasksMatchFreshOnes(std::shared_ptr<const CompiledGrammar> grammar,
                                   const std::vector<uint32_t>& walk) {
  Matcher matcher(grammar);
  std::vector<std::string> texts = {""};  // the bytes before each step
  auto expect_fresh_mask = [&] {
    Matcher fresh(grammar);
    JG_ASSERT_TRUE(fresh.AcceptBytes(texts.back()));
    JG_EXPECT_TRUE(MaskOf(&matcher) == MaskOf(&fresh));
  };
  for (size_t step = 0; step < walk.size(); ++step) {
    expect_fresh_mask();
    JG_ASSERT_TRUE(matcher.AcceptToken(walk[step]));
    texts.push_back(texts.back() + std::string(grammar->tokenizer().token_bytes(walk[step])));
    if (step == 9) {  // a rollback pops sets, and their answers with them
      matcher.Rollback(3);
      texts.resize(texts.size() - 3);
      expect_fresh_mask();
    }
  }
  JG_EXPECT_FALSE(matcher.has_error());
}

JG_TEST(Matcher, MasksFromTheSubtreeMemoMatchFreshOnes) {
  // Alternating threads (after `a`, after `\\`, after `b`) keep revisiting the root's keys.
  // A small vocabulary: answers stored as row words.
  ExpectMemoMasksMatchFreshOnes(CharString(CharVocabulary()),
                                {0, 1, 6, 1, 2, 3, 10, 4, 6, 2, 1, 11, 1, 9, 2, 5});
  // 340 tokens, each mask's spread over the row: as node bitsets.
  const auto spread = CharString(SpreadCharVocabulary());
  auto id = [&](const std::string& text) {
    const TokenizerInfo& tokenizer = spread->tokenizer();
    uint32_t found = 0;
    while (tokenizer.token_bytes(found) != text) ++found;
    return found;
  };
  ExpectMemoMasksMatchFreshOnes(spread, {id("\""), id("a"), id("\\"), id("a"), id("b"), id("ab"),
                                         id("\\a"), id("ba"), id("\\"), id("b"), id("a"),
                                         id("b\\"), id("a"), id("aa"), id("b"), id("a\"")});
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
