// RegexNode: the parsed form of one regular expression, independent of the surface syntax
// (Python `re` or ECMA-262). Every character-matching construct (literal, escape, class, `.`,
// case-insensitive literal) is already lowered to a CodePointSet, so later stages only see
// sets, concatenation, alternation, counted repetition and the two text-boundary assertions.
//
// Contract: children of kConcat / kAlternate are in order; kRepeat has exactly one child and
// min <= max (max == kUnbounded for `*`, `+`, `{m,}`). Lazy quantifiers are plain repeats (same
// language). kAssertBegin / kAssertEnd are exact: they hold at the start / end of the whole text.
#ifndef JAXGUIDE_NATIVE_LEXER_REGEX_AST_H_
#define JAXGUIDE_NATIVE_LEXER_REGEX_AST_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "native/lexer/code_point_set.h"

namespace jaxguide {

struct CodePointAutomaton;  // code_point_dfa.h
class CodePointDfa;         // code_point_dfa.h
struct TerminalProgram;     // nfa.h

struct RegexNode {
  enum class Kind : uint8_t {
    kEmpty,        // matches the empty string
    kClass,        // one code point from `set` (an empty set matches nothing)
    kConcat,       // children in sequence
    kAlternate,    // any one child
    kRepeat,       // child repeated min..max times
    kAssertBegin,  // zero-width: only at the start of the text
    kAssertEnd,    // zero-width: only at the end of the text
    kExceptWords,  // child* minus the strings of `except` (see ExceptWords)
    kNegativeLookahead,  // parser-internal: `(?!child)`, before it becomes kExceptWords
                         // or part of a kProduct
    kPositiveLookahead,  // parser-internal: `(?=child)`, before it becomes part of a kProduct
    kProduct,            // children[0] that each condition accepts or refuses (see Product)
    kAutomaton,          // the strings `automaton` accepts (an explicit automaton from the
                         // grammar IR, e.g. JSON Schema's multipleOf digit automata)
    kProgram,            // `program` (a pinned suffix, compiled once: pinned_terminals.h),
                         // copied into the NFA as it is; never made by the parser
  };
  // kExceptWords: the strings of children[0]* other than `words`. The parser makes one from
  // `(?!(?:w1|...|wn)T)(?:X)*` followed by the literal T (T ends every alternative and occurs
  // nowhere else in them); `stop` is T, kept so that the NFA compiler can check that the
  // rewrite is exact (no wi T is a prefix of a string of X*: see except_words.h).
  struct ExceptWords {
    std::vector<std::vector<uint32_t>> words;
    uint32_t stop = 0;
    // The DFA of children[0]* when the node was built without parsing its unit (then
    // children[0] is empty: pinned_terminals.h); null: built or found from children[0].
    std::shared_ptr<const CodePointDfa> unit_dfa;
  };
  // kProduct: the strings of children[0] that children[i + 1] matches where positive[i], and
  // does not match where !positive[i]. The parser makes one from lookaheads `(?=(?:A)T)` /
  // `(?!(?:C)T)` before `(?:B)T` with a literal T that no string of A, B, C holds (see
  // regex_product.h).
  struct Product {
    std::vector<bool> positive;
    uint32_t stop = 0;
  };
  static constexpr uint32_t kUnbounded = 0xFFFFFFFFu;

  Kind kind = Kind::kEmpty;
  CodePointSet set;                 // kClass
  std::vector<RegexNode> children;  // kConcat, kAlternate, kRepeat (one child)
  uint32_t min = 0;                 // kRepeat
  uint32_t max = 0;                 // kRepeat; kUnbounded for no upper bound
  size_t offset = 0;                // position in the pattern (code points), for errors
  std::shared_ptr<const ExceptWords> except;  // kExceptWords
  std::shared_ptr<const Product> product;     // kProduct
  std::shared_ptr<const CodePointAutomaton> automaton;  // kAutomaton
  std::shared_ptr<const TerminalProgram> program;       // kProgram

  static RegexNode Empty(size_t offset = 0);
  static RegexNode Class(CodePointSet set, size_t offset = 0);
  static RegexNode Concat(std::vector<RegexNode> children, size_t offset = 0);
  static RegexNode Alternate(std::vector<RegexNode> children, size_t offset = 0);
  static RegexNode Repeat(RegexNode child, uint32_t min, uint32_t max, size_t offset = 0);
  static RegexNode Assert(Kind kind, size_t offset = 0);
  static RegexNode Except(RegexNode unit, ExceptWords except, size_t offset = 0);
  static RegexNode MakeProduct(std::vector<RegexNode> children, Product product,
                               size_t offset = 0);
  static RegexNode Automaton(std::shared_ptr<const CodePointAutomaton> automaton);
  // `program` must not be empty of code points (a pinned suffix reads at least one).
  static RegexNode Program(std::shared_ptr<const TerminalProgram> program, size_t offset = 0);

  // True if the node can only match the empty string (assertions, empty groups).
  bool IsZeroWidth() const;
  // A compact debug rendering, e.g. `(cat [0x61] (rep 0 inf [0x30-0x39]))`; used by tests.
  std::string ToString() const;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_REGEX_AST_H_
