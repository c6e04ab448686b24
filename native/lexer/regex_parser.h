// Regex parser: pattern text (UTF-8) -> RegexNode, for two dialects.
//
//   kPython  the syntax of Python's `re` on str patterns, which is what Lark terminals use.
//            The language is the full match (`re.fullmatch`). Supported: literals and escapes
//            (\n \t \r \f \v \a \0 octal \xhh \uhhhh \Uhhhhhhhh \d \w \s \D \W \S, escaped
//            metacharacters), classes with ranges / negation / escapes, `.` (with and without
//            DOTALL), groups ((...), (?:...), (?P<name>...), (?#comment)), alternation,
//            * + ? {m} {m,} {,n} {m,n} and their lazy forms (same language), global inline flags
//            at the start ((?i) (?s) (?x) (?m) (?a) (?u)), scoped flags ((?i:...), (?-i:...)),
//            and the anchors ^ \A \Z anywhere and $ at the end of the pattern (Python's `$` also
//            matches before a trailing newline, so it is only accepted where that cannot matter).
//            Unicode semantics of \d \w \s and IGNORECASE follow the generating Python exactly
//            (see unicode_tables.h); re.ASCII switches them to ASCII.
//   kEcma    ECMA-262 (JSON Schema `pattern`): \d \w \s are ASCII-ish as ECMA defines them,
//            `.` excludes the four line terminators, \cX, \u{...}, surrogate pairs written as two
//            \uXXXX escapes, (?<name>...), [^] and [], \p{..} / \P{..} for general categories (L,
//            Lu, Letter, gc=Lu, General_Category=Uppercase_Letter, ...) plus Any / ASCII /
//            Assigned. With `ecma_search` (the default) the language is "contains a match":
//            the pattern is wrapped as [\s\S]* (?:p) [\s\S]*, and ^ / $ are exact assertions.
//
// Unsupported constructs raise RegexError with the position in code points: lookahead and
// lookbehind, backreferences (\1, (?P=n), \k<n>), conditionals, atomic groups, possessive
// quantifiers, \b \B, \N{...}, \p in Python mode, Unicode scripts / binary properties in ECMA mode,
// and inline flags in ECMA mode. Nothing is ever accepted with a silently different language.
//
// Complexity: linear in the pattern length times the size of the code point sets built (case
// closure and class complement are O(ranges log ranges)). Nesting is limited to kMaxNestingDepth.
#ifndef JAXGUIDE_NATIVE_LEXER_REGEX_PARSER_H_
#define JAXGUIDE_NATIVE_LEXER_REGEX_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "native/lexer/regex_ast.h"

namespace jaxguide {

enum class RegexDialect : uint8_t { kPython, kEcma };

struct RegexOptions {
  RegexDialect dialect = RegexDialect::kPython;
  // Initial flags, as re.IGNORECASE / re.DOTALL / re.MULTILINE / re.VERBOSE / re.ASCII.
  // In the ECMA dialect only dot_all (the `s` flag) is accepted; the others raise RegexError.
  bool ignore_case = false;
  bool dot_all = false;
  bool multiline = false;
  bool verbose = false;
  bool ascii = false;
  // ECMA only: the language is "the text contains a match" (JSON Schema `pattern`).
  bool ecma_search = true;
};

// Groups nested deeper than this raise RegexError (bounds the parser's recursion).
inline constexpr size_t kMaxRegexNestingDepth = 500;
// Literal words a lookahead `(?!(?:w1|...|wn)T)` may stand for (alternatives multiplied out).
inline constexpr size_t kMaxLookaheadWords = size_t{1} << 16;

// Parses `pattern` (UTF-8). Throws RegexError on malformed or unsupported syntax.
RegexNode ParseRegex(std::string_view pattern, const RegexOptions& options = {});

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_LEXER_REGEX_PARSER_H_
