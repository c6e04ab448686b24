// Nfa construction.
//
// Design note. Each terminal is compiled to a Thompson fragment (Split / Nop / Class
// instructions with patch lists) ending in its own kMatch. A consuming instruction reads one
// *code point* of a class via a Utf8Class byte automaton that is built once per distinct set and
// shared, so `\w{0,1000}` costs about 2000 instructions instead of 1000 copies of a
// several-hundred-state UTF-8 automaton. Counted repetition x{m,n} is expanded (m copies, then
// n - m nested optional copies, or a loop for n = inf); the expansion is bounded by the
// max_instructions budget and checked as instructions are emitted, so it can never run away.
//
// Liveness (for exact dead states): a reverse breadth-first search from the kMatch instructions.
// First the instructions that reach a match through epsilons only (what may follow `$`), then
// every instruction that reaches a match when it is no longer at the start of the text (so
// kAssertBegin blocks, and kAssertEnd passes only into the epsilon-only region).
//
// Empty terminals (TerminalsMatchingNothing): with liveness known, a terminal matches some string
// iff the closure of its start (kAssertBegin passes there; after a kAssertEnd only epsilons
// that end in a kMatch count) holds a kMatch or a live kClass: the same closure the lazy DFA
// builds for a start state, without building a state.
//
// Counted repetition compiles its body once and appends relocated copies of those instructions
// (CopyFragment), so x{0,255} of a long x costs a linear copy per repetition, not a new walk
// of the AST with class interning.
//
// Complexity: O(instructions + sum of class automaton sizes).
#include "native/lexer/nfa.h"

#include <algorithm>
#include <string>
#include <utility>

#include "native/lexer/except_words.h"
#include "native/lexer/regex_product.h"
#include "native/support/error.h"

namespace jaxguide {

Nfa::Nfa(const std::vector<RegexNode>& terminals, size_t max_instructions,
         const Programs& programs)
    : max_instructions_(max_instructions) {
  for (size_t t = 0; t < terminals.size(); ++t) {
    const bool copied = t < programs.size() && programs[t] != nullptr;
    Fragment fragment = copied ? CopyProgram(*programs[t]) : Compile(terminals[t]);
    const uint32_t match = Emit(NfaInst::Op::kMatch, 0, static_cast<uint32_t>(t));
    Patch(fragment.holes, match);
    starts_.push_back(fragment.start);
    terminal_of_.resize(insts_.size(), static_cast<uint32_t>(t));
  }
  unit_dfa_alternatives_.clear();  // (construction only)
  ComputeLiveness();
}

size_t Nfa::MemoryBytes() const {
  size_t bytes = insts_.capacity() * sizeof(NfaInst) + terminal_of_.capacity() * 4 +
                 live_.capacity() + starts_.capacity() * 4;
  for (const auto& c : classes_) bytes += c->MemoryBytes();
  for (const CodePointSet& s : class_sets_) bytes += s.ranges().capacity() * sizeof(CodePointRange);
  return bytes;
}

void Nfa::Reserve(size_t count) const {
  if (insts_.size() + count > max_instructions_) {
    throw BudgetExceededError("regex program exceeds the budget of " +
                              std::to_string(max_instructions_) +
                              " NFA instructions (counted repetition expands to copies)");
  }
}

uint32_t Nfa::Emit(NfaInst::Op op, uint32_t out, uint32_t arg) {
  Reserve(1);
  insts_.push_back({op, out, arg});
  return static_cast<uint32_t>(insts_.size() - 1);
}

Nfa::Fragment Nfa::AppendRelocated(const std::vector<NfaInst>& source, uint32_t begin,
                                   uint32_t end, uint32_t start,
                                   const std::vector<uint32_t>& holes,
                                   const std::vector<uint32_t>* class_of) {
  Reserve(end - begin);
  const uint32_t delta = static_cast<uint32_t>(insts_.size()) - begin;
  for (uint32_t i = begin; i < end; ++i) {
    NfaInst inst = source[i];  // a copy: push_back may reallocate (source may be insts_)
    switch (inst.op) {
      case NfaInst::Op::kSplit:
        inst.arg += delta;
        inst.out += delta;
        break;
      case NfaInst::Op::kClass:  // arg is a class index, not a target
        if (class_of != nullptr) inst.arg = (*class_of)[inst.arg];
        inst.out += delta;
        break;
      case NfaInst::Op::kNop:
      case NfaInst::Op::kAssertBegin:
      case NfaInst::Op::kAssertEnd:
        inst.out += delta;
        break;
      case NfaInst::Op::kMatch:  // never inside a fragment or a program
        break;
    }
    insts_.push_back(inst);
  }
  Fragment copy{start + delta, holes};
  for (uint32_t& hole : copy.holes) {
    hole += delta << 1;
    // The original's holes may have been patched since; the copy's are open again.
    NfaInst& inst = insts_[hole >> 1];
    ((hole & 1) == 0 ? inst.out : inst.arg) = 0;
  }
  return copy;
}

Nfa::Fragment Nfa::CopyFragment(uint32_t begin, uint32_t end, const Fragment& fragment) {
  return AppendRelocated(insts_, begin, end, fragment.start, fragment.holes, nullptr);
}

void Nfa::Patch(const std::vector<uint32_t>& holes, uint32_t target) {
  for (uint32_t hole : holes) {
    NfaInst& inst = insts_[hole >> 1];
    if ((hole & 1) == 0) {
      inst.out = target;
    } else {
      inst.arg = target;
    }
  }
}

std::shared_ptr<const TerminalProgram> Nfa::CompileProgram(const RegexNode& node,
                                                           size_t max_instructions) {
  const Nfa alone({node}, max_instructions);
  // The kMatch is the last instruction; the fragment's holes are the fields patched to it.
  const auto match = static_cast<uint32_t>(alone.insts_.size() - 1);
  auto program = std::make_shared<TerminalProgram>();
  program->insts.assign(alone.insts_.begin(), alone.insts_.end() - 1);
  program->start = alone.starts_[0];
  for (uint32_t i = 0; i < match; ++i) {
    NfaInst& inst = program->insts[i];
    if (inst.op != NfaInst::Op::kMatch && inst.out == match) {
      program->holes.push_back(i << 1);
      inst.out = 0;
    }
    if (inst.op == NfaInst::Op::kSplit && inst.arg == match) {
      program->holes.push_back((i << 1) | 1);
      inst.arg = 0;
    }
  }
  program->class_sets = alone.class_sets_;
  program->classes = alone.classes_;
  return program;
}

Nfa::Fragment Nfa::CopyProgram(const TerminalProgram& program) {
  std::vector<uint32_t> class_of(program.classes.size());
  for (size_t k = 0; k < class_of.size(); ++k) {
    class_of[k] = ClassIndex(program.class_sets[k], &program.classes[k]);
  }
  return AppendRelocated(program.insts, 0, static_cast<uint32_t>(program.insts.size()),
                         program.start, program.holes, &class_of);
}

uint32_t Nfa::ClassIndex(const CodePointSet& set, const std::shared_ptr<const Utf8Class>* built) {
  const auto fresh = static_cast<uint32_t>(classes_.size());
  const auto [last, inserted] = class_index_.try_emplace(set.Hash(), fresh);
  uint32_t before = kNoClass;
  if (!inserted) {
    for (uint32_t i = last->second; i != kNoClass; i = same_hash_[i]) {
      if (class_sets_[i] == set) return i;
    }
    before = last->second;
    last->second = fresh;
  }
  class_sets_.push_back(set);
  classes_.push_back(built != nullptr ? *built : SharedUtf8Class(set));
  same_hash_.push_back(before);
  return fresh;
}

Nfa::Fragment Nfa::Compile(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kEmpty: {
      const uint32_t nop = Emit(NfaInst::Op::kNop, 0, 0);
      return {nop, {nop << 1}};
    }
    case RegexNode::Kind::kAssertBegin:
    case RegexNode::Kind::kAssertEnd: {
      const auto op = node.kind == RegexNode::Kind::kAssertBegin ? NfaInst::Op::kAssertBegin
                                                                 : NfaInst::Op::kAssertEnd;
      const uint32_t inst = Emit(op, 0, 0);
      return {inst, {inst << 1}};
    }
    case RegexNode::Kind::kClass: {
      const uint32_t inst = Emit(NfaInst::Op::kClass, 0, ClassIndex(node.set));
      return {inst, {inst << 1}};
    }
    case RegexNode::Kind::kConcat: {
      Fragment result = Compile(node.children[0]);
      for (size_t i = 1; i < node.children.size(); ++i) {
        Fragment next = Compile(node.children[i]);
        Patch(result.holes, next.start);
        result.holes = std::move(next.holes);
      }
      return result;
    }
    case RegexNode::Kind::kAlternate: {
      // Split chain: s0 -> (c0 | s1 -> (c1 | ... c_{k-1})).
      Fragment last = Compile(node.children.back());
      uint32_t entry = last.start;
      std::vector<uint32_t> holes = std::move(last.holes);
      for (size_t i = node.children.size() - 1; i-- > 0;) {
        Fragment branch = Compile(node.children[i]);
        entry = Emit(NfaInst::Op::kSplit, branch.start, entry);
        holes.insert(holes.end(), branch.holes.begin(), branch.holes.end());
      }
      return {entry, std::move(holes)};
    }
    case RegexNode::Kind::kRepeat:
      return CompileRepeat(node);
    case RegexNode::Kind::kExceptWords:
      return CompileWordsComplement(node);
    case RegexNode::Kind::kProduct:
      return CompileAutomaton(BuildProduct(node));
    case RegexNode::Kind::kAutomaton:
      return CompileAutomaton(*node.automaton);
    case RegexNode::Kind::kProgram:
      return CopyProgram(*node.program);
    case RegexNode::Kind::kNegativeLookahead:
    case RegexNode::Kind::kPositiveLookahead:
      break;  // the parser folds or refuses every lookahead
  }
  throw BudgetExceededError("unreachable regex node kind");
}

Nfa::Fragment Nfa::CompileRepeat(const RegexNode& node) {
  const RegexNode& body = node.children[0];
  if (node.max == 0) return Compile(RegexNode::Empty());
  // The body is compiled once; every further copy relocates its instructions (a long body
  // repeated {0,255} times would otherwise redo the AST walk and the class interning per copy).
  const uint32_t body_begin = static_cast<uint32_t>(insts_.size());
  const Fragment body_fragment = Compile(body);
  const uint32_t body_end = static_cast<uint32_t>(insts_.size());
  bool first_copy = true;
  auto next_copy = [&]() -> Fragment {
    if (first_copy) {
      first_copy = false;
      return body_fragment;
    }
    return CopyFragment(body_begin, body_end, body_fragment);
  };
  Fragment result{0, {}};
  bool have_result = false;
  auto append = [&](Fragment next) {
    if (have_result) {
      Patch(result.holes, next.start);
      result.holes = std::move(next.holes);
    } else {
      result = std::move(next);
      have_result = true;
    }
  };
  for (uint32_t i = 0; i < node.min; ++i) append(next_copy());
  if (node.max == RegexNode::kUnbounded) {
    // loop: split(body, exit); body -> loop
    Fragment copy = next_copy();
    const uint32_t loop = Emit(NfaInst::Op::kSplit, copy.start, 0);
    Patch(copy.holes, loop);
    append({loop, {(loop << 1) | 1}});
    return result;
  }
  // n - m optional copies: split(copy_1, exit); copy_1 -> split(copy_2, exit); ...
  std::vector<uint32_t> exits;
  for (uint32_t i = node.min; i < node.max; ++i) {
    Fragment copy = next_copy();
    const uint32_t split = Emit(NfaInst::Op::kSplit, copy.start, 0);
    exits.push_back((split << 1) | 1);
    append({split, std::move(copy.holes)});
  }
  result.holes.insert(result.holes.end(), exits.begin(), exits.end());
  return result;
}

// One NFA state per automaton state: a Split chain over its alternatives, each a kClass to the
// target state's entry or, for an accepting state, a kNop left open (a hole of the fragment).
// A transition set is emitted as its ASCII part and the rest, so the large non-ASCII classes
// ("any code point above U+007F but ...") are the same across states and share one Utf8Class.
void Nfa::AddTransition(const CodePointSet& set, uint32_t target,
                        std::vector<Alternative>* alts) {
  const auto& ranges = set.ranges();
  if (ranges.empty()) return;  // (reads nothing: no alternative, as the split gives)
  if (ranges.back().hi < 0x80 || ranges.front().lo >= 0x80) {
    alts->push_back({ClassIndex(set), target});  // one side of 0x80 only: no split
    return;
  }
  CodePointSet ascii;
  CodePointSet rest;
  set.SplitAtAscii(&ascii, &rest);
  if (!ascii.Empty()) alts->push_back({ClassIndex(ascii), target});
  if (!rest.Empty()) alts->push_back({ClassIndex(rest), target});
}

void Nfa::FinishState(bool accept, std::vector<Alternative>* alts) {
  if (accept) alts->push_back({kAcceptAlternative, 0});
  if (alts->empty()) alts->push_back({ClassIndex(CodePointSet()), 0});  // matches nothing
}

Nfa::Fragment Nfa::CompileAutomaton(const CodePointAutomaton& automaton) {
  Alternatives alternatives(automaton.states.size());
  for (size_t s = 0; s < automaton.states.size(); ++s) {
    for (const CodePointAutomaton::Transition& t : automaton.states[s].transitions) {
      AddTransition(t.set, t.target, &alternatives[s]);
    }
    FinishState(automaton.states[s].accept, &alternatives[s]);
  }
  return EmitAutomaton(alternatives);
}

Nfa::UnitDfaAlternatives& Nfa::UnitAlternatives(const std::shared_ptr<const CodePointDfa>& dfa) {
  auto [entry, fresh] = unit_dfa_alternatives_.try_emplace(dfa.get());
  UnitDfaAlternatives& unit = entry->second;
  if (!fresh) return unit;
  unit.dfa = dfa;
  unit.by_state.resize(dfa->size());
  unit.by_transition.resize(dfa->size());
  for (size_t s = 0; s < dfa->size(); ++s) {
    for (const auto& [set, target] : dfa->transitions(static_cast<int>(s))) {
      std::vector<Alternative>& alts = unit.by_transition[s].emplace_back();
      AddTransition(set, static_cast<uint32_t>(target), &alts);
      unit.by_state[s].insert(unit.by_state[s].end(), alts.begin(), alts.end());
    }
    FinishState(dfa->accept(static_cast<int>(s)), &unit.by_state[s]);
  }
  return unit;
}

const std::vector<Nfa::Alternative>& Nfa::LessOne(UnitDfaAlternatives* unit, int state,
                                                  size_t transition, uint32_t code_point) {
  const uint64_t key = (uint64_t{static_cast<uint32_t>(state)} << 42) |
                       (uint64_t{transition} << 21) | code_point;  // code points < 2^21
  auto [entry, fresh] = unit->less_one.try_emplace(key);
  if (fresh) {
    const auto& [set, target] = unit->dfa->transitions(state)[transition];
    CodePointSet rest = set;
    rest.Subtract(CodePointSet::Single(code_point));
    AddTransition(rest, static_cast<uint32_t>(target), &entry->second);
  }
  return entry->second;
}

uint32_t Nfa::SingleClass(UnitDfaAlternatives* unit, uint32_t code_point) {
  auto [entry, fresh] = unit->single.try_emplace(code_point, 0);
  if (fresh) entry->second = ClassIndex(CodePointSet::Single(code_point));
  return entry->second;
}

// The automaton of X* minus the words, read off the trie (except_words.h): per DFA transition
// of a node, its children's single classes, then the set less them to the DFA copy. With no
// child in the set that is the DFA's transition, shifted to the copy; with one child c, c's
// class and the set less c (both interned once per unit).
Nfa::Fragment Nfa::CompileWordsComplement(const RegexNode& node) {
  const WordsTrie trie = BuildWordsTrie(node.children[0], *node.except, node.offset);
  UnitDfaAlternatives& unit = UnitAlternatives(trie.dfa);
  const CodePointDfa& dfa = *trie.dfa;
  const uint32_t base = trie.live_nodes;  // the DFA copy's first state
  Alternatives alternatives(base + dfa.size());
  auto append_shifted = [base](const std::vector<Alternative>& from,
                               std::vector<Alternative>* to) {
    for (Alternative alt : from) {
      if (alt.cls != kAcceptAlternative) alt.target += base;
      to->push_back(alt);
    }
  };
  std::vector<uint32_t> taken;  // the children's code points in one transition's set
  for (const WordsTrie::Node& n : trie.nodes) {
    if (n.id < 0) continue;
    std::vector<Alternative>& alts = alternatives[static_cast<size_t>(n.id)];
    const size_t transitions = dfa.live(n.dfa) ? dfa.transitions(n.dfa).size() : 0;
    for (size_t k = 0; k < transitions; ++k) {
      const auto& [set, target] = dfa.transitions(n.dfa)[k];
      taken.clear();
      for (const auto& [c, child] : n.children) {
        const int child_id = trie.nodes[child].id;
        if (child_id < 0 || !set.Contains(c)) continue;
        alts.push_back({SingleClass(&unit, c), static_cast<uint32_t>(child_id)});
        taken.push_back(c);
      }
      if (taken.size() <= 1) {
        append_shifted(taken.empty() ? unit.by_transition[n.dfa][k]
                                     : LessOne(&unit, n.dfa, k, taken[0]), &alts);
        continue;
      }
      CodePointSet rest = set;
      CodePointSet children;
      for (uint32_t c : taken) children.Add(c);  // sorted: appends
      rest.Subtract(children);
      AddTransition(rest, base + static_cast<uint32_t>(target), &alts);
    }
    FinishState(trie.accepts(n), &alts);
  }
  for (size_t s = 0; s < dfa.size(); ++s) append_shifted(unit.by_state[s], &alternatives[base + s]);
  return EmitAutomaton(alternatives);
}

Nfa::Fragment Nfa::EmitAutomaton(const Alternatives& alternatives) {
  std::vector<uint32_t> entry(alternatives.size());
  uint32_t next = static_cast<uint32_t>(insts_.size());
  for (size_t s = 0; s < alternatives.size(); ++s) {
    entry[s] = next;
    next += static_cast<uint32_t>(2 * alternatives[s].size() - 1);
  }
  Reserve(next - insts_.size());
  std::vector<uint32_t> holes;
  for (const std::vector<Alternative>& alts : alternatives) {
    // Layout: split_0, alt_0, split_1, alt_1, ..., alt_last (split_k: out alt_k, arg split_k+1).
    for (size_t k = 0; k < alts.size(); ++k) {
      const bool last = k + 1 == alts.size();
      const uint32_t here = static_cast<uint32_t>(insts_.size());
      if (!last) Emit(NfaInst::Op::kSplit, here + 1, here + 2);
      const uint32_t alt = static_cast<uint32_t>(insts_.size());
      if (alts[k].cls == kAcceptAlternative) {
        Emit(NfaInst::Op::kNop, 0, 0);
        holes.push_back(alt << 1);
      } else {
        Emit(NfaInst::Op::kClass, entry[alts[k].target], alts[k].cls);
      }
    }
  }
  return {entry[0], std::move(holes)};
}

void Nfa::ComputeLiveness() {
  const uint32_t n = static_cast<uint32_t>(insts_.size());
  // Reverse epsilon and consuming edges, in compressed rows (one offsets array and one flat
  // array each: no per-instruction vectors).
  std::vector<uint32_t> epsilon_begin(n + 1, 0);
  std::vector<uint32_t> consuming_begin(n + 1, 0);
  auto for_each_edge = [&](auto&& epsilon, auto&& consuming) {
    for (uint32_t i = 0; i < n; ++i) {
      const NfaInst& inst = insts_[i];
      switch (inst.op) {
        case NfaInst::Op::kSplit:
          epsilon(inst.out, i);
          epsilon(inst.arg, i);
          break;
        case NfaInst::Op::kNop:
        case NfaInst::Op::kAssertEnd:
          epsilon(inst.out, i);
          break;
        case NfaInst::Op::kClass:
          if (!classes_[inst.arg]->Empty()) consuming(inst.out, i);
          break;
        case NfaInst::Op::kMatch:
        case NfaInst::Op::kAssertBegin:
          break;
      }
    }
  };
  for_each_edge([&](uint32_t to, uint32_t) { ++epsilon_begin[to + 1]; },
                [&](uint32_t to, uint32_t) { ++consuming_begin[to + 1]; });
  for (uint32_t i = 0; i < n; ++i) {
    epsilon_begin[i + 1] += epsilon_begin[i];
    consuming_begin[i + 1] += consuming_begin[i];
  }
  std::vector<uint32_t> epsilon_from(epsilon_begin[n]);
  std::vector<uint32_t> consuming_from(consuming_begin[n]);
  {
    std::vector<uint32_t> epsilon_fill(epsilon_begin.begin(), epsilon_begin.end() - 1);
    std::vector<uint32_t> consuming_fill(consuming_begin.begin(), consuming_begin.end() - 1);
    for_each_edge([&](uint32_t to, uint32_t from) { epsilon_from[epsilon_fill[to]++] = from; },
                  [&](uint32_t to, uint32_t from) {
                    consuming_from[consuming_fill[to]++] = from;
                  });
  }
  // 1. finishes[i]: a match is reachable from i through Split / Nop / AssertEnd only.
  std::vector<uint8_t> finishes(n, 0);
  std::vector<uint32_t> stack;
  for (uint32_t i = 0; i < n; ++i) {
    if (insts_[i].op == NfaInst::Op::kMatch) {
      finishes[i] = 1;
      stack.push_back(i);
    }
  }
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    for (uint32_t e = epsilon_begin[i]; e < epsilon_begin[i + 1]; ++e) {
      const uint32_t p = epsilon_from[e];
      if (!finishes[p]) {
        finishes[p] = 1;
        stack.push_back(p);
      }
    }
  }
  // 2. live[i]: a match is reachable from i, not at the start of the text. An AssertEnd is live
  // iff what follows it finishes without reading; other edges propagate liveness backwards.
  live_.assign(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const NfaInst& inst = insts_[i];
    if (inst.op == NfaInst::Op::kMatch ||
        (inst.op == NfaInst::Op::kAssertEnd && finishes[inst.out])) {
      live_[i] = 1;
      stack.push_back(i);
    }
  }
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    auto visit = [&](uint32_t p) {
      if (live_[p] || insts_[p].op == NfaInst::Op::kAssertEnd) return;
      live_[p] = 1;
      stack.push_back(p);
    };
    for (uint32_t e = epsilon_begin[i]; e < epsilon_begin[i + 1]; ++e) visit(epsilon_from[e]);
    for (uint32_t e = consuming_begin[i]; e < consuming_begin[i + 1]; ++e) {
      visit(consuming_from[e]);
    }
  }
}

std::vector<bool> Nfa::TerminalsMatchingNothing() const {
  std::vector<bool> empty(starts_.size(), true);
  std::vector<uint8_t> seen(insts_.size(), 0);  // bit 0: visited plain, bit 1: past a `$`
  std::vector<std::pair<uint32_t, bool>> stack;
  for (size_t t = 0; t < starts_.size(); ++t) {
    stack.assign(1, {starts_[t], false});
    while (!stack.empty() && empty[t]) {
      const auto [id, end_only] = stack.back();
      stack.pop_back();
      const uint8_t bit = end_only ? 2 : 1;
      if (seen[id] & bit) continue;
      seen[id] |= bit;
      const NfaInst& inst = insts_[id];
      switch (inst.op) {
        case NfaInst::Op::kClass:
          if (!end_only && live_[id]) empty[t] = false;
          break;
        case NfaInst::Op::kMatch:
          empty[t] = false;
          break;
        case NfaInst::Op::kSplit:
          stack.emplace_back(inst.arg, end_only);
          stack.emplace_back(inst.out, end_only);
          break;
        case NfaInst::Op::kNop:
        case NfaInst::Op::kAssertBegin:  // the start of the text: passes
          stack.emplace_back(inst.out, end_only);
          break;
        case NfaInst::Op::kAssertEnd:
          stack.emplace_back(inst.out, true);
          break;
      }
    }
  }
  return empty;
}

}  // namespace jaxguide
