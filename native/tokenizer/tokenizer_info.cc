// TokenizerInfo validation and construction. See tokenizer_info.h for the contract.
#include "native/tokenizer/tokenizer_info.h"

#include <algorithm>

#include "native/support/error.h"

namespace jaxguide {

TokenizerInfo::TokenizerInfo(std::string flat_bytes, std::vector<uint32_t> offsets,
                             size_t logits_width, std::vector<uint32_t> eos_token_ids)
    : flat_bytes_(std::move(flat_bytes)),
      offsets_(std::move(offsets)),
      logits_width_(logits_width),
      eos_token_ids_(std::move(eos_token_ids)) {
  if (offsets_.size() < 2) throw TokenizerError("the vocabulary is empty");
  if (vocab_size() > kMaxVocabSize) {
    throw TokenizerError("vocabulary of " + std::to_string(vocab_size()) +
                         " tokens exceeds the limit of " + std::to_string(kMaxVocabSize));
  }
  if (offsets_.front() != 0 || offsets_.back() != flat_bytes_.size() ||
      !std::is_sorted(offsets_.begin(), offsets_.end())) {
    throw TokenizerError("token byte offsets are inconsistent with the byte buffer");
  }
  if (logits_width_ < vocab_size()) {
    throw TokenizerError("logits_width " + std::to_string(logits_width_) +
                         " is below the vocabulary size " + std::to_string(vocab_size()));
  }
  std::sort(eos_token_ids_.begin(), eos_token_ids_.end());
  eos_token_ids_.erase(std::unique(eos_token_ids_.begin(), eos_token_ids_.end()),
                       eos_token_ids_.end());
  for (uint32_t id : eos_token_ids_) {
    if (id >= vocab_size()) {
      throw TokenizerError("EOS token id " + std::to_string(id) + " is outside the vocabulary of " +
                           std::to_string(vocab_size()));
    }
    if (!token_bytes(id).empty()) {
      throw TokenizerError("EOS token id " + std::to_string(id) +
                           " has bytes; end-of-sequence tokens must be special (no bytes)");
    }
  }
  std::vector<std::string_view> views(vocab_size());
  for (uint32_t id = 0; id < vocab_size(); ++id) {
    views[id] = token_bytes(id);
    if (views[id].empty()) special_token_ids_.push_back(id);
  }
  trie_ = std::make_unique<TokenTrie>(views);
}

size_t TokenizerInfo::MemoryBytes() const {
  return flat_bytes_.capacity() + offsets_.capacity() * 4 + eos_token_ids_.capacity() * 4 +
         special_token_ids_.capacity() * 4 + trie_->MemoryBytes();
}

}  // namespace jaxguide
