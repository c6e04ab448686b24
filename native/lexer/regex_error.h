// RegexError: a regular expression that is malformed or uses a feature the lexer does not
// support (lookaround, backreferences, conditionals, possessive quantifiers, atomic groups, word
// boundaries, ...).
//
// Contract: thrown only at construction time (parsing / compiling terminals), never from the DFA
// hot path. `offset()` is the position in the pattern in code points (like Python's re.error.pos)
// and `pattern_index()` the terminal's index when the pattern came from a multi-pattern lexer
// (kNoIndex otherwise). what() already contains both in readable form. The binding maps it to
// jaxguide._native.RegexError, a ValueError subclass.
#ifndef JAXGUIDE_NATIVE_LEXER_REGEX_ERROR_H_
#define JAXGUIDE_NATIVE_LEXER_REGEX_ERROR_H_

#include <cstddef>
#include <stdexcept>
#include <string>

namespace jaxguide {

class RegexError : public std::invalid_argument {
 public:
  static constexpr size_t kNoIndex = static_cast<size_t>(-1);

  RegexError(const std::string& message, size_t offset, size_t pattern_index = kNoIndex)
      : std::invalid_argument(Format(message, offset, pattern_index)),
        message_(message),
        offset_(offset),
        pattern_index_(pattern_index) {}

  // The same error attributed to terminal `pattern_index`.
  RegexError WithPatternIndex(size_t pattern_index) const {
    return RegexError(message_, offset_, pattern_index);
  }

  const std::string& message() const { return message_; }
  size_t offset() const { return offset_; }
  size_t pattern_index() const { return pattern_index_; }

 private:
  static std::string Format(const std::string& message, size_t offset, size_t pattern_index) {
    std::string out;
    if (pattern_index != kNoIndex) out = "pattern " + std::to_string(pattern_index) + ": ";
    return out + message + " at position " + std::to_string(offset);
  }

  std::string message_;
  size_t offset_;
  size_t pattern_index_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_REGEX_ERROR_H_
