// Pinned terminals (contract in the header): a map from regex text to its compiled program,
// filled by PinTerminalRegexes and never emptied. Pinning compiles outside the lock; a race of
// two pins of one regex keeps the first.
//
// Shaped terminals. A JSON key terminal is `"name"` and a colon; "any key but these names" is
// `"(?!(?:a|b)")(?:X)*"` and the same colon, with X the string unit (hundreds of characters of
// regex, parsed again for every object that admits undeclared keys). Only the names vary, and
// they are plain literals, so ShapedTerminal reads them with a scan instead of the parser and
// takes the rest from what was compiled once: the suffix's program, X*'s DFA. The node it
// returns is the parser's with the suffix's items replaced by one kProgram item, which
// compiles to the same instructions (the suffix's items compile in sequence, as a program
// compiled alone does; classes are interned in the same order).
#include "native/lexer/pinned_terminals.h"

#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native/lexer/except_words.h"
#include "native/lexer/regex_parser.h"
#include "native/support/fork_locks.h"

namespace jaxguide {
namespace {

struct PinnedSuffix {
  std::string text;
  std::shared_ptr<const TerminalProgram> program;
  bool stops_except_words;  // starts with a `"` read once (the stop of the except form)
};

struct PinnedExceptUnit {
  std::string star;  // `(?:X)*`
  std::shared_ptr<const CodePointDfa> dfa;  // of X*
};

struct PinnedTerminals {
  std::mutex mutex;
  ForkLockRegistration fork_lock{&mutex};  // held across fork() (fork_locks.h)
  std::unordered_map<std::string, std::shared_ptr<const TerminalProgram>> by_regex;
  std::vector<PinnedSuffix> suffixes;
  std::vector<PinnedExceptUnit> except_units;
};

constexpr char kExceptOpen[] = "\"(?!(?:";  // the except form's start; `)")` after the words
constexpr size_t kExceptOpenSize = sizeof(kExceptOpen) - 1;
constexpr char kExceptClose[] = ")\")";
constexpr size_t kExceptCloseSize = sizeof(kExceptClose) - 1;

// Whether a node is plain: classes, concatenation, alternation and repetition only.
bool IsPlain(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kEmpty:
    case RegexNode::Kind::kClass:
      return true;
    case RegexNode::Kind::kConcat:
    case RegexNode::Kind::kAlternate:
    case RegexNode::Kind::kRepeat:
      for (const RegexNode& child : node.children) {
        if (!IsPlain(child)) return false;
      }
      return true;
    default:
      return false;
  }
}

bool IsQuantifierStart(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

// The ASCII literal at regex[*pos] (pos < end; past it then), or -1: a printable character
// that is no regex syntax, or a backslash and a punctuation character or space.
int LiteralAt(const std::string& regex, size_t* pos, size_t end) {
  const auto c = static_cast<unsigned char>(regex[*pos]);
  if (c == '\\') {
    if (*pos + 1 >= end) return -1;
    const auto e = static_cast<unsigned char>(regex[*pos + 1]);
    const bool alnum = (e >= '0' && e <= '9') || (e >= 'A' && e <= 'Z') || (e >= 'a' && e <= 'z');
    if (e < 0x20 || e >= 0x7F || alnum) return -1;
    *pos += 2;
    return e;
  }
  if (c < 0x20 || c >= 0x7F) return -1;
  for (const char s : std::string_view("\\.^$*+?{}[]()|")) {
    if (c == static_cast<unsigned char>(s)) return -1;
  }
  ++*pos;
  return c;
}

// regex[0, end) as a run of literals, one class item each; false if it is not one (or empty).
bool LiteralItems(const std::string& regex, size_t end, std::vector<RegexNode>* items) {
  for (size_t pos = 0; pos < end;) {
    const size_t at = pos;
    const int c = LiteralAt(regex, &pos, end);
    if (c < 0) return false;
    items->push_back(RegexNode::Class(CodePointSet::Single(static_cast<uint32_t>(c)), at));
  }
  return end > 0;
}

// regex[begin, end) as `w1|...|wn`, each wi a non-empty run of literals without `"`.
bool ScanExceptWords(const std::string& regex, size_t begin, size_t end,
                     std::vector<std::vector<uint32_t>>* words) {
  words->emplace_back();
  for (size_t pos = begin; pos < end;) {
    if (regex[pos] == '|') {
      if (words->back().empty()) return false;
      words->emplace_back();
      ++pos;
      continue;
    }
    const int c = LiteralAt(regex, &pos, end);
    if (c < 0 || c == '"') return false;
    words->back().push_back(static_cast<uint32_t>(c));
  }
  return !words->back().empty() && words->size() <= kMaxLookaheadWords;
}

// `node` compiled alone, its classes pinned (PinnedUtf8Class): what every pin keeps.
std::shared_ptr<const TerminalProgram> PinnedProgram(const RegexNode& node) {
  auto program = Nfa::CompileProgram(node);
  for (const CodePointSet& set : program->class_sets) PinnedUtf8Class(set);
  return program;
}

// The classes that the NFA compiler makes of an except-words automaton over the unit X whose
// X* DFA is `dfa` (Nfa::CompileWordsComplement; AddTransition splits a set at U+0080),
// whatever the words: each transition set's two sides; and, from the start state (where every
// literal of a word is read), each ASCII code point c alone and its set's ASCII side without c
// (a trie node whose one child is c). Pinned with the unit: they recur in every "any key but"
// terminal.
void PinExceptWordsClasses(const CodePointDfa& dfa) {
  for (size_t s = 0; s < dfa.size(); ++s) {
    for (const auto& [set, target] : dfa.transitions(static_cast<int>(s))) {
      CodePointSet ascii;
      CodePointSet rest;
      set.SplitAtAscii(&ascii, &rest);  // as Nfa::AddTransition splits it
      if (!ascii.Empty()) PinnedUtf8Class(ascii);
      if (!rest.Empty()) PinnedUtf8Class(rest);
      if (s != 0) continue;
      for (const CodePointRange& r : ascii.ranges()) {
        for (uint32_t c = r.lo; c <= r.hi; ++c) {
          PinnedUtf8Class(CodePointSet::Single(c));
          CodePointSet without = ascii;
          without.Subtract(CodePointSet::Single(c));
          if (!without.Empty()) PinnedUtf8Class(without);
        }
      }
    }
  }
}

PinnedTerminals& ThePinnedTerminals() {
  static PinnedTerminals* const pinned = new PinnedTerminals();  // never destroyed
  return *pinned;
}

}  // namespace

void PinTerminalRegexes(const std::vector<std::string>& regexes) {
  PinnedTerminals& pinned = ThePinnedTerminals();
  std::vector<std::pair<std::string, std::shared_ptr<const TerminalProgram>>> compiled;
  for (const std::string& regex : regexes) {
    if (FindPinnedTerminal(regex) != nullptr) continue;
    compiled.emplace_back(regex, PinnedProgram(ParseRegex(regex)));
  }
  std::lock_guard<std::mutex> lock(pinned.mutex);
  size_t fresh = 0;
  for (const auto& entry : compiled) fresh += pinned.by_regex.count(entry.first) == 0 ? 1 : 0;
  if (pinned.by_regex.size() + fresh > kMaxPinnedTerminals) {
    throw std::length_error("more than " + std::to_string(kMaxPinnedTerminals) +
                            " pinned terminal regexes");
  }
  for (auto& [regex, program] : compiled) pinned.by_regex.emplace(regex, std::move(program));
}

std::shared_ptr<const TerminalProgram> FindPinnedTerminal(const std::string& regex) {
  PinnedTerminals& pinned = ThePinnedTerminals();
  std::lock_guard<std::mutex> lock(pinned.mutex);
  auto found = pinned.by_regex.find(regex);
  return found == pinned.by_regex.end() ? nullptr : found->second;
}

size_t NumPinnedTerminals() {
  PinnedTerminals& pinned = ThePinnedTerminals();
  std::lock_guard<std::mutex> lock(pinned.mutex);
  return pinned.by_regex.size();
}

void PinTerminalSuffixes(const std::vector<std::string>& suffixes,
                         const std::vector<std::string>& except_units) {
  std::vector<PinnedSuffix> new_suffixes;
  for (const std::string& text : suffixes) {
    const RegexNode node = ParseRegex(text);
    if (text.empty() || IsQuantifierStart(text[0]) || node.kind == RegexNode::Kind::kAlternate ||
        node.IsZeroWidth() || !IsPlain(node)) {
      throw std::invalid_argument("a pinned suffix must be a plain regex (no anchor, lookahead "
                                  "or top-level '|', not empty, not starting with a "
                                  "quantifier): " + text);
    }
    const bool stops = text[0] == '"' && (text.size() == 1 || !IsQuantifierStart(text[1]));
    new_suffixes.push_back({text, PinnedProgram(node), stops});
  }
  std::vector<PinnedExceptUnit> new_units;
  for (const std::string& text : except_units) {
    const std::string star = text + "*";
    const RegexNode node = ParseRegex(star);
    if (text.size() < 4 || text.compare(0, 3, "(?:") != 0 || text.back() != ')' ||
        node.kind != RegexNode::Kind::kRepeat) {
      throw std::invalid_argument("a pinned except unit must be a group (?:X): " + text);
    }
    new_units.push_back({star, MemoizedUnitDfa(node.children[0], 0)});
    PinExceptWordsClasses(*new_units.back().dfa);
  }
  PinnedTerminals& pinned = ThePinnedTerminals();
  std::lock_guard<std::mutex> lock(pinned.mutex);
  auto add = [](auto* into, auto* from, auto text_of) {
    for (auto& entry : *from) {
      bool known = false;
      for (const auto& old : *into) known = known || text_of(old) == text_of(entry);
      if (!known) into->push_back(std::move(entry));
    }
  };
  std::vector<PinnedSuffix> suffixes_after = pinned.suffixes;
  std::vector<PinnedExceptUnit> units_after = pinned.except_units;
  add(&suffixes_after, &new_suffixes, [](const PinnedSuffix& s) { return s.text; });
  add(&units_after, &new_units, [](const PinnedExceptUnit& u) { return u.star; });
  if (suffixes_after.size() > kMaxPinnedTerminals || units_after.size() > kMaxPinnedTerminals) {
    throw std::length_error("more than " + std::to_string(kMaxPinnedTerminals) +
                            " pinned suffixes or except units");
  }
  pinned.suffixes = std::move(suffixes_after);
  pinned.except_units = std::move(units_after);
}

size_t NumPinnedSuffixes() {
  PinnedTerminals& pinned = ThePinnedTerminals();
  std::lock_guard<std::mutex> lock(pinned.mutex);
  return pinned.suffixes.size() + pinned.except_units.size();
}

std::optional<RegexNode> ShapedTerminal(const std::string& regex) {
  PinnedTerminals& pinned = ThePinnedTerminals();
  std::shared_ptr<const TerminalProgram> suffix;
  bool stops = false;
  size_t head = 0;  // regex[0, head) comes before the suffix
  std::shared_ptr<const CodePointDfa> unit_dfa;
  size_t words_end = 0;
  {
    std::lock_guard<std::mutex> lock(pinned.mutex);
    for (const PinnedSuffix& s : pinned.suffixes) {
      if (regex.size() > s.text.size() &&
          regex.compare(regex.size() - s.text.size(), s.text.size(), s.text) == 0) {
        suffix = s.program;
        stops = s.stops_except_words;
        head = regex.size() - s.text.size();
        break;
      }
    }
    if (suffix == nullptr) return std::nullopt;
    if (stops && regex.compare(0, kExceptOpenSize, kExceptOpen) == 0) {
      for (const PinnedExceptUnit& u : pinned.except_units) {
        if (head >= kExceptOpenSize + kExceptCloseSize + u.star.size() &&
            regex.compare(head - u.star.size(), u.star.size(), u.star) == 0) {
          unit_dfa = u.dfa;
          words_end = head - u.star.size() - kExceptCloseSize;
          break;
        }
      }
    }
  }
  std::vector<RegexNode> items;
  if (unit_dfa != nullptr) {  // `"(?!(?:words)")(?:X)*` and the suffix
    RegexNode::ExceptWords except;
    if (regex.compare(words_end, kExceptCloseSize, kExceptClose) != 0 ||
        !ScanExceptWords(regex, kExceptOpenSize, words_end, &except.words)) {
      return std::nullopt;
    }
    except.stop = '"';
    except.unit_dfa = std::move(unit_dfa);
    items.push_back(RegexNode::Class(CodePointSet::Single('"'), 0));
    items.push_back(RegexNode::Except(RegexNode::Empty(), std::move(except), 1));
  } else if (!LiteralItems(regex, head, &items)) {
    return std::nullopt;
  }
  items.push_back(RegexNode::Program(std::move(suffix), head));
  return RegexNode::Concat(std::move(items), 0);
}

}  // namespace jaxguide
