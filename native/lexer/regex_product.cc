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
#include "native/lexer/regex_product.h"

#include <algorithm>
#include <map>
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

class ProductBuilder {
 public:
  explicit ProductBuilder(const RegexNode& node)
      : offset_(node.offset), stop_(node.product->stop) {
    const std::vector<bool>& positive = node.product->positive;
    for (size_t i = 0; i < node.children.size(); ++i) {
      const std::string what = i == 0 ? "the regex a lookahead restricts" : "a lookahead's regex";
      parts_.emplace_back(node.children[i], false,
                          CodePointDfa::Limits{kMaxProductPartNfaStates, kMaxProductPartDfaStates},
                          what, offset_);
      required_.push_back(i == 0 || positive[i - 1]);
    }
    CollectIntervals();
  }

  CodePointAutomaton Build() {
    std::vector<int> start;
    for (const CodePointDfa& part : parts_) start.push_back(part.live(0) ? 0 : kDead);
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
    for (const CodePointDfa& part : parts_) {
      for (size_t s = 0; s < part.size(); ++s) {
        for (const auto& [set, target] : part.transitions(static_cast<int>(s))) {
          for (const CodePointRange& r : set.ranges()) {
            bounds.push_back(r.lo);
            bounds.push_back(r.hi + 1);
          }
        }
      }
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    starts_ = std::move(bounds);
  }

  int Intern(const std::vector<int>& tuple) {
    bool accept = true;
    for (size_t i = 0; i < tuple.size(); ++i) {
      if (required_[i] && tuple[i] == kDead) return kDead;
      const bool part_accepts = tuple[i] != kDead && parts_[i].accept(tuple[i]);
      if (part_accepts != required_[i]) accept = false;
    }
    auto found = index_.find(tuple);
    if (found != index_.end()) return found->second;
    if (tuples_.size() >= kMaxProductStates) {
      throw RegexError("a lookahead product needs more than " +
                           std::to_string(kMaxProductStates) + " states",
                       offset_);
    }
    const int id = static_cast<int>(tuples_.size());
    index_.emplace(tuple, id);
    tuples_.push_back(tuple);
    states_.push_back({accept, {}});
    return id;
  }

  // Every part's step on every interval, then the intervals grouped by the tuple they lead to.
  void Expand(size_t s) {
    const size_t intervals = starts_.size() - 1;
    std::vector<std::vector<int>> next(parts_.size(), std::vector<int>(intervals, kDead));
    for (size_t i = 0; i < parts_.size(); ++i) {
      const int state = tuples_[s][i];
      if (state == kDead) continue;
      for (const auto& [set, target] : parts_[i].transitions(state)) {
        for (const CodePointRange& r : set.ranges()) {
          auto k = std::lower_bound(starts_.begin(), starts_.end(), r.lo) - starts_.begin();
          for (; starts_[k] <= r.hi; ++k) next[i][k] = target;
        }
      }
    }
    std::map<std::vector<int>, CodePointSet> by_tuple;
    std::vector<int> tuple(parts_.size());
    for (size_t k = 0; k < intervals; ++k) {
      bool dead = false;
      for (size_t i = 0; i < parts_.size() && !dead; ++i) {
        tuple[i] = next[i][k];
        dead = required_[i] && tuple[i] == kDead;
      }
      if (!dead) by_tuple[tuple].AddRange(starts_[k], starts_[k + 1] - 1);
    }
    for (auto& [target_tuple, set] : by_tuple) {
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
  std::vector<CodePointDfa> parts_;
  std::vector<bool> required_;  // the base and the positive conditions
  std::vector<uint32_t> starts_;  // elementary intervals: [starts_[k], starts_[k + 1])
  std::vector<std::vector<int>> tuples_;
  std::vector<State> states_;
  std::unordered_map<std::vector<int>, int, TupleHash> index_;
};

}  // namespace

CodePointAutomaton BuildProduct(const RegexNode& node) {
  return ProductBuilder(node).Build();
}

}  // namespace jaxguide
