// BuildNfaProduct construction.
//
// Design note. Subset construction over a product, as the Python reference (`automata.Dfa`)
// does it, with its state sets as bit vectors. Per NFA (`Component`), the state sets met are
// interned (a set's id stands for it in product tuples), and two things are memoized per
// set: the epsilon closure of a moved set, and the set's sweep, the successor set of every
// atom as a step function over the atoms (segment starts and values): the successor changes
// only where an interval of an outgoing edge's label starts or ends, so a sweep sorts those
// events and closes one moved set per segment. A product state's row walks the NFAs' sweeps
// together, one tuple per merged segment, and numbers new tuples in atom order. Work per row:
// O(nfas x segments) tuple lookups plus the sweeps of sets not seen before.
#include "native/lexer/nfa_product.h"

#include <algorithm>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace jaxguide {
namespace {

using Bits = std::vector<uint64_t>;

struct WordsHash {
  template <typename Words>
  size_t operator()(const Words& words) const {
    size_t h = 1469598103934665603ull;
    for (auto w : words) h = (h ^ static_cast<size_t>(w)) * 1099511628211ull;
    return h;
  }
};

struct Sweep {
  std::vector<uint32_t> starts;  // starts[0] == 0; increasing
  std::vector<uint32_t> values;  // set ids, values[i] on atoms [starts[i], starts[i + 1])
};

class Component {
 public:
  Component(const NfaTables& nfa, uint32_t atoms)
      : nfa_(nfa), atoms_(atoms), words_((nfa.eps.size() + 63) / 64) {
    empty_ = Intern(Bits(words_, 0));
  }

  uint32_t Start() {
    Bits start(words_, 0);
    start[nfa_.start / 64] |= uint64_t{1} << (nfa_.start % 64);
    return ClosureId(start);
  }

  bool Accepts(uint32_t id) const { return sets_[id][nfa_.end / 64] >> (nfa_.end % 64) & 1; }

  const Sweep& SweepOf(uint32_t id) {
    if (sweeps_.size() <= id) sweeps_.resize(sets_.size());
    if (!sweeps_[id]) sweeps_[id] = std::make_unique<Sweep>(Compute(id));
    return *sweeps_[id];
  }

 private:
  uint32_t Intern(Bits set) {
    auto [it, inserted] = ids_.emplace(std::move(set), static_cast<uint32_t>(sets_.size()));
    if (inserted) sets_.push_back(it->first);
    return it->second;
  }

  // The id of the epsilon closure of `moved` (memoized by the moved set).
  uint32_t ClosureId(const Bits& moved) {
    auto found = closure_ids_.find(moved);
    if (found != closure_ids_.end()) return found->second;
    Bits closed = moved;
    std::vector<uint32_t> stack;
    for (size_t w = 0; w < words_; ++w) {
      for (uint64_t bits = moved[w]; bits; bits &= bits - 1) {
        stack.push_back(static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits)));
      }
    }
    while (!stack.empty()) {
      const uint32_t s = stack.back();
      stack.pop_back();
      for (uint32_t t : nfa_.eps[s]) {
        uint64_t& word = closed[t / 64];
        const uint64_t bit = uint64_t{1} << (t % 64);
        if (!(word & bit)) {
          word |= bit;
          stack.push_back(t);
        }
      }
    }
    const uint32_t id = Intern(std::move(closed));
    closure_ids_.emplace(moved, id);
    return id;
  }

  Sweep Compute(uint32_t id) {
    // The member states' edges, grouped by label: label -> the targets' set.
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    const Bits set = sets_[id];  // copy: interning below may reallocate sets_
    for (size_t w = 0; w < words_; ++w) {
      for (uint64_t bits = set[w]; bits; bits &= bits - 1) {
        const size_t s = w * 64 + __builtin_ctzll(bits);
        pairs.insert(pairs.end(), nfa_.edges[s].begin(), nfa_.edges[s].end());
      }
    }
    std::sort(pairs.begin(), pairs.end());
    std::vector<Bits> targets;  // per group
    std::vector<std::tuple<uint32_t, int, uint32_t>> events;  // (atom, +1 / -1, group)
    for (size_t i = 0; i < pairs.size();) {
      const uint32_t label = pairs[i].first;
      Bits moved(words_, 0);
      for (; i < pairs.size() && pairs[i].first == label; ++i) {
        moved[pairs[i].second / 64] |= uint64_t{1} << (pairs[i].second % 64);
      }
      const uint32_t group = static_cast<uint32_t>(targets.size());
      targets.push_back(std::move(moved));
      for (const auto& [first, end] : nfa_.labels[label]) {
        events.emplace_back(first, 1, group);
        events.emplace_back(end, -1, group);
      }
    }
    std::sort(events.begin(), events.end());
    Sweep sweep{{0}, {empty_}};
    std::vector<int> active(targets.size(), 0);
    Bits moved(words_);
    for (size_t e = 0; e < events.size();) {
      const uint32_t at = std::get<0>(events[e]);
      if (at >= atoms_) break;
      for (; e < events.size() && std::get<0>(events[e]) == at; ++e) {
        active[std::get<2>(events[e])] += std::get<1>(events[e]);
      }
      std::fill(moved.begin(), moved.end(), 0);
      for (size_t g = 0; g < targets.size(); ++g) {
        if (!active[g]) continue;
        for (size_t w = 0; w < words_; ++w) moved[w] |= targets[g][w];
      }
      const uint32_t value = ClosureId(moved);
      if (value == sweep.values.back()) continue;
      if (sweep.starts.back() == at) {
        sweep.values.back() = value;
      } else {
        sweep.starts.push_back(at);
        sweep.values.push_back(value);
      }
    }
    return sweep;
  }

  const NfaTables& nfa_;
  const uint32_t atoms_;
  const size_t words_;
  uint32_t empty_ = 0;
  std::vector<Bits> sets_;  // by id
  std::unordered_map<Bits, uint32_t, WordsHash> ids_;
  std::unordered_map<Bits, uint32_t, WordsHash> closure_ids_;
  std::vector<std::unique_ptr<Sweep>> sweeps_;  // by id, built on first use
};

}  // namespace

std::optional<NfaProduct> BuildNfaProduct(const std::vector<NfaTables>& nfas, uint32_t atoms,
                                          size_t max_states) {
  const size_t k = nfas.size();
  std::vector<Component> components;
  components.reserve(k);
  for (const NfaTables& nfa : nfas) components.emplace_back(nfa, atoms);
  std::vector<std::vector<uint32_t>> tuples;
  std::unordered_map<std::vector<uint32_t>, uint32_t, WordsHash> index;
  std::vector<uint32_t> start;
  for (Component& c : components) start.push_back(c.Start());
  index.emplace(start, 0);
  tuples.push_back(std::move(start));
  NfaProduct out;
  std::vector<const Sweep*> sweeps(k);
  std::vector<size_t> at_segment(k);
  std::vector<uint32_t> tuple(k);
  for (size_t row = 0; row < tuples.size(); ++row) {
    for (size_t j = 0; j < k; ++j) {
      sweeps[j] = &components[j].SweepOf(tuples[row][j]);
      at_segment[j] = 0;
    }
    out.transitions.resize((row + 1) * static_cast<size_t>(atoms));
    for (uint32_t at = 0; at < atoms;) {
      uint32_t next = atoms;
      for (size_t j = 0; j < k; ++j) {
        const Sweep& sweep = *sweeps[j];
        size_t& i = at_segment[j];
        while (i + 1 < sweep.starts.size() && sweep.starts[i + 1] <= at) ++i;
        tuple[j] = sweep.values[i];
        if (i + 1 < sweep.starts.size()) next = std::min(next, sweep.starts[i + 1]);
      }
      auto found = index.find(tuple);
      uint32_t target;
      if (found != index.end()) {
        target = found->second;
      } else {
        if (tuples.size() >= max_states) return std::nullopt;
        target = static_cast<uint32_t>(tuples.size());
        index.emplace(tuple, target);
        tuples.push_back(tuple);
      }
      std::fill(out.transitions.begin() + row * atoms + at,
                out.transitions.begin() + row * atoms + next, target);
      at = next;
    }
  }
  out.states = tuples.size();
  out.accepts.reserve(out.states * k);
  for (const auto& t : tuples) {
    for (size_t j = 0; j < k; ++j) out.accepts.push_back(components[j].Accepts(t[j]) ? 1 : 0);
  }
  return out;
}

}  // namespace jaxguide
