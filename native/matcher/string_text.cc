// StringTextAnalysis: proving on the NFA that a lexer state reads any JSON-string text.
//
// Design note. A mask at the root of the token trie takes the string slice (every token that is
// 1-16 characters of string text) whole when the lexer state reads any such text without a
// boundary; CompiledGrammar decides that by exploring the lexer DFA breadth-first, which is
// exact but costs one cold DFA state (10-20 us) per state reached, so it stops after
// kSliceCheckMaxStates. A key position inside a JSON object with many optional properties
// reaches far more: each property name is a literal terminal, the parser allows a different set
// of them at each position, so every position has DFA states of its own; the slice was not
// taken and the mask walked the whole vocabulary (about 1.2 ms on Llama-3) at every key.
//
// Here the question is answered on the code-point NFA, where the threads of one terminal do not
// depend on which other terminals the parser allows:
//   * no boundary: no string of text characters leads the state's threads to a kMatch (a
//     search over succ(i), the epsilon closure of i's out as the DFA builds it between
//     characters; the instructions it clears are remembered). A state that has not matched
//     and none of whose threads reaches a match never matches while it reads text, so no
//     lexeme boundary falls inside text;
//   * alive: one terminal's threads in the state (a group) survive every string of text
//     characters. The groups text reaches from it are explored (one code point per atom of
//     the partition its threads' classes make) and the greatest fixpoint "no text character
//     empties it, nor leads to a group that fails" decides; results are memoized per group,
//     so the key positions of one object, whose states differ only in the literal names the
//     parser still allows, share the proof of the "any other name" terminal. A
//     not-these-names key terminal leaves its trie of names for "any character" on every
//     character no name continues, so its groups survive everything; literal names do not.
// Both are proofs (sound), never guesses; what they cannot prove the caller explores.
//
// Cost: everything is computed on demand and memoized per grammar (closures, cleared
// instructions, groups); one call does at most kMaxQueryWork instruction visits, so a huge
// NFA costs a bounded "not proven" instead of a stall in the middle of a mask. A terminal
// whose groups ran out of work once gets kRetryWork per later call: an unanchored `pattern`
// of seven words (`Github_easy---o5116`) has more than kMaxGroupStates groups, and retrying
// it in full at each position of its string cost 1-2 ms per mask for nothing.
#include "native/matcher/string_text.h"

#include <algorithm>
#include <utility>

namespace jaxguide {

namespace {

CodePointSet StringTextCharacters() {
  CodePointSet text = CodePointSet::Range(0x20, CodePointSet::kMaxCodePoint);
  for (const uint32_t c : {uint32_t{0x22}, uint32_t{0x5C}, uint32_t{0x7F}}) {
    text.Subtract(CodePointSet::Single(c));
  }
  text.Subtract(CodePointSet::Range(0xD800, 0xDFFF));
  return text;
}

}  // namespace

StringTextAnalysis::StringTextAnalysis(const Nfa& nfa)
    : nfa_(nfa),
      text_(StringTextCharacters()),
      class_reads_text_(nfa.classes().size(), -1),
      succ_index_(nfa.insts().size(), -1),
      no_match_(nfa.insts().size(), 0),
      visit_mark_(2 * nfa.insts().size(), 0),
      search_mark_(nfa.insts().size(), 0) {}

void StringTextAnalysis::Charge(uint64_t units) const {
  work_ += units;
  if (work_ > work_limit_) throw OutOfWork();
}

bool StringTextAnalysis::ReadsText(uint32_t inst) const {
  int8_t& reads = class_reads_text_[nfa_.inst(inst).arg];
  if (reads < 0) {
    const CodePointSet& set = nfa_.class_set(nfa_.inst(inst).arg);
    CodePointSet outside = set;
    outside.Subtract(text_);
    reads = outside == set ? 0 : 1;  // all of it outside the text: reads none
    Charge(set.ranges().size());
  }
  return reads != 0;
}

const StringTextAnalysis::Successors& StringTextAnalysis::Succ(uint32_t inst) const {
  if (succ_index_[inst] >= 0) return succ_[static_cast<size_t>(succ_index_[inst])];
  // The DFA's closure rules between characters: a begin assertion blocks; past an end
  // assertion only a kMatch counts.
  Successors out;
  ++generation_;
  std::vector<std::pair<uint32_t, bool>> stack = {{nfa_.inst(inst).out, false}};
  while (!stack.empty()) {
    const auto [id, end_only] = stack.back();
    stack.pop_back();
    uint32_t& seen = visit_mark_[2 * id + (end_only ? 1 : 0)];
    if (seen == generation_) continue;
    seen = generation_;
    Charge(1);
    const NfaInst& next = nfa_.inst(id);
    switch (next.op) {
      case NfaInst::Op::kClass:
        if (!end_only && nfa_.live(id)) out.threads.push_back(id);
        break;
      case NfaInst::Op::kMatch:
        out.matches = true;
        break;
      case NfaInst::Op::kNop:
        stack.emplace_back(next.out, end_only);
        break;
      case NfaInst::Op::kSplit:
        stack.emplace_back(next.arg, end_only);
        stack.emplace_back(next.out, end_only);
        break;
      case NfaInst::Op::kAssertBegin:
        break;
      case NfaInst::Op::kAssertEnd:
        stack.emplace_back(next.out, true);
        break;
    }
  }
  std::sort(out.threads.begin(), out.threads.end());
  succ_index_[inst] = static_cast<int32_t>(succ_.size());
  succ_.push_back(std::move(out));
  return succ_.back();
}

bool StringTextAnalysis::TextReachesMatch(const std::vector<uint32_t>& threads) const {
  // Depth-first over text-reading threads not cleared before; if no match turns up, every
  // thread visited is cleared for later calls.
  std::vector<uint32_t> stack, visited;
  ++search_generation_;
  auto visit = [&](uint32_t id) {
    if (no_match_[id] || search_mark_[id] == search_generation_ || !ReadsText(id)) return;
    search_mark_[id] = search_generation_;
    stack.push_back(id);
  };
  for (const uint32_t id : threads) visit(id);
  while (!stack.empty()) {
    const uint32_t id = stack.back();
    stack.pop_back();
    visited.push_back(id);
    Charge(1);
    const Successors& next = Succ(id);
    if (next.matches) return true;
    for (const uint32_t j : next.threads) visit(j);
  }
  for (const uint32_t id : visited) no_match_[id] = 1;
  return false;
}

size_t StringTextAnalysis::GroupHash::operator()(const Group& group) const {
  size_t h = group.size();
  for (const uint32_t i : group) h = h * 0x9E3779B97F4A7C15ull + i;
  return h;
}

void StringTextAnalysis::Read(const Group& group, uint32_t c, Group* next) const {
  next->clear();
  for (const uint32_t i : group) {
    Charge(1);
    if (!nfa_.class_set(nfa_.inst(i).arg).Contains(c)) continue;
    const Successors& succ = Succ(i);
    next->insert(next->end(), succ.threads.begin(), succ.threads.end());
  }
  std::sort(next->begin(), next->end());
  next->erase(std::unique(next->begin(), next->end()), next->end());
}

void StringTextAnalysis::TextAtoms(const Group& group, std::vector<uint32_t>* atoms) const {
  // Cut points: the text's own edges and every class range's, so that each atom lies inside
  // or outside the text and inside or outside each class of the group.
  std::vector<uint32_t> cuts = {0x20, 0x22, 0x23, 0x5C, 0x5D, 0x7F, 0x80, 0xD800, 0xE000,
                                CodePointSet::kMaxCodePoint + 1};
  for (const uint32_t i : group) {
    const auto& ranges = nfa_.class_set(nfa_.inst(i).arg).ranges();
    Charge(ranges.size());
    for (const CodePointRange& r : ranges) {
      cuts.push_back(r.lo);
      cuts.push_back(r.hi + 1);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  atoms->clear();
  for (size_t a = 0; a + 1 < cuts.size(); ++a) {
    if (text_.Contains(cuts[a])) atoms->push_back(cuts[a]);
  }
}

bool StringTextAnalysis::SurvivesAnyText(const Group& root) const {
  if (const auto found = survives_.find(root); found != survives_.end()) return found->second;
  // The groups text reaches from `root`, breadth-first, with their successors; a group fails
  // when a text character empties it or it is known to fail.
  std::unordered_map<Group, uint32_t, GroupHash> index = {{root, 0}};
  std::vector<const Group*> groups = {&index.begin()->first};
  std::vector<std::vector<uint32_t>> successors(1);
  std::vector<uint8_t> fails(1, 0);
  std::vector<uint32_t> atoms;
  Group next;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (const auto known = survives_.find(*groups[k]); known != survives_.end()) {
      fails[k] = known->second ? 0 : 1;
      continue;
    }
    TextAtoms(*groups[k], &atoms);
    for (const uint32_t c : atoms) {
      Read(*groups[k], c, &next);
      if (next.empty()) {
        fails[k] = 1;
        break;
      }
      const auto [it, added] = index.emplace(next, static_cast<uint32_t>(groups.size()));
      if (added) {
        if (groups.size() >= kMaxGroupStates) throw OutOfWork();
        groups.push_back(&it->first);
        successors.emplace_back();
        fails.push_back(0);
      }
      successors[k].push_back(it->second);
    }
  }
  // Greatest fixpoint: a group with a failing successor fails.
  std::vector<std::vector<uint32_t>> predecessors(groups.size());
  std::vector<uint32_t> failing;
  for (size_t k = 0; k < groups.size(); ++k) {
    for (const uint32_t s : successors[k]) predecessors[s].push_back(static_cast<uint32_t>(k));
    if (fails[k]) failing.push_back(static_cast<uint32_t>(k));
  }
  while (!failing.empty()) {
    const uint32_t k = failing.back();
    failing.pop_back();
    for (const uint32_t p : predecessors[k]) {
      if (!fails[p]) {
        fails[p] = 1;
        failing.push_back(p);
      }
    }
  }
  for (size_t k = 0; k < groups.size(); ++k) survives_.emplace(*groups[k], fails[k] == 0);
  return fails[0] == 0;
}

bool StringTextAnalysis::ReadsAnyText(const std::vector<uint64_t>& threads, bool matched) const {
  if (matched) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (failures_ >= kMaxFailures) return false;
  work_ = 0;
  work_limit_ = kMaxQueryWork;
  try {
    std::vector<std::pair<uint32_t, uint32_t>> by_terminal;  // (terminal, instruction)
    std::vector<uint32_t> readers;
    for (const uint64_t thread : threads) {
      if (static_cast<uint32_t>(thread) != Utf8Class::kStartNode) return false;  // mid-char
      const auto id = static_cast<uint32_t>(thread >> 32);
      if (nfa_.inst(id).op != NfaInst::Op::kClass) return false;
      if (!ReadsText(id)) continue;
      readers.push_back(id);
      by_terminal.emplace_back(nfa_.terminal_of(id), id);
    }
    if (TextReachesMatch(readers)) return false;
    std::sort(by_terminal.begin(), by_terminal.end());
    Group group;
    for (size_t a = 0; a < by_terminal.size();) {
      size_t b = a;
      group.clear();
      while (b < by_terminal.size() && by_terminal[b].first == by_terminal[a].first) {
        group.push_back(by_terminal[b++].second);
      }
      const uint32_t terminal = by_terminal[a].first;
      a = b;
      work_limit_ = exhausted_terminals_.count(terminal) != 0
                        ? std::min(kMaxQueryWork, work_ + kRetryWork) : kMaxQueryWork;
      try {
        if (SurvivesAnyText(group)) return true;
      } catch (const OutOfWork&) {
        exhausted_terminals_.insert(terminal);
        if (work_ >= kMaxQueryWork) throw;  // the call's budget: a failure
      }
    }
    return false;
  } catch (const OutOfWork&) {
    ++failures_;
    return false;
  }
}

}  // namespace jaxguide
