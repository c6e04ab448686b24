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
#ifndef JAXGUIDE_NATIVE_LEXER_PINNED_TERMINALS_H_
#define JAXGUIDE_NATIVE_LEXER_PINNED_TERMINALS_H_

#include <cstddef>
#include <memory>
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

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_PINNED_TERMINALS_H_
