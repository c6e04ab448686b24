// EliminateStates: a DFA over code point atoms written back as a regex, by state elimination:
// the JSON Schema front-end's key classes and pattern products (jaxguide/grammars/json_schema/
// automata.py, Dfa.regex, whose Python construction is the specification this mirrors). Design
// note in state_elimination.cc.
//
// Contract: `transitions` is [states x atoms] row-major (the successor of each state on each
// atom), state 0 the start, `final[s]` whether s accepts. `piece(atoms)` writes the regex of one
// edge, given the atoms (ascending) on which a state steps to one target; nullopt: no edge. The
// result is exactly the Python construction's string: live states only (a final state is
// reachable), eliminated in order of least degree (successors + predecessors), the lowest state
// first among equals; eliminating k turns each a -> k -> b into
// wrap(a->k) (?:k->k)* wrap(k->b), appended to an existing a -> b as `old|new`, where wrap
// groups a regex holding `|` as (?:...). Lengths count code points (pieces are UTF-8).
// Work: O(live^2) steps over strings capped at `max_chars` code points each.
#ifndef JAXGUIDE_NATIVE_LEXER_STATE_ELIMINATION_H_
#define JAXGUIDE_NATIVE_LEXER_STATE_ELIMINATION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace jaxguide {

struct EliminationResult {
  enum class Status : uint8_t {
    kRegex,          // `regex` is the language (possibly empty: only the empty string)
    kNoString,       // no final state is reachable from the start
    kTooManyStates,  // more than max_states live states (none eliminated)
    kTooLong,        // a regex passed max_chars code points
  };
  Status status = Status::kNoString;
  std::string regex;
  size_t live_states = 0;
};

using EdgePiece = std::function<std::optional<std::string>(const std::vector<uint32_t>& atoms)>;

// max_states == 0: no bound on live states.
EliminationResult EliminateStates(const uint32_t* transitions, size_t states, size_t atoms,
                                  const std::vector<uint8_t>& final, const EdgePiece& piece,
                                  size_t max_states, size_t max_chars);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_STATE_ELIMINATION_H_
