// Unit tests for TokenTrie and TokenizerInfo: structure invariants and a brute-force oracle on
// random vocabularies over a small alphabet (so prefixes collide often).
#include "native/tokenizer/token_trie.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "native/support/error.h"
#include "native/support/testing.h"
#include "native/tokenizer/tokenizer_info.h"

namespace jaxguide {
namespace {

std::vector<std::string_view> Views(const std::vector<std::string>& strings) {
  return std::vector<std::string_view>(strings.begin(), strings.end());
}

std::vector<uint32_t> BruteWithPrefix(const std::vector<std::string>& vocab,
                                      const std::string& prefix) {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < vocab.size(); ++id) {
    const std::string& t = vocab[id];
    if (!t.empty() && t.size() >= prefix.size() && t.compare(0, prefix.size(), prefix) == 0) {
      ids.push_back(id);
    }
  }
  return ids;
}

std::vector<uint32_t> BrutePrefixing(const std::vector<std::string>& vocab,
                                     const std::string& text) {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < vocab.size(); ++id) {
    const std::string& t = vocab[id];
    if (!t.empty() && t.size() <= text.size() && text.compare(0, t.size(), t) == 0) {
      ids.push_back(id);
    }
  }
  return ids;
}

std::string RandomString(std::mt19937* rng, size_t max_length) {
  // Bytes from {'a', 'b', 0x00, 0xFF} exercise ordering of high bytes and embedded NULs.
  static const char kAlphabet[] = {'a', 'b', '\0', '\xFF'};
  std::uniform_int_distribution<size_t> length(0, max_length);
  std::uniform_int_distribution<int> pick(0, 3);
  std::string s(length(*rng), 'a');
  for (char& c : s) c = kAlphabet[pick(*rng)];
  return s;
}

JG_TEST(TokenTrie, MatchesBruteForceOnRandomVocabularies) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> vocab(1 + rng() % 200);
    for (std::string& token : vocab) token = RandomString(&rng, 6);
    const TokenTrie trie(Views(vocab));
    for (int q = 0; q < 100; ++q) {
      const std::string probe = RandomString(&rng, 7);
      JG_EXPECT_TRUE(trie.TokensWithPrefix(probe) == BruteWithPrefix(vocab, probe));
      JG_EXPECT_TRUE(trie.TokensPrefixing(probe) == BrutePrefixing(vocab, probe));
    }
    JG_EXPECT_TRUE(trie.TokensWithPrefix("") == BruteWithPrefix(vocab, ""));
    // Each id's node spells its bytes (duplicates share it); an empty token has none.
    for (uint32_t id = 0; id < vocab.size(); ++id) {
      const int64_t spelled = vocab[id].empty() ? -1 : trie.FindNode(vocab[id]);
      const uint32_t node = trie.NodeOfToken(id);
      JG_EXPECT_EQ(node == TokenTrie::kNoNode ? int64_t{-1} : int64_t{node}, spelled);
    }
    JG_EXPECT_EQ(trie.NodeOfToken(static_cast<uint32_t>(vocab.size())), TokenTrie::kNoNode);
  }
}

JG_TEST(TokenTrie, PreOrderInvariants) {
  std::mt19937 rng(99);
  std::vector<std::string> vocab(300);
  for (std::string& token : vocab) token = RandomString(&rng, 5);
  const TokenTrie trie(Views(vocab));
  const auto& nodes = trie.nodes();
  JG_EXPECT_EQ(nodes[0].subtree_size(), nodes.size());
  JG_EXPECT_EQ(nodes[0].depth, 0);
  for (size_t i = 1; i < nodes.size(); ++i) {
    // The next node in pre-order is either a child (depth + 1) or a node at most as deep.
    JG_EXPECT_LE(nodes[i].depth, nodes[i - 1].depth + 1);
    JG_EXPECT_TRUE(nodes[i].subtree_size() >= 1);
    JG_EXPECT_LE(i + nodes[i].subtree_size(), nodes.size());
    // Every node in the subtree is deeper than the subtree root.
    for (size_t j = i + 1; j < i + nodes[i].subtree_size(); ++j) {
      JG_EXPECT_LT(nodes[i].depth, nodes[j].depth);
    }
    // Leaves carry a token: no dangling paths.
    if (nodes[i].subtree_size() == 1) JG_EXPECT_TRUE(nodes[i].has_token());
  }
}

JG_TEST(TokenTrie, DuplicateByteStringsKeepEveryId) {
  const std::vector<std::string> vocab = {"ab", "", "a", "ab", "b", "ab"};
  const TokenTrie trie(Views(vocab));
  const int64_t node = trie.FindNode("ab");
  JG_ASSERT_TRUE(node > 0);
  JG_EXPECT_EQ(trie.nodes()[node].token, 0u);
  JG_EXPECT_TRUE(trie.DuplicateTokens(trie.nodes()[node]) == (std::vector<uint32_t>{3, 5}));
  JG_EXPECT_TRUE(trie.TokensWithPrefix("a") == (std::vector<uint32_t>{0, 2, 3, 5}));
  JG_EXPECT_EQ(trie.FindNode("c"), -1);
  JG_EXPECT_EQ(trie.max_depth(), 2u);
}

JG_TEST(TokenizerInfo, DerivesSpecialTokensAndValidates) {
  const std::string flat =
      "ab"
      "c";
  TokenizerInfo info(flat, {0, 2, 2, 3}, 64, {1});
  JG_EXPECT_EQ(info.vocab_size(), 3u);
  JG_EXPECT_EQ(info.bitmask_width(), 2u);
  JG_EXPECT_TRUE(info.special_token_ids() == (std::vector<uint32_t>{1}));
  JG_EXPECT_EQ(info.token_bytes(2), std::string_view("c"));
  JG_EXPECT_THROWS(TokenizerInfo(flat, {0, 2, 2, 3}, 2, {}), TokenizerError);   // width < vocab
  JG_EXPECT_THROWS(TokenizerInfo(flat, {0, 2, 2, 3}, 3, {0}), TokenizerError);  // EOS has bytes
  JG_EXPECT_THROWS(TokenizerInfo(flat, {0, 2, 2, 3}, 3, {7}), TokenizerError);  // EOS out of range
  JG_EXPECT_THROWS(TokenizerInfo(flat, {0, 2, 1, 3}, 3, {}), TokenizerError);   // bad offsets
  JG_EXPECT_THROWS(TokenizerInfo("", {0}, 3, {}), TokenizerError);              // empty
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
