// WordsComplement construction.
//
// Design note. "Any JSON string except the declared property names" used to reach the lexer as
// a regex that spells the complement out: a trie of the names whose every diverging branch ends
// in (unit)*. For a few hundred names that regex is tens of kilobytes, and writing it (Python),
// parsing it and compiling it to an NFA was most of a typical schema's compile time. The regex
// now says it with a negative lookahead, `"(?!(?:a|b)")(?:unit)*"`, which Python's `re` reads
// with the same meaning, and this file builds the automaton directly:
//
// 1. A DFA of X* over code points: Thompson NFA of X* (class instructions, no anchors), subset
//    construction over the elementary intervals of its classes' boundaries (every class is a
//    union of intervals, so one code point per interval decides the step). States without a
//    path to acceptance are dropped (dead).
// 2. The product with the trie of the words. Every trie node is reached by one string, so it
//    pairs with one DFA state: the node's state is the DFA state after its string. From a node,
//    a code point that continues some word goes to that child; any other code point leaves
//    the trie for good (the text is then none of the words) and goes to a plain copy of the
//    DFA. A node accepts iff its DFA state accepts and no word ends there; a DFA copy accepts
//    iff its DFA state does.
//
// Exactness of the lookahead rewrite, for x in X* followed by T: "x T ... starts with w T" iff
// x = w, provided T does not occur in w (else x T could be a proper prefix of w T) and w T is
// not a prefix of any string of X* (else a longer x could start with w T). The first is checked
// by the parser, the second here on the DFA: from w's state, reading T must lead nowhere live.
#include "native/lexer/except_words.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "native/lexer/regex_error.h"
#include "native/support/fork_locks.h"

namespace jaxguide {
namespace {

constexpr int kDead = -1;

// A Thompson NFA of X* over code point sets, without Utf8Class automata (only the DFA below
// reads it): state i has epsilon edges and at most one consuming edge.
class UnitNfa {
 public:
  struct State {
    std::vector<uint32_t> epsilon;
    int cls = -1;  // index into sets(), or -1
    uint32_t out = 0;
  };

  UnitNfa(const RegexNode& unit, size_t offset) : offset_(offset) {
    const uint32_t start = New();
    const uint32_t accept = New();
    const auto [in, out] = Build(unit);
    Edge(start, in);
    Edge(out, start);  // X* : back to the start after each X
    Edge(start, accept);
    start_ = start;
    accept_ = accept;
  }

  uint32_t start() const { return start_; }
  uint32_t accept() const { return accept_; }
  const std::vector<State>& states() const { return states_; }
  const std::vector<CodePointSet>& sets() const { return sets_; }

 private:
  uint32_t New() {
    if (states_.size() >= kMaxUnitNfaStates) {
      throw RegexError("the repeated group after a lookahead is too large (more than " +
                           std::to_string(kMaxUnitNfaStates) + " NFA states)",
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
      case RegexNode::Kind::kRepeat: {
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
      case RegexNode::Kind::kAssertBegin:
      case RegexNode::Kind::kAssertEnd:
        throw RegexError("anchors are not supported in the repeated group after a lookahead",
                         offset_);
      case RegexNode::Kind::kExceptWords:
      case RegexNode::Kind::kNegativeLookahead:
        break;
    }
    throw RegexError("lookahead assertions are not supported inside a lookahead's repeated "
                     "group", offset_);
  }

  size_t offset_;
  std::vector<State> states_;
  std::vector<CodePointSet> sets_;
  uint32_t start_ = 0;
  uint32_t accept_ = 0;
};

// A DFA of X* over code points: subset construction over the elementary intervals of the
// class boundaries (one code point per interval decides a step). Dead states are pruned.
class UnitDfa {
 public:
  UnitDfa(const RegexNode& unit, size_t offset) : nfa_(unit, offset), offset_(offset) {
    CollectIntervals();
    seen_.assign(nfa_.states().size(), 0);
    std::vector<uint32_t> start;
    bool accept = false;
    Closure({nfa_.start()}, &start, &accept);
    Intern(std::move(start), accept);
    for (size_t s = 0; s < states_.size(); ++s) Expand(s);
    PruneDead();
  }

  size_t size() const { return states_.size(); }
  bool accept(int state) const { return states_[state].accept; }
  bool live(int state) const { return state != kDead && live_[state]; }
  const std::vector<std::pair<CodePointSet, int>>& transitions(int state) const {
    return states_[state].transitions;
  }
  int Next(int state, uint32_t code_point) const {
    for (const auto& [set, next] : states_[state].transitions) {
      if (set.Contains(code_point)) return next;
    }
    return kDead;
  }

 private:
  struct State {
    std::vector<uint32_t> threads;  // NFA states with a consuming edge, sorted
    bool accept = false;
    std::vector<std::pair<CodePointSet, int>> transitions;  // live targets only, after pruning
  };

  // interval_starts_[k]..interval_starts_[k + 1] - 1 is interval k; covers_[c][k]: class c
  // holds interval k.
  void CollectIntervals() {
    std::vector<uint32_t> bounds = {0, CodePointSet::kMaxCodePoint + 1};
    for (const CodePointSet& set : nfa_.sets()) {
      for (const CodePointRange& r : set.ranges()) {
        bounds.push_back(r.lo);
        bounds.push_back(r.hi + 1);
      }
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    interval_starts_ = std::move(bounds);
    const size_t intervals = interval_starts_.size() - 1;
    covers_.assign(nfa_.sets().size(), std::vector<uint8_t>(intervals, 0));
    for (size_t c = 0; c < nfa_.sets().size(); ++c) {
      for (size_t k = 0; k < intervals; ++k) {
        covers_[c][k] = nfa_.sets()[c].Contains(interval_starts_[k]);
      }
    }
  }

  void Closure(std::vector<uint32_t> stack, std::vector<uint32_t>* threads, bool* accept) {
    ++generation_;
    while (!stack.empty()) {
      const uint32_t i = stack.back();
      stack.pop_back();
      if (seen_[i] == generation_) continue;
      seen_[i] = generation_;
      const UnitNfa::State& state = nfa_.states()[i];
      if (state.cls >= 0) threads->push_back(i);
      if (i == nfa_.accept()) *accept = true;
      stack.insert(stack.end(), state.epsilon.begin(), state.epsilon.end());
    }
    std::sort(threads->begin(), threads->end());
  }

  int Intern(std::vector<uint32_t> threads, bool accept) {
    if (threads.empty() && !accept) return kDead;
    auto key = std::make_pair(threads, accept);
    auto found = index_.find(key);
    if (found != index_.end()) return found->second;
    if (states_.size() >= kMaxUnitDfaStates) {
      throw RegexError("the repeated group after a lookahead needs more than " +
                           std::to_string(kMaxUnitDfaStates) + " DFA states",
                       offset_);
    }
    const int id = static_cast<int>(states_.size());
    index_.emplace(std::move(key), id);
    states_.push_back({std::move(threads), accept, {}});
    return id;
  }

  // Intervals with the same seeds (most of them: a wide raw class is many intervals of one
  // step) share one closure.
  void Expand(size_t s) {
    std::map<int, CodePointSet> by_target;
    std::map<std::vector<uint32_t>, int> target_of_seeds;
    std::vector<uint32_t> seeds;
    for (size_t k = 0; k + 1 < interval_starts_.size(); ++k) {
      seeds.clear();
      for (uint32_t i : states_[s].threads) {
        const UnitNfa::State& state = nfa_.states()[i];
        if (covers_[state.cls][k]) seeds.push_back(state.out);
      }
      if (seeds.empty()) continue;
      auto [found, inserted] = target_of_seeds.emplace(seeds, kDead);
      if (inserted) {
        std::vector<uint32_t> threads;
        bool accept = false;
        Closure(seeds, &threads, &accept);
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

  // live_[s]: acceptance is reachable from s; transitions into states that are not live go.
  void PruneDead() {
    live_.assign(states_.size(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t s = 0; s < states_.size(); ++s) {
        if (live_[s]) continue;
        bool live = states_[s].accept;
        for (const auto& t : states_[s].transitions) live = live || live_[t.second];
        if (live) {
          live_[s] = 1;
          changed = true;
        }
      }
    }
    for (State& state : states_) {
      auto& ts = state.transitions;
      auto dead = [&](const auto& t) { return !live_[t.second]; };
      ts.erase(std::remove_if(ts.begin(), ts.end(), dead), ts.end());
    }
  }

  UnitNfa nfa_;
  size_t offset_;
  std::vector<uint32_t> interval_starts_;
  std::vector<std::vector<uint8_t>> covers_;
  std::vector<uint32_t> seen_;
  uint32_t generation_ = 0;
  std::vector<State> states_;
  std::map<std::pair<std::vector<uint32_t>, bool>, int> index_;
  std::vector<uint8_t> live_;
};

// Unit DFAs by the unit's structure (AppendKey). In practice one entry: the JSON
// Schema compiler's canonical string unit, the same for every schema, so this is a table built
// on first use rather than a schema-keyed cache (jaxguide.clear_caches() leaves it). Bounded:
// past kMaxMemoizedUnitDfas distinct units, a DFA is built for its caller only.
constexpr size_t kMaxMemoizedUnitDfas = 16;

struct UnitDfaMemo {
  std::mutex mutex;
  ForkLockRegistration fork_lock{&mutex};  // held across fork() (fork_locks.h)
  std::unordered_map<std::string, std::shared_ptr<const UnitDfa>> by_unit;
};

// The structure of a unit regex as bytes (kinds, counts, ranges): equal keys, equal languages.
void AppendKey(const RegexNode& node, std::string* key) {
  auto append = [&](uint32_t value) { key->append(reinterpret_cast<const char*>(&value), 4); };
  append(static_cast<uint32_t>(node.kind));
  append(node.min);
  append(node.max);
  append(static_cast<uint32_t>(node.set.ranges().size()));
  key->append(reinterpret_cast<const char*>(node.set.ranges().data()),
              node.set.ranges().size() * sizeof(CodePointRange));
  append(static_cast<uint32_t>(node.children.size()));
  for (const RegexNode& child : node.children) AppendKey(child, key);
  if (node.except != nullptr) append(0xFFFFFFFFu);  // never memoized: see UnitNfa::Build
}

std::shared_ptr<const UnitDfa> MemoizedUnitDfa(const RegexNode& unit, size_t offset) {
  // Never destroyed: safe during static teardown.
  static UnitDfaMemo* const memo = new UnitDfaMemo();
  std::string key;
  AppendKey(unit, &key);
  {
    std::lock_guard<std::mutex> lock(memo->mutex);
    auto found = memo->by_unit.find(key);
    if (found != memo->by_unit.end()) return found->second;
  }
  auto dfa = std::make_shared<const UnitDfa>(unit, offset);  // may throw RegexError
  std::lock_guard<std::mutex> lock(memo->mutex);
  if (memo->by_unit.size() < kMaxMemoizedUnitDfas) memo->by_unit.emplace(std::move(key), dfa);
  return dfa;
}

struct TrieNode {
  int dfa = kDead;
  bool word_end = false;
  std::vector<std::pair<uint32_t, uint32_t>> children;  // (code point, node), sorted
};

// The trie of the words (sorted first, so each word shares a prefix only with the previous
// one and children arrive in order), each node paired with the DFA state after its string.
std::vector<TrieNode> BuildTrie(const UnitDfa& dfa, std::vector<std::vector<uint32_t>> words) {
  std::sort(words.begin(), words.end());
  std::vector<TrieNode> trie(1);
  trie[0].dfa = 0;
  for (const std::vector<uint32_t>& word : words) {
    uint32_t node = 0;
    for (uint32_t c : word) {
      auto& kids = trie[node].children;
      if (!kids.empty() && kids.back().first == c) {
        node = kids.back().second;
        continue;
      }
      const int parent_dfa = trie[node].dfa;
      const uint32_t child = static_cast<uint32_t>(trie.size());
      kids.emplace_back(c, child);
      trie.push_back({});
      trie[child].dfa = dfa.live(parent_dfa) ? dfa.Next(parent_dfa, c) : kDead;
      node = child;
    }
    trie[node].word_end = true;
  }
  return trie;
}

}  // namespace

WordsComplement BuildWordsComplement(const RegexNode& unit,
                                     const RegexNode::ExceptWords& except, size_t offset) {
  const std::shared_ptr<const UnitDfa> memoized = MemoizedUnitDfa(unit, offset);
  const UnitDfa& dfa = *memoized;
  const std::vector<TrieNode> trie = BuildTrie(dfa, except.words);
  // Ids: live trie nodes first (root = 0; a node whose string is no prefix of X* is never
  // reached by a string of X*, so it goes with its subtree), then the DFA copies.
  std::vector<int> trie_id(trie.size(), -1);
  int next_id = 0;
  for (size_t n = 0; n < trie.size(); ++n) {
    if (n == 0 || dfa.live(trie[n].dfa)) trie_id[n] = next_id++;
  }
  const int dfa_base = next_id;
  WordsComplement out;
  out.states.resize(static_cast<size_t>(dfa_base) + dfa.size());
  for (size_t n = 0; n < trie.size(); ++n) {
    if (trie_id[n] < 0) continue;
    const TrieNode& node = trie[n];
    WordsComplement::State& state = out.states[trie_id[n]];
    if (!dfa.live(node.dfa)) continue;  // the root of an X* that matches nothing
    if (node.word_end && dfa.live(dfa.Next(node.dfa, except.stop))) {
      throw RegexError("a word of the lookahead, with its final character, is a prefix of a "
                       "string of the repeated group, so the lookahead cannot be rewritten "
                       "exactly", offset);
    }
    state.accept = dfa.accept(node.dfa) && !node.word_end;
    for (const auto& [set, target] : dfa.transitions(node.dfa)) {
      CodePointSet taken;
      for (const auto& [c, child] : node.children) {
        if (trie_id[child] < 0 || !set.Contains(c)) continue;
        state.transitions.push_back(
            {CodePointSet::Single(c), static_cast<uint32_t>(trie_id[child])});
        taken.Add(c);  // children are sorted: appends
      }
      CodePointSet rest = set;
      if (!taken.Empty()) rest.Subtract(taken);
      if (!rest.Empty()) {
        state.transitions.push_back({std::move(rest), static_cast<uint32_t>(dfa_base + target)});
      }
    }
  }
  for (size_t s = 0; s < dfa.size(); ++s) {
    WordsComplement::State& state = out.states[dfa_base + s];
    state.accept = dfa.accept(static_cast<int>(s));
    for (const auto& [set, target] : dfa.transitions(static_cast<int>(s))) {
      state.transitions.push_back({set, static_cast<uint32_t>(dfa_base + target)});
    }
  }
  return out;
}

}  // namespace jaxguide
