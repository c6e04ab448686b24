// TokenTrie construction and queries. See token_trie.h for the design note.
#include "native/tokenizer/token_trie.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "native/support/error.h"

namespace jaxguide {
const std::vector<uint32_t>& TokenTrie::EmptyIds() {
  static const std::vector<uint32_t> empty;
  return empty;
}

TokenTrie::TokenTrie(const std::vector<std::string_view>& token_bytes) {
  if (token_bytes.size() >= kNoToken) {
    throw TokenizerError("too many tokens for the token trie: " +
                         std::to_string(token_bytes.size()));
  }
  std::vector<uint32_t> order;
  order.reserve(token_bytes.size());
  for (uint32_t id = 0; id < token_bytes.size(); ++id) {
    const size_t length = token_bytes[id].size();
    if (length == 0) continue;
    if (length > kMaxTokenBytes) {
      throw TokenizerError("token " + std::to_string(id) + " is " + std::to_string(length) +
                           " bytes long; the token trie supports at most " +
                           std::to_string(kMaxTokenBytes));
    }
    order.push_back(id);
  }
  // Byte-wise lexicographic order (char_traits<char>::compare compares as unsigned char), ties
  // broken by id so that the node's token is the smallest id.
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const int c = token_bytes[a].compare(token_bytes[b]);
    return c != 0 ? c < 0 : a < b;
  });

  node_of_token_.assign(token_bytes.size(), kNoNode);
  nodes_.reserve(order.size() * 2 + 1);
  nodes_.push_back(Node{0, kNoToken, 0, 0});
  // open[d] = index of the open node at depth d on the current path (open[0] = root).
  std::vector<uint32_t> open = {0};
  auto close_to_depth = [&](size_t depth) {
    while (open.size() > depth + 1) {
      Node& node = nodes_[open.back()];
      const size_t subtree = nodes_.size() - open.back();
      node.byte_and_subtree = (node.byte_and_subtree & 0xFFu) | static_cast<uint32_t>(subtree << 8);
      open.pop_back();
    }
  };

  std::string_view previous;
  for (uint32_t id : order) {
    const std::string_view bytes = token_bytes[id];
    const size_t limit = std::min(previous.size(), bytes.size());
    size_t common = 0;
    while (common < limit && previous[common] == bytes[common]) ++common;
    close_to_depth(common);
    for (size_t depth = common + 1; depth <= bytes.size(); ++depth) {
      if (nodes_.size() >= kMaxNodes) {
        throw TokenizerError("the token trie would exceed its limit of " +
                             std::to_string(kMaxNodes) + " nodes");
      }
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(
          Node{static_cast<uint8_t>(bytes[depth - 1]), kNoToken, static_cast<uint16_t>(depth), 0});
    }
    Node& leaf = nodes_[open.back()];
    if (leaf.token == kNoToken) {
      leaf.token = id;
    } else {
      leaf.flags |= kHasDuplicates;
      duplicates_[leaf.token].push_back(id);
    }
    node_of_token_[id] = open.back();
    max_depth_ = std::max(max_depth_, bytes.size());
    previous = bytes;
  }
  close_to_depth(0);
  Node& root = nodes_[0];
  root.byte_and_subtree = static_cast<uint32_t>(nodes_.size() << 8);
  nodes_.shrink_to_fit();
}

size_t TokenTrie::MemoryBytes() const {
  size_t bytes = nodes_.capacity() * sizeof(Node);
  bytes += node_of_token_.capacity() * sizeof(uint32_t);
  for (const auto& entry : duplicates_) bytes += sizeof(entry) + entry.second.capacity() * 4;
  return bytes;
}


int64_t TokenTrie::FindChild(size_t index, uint8_t byte) const {
  const size_t end = index + nodes_[index].subtree_size();
  size_t child = index + 1;
  while (child < end && nodes_[child].byte() < byte) child += nodes_[child].subtree_size();
  if (child >= end || nodes_[child].byte() != byte) return -1;
  return static_cast<int64_t>(child);
}

int64_t TokenTrie::FindNode(std::string_view prefix) const {
  int64_t index = 0;
  for (const char c : prefix) {
    index = FindChild(static_cast<size_t>(index), static_cast<uint8_t>(c));
    if (index < 0) return -1;
  }
  return index;
}

void TokenTrie::AppendTokensAt(const Node& node, std::vector<uint32_t>* out) const {
  if (!node.has_token()) return;
  out->push_back(node.token);
  const std::vector<uint32_t>& extra = DuplicateTokens(node);
  out->insert(out->end(), extra.begin(), extra.end());
}

std::vector<uint32_t> TokenTrie::TokensWithPrefix(std::string_view prefix) const {
  std::vector<uint32_t> result;
  const int64_t start = FindNode(prefix);
  if (start < 0) return result;
  const size_t end = static_cast<size_t>(start) + nodes_[start].subtree_size();
  for (size_t i = static_cast<size_t>(start); i < end; ++i) AppendTokensAt(nodes_[i], &result);
  std::sort(result.begin(), result.end());
  return result;
}

std::vector<uint32_t> TokenTrie::TokensPrefixing(std::string_view text) const {
  std::vector<uint32_t> result;
  int64_t index = 0;
  for (const char c : text) {
    index = FindChild(static_cast<size_t>(index), static_cast<uint8_t>(c));
    if (index < 0) break;
    AppendTokensAt(nodes_[index], &result);
  }
  std::sort(result.begin(), result.end());
  return result;
}

}  // namespace jaxguide
