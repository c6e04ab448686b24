// BuildProduct construction.
//
// Design note. Each part (the base B and every condition) becomes a DFA over code points
// (code_point_dfa.h), with its dead states pruned. The product is explored breadth-first from
// the tuple of start states over the elementary intervals of all parts' transition sets (one
// code point per interval decides every part's step). A tuple is dead at once when the base or
// a positive part is dead; a negative part that is dead stays in the tuple as "cannot match
// any more" (the tuple may still accept). A tuple accepts when the base and every positive
// part accept and no negative part does. Tuples from which no accepting tuple is reachable
// are then dropped (a backward search), so every state of the result is live: the lexer's
// dead state stays exact. States are renumbered in discovery order, the start first.
//
// Counted parts. A length bound is a part `X{m,n}` (the JSON Schema compiler's minLength /
// maxLength over its string unit), whose DFA by subset construction has about n copies of X's
// states, most of them (escapes, non-ASCII) never paired with a state of a restrictive base:
// 16 ms for n = 255. When X is a prefix code (no string of X is a proper prefix of another:
// X's DFA has no transition out of an accepting state, none into its start, and its start does
// not accept), a string of X* splits into units one way only, so the part's state is (k, q):
// k units read (capped at m when n is unbounded), q the DFA state inside the next unit. Its
// transitions are X's DFA's, relabelled, produced when the product reaches the state: only the
// pairs the product meets are ever made. Same language, as exact (every (k, q) made is live).
#include "native/lexer/regex_product.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native/lexer/regex_error.h"

namespace jaxguide {
namespace {

constexpr int kDead = CodePointDfa::kDead;

struct TupleHash {
  size_t operator()(const std::vector<int>& tuple) const {
    size_t h = 1469598103934665603ull;
    for (int v : tuple) h = (h ^ static_cast<size_t>(static_cast<uint32_t>(v))) * 1099511628211ull;
    return h;
  }
};

// X{m,n} (through single-child groups), or null.
const RegexNode* CountedRepeat(const RegexNode& node) {
  const RegexNode* at = &node;
  while (at->kind == RegexNode::Kind::kConcat && at->children.size() == 1) at = &at->children[0];
  return at->kind == RegexNode::Kind::kRepeat && at->min <= at->max ? at : nullptr;
}

// Whether a unit DFA is a prefix code's (see the design note): its start is live and does not
// accept, no transition enters the start, and an accepting state has no transition.
bool IsPrefixCode(const CodePointDfa& unit) {
  if (!unit.live(0) || unit.accept(0)) return false;
  for (size_t s = 0; s < unit.size(); ++s) {
    const auto& transitions = unit.transitions(static_cast<int>(s));
    if (unit.accept(static_cast<int>(s)) && !transitions.empty()) return false;
    for (const auto& [set, target] : transitions) {
      if (target == 0) return false;
    }
  }
  return true;
}

// One part of the product: a CodePointDfa, or a counted part (design note) over the DFA of its
// unit. States are ints, kDead for none; 0 is the start.
class ProductPart {
 public:
  ProductPart(const RegexNode& node, const std::string& what, size_t offset) {
    const CodePointDfa::Limits limits{kMaxProductPartNfaStates, kMaxProductPartDfaStates};
    if (const RegexNode* repeat = CountedRepeat(node)) {
      auto unit = std::make_unique<CodePointDfa>(repeat->children[0], false, limits, what, offset);
      const uint64_t top = repeat->max == RegexNode::kUnbounded ? repeat->min : repeat->max;
      if (IsPrefixCode(*unit) && (top + 1) * unit->size() <= kMaxCountedStateId) {
        min_ = repeat->min;
        max_ = repeat->max;
        unit_size_ = static_cast<int>(unit->size());
        dfa_ = std::move(unit);
        return;
      }
    }
    dfa_ = std::make_unique<CodePointDfa>(node, false, limits, what, offset);
  }

  bool live(int state) const { return counted() ? state != kDead : dfa_->live(state); }
  bool accept(int state) const {
    if (!counted()) return dfa_->accept(state);
    return state % unit_size_ == 0 && static_cast<uint32_t>(state / unit_size_) >= min_;
  }
  int Next(int state, uint32_t code_point) const {
    if (!counted()) return dfa_->Next(state, code_point);
    return Relabel(state, dfa_->Next(state % unit_size_, code_point));
  }
  // f(set, target) for each transition of `state` (disjoint sets, live targets).
  template <typename F>
  void ForEachTransition(int state, F&& f) const {
    const int q = counted() ? state % unit_size_ : state;
    for (const auto& [set, target] : dfa_->transitions(q)) {
      const int next = counted() ? Relabel(state, target) : target;
      if (next != kDead) f(set, next);
    }
  }
  // The ends of every transition set (interval bounds).
  void AppendBounds(std::vector<uint32_t>* bounds) const {
    for (size_t s = 0; s < dfa_->size(); ++s) {
      for (const auto& [set, target] : dfa_->transitions(static_cast<int>(s))) {
        for (const CodePointRange& r : set.ranges()) {
          bounds->push_back(r.lo);
          bounds->push_back(r.hi + 1);
        }
      }
    }
  }

 private:
  // Bounds the counted ids k * |unit| + q (k <= max(m, n)) well inside an int.
  static constexpr uint64_t kMaxCountedStateId = uint64_t{1} << 30;

  bool counted() const { return unit_size_ > 0; }
  // The counted state after `state` (k units, inside the unit at q) steps to unit state q2:
  // a finished unit starts the next (k + 1, capped at m when unbounded), if n allows; an
  // unfinished one needs k < n, or it could never finish.
  int Relabel(int state, int q2) const {
    if (q2 == kDead) return kDead;
    uint64_t k = static_cast<uint32_t>(state / unit_size_);
    if (dfa_->accept(q2)) {
      ++k;
      if (max_ == RegexNode::kUnbounded) {
        k = std::min<uint64_t>(k, min_);
      } else if (k > max_) {
        return kDead;
      }
      return static_cast<int>(k * unit_size_);
    }
    if (max_ != RegexNode::kUnbounded && k >= max_) return kDead;
    return static_cast<int>(k * unit_size_ + q2);
  }

  std::unique_ptr<const CodePointDfa> dfa_;  // the part's, or its unit's when counted
  int unit_size_ = 0;  // counted: the unit DFA's states; 0: not counted
  uint32_t min_ = 0;
  uint32_t max_ = 0;
};

class ProductBuilder {
 public:
  explicit ProductBuilder(const RegexNode& node)
      : offset_(node.offset), stop_(node.product->stop) {
    const std::vector<bool>& positive = node.product->positive;
    for (size_t i = 0; i < node.children.size(); ++i) {
      const std::string what = i == 0 ? "the regex a lookahead restricts" : "a lookahead's regex";
      parts_.emplace_back(node.children[i], what, offset_);
      required_.push_back(i == 0 || positive[i - 1]);
    }
    CollectIntervals();
  }

  CodePointAutomaton Build() {
    std::vector<int> start;
    for (const ProductPart& part : parts_) start.push_back(part.live(0) ? 0 : kDead);
    if (Intern(start) == kDead) return Empty();
    for (size_t s = 0; s < tuples_.size(); ++s) Expand(s);
    return Pruned();
  }

 private:
  struct State {
    bool accept = false;
    std::vector<std::pair<CodePointSet, int>> transitions;
  };

  static CodePointAutomaton Empty() {
    CodePointAutomaton out;
    out.states.emplace_back();
    return out;
  }

  void CollectIntervals() {
    std::vector<uint32_t> bounds = {0, CodePointSet::kMaxCodePoint + 1};
    for (const ProductPart& part : parts_) part.AppendBounds(&bounds);
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    starts_ = std::move(bounds);
  }

  // A tuple of at most two states as one integer (kDead is -1: every state fits 32 bits).
  static uint64_t Pack(const std::vector<int>& tuple) {
    uint64_t key = 0;
    for (int v : tuple) key = (key << 32) | static_cast<uint32_t>(v);
    return key;
  }

  int Intern(const std::vector<int>& tuple) {
    bool accept = true;
    for (size_t i = 0; i < tuple.size(); ++i) {
      if (required_[i] && tuple[i] == kDead) return kDead;
      const bool part_accepts = tuple[i] != kDead && parts_[i].accept(tuple[i]);
      if (part_accepts != required_[i]) accept = false;
    }
    const bool packed = tuple.size() <= 2;  // the common product: a base and one condition
    const uint64_t key = packed ? Pack(tuple) : 0;
    if (packed) {
      auto found = packed_index_.find(key);
      if (found != packed_index_.end()) return found->second;
    } else {
      auto found = index_.find(tuple);
      if (found != index_.end()) return found->second;
    }
    if (tuples_.size() >= kMaxProductStates) {
      throw RegexError("a lookahead product needs more than " +
                           std::to_string(kMaxProductStates) + " states",
                       offset_);
    }
    const int id = static_cast<int>(tuples_.size());
    if (packed) {
      packed_index_.emplace(key, id);
    } else {
      index_.emplace(tuple, id);
    }
    tuples_.push_back(tuple);
    states_.push_back({accept, {}});
    return id;
  }

  // Every part's step on every interval, then the intervals grouped by the tuple they lead to,
  // the groups in tuple order (as a map by tuple would list them). A state has few targets and
  // adjacent intervals mostly share one: a list searched from the last group hit.
  void Expand(size_t s) {
    const size_t intervals = starts_.size() - 1;
    next_.resize(parts_.size());
    for (size_t i = 0; i < parts_.size(); ++i) {
      std::vector<int>& next = next_[i];
      next.assign(intervals, kDead);
      const int state = tuples_[s][i];
      if (state == kDead) continue;
      parts_[i].ForEachTransition(state, [&](const CodePointSet& set, int target) {
        for (const CodePointRange& r : set.ranges()) {
          auto k = std::lower_bound(starts_.begin(), starts_.end(), r.lo) - starts_.begin();
          for (; starts_[k] <= r.hi; ++k) next[k] = target;
        }
      });
    }
    std::vector<std::pair<std::vector<int>, CodePointSet>> groups;
    std::vector<int> tuple(parts_.size());
    size_t hit = 0;
    for (size_t k = 0; k < intervals; ++k) {
      bool dead = false;
      for (size_t i = 0; i < parts_.size() && !dead; ++i) {
        tuple[i] = next_[i][k];
        dead = required_[i] && tuple[i] == kDead;
      }
      if (dead) continue;
      if (hit >= groups.size() || groups[hit].first != tuple) {
        hit = 0;
        while (hit < groups.size() && groups[hit].first != tuple) ++hit;
        if (hit == groups.size()) groups.emplace_back(tuple, CodePointSet());
      }
      groups[hit].second.AddRange(starts_[k], starts_[k + 1] - 1);
    }
    std::sort(groups.begin(), groups.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [target_tuple, set] : groups) {
      const int target = Intern(target_tuple);
      if (target != kDead) states_[s].transitions.emplace_back(std::move(set), target);
    }
  }

  // Only the states from which an accepting one is reachable, renumbered in order.
  CodePointAutomaton Pruned() const {
    const std::vector<uint8_t> live = StatesReachingAccept(states_);
    if (!live[0]) return Empty();
    for (size_t s = 0; s < states_.size(); ++s) {
      if (live[s]) CheckStop(tuples_[s]);
    }
    std::vector<uint32_t> id(states_.size(), 0);
    uint32_t next_id = 0;
    for (size_t s = 0; s < states_.size(); ++s) {
      if (live[s]) id[s] = next_id++;
    }
    CodePointAutomaton out;
    out.states.resize(next_id);
    for (size_t s = 0; s < states_.size(); ++s) {
      if (!live[s]) continue;
      CodePointAutomaton::State& state = out.states[id[s]];
      state.accept = states_[s].accept;
      for (const auto& [set, target] : states_[s].transitions) {
        if (live[target]) state.transitions.push_back({set, id[target]});
      }
    }
    return out;
  }

  // The rewrite is exact iff a lookahead's match `(?:A)T` can only end at the T after B: where
  // a condition accepts, B cannot read T; where B accepts, no condition can read T.
  void CheckStop(const std::vector<int>& tuple) const {
    auto reads_stop = [&](size_t i) {
      return tuple[i] != kDead && parts_[i].live(parts_[i].Next(tuple[i], stop_));
    };
    const bool base_accepts = parts_[0].accept(tuple[0]);
    const bool base_reads_stop = reads_stop(0);
    for (size_t i = 1; i < parts_.size(); ++i) {
      const bool accepts = tuple[i] != kDead && parts_[i].accept(tuple[i]);
      if ((accepts && base_reads_stop) || (base_accepts && reads_stop(i))) {
        throw RegexError("a lookahead's match could end at a T other than the one after the "
                         "group it restricts, so it cannot be rewritten exactly",
                         offset_);
      }
    }
  }

  size_t offset_;
  uint32_t stop_;
  std::vector<ProductPart> parts_;
  std::vector<bool> required_;  // the base and the positive conditions
  std::vector<uint32_t> starts_;  // elementary intervals: [starts_[k], starts_[k + 1])
  std::vector<std::vector<int>> tuples_;
  std::vector<std::vector<int>> next_;  // Expand's steps, [part][interval] (kept: no allocation)
  std::vector<State> states_;
  std::unordered_map<std::vector<int>, int, TupleHash> index_;  // tuples of 3 or more states
  std::unordered_map<uint64_t, int> packed_index_;                // of 1 or 2 (Pack)
};

}  // namespace

CodePointAutomaton BuildProduct(const RegexNode& node) {
  return ProductBuilder(node).Build();
}

}  // namespace jaxguide
