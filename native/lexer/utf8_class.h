// Utf8Class: a small byte-level DFA that reads exactly one UTF-8 encoded code point of a
// CodePointSet (design note in utf8_class.cc).
//
// Contract: Step(kStartNode, b) and Step(node, b) return the next node, kAccept (a whole code
// point of the set was read) or kReject (no code point of the set is encoded by the bytes read).
// Every node the automaton can reach still has at least one completion in the set, so a
// thread that is not rejected can always finish: this is what makes dead-state detection exact.
// Only valid UTF-8 is accepted: no overlong forms, no surrogates (U+D800..U+DFFF are dropped
// from the set), nothing above U+10FFFF. Immutable after construction; safe to share.
#ifndef JAXGUIDE_NATIVE_LEXER_UTF8_CLASS_H_
#define JAXGUIDE_NATIVE_LEXER_UTF8_CLASS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "native/lexer/code_point_set.h"

namespace jaxguide {

class Utf8Class {
 public:
  static constexpr int32_t kReject = -1;
  static constexpr int32_t kAccept = -2;
  static constexpr uint32_t kStartNode = 0;

  explicit Utf8Class(const CodePointSet& set);
  // The class of `set`, which holds the same code points from U+0080 up as the class
  // `same_above_ascii` was built from: equal to Utf8Class(set), node for node, built by copying.
  Utf8Class(const CodePointSet& set, const Utf8Class& same_above_ascii);

  int32_t Step(uint32_t node, uint8_t byte) const {
    if (node == kStartNode) return start_[byte];
    if ((byte & 0xC0) != 0x80) return kReject;
    return continuation_[(node - 1) * 64 + (byte & 0x3F)];
  }

  // True if no code point of the set can be encoded (empty set, or only surrogates).
  bool Empty() const { return empty_; }
  // Nodes including the start node.
  size_t num_nodes() const { return 1 + continuation_.size() / 64; }
  size_t MemoryBytes() const { return sizeof(*this) + continuation_.size() * sizeof(int32_t); }

  // A set of bytes, bit (b & 63) of word b >> 6.
  using ByteBits = std::array<uint64_t, 4>;
  // Adds to `boundary` every byte b (1..255) at which Step(node, b) may differ from
  // Step(node, b - 1) for some node: bytes between two boundaries are interchangeable.
  void MarkByteBoundaries(ByteBits* boundary) const {
    for (size_t w = 0; w < 4; ++w) (*boundary)[w] |= byte_boundaries_[w];
  }

 private:
  void AcceptAscii(const CodePointSet& set);  // start_[b] = kAccept for the set's ASCII b
  void ComputeByteBoundaries();

  std::array<int32_t, 256> start_;
  std::vector<int32_t> continuation_;  // node n >= 1: entries [(n - 1) * 64, n * 64)
  ByteBits byte_boundaries_{};
  bool empty_ = true;
};

// The Utf8Class of `set`, shared: grammars compiled in one process use the same few classes
// (a JSON string character, digits, \w), so each is built once; a class that differs from a
// known one in ASCII only (a key automaton's "any key character but `a`") is copied from it.
// Thread-safe; the cache is bounded (kSharedUtf8ClassBytes; beyond it, it starts afresh —
// classes in use stay alive).
inline constexpr size_t kSharedUtf8ClassBytes = size_t{16} << 20;
std::shared_ptr<const Utf8Class> SharedUtf8Class(const CodePointSet& set);
// Empties that cache (classes in use stay alive): for cold-start measurements and tests.
// Pinned classes stay.
void ClearSharedUtf8Classes();
// Keeps the Utf8Class of `set` for the life of the process: SharedUtf8Class returns it even
// after ClearSharedUtf8Classes. For the classes of pinned terminals (pinned_terminals.h), a
// bounded, fixed set named by the front-ends; not counted against kSharedUtf8ClassBytes.
std::shared_ptr<const Utf8Class> PinnedUtf8Class(const CodePointSet& set);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_UTF8_CLASS_H_
