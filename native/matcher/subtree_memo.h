// SubtreeMemo: one matcher's memo of the tokens allowed below a trie node from one lexing
// thread, across masks (see the mask walk's design note in matcher_mask.cc).
//
// What it holds. Below trie node n, walked from thread (Earley set s, lexer state l), the
// allowed tokens are a function of (n, s, l) alone while set s stands: the parser only appends
// sets, and a set keeps its meaning until a truncation pops it. The memo keeps that answer in
// the smaller of two forms (Answer): a bitset over the node's descendants in trie order
// (subtree_size / 8 bytes whatever the tokens' ids: a large subtree, a dense answer), or the
// nonzero words of the answer's bitmask row (8 bytes per word: a sparse answer, which the
// bitset of a large subtree would cost far more).
//
// Policy. An answer is stored on the second visit of its key (the first only marks it seen,
// with the walk's cost), and only if that walk cost at least 1 / kCaptureRatio lexer steps per
// node of the subtree: most keys are visited once (a new Earley set per accepted token), and
// capturing costs a pass over the subtree, which a walk that the lexer-only cache answers
// almost whole (a frontier of a few nodes) does not repay. Bounded by kMaxEntries keys (past
// it the memo starts over) and kMaxBytes of bitsets (past it the answers on older Earley sets
// go, else the new one is not stored). DropSetsFrom(n) forgets every key on a set >= n (the
// matcher calls it when it pops sets). A copy starts empty (a fork rebuilds what it needs).
#ifndef JAXGUIDE_NATIVE_MATCHER_SUBTREE_MEMO_H_
#define JAXGUIDE_NATIVE_MATCHER_SUBTREE_MEMO_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace jaxguide {

class SubtreeMemo {
 public:
  static constexpr size_t kMaxEntries = 2048;
  static constexpr size_t kMaxBytes = size_t{256} << 10;
  static constexpr uint64_t kCaptureRatio = 2;

  struct Key {
    uint32_t node;   // trie node
    uint32_t set;    // the thread's Earley set
    uint32_t lexer;  // the thread's lexer state
    uint8_t trie;    // which trie `node` indexes (CompiledGrammar::TrieOf)
    bool operator==(const Key& o) const {
      return node == o.node && set == o.set && lexer == o.lexer && trie == o.trie;
    }
  };
  enum class Visit {
    kWalk,     // first visit (now marked seen): walk as usual
    kCapture,  // second visit: walk, then Store the answer
    kHit,      // the answer is stored: *answer
  };
  // The tokens allowed below the key's node (n), in one of two forms.
  struct Answer {
    enum class Form : uint8_t {
      kNodeBits,  // data: bit k = node n + 1 + k's token, duplicates included
      kRowWords,  // data: (word index << 32) | word, the nonzero words of the tokens' row
    };
    Form form = Form::kNodeBits;
    std::vector<uint64_t> data;
  };

  SubtreeMemo() = default;
  SubtreeMemo(const SubtreeMemo&) {}
  SubtreeMemo& operator=(const SubtreeMemo&) {
    Clear();
    return *this;
  }

  // What to do at `key`, below a node of `subtree_size` nodes (see Visit and the policy); on
  // kHit, *answer is the stored answer (valid until the next non-const call).
  Visit Find(const Key& key, size_t subtree_size, const Answer** answer);
  // Records the lexer steps that the first visit's walk of `key` took (after a kWalk).
  void NoteWalk(const Key& key, uint64_t steps);
  // Stores the answer of `key`, unless past kMaxBytes (8 bytes per element of its data).
  void Store(const Key& key, Answer answer);
  // Forgets every key whose set is >= num_sets. O(entries) when some may be; O(1) otherwise.
  void DropSetsFrom(uint32_t num_sets);
  void Clear();
  size_t size() const { return entries_.size(); }

 private:
  // Forgets the stored answers (not the keys) on sets < `set`.
  void DropAnswersBefore(uint32_t set);

  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = (uint64_t{k.node} << 8 | k.trie) * 0x9E3779B97F4A7C15ull;
      h ^= (uint64_t{k.set} << 32 | k.lexer) * 0xC2B2AE3D27D4EB4Full;
      return static_cast<size_t>(h ^ (h >> 31));
    }
  };
  struct Entry {
    uint64_t walk_steps = 0;
    bool captured = false;
    Answer answer;
  };
  std::unordered_map<Key, Entry, KeyHash> entries_;
  size_t bytes_ = 0;
  uint32_t max_set_ = 0;  // no key has a larger set
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_SUBTREE_MEMO_H_
