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
  // The string slices are part of preparing a vocabulary (like the trie), not of a grammar's
  // first mask: built here.
  for (size_t level = 0; level < kNumStringSlices; ++level) string_slice(level);
}

size_t TokenizerInfo::SlicesMemoryBytes() const {
  size_t bytes = 0;
  for (size_t level = 0; level < kNumStringSlices; ++level) {
    const TokenSlice& slice = string_slice(level);
    bytes += slice.bits.capacity() * 4 + slice.rest->MemoryBytes();
  }
  return bytes;
}

size_t TokenizerInfo::MemoryBytes() const {
  return flat_bytes_.capacity() + offsets_.capacity() * 4 + eos_token_ids_.capacity() * 4 +
         special_token_ids_.capacity() * 4 + trie_->MemoryBytes() + SlicesMemoryBytes();
}

namespace {

// Number of characters if `bytes` is valid UTF-8 made only of JSON-string text characters
// (not `"`, `\\`, U+0000-U+001F, U+007F), else 0.
size_t StringTextChars(std::string_view bytes) {
  size_t chars = 0;
  for (size_t i = 0; i < bytes.size(); ++chars) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    size_t length = 0;
    uint32_t min = 0;
    if (b < 0x80) {
      if (b < 0x20 || b == '"' || b == '\\' || b == 0x7F) return 0;
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      length = 2, min = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
      length = 3, min = 0x800;
    } else if (b >= 0xF0 && b <= 0xF4) {
      length = 4, min = 0x10000;
    } else {
      return 0;
    }
    if (i + length > bytes.size()) return 0;
    uint32_t code = b & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      const auto c = static_cast<uint8_t>(bytes[i + k]);
      if ((c & 0xC0) != 0x80) return 0;
      code = (code << 6) | (c & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    i += length;
  }
  return chars;
}

}  // namespace

const TokenSlice& TokenizerInfo::string_slice(size_t level) const {
  std::call_once(string_slice_once_[level], [this, level] {
    auto slice = std::make_unique<TokenSlice>();
    slice->max_chars = size_t{16} >> level;
    slice->bits.assign(bitmask_width(), 0);
    std::vector<std::string_view> rest(vocab_size());
    for (uint32_t id = 0; id < vocab_size(); ++id) {
      const std::string_view bytes = token_bytes(id);
      const size_t chars = StringTextChars(bytes);
      if (chars >= 1 && chars <= slice->max_chars) {
        slice->bits[id >> 5] |= uint32_t{1} << (id & 31);
        ++slice->num_tokens;
      } else {
        rest[id] = bytes;
      }
    }
    slice->rest = std::make_unique<TokenTrie>(rest);
    string_slice_[level] = std::move(slice);
  });
  return *string_slice_[level];
}

}  // namespace jaxguide
