// Pinned terminals: regexes that a front-end writes into every grammar it lowers (JSON's
// punctuation, strings, numbers), parsed and compiled once per process and kept.
//
// Contract. PinTerminalRegexes parses each regex (default dialect, as CompiledGrammar parses a
// terminal) and compiles it alone (Nfa::CompileProgram); its classes are pinned too
// (PinnedUtf8Class), so other terminals reading the same classes find them built. A grammar
// terminal whose regex is pinned copies the program: the NFA is instruction for instruction
// the one its regex compiles to. Nothing clears the pins (ClearSharedUtf8Classes keeps them:
// they are the library's own tables, not a cache of what grammars were compiled). At most
// kMaxPinnedTerminals regexes; thread-safe (lookups take a mutex held across fork()).
//
// Pinned suffixes and except units: what ends the front-end's key terminals (`"` and a
// layout's colon) and the string unit `(?:X)` of its "any key but these names" terminals.
// ShapedTerminal builds, without the regex parser, the node of a regex that is
//   * a non-empty run of ASCII literals (a character that is no regex syntax, or a backslash
//     and an ASCII punctuation character or space) followed by a pinned suffix S, or
//   * `"(?!(?:w1|...|wn)")` (each wi such a run, without `"`), a pinned except unit (?:X),
//     `*` and a pinned suffix S that starts with a `"` read once,
// namely the literals' classes (or the except-words node over X*'s memoized DFA) and S's
// program copied (RegexNode::kProgram): the NFA is instruction for instruction the one the
// parsed regex compiles to. Anything else is std::nullopt (parse the regex). A suffix must be
// a plain regex (classes, groups, repeats; no anchor or lookahead, no top-level `|`, not
// empty, not starting with a quantifier); an except unit a group `(?:X)` whose X* has a DFA
// within except_words.h's budgets. Pinning an except unit also pins the classes that any
// except-words automaton over it compiles to (each ASCII character, and the unit's ASCII
// characters but one: PinExceptWordsClasses in the .cc), a bounded set independent of words.
#ifndef JAXGUIDE_NATIVE_LEXER_PINNED_TERMINALS_H_
#define JAXGUIDE_NATIVE_LEXER_PINNED_TERMINALS_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "native/lexer/nfa.h"

namespace jaxguide {

inline constexpr size_t kMaxPinnedTerminals = 64;

// Pins each regex not pinned yet. Throws RegexError for a regex that does not parse and
// std::length_error past kMaxPinnedTerminals; no regex of that call is pinned then.
void PinTerminalRegexes(const std::vector<std::string>& regexes);
// The pinned program of `regex`, or null.
std::shared_ptr<const TerminalProgram> FindPinnedTerminal(const std::string& regex);
size_t NumPinnedTerminals();

// Pins each suffix and except unit not pinned yet (at most kMaxPinnedTerminals of each).
// Throws RegexError for one that does not parse, std::invalid_argument for one of another
// shape than the header says, std::length_error past the limit; nothing of that call is
// pinned then.
void PinTerminalSuffixes(const std::vector<std::string>& suffixes,
                         const std::vector<std::string>& except_units);
// The node of `regex` built from pinned suffixes (see above), or std::nullopt.
std::optional<RegexNode> ShapedTerminal(const std::string& regex);
size_t NumPinnedSuffixes();

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_PINNED_TERMINALS_H_
