// SubtreeMemo (contract in subtree_memo.h): a hash map from (trie node, thread) to a seen mark
// or an answer (node-order bitset or row words), with an entry bound, a byte bound and a drop
// by Earley set.
#include "native/matcher/subtree_memo.h"

#include <algorithm>
#include <utility>

namespace jaxguide {

SubtreeMemo::Visit SubtreeMemo::Find(const Key& key, size_t subtree_size,
                                     const Answer** answer) {
  auto found = entries_.find(key);
  if (found != entries_.end()) {
    const Entry& entry = found->second;
    if (entry.captured) {
      *answer = &entry.answer;
      return Visit::kHit;
    }
    const bool worth_it = entry.walk_steps * kCaptureRatio >= subtree_size;
    return worth_it && bytes_ < kMaxBytes ? Visit::kCapture : Visit::kWalk;
  }
  if (entries_.size() >= kMaxEntries) Clear();
  entries_.emplace(key, Entry{});
  max_set_ = std::max(max_set_, key.set);
  return Visit::kWalk;
}

void SubtreeMemo::NoteWalk(const Key& key, uint64_t steps) {
  auto found = entries_.find(key);
  if (found != entries_.end()) found->second.walk_steps = steps;
}

void SubtreeMemo::Store(const Key& key, Answer answer) {
  const size_t size = answer.data.size() * sizeof(uint64_t);
  if (bytes_ + size > kMaxBytes) DropAnswersBefore(key.set);  // older sets: least likely used
  auto found = entries_.find(key);
  if (found == entries_.end()) return;  // dropped meanwhile
  if (bytes_ + size > kMaxBytes) {
    found->second.walk_steps = 0;  // not worth trying again
    return;
  }
  bytes_ += size;
  found->second.captured = true;
  found->second.answer = std::move(answer);
}

void SubtreeMemo::DropSetsFrom(uint32_t num_sets) {
  if (entries_.empty() || num_sets > max_set_) return;
  uint32_t max_set = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.set >= num_sets) {
      bytes_ -= it->second.answer.data.size() * sizeof(uint64_t);
      it = entries_.erase(it);
    } else {
      max_set = std::max(max_set, it->first.set);
      ++it;
    }
  }
  max_set_ = max_set;
}

void SubtreeMemo::DropAnswersBefore(uint32_t set) {
  for (auto& [key, entry] : entries_) {
    if (key.set >= set || !entry.captured) continue;
    bytes_ -= entry.answer.data.size() * sizeof(uint64_t);
    entry = Entry{};
  }
}

void SubtreeMemo::Clear() {
  entries_.clear();
  bytes_ = 0;
  max_set_ = 0;
}

}  // namespace jaxguide
