// Error types thrown by the native core at its API boundary.
//
// Contract: construction-time failures (bad vocabulary, bad grammar, exceeded compile budgets)
// throw one of these; the pybind11 layer translates them to the matching `jaxguide` Python error
// classes. Code that runs on worker threads never lets an exception escape: it records the
// message in the object's error state instead (see matcher/).
#ifndef JAXGUIDE_NATIVE_SUPPORT_ERROR_H_
#define JAXGUIDE_NATIVE_SUPPORT_ERROR_H_

#include <stdexcept>
#include <string>

namespace jaxguide {

// Bad tokenizer data: inconsistent ids, widths, sizes over the documented limits.
class TokenizerError : public std::invalid_argument {
 public:
  explicit TokenizerError(const std::string& message) : std::invalid_argument(message) {}
};

// An invalid grammar: bad ids, an empty language, over the documented size limits.
class GrammarError : public std::invalid_argument {
 public:
  explicit GrammarError(const std::string& message) : std::invalid_argument(message) {}
};

// A documented work or memory budget was exceeded (the message names the budget and its value).
class BudgetExceededError : public std::runtime_error {
 public:
  explicit BudgetExceededError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_SUPPORT_ERROR_H_
