// BuildProduct: the code-point automaton of a RegexNode::kProduct, the strings of a base regex
// that some regexes also match and others do not (design note in regex_product.cc).
//
// The parser makes a kProduct from lookaheads before a group that a literal T follows:
// `(?=(?:A)T)(?!(?:C)T)(?:B)T` is B, also in A, not in C, then T. Python's `re` reads the same
// pattern with the same meaning as long as a lookahead's match can only end at the T after B
// (checked here: where A or C accepts, B cannot read T, and where B accepts, A and C cannot),
// so a front-end can write an intersection or difference that re, the test oracles and this
// lexer all agree on (JSON string content: T is the closing quote, which units only hold
// escaped, after a backslash). The JSON Schema compiler writes
// `"(?=(?:LENGTH)")(?:PATTERN)"` for a string with minLength/maxLength and a pattern.
//
// Contract: BuildProduct(node) returns an automaton whose language is exactly the product's;
// state 0 is the start; every state is live (some continuation is accepted) except a start
// state of an empty language, which has no transitions and does not accept. It throws
// RegexError at the node's offset when a part holds an anchor or a lookahead, when the rewrite
// would not be exact (above), or when a part's NFA or DFA or the product exceeds its budget
// (kMaxProduct*). A part X{m,n} whose unit X is a prefix code (a length bound over string units)
// is counted, not built as a DFA of n copies of X: its budget is X's DFA's, and the product's
// states bound the rest. Work: O(product states x (intervals + transitions of the parts)),
// bounded by kMaxProductStates.
#ifndef JAXGUIDE_NATIVE_LEXER_REGEX_PRODUCT_H_
#define JAXGUIDE_NATIVE_LEXER_REGEX_PRODUCT_H_

#include <cstddef>

#include "native/lexer/code_point_dfa.h"
#include "native/lexer/regex_ast.h"

namespace jaxguide {

// Budgets: the NFA and DFA of each part, and the product's states.
inline constexpr size_t kMaxProductPartNfaStates = size_t{1} << 18;
inline constexpr size_t kMaxProductPartDfaStates = size_t{1} << 16;
inline constexpr size_t kMaxProductStates = size_t{1} << 16;

CodePointAutomaton BuildProduct(const RegexNode& node);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_REGEX_PRODUCT_H_
