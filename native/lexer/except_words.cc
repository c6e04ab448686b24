// The words' trie of an except-words node (BuildWordsTrie).
//
// Design note. "Any JSON string except the declared property names" used to reach the lexer as
// a regex that spells the complement out: a trie of the names whose every diverging branch ends
// in (unit)*. For a few hundred names that regex is tens of kilobytes, and writing it (Python),
// parsing it and compiling it to an NFA was most of a typical schema's compile time. The regex
// now says it with a negative lookahead, `"(?!(?:a|b)")(?:unit)*"`, which Python's `re` reads
// with the same meaning, and the automaton is built directly (this file reads the trie, the NFA
// compiler the automaton):
//
// 1. A DFA of X* over code points (code_point_dfa.h; dead states dropped).
// 2. The product with the trie of the words. Every trie node is reached by one string, so it
//    pairs with one DFA state: the node's state is the DFA state after its string. From a node,
//    a code point that continues some word goes to that child; any other code point leaves
//    the trie for good (the text is then none of the words) and goes to a plain copy of the
//    DFA. A node accepts iff its DFA state accepts and no word ends there; a DFA copy accepts
//    iff its DFA state does.
// 3. The DFA copy is the same in every complement over one unit, and a trie node's transitions
//    are its DFA state's, less its children: so the NFA compiler reads the trie (BuildWordsTrie)
//    and compiles the copy's states and those transitions once per lexer
//    (Nfa::CompileWordsComplement), not once per terminal and node (a Kubernetes schema has
//    ~90 such terminals).
//
// Exactness of the lookahead rewrite, for x in X* followed by T: "x T ... starts with w T" iff
// x = w, provided T does not occur in w (else x T could be a proper prefix of w T) and w T is
// not a prefix of any string of X* (else a longer x could start with w T). The first is checked
// by the parser, the second here on the DFA: from w's state, reading T must lead nowhere live.
#include "native/lexer/except_words.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "native/lexer/code_point_dfa.h"
#include "native/lexer/regex_error.h"
#include "native/support/fork_locks.h"

namespace jaxguide {
namespace {

constexpr int kDead = CodePointDfa::kDead;

// Unit DFAs by the unit's structure (AppendKey). In practice one entry: the JSON
// Schema compiler's canonical string unit, the same for every schema, so this is a table built
// on first use rather than a schema-keyed cache (jaxguide.clear_caches() leaves it). Bounded:
// past kMaxMemoizedUnitDfas distinct units, a DFA is built for its caller only.
constexpr size_t kMaxMemoizedUnitDfas = 16;

struct UnitDfaMemo {
  std::mutex mutex;
  ForkLockRegistration fork_lock{&mutex};  // held across fork() (fork_locks.h)
  std::unordered_map<std::string, std::shared_ptr<const CodePointDfa>> by_unit;
};

// The structure of a unit regex as bytes (kinds, counts, ranges): equal keys, equal languages.
void AppendKey(const RegexNode& node, std::string* key) {
  auto append = [&](uint32_t value) { key->append(reinterpret_cast<const char*>(&value), 4); };
  append(static_cast<uint32_t>(node.kind));
  append(node.min);
  append(node.max);
  append(static_cast<uint32_t>(node.set.ranges().size()));
  key->append(reinterpret_cast<const char*>(node.set.ranges().data()),
              node.set.ranges().size() * sizeof(CodePointRange));
  append(static_cast<uint32_t>(node.children.size()));
  for (const RegexNode& child : node.children) AppendKey(child, key);
  if (node.except != nullptr) append(0xFFFFFFFFu);  // refused by CodePointDfa anyway
}

}  // namespace

std::shared_ptr<const CodePointDfa> MemoizedUnitDfa(const RegexNode& unit, size_t offset) {
  // Never destroyed: safe during static teardown.
  static UnitDfaMemo* const memo = new UnitDfaMemo();
  std::string key;
  AppendKey(unit, &key);
  {
    std::lock_guard<std::mutex> lock(memo->mutex);
    auto found = memo->by_unit.find(key);
    if (found != memo->by_unit.end()) return found->second;
  }
  auto dfa = std::make_shared<const CodePointDfa>(  // may throw RegexError
      unit, true, CodePointDfa::Limits{kMaxUnitNfaStates, kMaxUnitDfaStates},
      "the repeated group after a lookahead", offset);
  std::lock_guard<std::mutex> lock(memo->mutex);
  if (memo->by_unit.size() < kMaxMemoizedUnitDfas) memo->by_unit.emplace(std::move(key), dfa);
  return dfa;
}

namespace {

// The trie of the words (sorted first, so each word shares a prefix only with the previous
// one and children arrive in order), each node paired with the DFA state after its string.
std::vector<WordsTrie::Node> BuildTrie(const CodePointDfa& dfa,
                                       std::vector<std::vector<uint32_t>> words) {
  std::sort(words.begin(), words.end());
  std::vector<WordsTrie::Node> trie(1);
  trie[0].dfa = 0;
  for (const std::vector<uint32_t>& word : words) {
    uint32_t node = 0;
    for (uint32_t c : word) {
      auto& kids = trie[node].children;
      if (!kids.empty() && kids.back().first == c) {
        node = kids.back().second;
        continue;
      }
      const int parent_dfa = trie[node].dfa;
      const uint32_t child = static_cast<uint32_t>(trie.size());
      kids.emplace_back(c, child);
      trie.push_back({});
      trie[child].dfa = dfa.live(parent_dfa) ? dfa.Next(parent_dfa, c) : kDead;
      node = child;
    }
    trie[node].word_end = true;
  }
  return trie;
}

}  // namespace

WordsTrie BuildWordsTrie(const RegexNode& unit, const RegexNode::ExceptWords& except,
                         size_t offset) {
  WordsTrie trie;
  trie.dfa = except.unit_dfa != nullptr ? except.unit_dfa : MemoizedUnitDfa(unit, offset);
  const CodePointDfa& dfa = *trie.dfa;
  trie.nodes = BuildTrie(dfa, except.words);
  // Ids: live trie nodes (root = 0; a node whose string is no prefix of X* is never reached by
  // a string of X*, so it goes with its subtree).
  for (size_t n = 0; n < trie.nodes.size(); ++n) {
    WordsTrie::Node& node = trie.nodes[n];
    if (n == 0 || dfa.live(node.dfa)) node.id = static_cast<int>(trie.live_nodes++);
    if (node.word_end && dfa.live(node.dfa) && dfa.live(dfa.Next(node.dfa, except.stop))) {
      throw RegexError("a word of the lookahead, with its final character, is a prefix of a "
                       "string of the repeated group, so the lookahead cannot be rewritten "
                       "exactly", offset);
    }
  }
  return trie;
}

}  // namespace jaxguide
