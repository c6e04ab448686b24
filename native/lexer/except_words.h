// BuildWordsTrie: what the automaton of X* minus a finite set of words is read from
// (RegexNode::kExceptWords, what the regex `(?!(?:w1|...|wn)T)(?:X)*T` becomes), so that the
// NFA compiler builds it directly (Nfa::CompileWordsComplement) instead of through a regex that
// spells the complement out (design note in except_words.cc).
//
// Contract: BuildWordsTrie(unit, except, offset) returns the words' trie paired with X*'s DFA
// (WordsTrie below), whose automaton has the language {x in X* : x is none of except.words}.
// It throws RegexError at `offset` when X holds an anchor, when the DFA of X* exceeds
// kMaxUnitDfaStates, or when some word followed by except.stop is a prefix of a string of X*
// (then the lookahead would exclude more than the word itself and the rewrite would not be
// exact). Work: O(DFA states * interval count * NFA size) for X* (X is a small unit regex,
// capped by kMaxUnitDfaStates, and memoized) plus O(total word length).
#ifndef JAXGUIDE_NATIVE_LEXER_EXCEPT_WORDS_H_
#define JAXGUIDE_NATIVE_LEXER_EXCEPT_WORDS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "native/lexer/code_point_dfa.h"
#include "native/lexer/code_point_set.h"
#include "native/lexer/regex_ast.h"

namespace jaxguide {

// Budgets of the unit X (a small regex such as one JSON string unit): its NFA and X*'s DFA.
inline constexpr size_t kMaxUnitNfaStates = 4096;
inline constexpr size_t kMaxUnitDfaStates = 256;

// The words' trie, each node paired with the state of X*'s DFA after its string: the states
// of the automaton. Node 0 is the root and the start; a node's `id` is its state (-1: a node
// whose string is no prefix of X*, never reached); ids run over [0, live_nodes), and state
// live_nodes + s is the DFA's state s (the DFA copy, the same in every complement over one
// unit: the NFA compiler compiles its states once per lexer). From a node, a code point of a
// DFA transition's set goes to the child it names, else to the copy of that transition's
// target; a node accepts iff `accepts` says so, a copy iff its DFA state accepts.
struct WordsTrie {
  struct Node {
    int dfa = CodePointDfa::kDead;
    bool word_end = false;
    int id = -1;
    std::vector<std::pair<uint32_t, uint32_t>> children;  // (code point, node), sorted
  };
  std::shared_ptr<const CodePointDfa> dfa;
  std::vector<Node> nodes;
  uint32_t live_nodes = 0;
  // Whether an automaton state of this node accepts (its DFA state does, no word ends there).
  bool accepts(const Node& node) const {
    return dfa->live(node.dfa) && dfa->accept(node.dfa) && !node.word_end;
  }
};
WordsTrie BuildWordsTrie(const RegexNode& unit, const RegexNode::ExceptWords& except,
                         size_t offset);

// The DFA of unit* that BuildWordsTrie reads (unless except.unit_dfa is given): built once per
// distinct unit structure and kept for the process (a table, not a schema-keyed cache: in
// practice the JSON front-end's one string unit). Throws RegexError as BuildWordsTrie.
std::shared_ptr<const CodePointDfa> MemoizedUnitDfa(const RegexNode& unit, size_t offset);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_EXCEPT_WORDS_H_
