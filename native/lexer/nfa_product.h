// BuildNfaProduct: the product DFA of several NFAs over code points that arrive as tables: the
// JSON Schema front-end's key classes, pattern intersections and product budgets
// (jaxguide/grammars/json_schema/automata.py builds the NFAs, Thompson's construction over its
// ECMA pattern syntax, and writes the DFA back as regexes). Design note in nfa_product.cc.
//
// Contract: code points are partitioned into `atoms` intervals, numbered 0..atoms-1. An NFA is
// eps[s] (epsilon targets of state s), edges[s] (label, target) pairs and labels[l] (the atom
// intervals [first, end) of label l), with a start and an end (accepting) state. A product state
// is the tuple of the NFAs' state sets (each closed under epsilon); the start is the tuple of
// the start states' closures; the tuple of empty sets is a state like any other. States are
// numbered breadth first, a state's new successors in atom order: the numbering of the Python
// construction (`automata.Dfa`), which the front-end's regexes depend on. Returns nullopt when
// more than `max_states` states are reachable. The tables must be valid (ids in range: the
// binding checks them). Work: O(states x nfas x (edges of the member states + segments x
// set words)), bounded by max_states.
#ifndef JAXGUIDE_NATIVE_LEXER_NFA_PRODUCT_H_
#define JAXGUIDE_NATIVE_LEXER_NFA_PRODUCT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace jaxguide {

struct NfaTables {
  std::vector<std::vector<uint32_t>> eps;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> edges;   // (label, target)
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> labels;  // atom intervals [first, end)
  uint32_t start = 0;
  uint32_t end = 0;
};

struct NfaProduct {
  size_t states = 0;
  std::vector<uint32_t> transitions;  // [states x atoms]: the successor on each atom
  std::vector<uint8_t> accepts;       // [states x nfas]: 1 where that NFA's end is in the set
};

std::optional<NfaProduct> BuildNfaProduct(const std::vector<NfaTables>& nfas, uint32_t atoms,
                                          size_t max_states);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_NFA_PRODUCT_H_
