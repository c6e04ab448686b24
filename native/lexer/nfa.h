// Nfa: the terminals of a lexer compiled into one Thompson NFA whose consuming instructions read
// a whole code point through a shared Utf8Class byte automaton (design note in nfa.cc).
//
// Contract: terminal t starts at start(t) and ends in a kMatch instruction whose `arg` is t.
// Instruction counts are bounded by the max_instructions budget (BudgetExceededError, naming the
// budget, when counted repetition such as (?:a{1000}){1000} would exceed it). live(i) is true
// for a kClass instruction iff after consuming one of its code points some continuation of the
// text reaches a kMatch (asserts taken into account); the lazy DFA keeps only live threads, so
// a DFA state with no threads is exactly the dead state. Immutable after construction.
#ifndef JAXGUIDE_NATIVE_LEXER_NFA_H_
#define JAXGUIDE_NATIVE_LEXER_NFA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native/lexer/code_point_dfa.h"
#include "native/lexer/regex_ast.h"
#include "native/lexer/utf8_class.h"

namespace jaxguide {

struct NfaInst {
  enum class Op : uint8_t {
    kClass,        // read one code point of classes[arg], then go to out
    kSplit,        // epsilon to out and to arg
    kNop,          // epsilon to out
    kMatch,        // terminal arg matched
    kAssertBegin,  // epsilon to out, only at the start of the text
    kAssertEnd,    // epsilon to out, only at the end of the text (nothing may be read after)
  };
  Op op;
  uint32_t out;
  uint32_t arg;
};

// One terminal compiled on its own (Nfa::CompileProgram), for copying into any Nfa in place of
// compiling its regex again (pinned_terminals.h): instructions numbered from 0 without the
// kMatch, the fragment's start and open holes (where the terminal ends), and the classes its
// kClass instructions read (their `arg` indexes class_sets / classes). Immutable.
struct TerminalProgram {
  std::vector<NfaInst> insts;
  uint32_t start = 0;
  std::vector<uint32_t> holes;  // (inst << 1) | 0 for out, | 1 for arg
  std::vector<CodePointSet> class_sets;
  std::vector<std::shared_ptr<const Utf8Class>> classes;
};

class Nfa {
 public:
  static constexpr size_t kDefaultMaxInstructions = size_t{1} << 20;
  using Programs = std::vector<std::shared_ptr<const TerminalProgram>>;

  // Throws BudgetExceededError if the program would exceed max_instructions. Terminal t copies
  // programs[t] where programs has a non-null entry for it (its RegexNode is then not read), and
  // compiles terminals[t] otherwise: the same instructions either way.
  explicit Nfa(const std::vector<RegexNode>& terminals,
               size_t max_instructions = kDefaultMaxInstructions, const Programs& programs = {});

  // `node` compiled alone, its classes from SharedUtf8Class (within max_instructions).
  static std::shared_ptr<const TerminalProgram> CompileProgram(
      const RegexNode& node, size_t max_instructions = kDefaultMaxInstructions);

  const std::vector<NfaInst>& insts() const { return insts_; }
  const NfaInst& inst(uint32_t i) const { return insts_[i]; }
  const std::vector<std::shared_ptr<const Utf8Class>>& classes() const { return classes_; }
  const Utf8Class& cls(uint32_t index) const { return *classes_[index]; }
  // The code points class `index` reads (what cls(index) was built from).
  const CodePointSet& class_set(uint32_t index) const { return class_sets_[index]; }
  size_t num_terminals() const { return starts_.size(); }
  uint32_t start(size_t terminal) const { return starts_[terminal]; }
  uint32_t terminal_of(uint32_t inst) const { return terminal_of_[inst]; }
  bool live(uint32_t inst) const { return live_[inst] != 0; }
  // Per terminal: whether its regex matches no string at all, anchors taken into account (`a^b`,
  // `$a`, `[^\s\S]`): the epsilon closure of its start at the start of the text reaches neither
  // a kMatch nor a live kClass. One pass over the epsilon edges, at most two visits per
  // instruction (plain and past a `$`), so O(instructions) for all terminals together: bounded
  // by the max_instructions budget.
  std::vector<bool> TerminalsMatchingNothing() const;
  size_t MemoryBytes() const;

 private:
  struct Fragment {
    uint32_t start;
    std::vector<uint32_t> holes;  // (inst << 1) | 0 for out, | 1 for arg
  };

  void Reserve(size_t count) const;  // throws BudgetExceededError past max_instructions
  uint32_t Emit(NfaInst::Op op, uint32_t out, uint32_t arg);
  // Appends a copy of instructions [begin, end), which hold `fragment` (built by Compile
  // since), with targets relocated; the copy's holes are open (0), listed in its Fragment.
  Fragment CopyFragment(uint32_t begin, uint32_t end, const Fragment& fragment);
  // Appends source[begin, end) (a fragment starting at `start` with `holes`, numbered as in
  // source) with targets relocated and, when class_of is given, class indexes mapped through
  // it; the copy's holes are open (0). CopyFragment and CopyProgram.
  Fragment AppendRelocated(const std::vector<NfaInst>& source, uint32_t begin, uint32_t end,
                           uint32_t start, const std::vector<uint32_t>& holes,
                           const std::vector<uint32_t>* class_of);
  void Patch(const std::vector<uint32_t>& holes, uint32_t target);
  Fragment Compile(const RegexNode& node);
  Fragment CompileRepeat(const RegexNode& node);
  // Appends `program`'s instructions relocated, its classes interned (ClassIndex).
  Fragment CopyProgram(const TerminalProgram& program);
  // An explicit automaton as instructions: one Split chain per state over its alternatives, a
  // kClass each (a transition set split at U+0080) and an open kNop where the state accepts.
  struct Alternative {
    uint32_t cls;     // class index, or kAcceptAlternative
    uint32_t target;  // automaton state
  };
  static constexpr uint32_t kAcceptAlternative = 0xFFFFFFFFu;
  using Alternatives = std::vector<std::vector<Alternative>>;  // per automaton state
  // Appends the alternatives of a state's transition (none for an empty set).
  void AddTransition(const CodePointSet& set, uint32_t target, std::vector<Alternative>* alts);
  // Completes a state's alternatives: the accepting one, or a class of nothing if it has none.
  void FinishState(bool accept, std::vector<Alternative>* alts);
  Fragment EmitAutomaton(const Alternatives& alternatives);
  Fragment CompileAutomaton(const CodePointAutomaton& automaton);  // regex_product.h, automata
  // A kExceptWords node (except_words.h): its trie's states, then its unit DFA's. What does
  // not depend on the words is interned once per unit DFA (UnitDfaAlternatives).
  Fragment CompileWordsComplement(const RegexNode& node);
  // During construction: for each unit DFA of the except-words terminals, the alternatives of
  // its states (targets numbered as in the DFA): per state, per transition of a state, and per
  // transition less one code point (a trie node with one child in the set); and the class of
  // each child code point alone.
  struct UnitDfaAlternatives {
    std::shared_ptr<const CodePointDfa> dfa;  // keeps the key of unit_dfa_alternatives_ alive
    Alternatives by_state;
    std::vector<Alternatives> by_transition;                          // [state][transition]
    std::unordered_map<uint64_t, std::vector<Alternative>> less_one;  // LessOne's key
    std::unordered_map<uint32_t, uint32_t> single;                    // code point -> class
  };
  UnitDfaAlternatives& UnitAlternatives(const std::shared_ptr<const CodePointDfa>& dfa);
  const std::vector<Alternative>& LessOne(UnitDfaAlternatives* unit, int state, size_t transition,
                                          uint32_t code_point);
  uint32_t SingleClass(UnitDfaAlternatives* unit, uint32_t code_point);
  // The index of `set`'s class, interned: `built` (when given) is its Utf8Class, else
  // SharedUtf8Class builds or finds it.
  uint32_t ClassIndex(const CodePointSet& set,
                      const std::shared_ptr<const Utf8Class>* built = nullptr);
  void ComputeLiveness();

  std::vector<NfaInst> insts_;
  std::vector<std::shared_ptr<const Utf8Class>> classes_;  // shared across grammars
  std::vector<CodePointSet> class_sets_;  // parallel to classes_, for sharing
  // Interning: set hash -> the last class with that hash; same_hash_[c] -> the class before c
  // with c's hash (kNoClass ends the chain). No container per hash (hot: one per class).
  static constexpr uint32_t kNoClass = 0xFFFFFFFFu;
  std::unordered_map<size_t, uint32_t> class_index_;
  std::vector<uint32_t> same_hash_;
  std::unordered_map<const CodePointDfa*, UnitDfaAlternatives> unit_dfa_alternatives_;
  std::vector<uint32_t> starts_;
  std::vector<uint32_t> terminal_of_;
  std::vector<uint8_t> live_;
  size_t max_instructions_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_NFA_H_
