// TokenTrie: every token's byte string in one flat, pre-order array (the "toktrie").
//
// Design note. The mask computation walks all tokens through the lexer/parser at once: it
// descends the trie byte by byte and, when a byte is rejected, skips the whole subtree (every
// token that starts with the rejected prefix) in O(1). To make that walk a linear scan over
// memory, nodes are stored in depth-first pre-order, children sorted by byte; a node knows
// its subtree size (next sibling = index + subtree_size) and its depth (the walker keeps one
// lexer state per depth, so moving to the next node needs no explicit pops: the parent of a
// node at depth d is the last node visited at depth d - 1). A node is 12 bytes.
//
// Build: sort the token ids by their bytes (O(n log n) comparisons), then emit nodes while
// scanning the sorted list with a stack of open nodes (O(total bytes)). Tokens with no bytes
// (special/control tokens) are not in the trie. Several ids may share one byte string (for
// example a SentencePiece piece and its byte-fallback twin); the node holds the smallest id and
// the others are listed in a side table (rare).
// A table of one node index per token id (NodeOfToken) maps a set of tokens back to nodes.
//
// Limits (checked, TokenizerError on violation): at most kMaxNodes nodes, token byte strings at
// most kMaxTokenBytes long. The trie is immutable after construction and safe to share between
// threads.
#ifndef JAXGUIDE_NATIVE_TOKENIZER_TOKEN_TRIE_H_
#define JAXGUIDE_NATIVE_TOKENIZER_TOKEN_TRIE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jaxguide {

class TokenTrie {
 public:
  static constexpr uint32_t kNoToken = 0xFFFFFFFFu;
  static constexpr uint32_t kNoNode = 0xFFFFFFFFu;
  static constexpr size_t kMaxNodes = (size_t{1} << 24) - 1;
  static constexpr size_t kMaxTokenBytes = 0xFFFF;

  struct Node {
    // Bits 0-7: the byte on the edge from the parent (0 for the root).
    // Bits 8-31: number of nodes in this node's subtree, itself included.
    uint32_t byte_and_subtree;
    // The smallest token id whose bytes are exactly the path to this node, or kNoToken.
    uint32_t token;
    // Length of the path from the root (the root has depth 0).
    uint16_t depth;
    // kHasDuplicates when more ids than `token` share these bytes.
    uint16_t flags;

    uint8_t byte() const { return static_cast<uint8_t>(byte_and_subtree & 0xFF); }
    uint32_t subtree_size() const { return byte_and_subtree >> 8; }
    bool has_token() const { return token != kNoToken; }
    bool has_duplicates() const { return (flags & kHasDuplicates) != 0; }
  };
  static constexpr uint16_t kHasDuplicates = 1;

  // Builds the trie over `token_bytes[id]` for every id; empty strings are skipped.
  // Throws TokenizerError if a limit above is exceeded.
  explicit TokenTrie(const std::vector<std::string_view>& token_bytes);

  const std::vector<Node>& nodes() const { return nodes_; }
  size_t num_nodes() const { return nodes_.size(); }
  // Longest token byte string (= deepest node).
  size_t max_depth() const { return max_depth_; }
  // Bytes held by the trie and its side tables.
  size_t MemoryBytes() const;

  // The ids other than node.token that share the node's bytes (empty for most nodes).
  const std::vector<uint32_t>& DuplicateTokens(const Node& node) const {
    return node.has_duplicates() ? duplicates_.at(node.token) : EmptyIds();
  }

  // The node whose path spells token `id`'s bytes (duplicate ids too), or kNoNode (an id with
  // no bytes here, or beyond the ids the trie was built over). O(1): a table of one entry per id.
  uint32_t NodeOfToken(uint32_t id) const {
    return id < node_of_token_.size() ? node_of_token_[id] : kNoNode;
  }

  // Index of the child of node `index` reached by `byte`, or -1 (linear in the child count).
  int64_t FindChild(size_t index, uint8_t byte) const;

  // Index of the node whose path spells `prefix`, or -1 if no token starts with `prefix`.
  // The root (index 0) for the empty prefix.
  int64_t FindNode(std::string_view prefix) const;

  // Sorted ids of all tokens whose bytes start with `prefix` (the subtree of its node).
  std::vector<uint32_t> TokensWithPrefix(std::string_view prefix) const;

  // Sorted ids of all tokens whose bytes are a non-empty prefix of `text`.
  std::vector<uint32_t> TokensPrefixing(std::string_view text) const;

 private:
  // Appends node.token and its duplicates to `out`.
  void AppendTokensAt(const Node& node, std::vector<uint32_t>* out) const;

  std::vector<Node> nodes_;
  static const std::vector<uint32_t>& EmptyIds();
  std::unordered_map<uint32_t, std::vector<uint32_t>> duplicates_;  // keyed by Node::token
  std::vector<uint32_t> node_of_token_;  // per token id: its node, or kNoNode
  size_t max_depth_ = 0;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_TOKENIZER_TOKEN_TRIE_H_
