// EliminateStates.
//
// Design note. Edges live in per-state maps (successors with their regex, predecessors as a
// set), so a state's degree is the two sizes and eliminating k touches only k's neighbours. The
// pick of the next state scans the remaining ones (O(live) per pick, O(live^2) in all, as the
// Python construction does); within one elimination every pair (a, b) is written once, so the
// order in which neighbours are visited never changes a string. Edge pieces are asked of the
// caller once per distinct atom set. A regex is a string and its length in code points (the
// budget counts code points, as Python's len does).
#include "native/lexer/state_elimination.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "native/lexer/code_point_dfa.h"

namespace jaxguide {
namespace {

struct Regex {
  std::string text;
  size_t chars = 0;
};

size_t CodePoints(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

void AppendWrapped(const Regex& regex, Regex* out) {
  if (regex.text.find('|') == std::string::npos) {
    out->text += regex.text;
    out->chars += regex.chars;
    return;
  }
  out->text += "(?:";
  out->text += regex.text;
  out->text += ')';
  out->chars += regex.chars + 4;
}

// The live states: those from which a final state is reachable.
std::vector<uint8_t> LiveStates(const uint32_t* transitions, size_t states, size_t atoms,
                                const std::vector<uint8_t>& final) {
  std::vector<std::vector<uint32_t>> reverse(states);
  for (size_t s = 0; s < states; ++s) {
    const uint32_t* row = transitions + s * atoms;
    for (size_t a = 0; a < atoms; ++a) {
      if (a > 0 && row[a] == row[a - 1]) continue;  // (a row repeats few targets)
      reverse[row[a]].push_back(static_cast<uint32_t>(s));
    }
  }
  std::vector<uint8_t> live(final);
  MarkReachingStates(reverse, &live);
  return live;
}

struct AtomListHash {
  size_t operator()(const std::vector<uint32_t>& atoms) const {
    size_t h = atoms.size();
    for (uint32_t a : atoms) h = h * 1000003u ^ a;
    return h;
  }
};

class Eliminator {
 public:
  Eliminator(size_t nodes, size_t max_chars)
      : succ_(nodes), pred_(nodes), max_chars_(max_chars) {}

  void Put(uint32_t a, uint32_t b, Regex regex) {
    succ_[a][b] = std::move(regex);
    pred_[b].insert(a);
  }

  size_t Degree(uint32_t s) const { return succ_[s].size() + pred_[s].size(); }

  // False: a regex passed max_chars.
  bool Eliminate(uint32_t k) {
    Regex star;
    if (auto loop = succ_[k].find(k); loop != succ_[k].end()) {
      if (!loop->second.text.empty()) {
        star.text = "(?:" + loop->second.text + ")*";
        star.chars = loop->second.chars + 5;
      }
      succ_[k].erase(loop);
      pred_[k].erase(k);
    }
    std::vector<std::pair<uint32_t, Regex>> ins;
    for (uint32_t a : pred_[k]) {
      auto edge = succ_[a].find(k);
      ins.emplace_back(a, std::move(edge->second));
      succ_[a].erase(edge);
    }
    std::vector<std::pair<uint32_t, Regex>> outs;
    for (auto& [b, regex] : succ_[k]) {
      pred_[b].erase(k);
      outs.emplace_back(b, std::move(regex));
    }
    succ_[k].clear();
    pred_[k].clear();
    for (const auto& [a, in] : ins) {
      for (const auto& [b, out] : outs) {
        Regex piece;
        AppendWrapped(in, &piece);
        piece.text += star.text;
        piece.chars += star.chars;
        AppendWrapped(out, &piece);
        auto [edge, fresh] = succ_[a].try_emplace(b);
        if (fresh) {
          edge->second = std::move(piece);
          pred_[b].insert(a);
        } else {
          edge->second.text += '|';
          edge->second.text += piece.text;
          edge->second.chars += piece.chars + 1;
        }
        if (edge->second.chars > max_chars_) return false;
      }
    }
    return true;
  }

  const Regex* Edge(uint32_t a, uint32_t b) const {
    auto edge = succ_[a].find(b);
    return edge == succ_[a].end() ? nullptr : &edge->second;
  }

 private:
  std::vector<std::unordered_map<uint32_t, Regex>> succ_;
  std::vector<std::unordered_set<uint32_t>> pred_;
  size_t max_chars_;
};

}  // namespace

EliminationResult EliminateStates(const uint32_t* transitions, size_t states, size_t atoms,
                                  const std::vector<uint8_t>& final, const EdgePiece& piece,
                                  size_t max_states, size_t max_chars) {
  EliminationResult result;
  const std::vector<uint8_t> live = LiveStates(transitions, states, atoms, final);
  if (states == 0 || !live[0]) return result;
  std::vector<uint32_t> remaining;
  for (size_t s = 0; s < states; ++s) {
    if (live[s]) remaining.push_back(static_cast<uint32_t>(s));
  }
  result.live_states = remaining.size();
  if (max_states != 0 && remaining.size() > max_states) {
    result.status = EliminationResult::Status::kTooManyStates;
    return result;
  }
  const auto start = static_cast<uint32_t>(states);
  const auto end = start + 1;
  Eliminator graph(states + 2, max_chars);
  std::unordered_map<std::vector<uint32_t>, std::optional<Regex>, AtomListHash> pieces;
  for (uint32_t s : remaining) {
    std::map<uint32_t, std::vector<uint32_t>> by_target;  // (ordered: a fixed call order)
    const uint32_t* row = transitions + static_cast<size_t>(s) * atoms;
    for (size_t a = 0; a < atoms; ++a) {
      if (live[row[a]]) by_target[row[a]].push_back(static_cast<uint32_t>(a));
    }
    for (auto& [target, atom_list] : by_target) {
      auto [known, fresh] = pieces.try_emplace(std::move(atom_list));
      if (fresh) {
        if (std::optional<std::string> text = piece(known->first)) {
          known->second = Regex{*text, CodePoints(*text)};
        }
      }
      if (known->second) graph.Put(s, target, *known->second);
    }
    if (final[s]) graph.Put(s, end, Regex{});
  }
  graph.Put(start, 0, Regex{});
  std::vector<uint8_t> done(states, 0);
  for (size_t step = 0; step < remaining.size(); ++step) {
    uint32_t pick = 0;
    size_t best = static_cast<size_t>(-1);
    for (uint32_t s : remaining) {  // ascending: the lowest state among equal degrees
      if (!done[s] && graph.Degree(s) < best) {
        best = graph.Degree(s);
        pick = s;
      }
    }
    done[pick] = 1;
    if (!graph.Eliminate(pick)) {
      result.status = EliminationResult::Status::kTooLong;
      return result;
    }
  }
  const Regex* whole = graph.Edge(start, end);
  if (whole == nullptr) return result;
  result.status = EliminationResult::Status::kRegex;
  result.regex = whole->text;
  return result;
}

}  // namespace jaxguide
