// CodePointDfa: the DFA over code points of an anchor-free regex (or of its star), and
// CodePointAutomaton, the explicit automaton the NFA compiler turns into instructions (design
// note in code_point_dfa.cc). Used by the two lookahead forms the lexer rewrites: "X* minus
// literal words" (except_words.h) and regex products (regex_product.h).
//
// Contract: CodePointDfa(node, star, limits, what, offset) builds the DFA of node (of node* when
// `star`) by subset construction; dead states are pruned, so live(s) is exact; state 0 is the
// start. It throws RegexError at `offset` naming `what` when node holds an anchor or a
// lookahead, or when its NFA or DFA would exceed the limits. Work: O(DFA states x elementary
// intervals x NFA states), bounded by the limits.
#ifndef JAXGUIDE_NATIVE_LEXER_CODE_POINT_DFA_H_
#define JAXGUIDE_NATIVE_LEXER_CODE_POINT_DFA_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "native/lexer/code_point_set.h"
#include "native/lexer/regex_ast.h"

namespace jaxguide {

// An explicit automaton over code points; state 0 is the start; every transition set is
// non-empty and the sets of one state are disjoint.
struct CodePointAutomaton {
  struct Transition {
    CodePointSet set;
    uint32_t target;
  };
  struct State {
    bool accept = false;
    std::vector<Transition> transitions;
  };
  std::vector<State> states;
};

// Marks in `live` every state from which a marked one is reachable: a search backwards from
// the states `live` marks on entry; sources[t] lists the states with an edge to t.
// O(states + edges).
inline void MarkReachingStates(const std::vector<std::vector<uint32_t>>& sources,
                               std::vector<uint8_t>* live) {
  std::vector<uint32_t> stack;
  for (size_t s = 0; s < live->size(); ++s) {
    if ((*live)[s]) stack.push_back(static_cast<uint32_t>(s));
  }
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t from : sources[s]) {
      if (!(*live)[from]) {
        (*live)[from] = 1;
        stack.push_back(from);
      }
    }
  }
}

// live[s] != 0 iff some accepting state is reachable from state s. `states[s].accept` is a
// bool, `states[s].transitions` pairs (set, target). O(states + transitions).
template <typename States>
std::vector<uint8_t> StatesReachingAccept(const States& states) {
  std::vector<std::vector<uint32_t>> sources(states.size());
  std::vector<uint8_t> live(states.size(), 0);
  for (size_t s = 0; s < states.size(); ++s) {
    for (const auto& t : states[s].transitions) {
      sources[static_cast<size_t>(t.second)].push_back(static_cast<uint32_t>(s));
    }
    live[s] = states[s].accept ? 1 : 0;
  }
  MarkReachingStates(sources, &live);
  return live;
}

class CodePointDfa {
 public:
  static constexpr int kDead = -1;
  struct Limits {
    size_t max_nfa_states;
    size_t max_dfa_states;
  };

  CodePointDfa(const RegexNode& node, bool star, Limits limits, std::string what,
               size_t offset);

  size_t size() const { return states_.size(); }
  bool accept(int state) const { return states_[state].accept; }
  bool live(int state) const { return state != kDead && live_[state]; }
  // Transitions to live states only, with disjoint sets.
  const std::vector<std::pair<CodePointSet, int>>& transitions(int state) const {
    return states_[state].transitions;
  }
  int Next(int state, uint32_t code_point) const;

 private:
  class Nfa;
  struct State {
    std::vector<uint32_t> threads;  // NFA states with a consuming edge, sorted
    bool accept = false;
    std::vector<std::pair<CodePointSet, int>> transitions;  // live targets only, after pruning
  };

  void CollectIntervals(const Nfa& nfa);
  void Closure(const Nfa& nfa, std::vector<uint32_t> stack, std::vector<uint32_t>* threads,
               bool* accept);
  int Intern(std::vector<uint32_t> threads, bool accept);
  void Expand(const Nfa& nfa, size_t s);
  void PruneDead();

  Limits limits_;
  std::string what_;
  size_t offset_;
  std::vector<uint32_t> interval_starts_;
  std::vector<std::vector<uint8_t>> covers_;
  std::vector<uint32_t> seen_;
  uint32_t generation_ = 0;
  std::vector<State> states_;
  std::map<std::pair<std::vector<uint32_t>, bool>, int> index_;
  std::vector<uint8_t> live_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_CODE_POINT_DFA_H_
