// Pinned terminals (contract in the header): a map from regex text to its compiled program,
// filled by PinTerminalRegexes and never emptied. Pinning compiles outside the lock; a race of
// two pins of one regex keeps the first.
#include "native/lexer/pinned_terminals.h"

#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "native/lexer/regex_parser.h"
#include "native/support/fork_locks.h"

namespace jaxguide {
namespace {

struct PinnedTerminals {
  std::mutex mutex;
  ForkLockRegistration fork_lock{&mutex};  // held across fork() (fork_locks.h)
  std::unordered_map<std::string, std::shared_ptr<const TerminalProgram>> by_regex;
};

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
    auto program = Nfa::CompileProgram(ParseRegex(regex));
    for (const CodePointSet& set : program->class_sets) PinnedUtf8Class(set);
    compiled.emplace_back(regex, std::move(program));
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

}  // namespace jaxguide
