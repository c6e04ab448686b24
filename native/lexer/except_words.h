// BuildWordsComplement: the automaton of X* minus a finite set of words (RegexNode::kExceptWords,
// what the regex `(?!(?:w1|...|wn)T)(?:X)*T` becomes), built directly instead of through a
// regex that spells the complement out (design note in except_words.cc).
//
// Contract: BuildWordsComplement(unit, except, offset) returns a code-point automaton whose
// language is exactly {x in X* : x is none of except.words}; state 0 is the start; every
// transition set is non-empty. It throws RegexError at `offset` when X holds an anchor, when the
// DFA of X* exceeds kMaxUnitDfaStates, or when some word followed by except.stop is a prefix
// of a string of X* (then the lookahead would exclude more than the word itself and the
// rewrite would not be exact). Work: O(DFA states * interval count * NFA size) for X* (X is a
// small unit regex, capped by kMaxUnitDfaStates) plus O(total word length * transitions).
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

CodePointAutomaton BuildWordsComplement(const RegexNode& unit,
                                        const RegexNode::ExceptWords& except, size_t offset);

// The DFA of unit* that BuildWordsComplement reads (unless except.unit_dfa is given): built once
// per distinct unit structure and kept for the process (a table, not a schema-keyed cache: in
// practice the JSON front-end's one string unit). Throws RegexError as BuildWordsComplement.
std::shared_ptr<const CodePointDfa> MemoizedUnitDfa(const RegexNode& unit, size_t offset);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_EXCEPT_WORDS_H_
