// TokenizerInfo: the exact byte string of every token id of a model's vocabulary, the ids that
// end a sequence, the model's logits width, and the token trie over all of it.
//
// Contract. Built once per tokenizer (by jaxguide.TokenizerInfo in Python, which lowers
// SentencePiece / byte-level BPE / tiktoken / GGUF vocabularies to bytes) and then immutable:
// every CompiledGrammar and every thread shares one instance read-only.
//   - vocab_size: number of token ids; ids are 0 .. vocab_size - 1.
//   - token_bytes(id): the bytes the token stands for in the output text; empty for special
//     tokens (control, unknown, unused, BOS/EOS), which no grammar byte can produce.
//   - special_token_ids: exactly the ids with empty bytes (derived, sorted).
//   - eos_token_ids: ids that end a sequence (allowed iff the grammar is complete); they must
//     have empty bytes.
//   - logits_width >= vocab_size: the model's (padded) logits row; ids in
//     [vocab_size, logits_width) are never allowed. bitmask_width = ceil(logits_width / 32).
#ifndef JAXGUIDE_NATIVE_TOKENIZER_TOKENIZER_INFO_H_
#define JAXGUIDE_NATIVE_TOKENIZER_TOKENIZER_INFO_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "native/tokenizer/token_trie.h"

namespace jaxguide {

// A "slice" of the vocabulary (llguidance's idea, see ../shared/seeds): the tokens that are
// free text inside a JSON string — valid UTF-8 of 1..max_chars characters, none of them `"`,
// `\`, a control character (U+0000-U+001F) or U+007F — and a trie of all other tokens. Where
// the lexer provably reads any such text without a lexeme boundary, a mask takes the slice's
// bits at once and walks only the other trie. Levels of decreasing max_chars serve lexemes
// with less room left (length-bounded strings).
struct TokenSlice {
  size_t max_chars = 0;
  std::vector<uint32_t> bits;       // bitmask_width words: the slice's tokens
  std::unique_ptr<TokenTrie> rest;  // the other tokens (same ids)
  size_t num_tokens = 0;
};

class TokenizerInfo {
 public:
  // Upper bound on the vocabulary size (ids must fit the trie's 32-bit token field).
  static constexpr size_t kMaxVocabSize = size_t{1} << 24;

  // `flat_bytes` holds all token byte strings back to back; token i is
  // flat_bytes[offsets[i] .. offsets[i + 1]), so offsets has vocab_size + 1 entries.
  // Throws TokenizerError on inconsistent input (empty vocabulary, bad offsets, logits_width
  // below vocab_size, out-of-range or non-special EOS ids).
  TokenizerInfo(std::string flat_bytes, std::vector<uint32_t> offsets, size_t logits_width,
                std::vector<uint32_t> eos_token_ids);

  size_t vocab_size() const { return offsets_.size() - 1; }
  size_t logits_width() const { return logits_width_; }
  size_t bitmask_width() const { return (logits_width_ + 31) / 32; }

  std::string_view token_bytes(uint32_t id) const {
    return std::string_view(flat_bytes_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  const std::vector<uint32_t>& eos_token_ids() const { return eos_token_ids_; }
  const std::vector<uint32_t>& special_token_ids() const { return special_token_ids_; }
  const TokenTrie& trie() const { return *trie_; }
  // The JSON-string-text slices, level 0..kNumStringSlices-1 with max_chars 16, 8, 4; built
  // by the constructor.
  static constexpr size_t kNumStringSlices = 3;
  const TokenSlice& string_slice(size_t level) const;

  // Bytes held by this object (vocabulary, trie, slices, tables).
  size_t MemoryBytes() const;

 private:
  size_t SlicesMemoryBytes() const;

  std::string flat_bytes_;
  std::vector<uint32_t> offsets_;
  size_t logits_width_;
  std::vector<uint32_t> eos_token_ids_;
  std::vector<uint32_t> special_token_ids_;
  std::unique_ptr<TokenTrie> trie_;
  mutable std::once_flag string_slice_once_[kNumStringSlices];
  mutable std::unique_ptr<TokenSlice> string_slice_[kNumStringSlices];
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_TOKENIZER_TOKENIZER_INFO_H_
