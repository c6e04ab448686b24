// CodePointDfa construction.
//
// Design note. The lexer's DFA (lexer_dfa.h) reads bytes and is built lazily, one state at a
// time, from the NFA of all terminals. A lookahead that restricts a terminal (a word it must
// not be, a second regex it must also match) has no Thompson construction; it is rewritten by
// building the code-point automata of the regexes involved eagerly here, combining them
// (except_words.cc, regex_product.cc) and handing the result back to the NFA compiler as an
// explicit automaton (CodePointAutomaton), which it emits as ordinary instructions.
//
// 1. A Thompson NFA of the node (or of node*) over code point sets: state i has epsilon edges
//    and at most one consuming edge. Anchors and lookaheads are refused.
// 2. Subset construction over the elementary intervals of the classes' boundaries (every class
//    is a union of intervals, so one code point per interval decides a step). Intervals with
//    the same seeds share one closure.
// 3. States without a path to acceptance are dropped, so a state is live iff some
//    continuation is accepted: the property the lexer's exact dead state relies on.
#include "native/lexer/code_point_dfa.h"

#include <algorithm>
#include <string>
#include <utility>

#include "native/lexer/regex_error.h"

namespace jaxguide {

class CodePointDfa::Nfa {
 public:
  struct State {
    std::vector<uint32_t> epsilon;
    int cls = -1;  // index into sets(), or -1
    uint32_t out = 0;
  };

  Nfa(const RegexNode& node, bool star, size_t max_states, const std::string& what,
      size_t offset)
      : max_states_(max_states), what_(what), offset_(offset) {
    const uint32_t start = New();
    const uint32_t accept = New();
    const auto [in, out] = Build(node);
    Edge(start, in);
    if (star) {
      Edge(out, start);  // X* : back to the start after each X
      Edge(start, accept);
    } else {
      Edge(out, accept);
    }
    start_ = start;
    accept_ = accept;
  }

  uint32_t start() const { return start_; }
  uint32_t accept() const { return accept_; }
  const std::vector<State>& states() const { return states_; }
  const std::vector<CodePointSet>& sets() const { return sets_; }

 private:
  uint32_t New() {
    if (states_.size() >= max_states_) {
      throw RegexError(what_ + " is too large (more than " + std::to_string(max_states_) +
                           " NFA states)",
                       offset_);
    }
    states_.emplace_back();
    return static_cast<uint32_t>(states_.size() - 1);
  }
  void Edge(uint32_t from, uint32_t to) { states_[from].epsilon.push_back(to); }

  // (entry, exit) of a fragment.
  std::pair<uint32_t, uint32_t> Build(const RegexNode& node) {
    switch (node.kind) {
      case RegexNode::Kind::kEmpty: {
        const uint32_t s = New();
        return {s, s};
      }
      case RegexNode::Kind::kClass: {
        const uint32_t in = New();
        const uint32_t out = New();
        states_[in].cls = static_cast<int>(sets_.size());
        states_[in].out = out;
        sets_.push_back(node.set);
        return {in, out};
      }
      case RegexNode::Kind::kConcat: {
        if (node.children.empty()) return Build(RegexNode::Empty());
        auto [in, out] = Build(node.children[0]);
        for (size_t i = 1; i < node.children.size(); ++i) {
          const auto [next_in, next_out] = Build(node.children[i]);
          Edge(out, next_in);
          out = next_out;
        }
        return {in, out};
      }
      case RegexNode::Kind::kAlternate: {
        const uint32_t in = New();
        const uint32_t out = New();
        for (const RegexNode& child : node.children) {
          const auto [c_in, c_out] = Build(child);
          Edge(in, c_in);
          Edge(c_out, out);
        }
        return {in, out};
      }
      case RegexNode::Kind::kRepeat:
        return BuildRepeat(node);
      case RegexNode::Kind::kAssertBegin:
      case RegexNode::Kind::kAssertEnd:
        throw RegexError("anchors are not supported in " + what_, offset_);
      default:
        break;
    }
    throw RegexError("lookahead assertions are not supported inside " + what_, offset_);
  }

  std::pair<uint32_t, uint32_t> BuildRepeat(const RegexNode& node) {
    uint32_t in = New();
    uint32_t out = in;
    for (uint32_t i = 0; i < node.min; ++i) {
      const auto [c_in, c_out] = Build(node.children[0]);
      Edge(out, c_in);
      out = c_out;
    }
    if (node.max == RegexNode::kUnbounded) {
      const auto [c_in, c_out] = Build(node.children[0]);
      Edge(out, c_in);
      Edge(c_out, out);
      return {in, out};
    }
    const uint32_t end = New();
    for (uint32_t i = node.min; i < node.max; ++i) {
      Edge(out, end);
      const auto [c_in, c_out] = Build(node.children[0]);
      Edge(out, c_in);
      out = c_out;
    }
    Edge(out, end);
    return {in, end};
  }

  size_t max_states_;
  const std::string& what_;
  size_t offset_;
  std::vector<State> states_;
  std::vector<CodePointSet> sets_;
  uint32_t start_ = 0;
  uint32_t accept_ = 0;
};

CodePointDfa::CodePointDfa(const RegexNode& node, bool star, Limits limits, std::string what,
                           size_t offset)
    : limits_(limits), what_(std::move(what)), offset_(offset) {
  const Nfa nfa(node, star, limits_.max_nfa_states, what_, offset_);
  CollectIntervals(nfa);
  seen_.assign(nfa.states().size(), 0);
  std::vector<uint32_t> start;
  bool accept = false;
  Closure(nfa, {nfa.start()}, &start, &accept);
  if (Intern(std::move(start), accept) == kDead) {
    states_.push_back({{}, false, {}});  // matches nothing: a start state that is not live
  }
  for (size_t s = 0; s < states_.size(); ++s) Expand(nfa, s);
  PruneDead();
}

int CodePointDfa::Next(int state, uint32_t code_point) const {
  for (const auto& [set, next] : states_[state].transitions) {
    if (set.Contains(code_point)) return next;
  }
  return kDead;
}

// interval_starts_[k]..interval_starts_[k + 1] - 1 is interval k; covers_[c][k]: class c holds
// interval k.
void CodePointDfa::CollectIntervals(const Nfa& nfa) {
  std::vector<uint32_t> bounds = {0, CodePointSet::kMaxCodePoint + 1};
  for (const CodePointSet& set : nfa.sets()) {
    for (const CodePointRange& r : set.ranges()) {
      bounds.push_back(r.lo);
      bounds.push_back(r.hi + 1);
    }
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  interval_starts_ = std::move(bounds);
  const size_t intervals = interval_starts_.size() - 1;
  covers_.assign(nfa.sets().size(), std::vector<uint8_t>(intervals, 0));
  for (size_t c = 0; c < nfa.sets().size(); ++c) {
    for (size_t k = 0; k < intervals; ++k) {
      covers_[c][k] = nfa.sets()[c].Contains(interval_starts_[k]);
    }
  }
}

void CodePointDfa::Closure(const Nfa& nfa, std::vector<uint32_t> stack,
                           std::vector<uint32_t>* threads, bool* accept) {
  ++generation_;
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    if (seen_[i] == generation_) continue;
    seen_[i] = generation_;
    const Nfa::State& state = nfa.states()[i];
    if (state.cls >= 0) threads->push_back(i);
    if (i == nfa.accept()) *accept = true;
    stack.insert(stack.end(), state.epsilon.begin(), state.epsilon.end());
  }
  std::sort(threads->begin(), threads->end());
}

int CodePointDfa::Intern(std::vector<uint32_t> threads, bool accept) {
  if (threads.empty() && !accept) return kDead;
  auto key = std::make_pair(threads, accept);
  auto found = index_.find(key);
  if (found != index_.end()) return found->second;
  if (states_.size() >= limits_.max_dfa_states) {
    throw RegexError(what_ + " needs more than " + std::to_string(limits_.max_dfa_states) +
                         " DFA states",
                     offset_);
  }
  const int id = static_cast<int>(states_.size());
  index_.emplace(std::move(key), id);
  states_.push_back({std::move(threads), accept, {}});
  return id;
}

void CodePointDfa::Expand(const Nfa& nfa, size_t s) {
  std::map<int, CodePointSet> by_target;
  std::map<std::vector<uint32_t>, int> target_of_seeds;
  std::vector<uint32_t> seeds;
  for (size_t k = 0; k + 1 < interval_starts_.size(); ++k) {
    seeds.clear();
    for (uint32_t i : states_[s].threads) {
      const Nfa::State& state = nfa.states()[i];
      if (covers_[state.cls][k]) seeds.push_back(state.out);
    }
    if (seeds.empty()) continue;
    auto [found, inserted] = target_of_seeds.emplace(seeds, kDead);
    if (inserted) {
      std::vector<uint32_t> threads;
      bool accept = false;
      Closure(nfa, seeds, &threads, &accept);
      found->second = Intern(std::move(threads), accept);
    }
    const int target = found->second;
    if (target != kDead) {
      by_target[target].AddRange(interval_starts_[k], interval_starts_[k + 1] - 1);
    }
  }
  for (auto& [target, set] : by_target) {
    states_[s].transitions.emplace_back(std::move(set), target);
  }
}

// Transitions into states from which acceptance is unreachable go (StatesReachingAccept).
void CodePointDfa::PruneDead() {
  live_ = StatesReachingAccept(states_);
  for (State& state : states_) {
    auto& ts = state.transitions;
    auto dead = [&](const auto& t) { return !live_[t.second]; };
    ts.erase(std::remove_if(ts.begin(), ts.end(), dead), ts.end());
  }
}

}  // namespace jaxguide
