// Regex parser. Design note: a hand-written recursive-descent parser over the pattern's code
// points (decoded from UTF-8 up front so that error positions are code point offsets, like
// Python's re.error.pos). It follows the grammar of CPython's sre_parse for the Python dialect
// (which tokens are literals, when `{` starts a quantifier, octal versus backreference digits,
// "nothing to repeat" / "multiple repeat") and ECMA-262 (u-mode) for the ECMA dialect. Every
// character construct is lowered to a CodePointSet at once, with IGNORECASE applied to literals
// and ranges only (as sre does: \w etc. are not case-folded). The result is a small AST; the
// NFA compiler does the rest. Work is linear in the pattern length (times set sizes).
#include "native/lexer/regex_parser.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "native/lexer/regex_error.h"
#include "native/lexer/unicode_tables.h"

namespace jaxguide {
namespace {

constexpr uint32_t kEndOfPattern = 0xFFFFFFFFu;
constexpr uint32_t kMaxRepeatCount = 0xFFFFFFFEu;  // Python's MAXREPEAT - 1

bool IsAsciiDigit(uint32_t c) { return c >= '0' && c <= '9'; }
bool IsOctalDigit(uint32_t c) { return c >= '0' && c <= '7'; }
bool IsAsciiLetter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiAlnum(uint32_t c) { return IsAsciiDigit(c) || IsAsciiLetter(c); }
int HexValue(uint32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

std::string Printable(uint32_t c) {
  if (c == kEndOfPattern) return "end of pattern";
  if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "U+%04X", c);
  return buffer;
}

// Decodes UTF-8 strictly (no overlongs, no surrogates, nothing above U+10FFFF).
std::vector<uint32_t> DecodeUtf8(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<uint8_t>(text[i]);
    uint32_t cp = 0;
    size_t length = 0;
    uint32_t min = 0;
    if (b0 < 0x80) {
      cp = b0;
      length = 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      cp = b0 & 0x1Fu;
      length = 2;
      min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      cp = b0 & 0x0Fu;
      length = 3;
      min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      cp = b0 & 0x07u;
      length = 4;
      min = 0x10000;
    } else {
      throw RegexError("pattern is not valid UTF-8 (byte offset " + std::to_string(i) + ")",
                       out.size());
    }
    if (i + length > text.size()) {
      throw RegexError("pattern is not valid UTF-8 (truncated sequence)", out.size());
    }
    for (size_t k = 1; k < length; ++k) {
      const auto b = static_cast<uint8_t>(text[i + k]);
      if ((b & 0xC0) != 0x80) throw RegexError("pattern is not valid UTF-8", out.size());
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      throw RegexError("pattern is not valid UTF-8", out.size());
    }
    out.push_back(cp);
    i += length;
  }
  return out;
}

// Cached sets used by escapes.
const CodePointSet& PythonDigits() {
  static const CodePointSet* set = new CodePointSet(CodePointSet::FromTable(PythonDigitTable()));
  return *set;
}
const CodePointSet& PythonWord() {
  static const CodePointSet* set = new CodePointSet(CodePointSet::FromTable(PythonWordTable()));
  return *set;
}
const CodePointSet& PythonSpace() {
  static const CodePointSet* set = new CodePointSet(CodePointSet::FromTable(PythonSpaceTable()));
  return *set;
}

CodePointSet AsciiDigits() { return CodePointSet::Range('0', '9'); }
CodePointSet AsciiWord() {
  CodePointSet set = CodePointSet::Range('0', '9');
  set.AddRange('A', 'Z');
  set.AddRange('a', 'z');
  set.Add('_');
  return set;
}
CodePointSet PythonAsciiSpace() {
  CodePointSet set = CodePointSet::Range('\t', '\r');  // \t \n \v \f \r
  set.Add(' ');
  return set;
}

// General category by two-letter name, or nullptr.
const RangeTable* FindCategory(std::string_view name) {
  size_t count = 0;
  const GeneralCategoryTable* tables = GeneralCategoryTables(&count);
  for (size_t i = 0; i < count; ++i) {
    if (name == tables[i].name) return &tables[i].table;
  }
  return nullptr;
}

// ECMA \s: WhiteSpace (TAB VT FF SP NBSP ZWNBSP + Zs) and LineTerminator (LF CR LS PS).
const CodePointSet& EcmaSpace() {
  static const CodePointSet* set = [] {
    auto* s = new CodePointSet(CodePointSet::FromTable(*FindCategory("Zs")));
    s->AddRange('\t', '\r');
    s->Add(' ');
    s->Add(0xA0);
    s->Add(0xFEFF);
    s->AddRange(0x2028, 0x2029);
    return s;
  }();
  return *set;
}

// Long names of the general categories (UCD PropertyValueAliases), mapped to short names.
struct CategoryAlias {
  const char* long_name;
  const char* short_name;
};
constexpr CategoryAlias kCategoryAliases[] = {
    {"Other", "C"}, {"Control", "Cc"}, {"Format", "Cf"}, {"Unassigned", "Cn"},
    {"Private_Use", "Co"}, {"Surrogate", "Cs"}, {"Letter", "L"}, {"Cased_Letter", "LC"},
    {"Lowercase_Letter", "Ll"}, {"Modifier_Letter", "Lm"}, {"Other_Letter", "Lo"},
    {"Titlecase_Letter", "Lt"}, {"Uppercase_Letter", "Lu"}, {"Mark", "M"},
    {"Combining_Mark", "M"}, {"Spacing_Mark", "Mc"}, {"Enclosing_Mark", "Me"},
    {"Nonspacing_Mark", "Mn"}, {"Number", "N"}, {"Decimal_Number", "Nd"}, {"digit", "Nd"},
    {"Letter_Number", "Nl"}, {"Other_Number", "No"}, {"Punctuation", "P"}, {"punct", "P"},
    {"Connector_Punctuation", "Pc"}, {"Dash_Punctuation", "Pd"}, {"Close_Punctuation", "Pe"},
    {"Final_Punctuation", "Pf"}, {"Initial_Punctuation", "Pi"}, {"Other_Punctuation", "Po"},
    {"Open_Punctuation", "Ps"}, {"Symbol", "S"}, {"Currency_Symbol", "Sc"},
    {"Modifier_Symbol", "Sk"}, {"Math_Symbol", "Sm"}, {"Other_Symbol", "So"},
    {"Separator", "Z"}, {"Line_Separator", "Zl"}, {"Paragraph_Separator", "Zp"},
    {"Space_Separator", "Zs"},
};

// The set of a general category value (short or long name; one-letter groups and LC included).
bool GeneralCategorySet(std::string_view name, CodePointSet* out) {
  for (const CategoryAlias& alias : kCategoryAliases) {
    if (name == alias.long_name) {
      name = alias.short_name;
      break;
    }
  }
  if (name == "LC") {
    for (const char* part : {"Lu", "Ll", "Lt"}) {
      out->AddSet(CodePointSet::FromTable(*FindCategory(part)));
    }
    return true;
  }
  if (name.size() == 1) {
    size_t count = 0;
    const GeneralCategoryTable* tables = GeneralCategoryTables(&count);
    bool found = false;
    for (size_t i = 0; i < count; ++i) {
      if (tables[i].name[0] == name[0]) {
        out->AddSet(CodePointSet::FromTable(tables[i].table));
        found = true;
      }
    }
    return found;
  }
  if (const RangeTable* table = FindCategory(name)) {
    out->AddSet(CodePointSet::FromTable(*table));
    return true;
  }
  return false;
}

class Parser {
 public:
  Parser(std::vector<uint32_t> pattern, const RegexOptions& options)
      : cps_(std::move(pattern)), options_(options) {}

  RegexNode Parse() {
    Flags flags{options_.ignore_case, options_.dot_all, options_.multiline, options_.verbose,
                options_.ascii};
    if (ecma() && (flags.ignore_case || flags.multiline || flags.verbose || flags.ascii)) {
      Fail("only the dot_all flag is supported in the ECMA dialect", 0);
    }
    if (!ecma()) ParseLeadingGlobalFlags(&flags);
    RegexNode root = ParseAlternation(flags, 0);
    if (!AtEnd()) Fail("unbalanced parenthesis", pos_);
    if (!ecma()) CheckRestrictedAnchors(root, true, true);
    if (ecma() && options_.ecma_search) {
      std::vector<RegexNode> parts;
      parts.push_back(RegexNode::Repeat(RegexNode::Class(CodePointSet::All()), 0,
                                        RegexNode::kUnbounded));
      parts.push_back(std::move(root));
      parts.push_back(RegexNode::Repeat(RegexNode::Class(CodePointSet::All()), 0,
                                        RegexNode::kUnbounded));
      root = RegexNode::Concat(std::move(parts));
    }
    return root;
  }

 private:
  struct Flags {
    bool ignore_case;
    bool dot_all;
    bool multiline;
    bool verbose;
    bool ascii;
  };

  // A parsed escape or class item: one code point, a set, or (outside classes) an assertion.
  struct Escape {
    enum class Kind { kCodePoint, kSet, kBegin, kEnd } kind = Kind::kCodePoint;
    uint32_t code_point = 0;
    CodePointSet set;
  };

  bool ecma() const { return options_.dialect == RegexDialect::kEcma; }
  bool AtEnd() const { return pos_ >= cps_.size(); }
  uint32_t Peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : kEndOfPattern;
  }
  uint32_t Next() {
    const uint32_t c = Peek();
    if (!AtEnd()) ++pos_;
    return c;
  }
  bool Consume(uint32_t c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  [[noreturn]] void Fail(const std::string& message, size_t offset) const {
    throw RegexError(message, offset);
  }

  // Python: global flags such as (?i)(?s) are accepted only at the very start (3.11 rules),
  // where comments and verbose whitespace may come before and between them.
  void ParseLeadingGlobalFlags(Flags* flags) {
    while (true) {
      SkipVerbose(*flags);
      if (SkipComment()) continue;
      if (Peek() != '(' || Peek(1) != '?') return;
      size_t end = pos_ + 2;
      while (end < cps_.size() && IsFlagLetter(cps_[end])) ++end;
      if (end == pos_ + 2 || end >= cps_.size() || cps_[end] != ')') return;
      for (size_t i = pos_ + 2; i < end; ++i) ApplyFlag(cps_[i], true, i, flags);
      pos_ = end + 1;
    }
  }

  static bool IsFlagLetter(uint32_t c) {
    return c == 'i' || c == 's' || c == 'm' || c == 'x' || c == 'a' || c == 'u' || c == 'L';
  }

  void ApplyFlag(uint32_t c, bool on, size_t offset, Flags* flags) const {
    switch (c) {
      case 'i':
        flags->ignore_case = on;
        break;
      case 's':
        flags->dot_all = on;
        break;
      case 'm':
        flags->multiline = on;
        break;
      case 'x':
        flags->verbose = on;
        break;
      case 'a':
        if (!on) Fail("bad inline flags: cannot turn off flag 'a'", offset);
        flags->ascii = true;
        break;
      case 'u':
        if (!on) Fail("bad inline flags: cannot turn off flag 'u'", offset);
        flags->ascii = false;
        break;
      case 'L':
        Fail("the LOCALE flag (?L) is not supported (str patterns cannot use it)", offset);
      default:
        Fail("unknown flag " + Printable(c), offset);
    }
  }

  void SkipVerbose(const Flags& flags) {
    if (!flags.verbose) return;
    while (!AtEnd()) {
      const uint32_t c = Peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  // Python: at "(?#...)" skips the comment and returns true (false elsewhere). As in sre, a
  // comment is no atom: a quantifier after it repeats the item before it (`a(?#x){2}` is aa).
  bool SkipComment() {
    if (ecma() || Peek() != '(' || Peek(1) != '?' || Peek(2) != '#') return false;
    const size_t start = pos_;
    pos_ += 3;
    while (!AtEnd() && Peek() != ')') ++pos_;
    if (!Consume(')')) Fail("missing ), unterminated comment", start);
    return true;
  }

  RegexNode ParseAlternation(const Flags& flags, size_t depth) {
    if (depth > kMaxRegexNestingDepth) {
      Fail("groups nested deeper than " + std::to_string(kMaxRegexNestingDepth), pos_);
    }
    const size_t start = pos_;
    std::vector<RegexNode> branches;
    branches.push_back(ParseSequence(flags, depth));
    while (Consume('|')) branches.push_back(ParseSequence(flags, depth));
    return RegexNode::Alternate(std::move(branches), start);
  }

  RegexNode ParseSequence(const Flags& flags, size_t depth) {
    const size_t start = pos_;
    std::vector<RegexNode> items;
    bool last_is_repeat = false;
    while (true) {
      SkipVerbose(flags);
      if (SkipComment()) continue;  // leaves last_is_repeat: `a*(?#x)?` is a multiple repeat
      if (AtEnd()) break;
      const uint32_t c = Peek();
      if (c == '|' || c == ')') break;
      const size_t item_start = pos_;
      uint32_t min = 0;
      uint32_t max = 0;
      if (ParseQuantifier(&min, &max)) {
        if (items.empty() || items.back().kind == RegexNode::Kind::kAssertBegin ||
            items.back().kind == RegexNode::Kind::kAssertEnd ||
            items.back().kind == RegexNode::Kind::kNegativeLookahead ||
            items.back().kind == RegexNode::Kind::kPositiveLookahead) {
          Fail("nothing to repeat", item_start);
        }
        if (last_is_repeat) Fail("multiple repeat", item_start);
        Consume('?');  // lazy: same language
        if (!ecma() && Peek() == '+') {
          Fail("possessive quantifiers are not supported", pos_);
        }
        items.back() = RegexNode::Repeat(std::move(items.back()), min, max, item_start);
        last_is_repeat = true;
        continue;
      }
      last_is_repeat = false;
      items.push_back(ParseAtom(flags, depth));
    }
    FoldLookaheads(&items);
    return RegexNode::Concat(std::move(items), start);
  }

  // The strings of a regex made of literals, groups and alternatives only (false otherwise, or
  // past kMaxLookaheadWords strings).
  static bool LiteralWords(const RegexNode& node, std::vector<std::vector<uint32_t>>* words) {
    switch (node.kind) {
      case RegexNode::Kind::kEmpty:
        words->assign(1, {});
        return true;
      case RegexNode::Kind::kClass:
        if (node.set.Size() != 1) return false;
        words->assign(1, {node.set.ranges()[0].lo});
        return true;
      case RegexNode::Kind::kAlternate: {
        words->clear();
        std::vector<std::vector<uint32_t>> branch;
        for (const RegexNode& child : node.children) {
          if (!LiteralWords(child, &branch)) return false;
          if (words->size() + branch.size() > kMaxLookaheadWords) return false;
          words->insert(words->end(), branch.begin(), branch.end());
        }
        return true;
      }
      case RegexNode::Kind::kConcat: {
        words->assign(1, {});
        std::vector<std::vector<uint32_t>> tails;
        std::vector<std::vector<uint32_t>> joined;
        for (const RegexNode& child : node.children) {
          if (!LiteralWords(child, &tails)) return false;
          if (words->size() * tails.size() > kMaxLookaheadWords) return false;
          joined.clear();
          for (const auto& head : *words) {
            for (const auto& tail : tails) {
              joined.push_back(head);
              joined.back().insert(joined.back().end(), tail.begin(), tail.end());
            }
          }
          words->swap(joined);
        }
        return true;
      }
      default:
        return false;
    }
  }

  static bool IsLookahead(const RegexNode& node) {
    return node.kind == RegexNode::Kind::kNegativeLookahead ||
           node.kind == RegexNode::Kind::kPositiveLookahead;
  }

  static bool IsLiteral(const RegexNode& node) {
    return node.kind == RegexNode::Kind::kClass && node.set.Size() == 1;
  }

  // The two lookahead forms the lexer takes. Within a sequence:
  //  * `(?!(?:w1|...|wn)T)(?:X)*T` with literal words wi and a literal T that ends every
  //    alternative and occurs nowhere else in them: `X*` minus {w1..wn} followed by T, which
  //    the NFA compiler builds directly (kExceptWords; what the JSON Schema compiler writes for
  //    "any key but the declared ones"; it also checks that no wi T is a prefix of a string of
  //    X*, which makes the rewrite exact);
  //  * lookaheads `(?=(?:A)T)` / `(?!(?:C)T)` before an item B and a literal T: the strings of
  //    B also in A and not in C, followed by T (kProduct, regex_product.h, which checks that a
  //    lookahead's match can only end at the T after B, which makes the rewrite exact).
  // Any other lookahead is refused.
  void FoldLookaheads(std::vector<RegexNode>* items) const {
    for (size_t i = 0; i < items->size(); ++i) {
      if (!IsLookahead((*items)[i])) continue;
      if (!FoldExceptWords(items, i)) FoldProduct(items, i);
    }
  }

  bool FoldExceptWords(std::vector<RegexNode>* items, size_t i) const {
    RegexNode& item = (*items)[i];
    if (item.kind != RegexNode::Kind::kNegativeLookahead || i + 2 >= items->size()) return false;
    const RegexNode& star = (*items)[i + 1];
    const RegexNode& stop = (*items)[i + 2];
    if (star.kind != RegexNode::Kind::kRepeat || star.min != 0 ||
        star.max != RegexNode::kUnbounded || !IsLiteral(stop)) {
      return false;
    }
    RegexNode::ExceptWords except;
    except.stop = stop.set.ranges()[0].lo;
    if (!LiteralWords(item.children[0], &except.words)) return false;
    for (const std::vector<uint32_t>& word : except.words) {
      if (word.empty() || word.back() != except.stop) return false;
      if (std::find(word.begin(), word.end() - 1, except.stop) != word.end() - 1) return false;
    }
    for (std::vector<uint32_t>& word : except.words) word.pop_back();
    RegexNode unit = std::move((*items)[i + 1].children[0]);
    item = RegexNode::Except(std::move(unit), std::move(except), item.offset);
    items->erase(items->begin() + static_cast<std::ptrdiff_t>(i + 1));
    return true;
  }

  void FoldProduct(std::vector<RegexNode>* items, size_t i) const {
    const size_t offset = (*items)[i].offset;
    auto refuse = [&]() {
      Fail("lookahead assertions are not supported (except (?!(?:w1|...|wn)T)(?:X)*T with "
           "literal words wi, and (?=(?:A)T) or (?!(?:A)T) before (?:B)T with a literal T)",
           offset);
    };
    size_t j = i;
    while (j < items->size() && IsLookahead((*items)[j])) ++j;
    if (j + 1 >= items->size() || !IsLiteral((*items)[j + 1])) refuse();
    const uint32_t stop = (*items)[j + 1].set.ranges()[0].lo;
    std::vector<RegexNode> parts;
    RegexNode::Product product;
    product.stop = stop;
    parts.push_back(std::move((*items)[j]));
    for (size_t k = i; k < j; ++k) {
      RegexNode& body = (*items)[k].children[0];
      if (body.kind != RegexNode::Kind::kConcat || body.children.size() < 2 ||
          !IsLiteral(body.children.back()) || body.children.back().set.ranges()[0].lo != stop) {
        refuse();
      }
      body.children.pop_back();
      RegexNode part = body.children.size() == 1 ? std::move(body.children[0])
                                                 : RegexNode::Concat(std::move(body.children),
                                                                     body.offset);
      product.positive.push_back((*items)[k].kind == RegexNode::Kind::kPositiveLookahead);
      parts.push_back(std::move(part));
    }
    (*items)[i] = RegexNode::MakeProduct(std::move(parts), std::move(product), offset);
    items->erase(items->begin() + static_cast<std::ptrdiff_t>(i + 1),
                 items->begin() + static_cast<std::ptrdiff_t>(j + 1));
  }

  // At * + ? or a well-formed {m,n}: consumes it and returns true. Otherwise leaves pos_.
  bool ParseQuantifier(uint32_t* min, uint32_t* max) {
    const uint32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      *min = c == '+' ? 1 : 0;
      *max = c == '?' ? 1 : RegexNode::kUnbounded;
      return true;
    }
    if (c != '{') return false;
    const size_t save = pos_;
    ++pos_;
    const size_t number_offset = pos_;
    std::string lo;
    std::string hi;
    while (IsAsciiDigit(Peek())) lo += static_cast<char>(Next());
    const bool comma = Consume(',');
    if (comma) {
      while (IsAsciiDigit(Peek())) hi += static_cast<char>(Next());
    }
    const bool well_formed = Consume('}') && (!lo.empty() || (comma && !ecma()));
    if (!well_formed) {
      pos_ = save;
      return false;
    }
    *min = lo.empty() ? 0 : ParseCount(lo, number_offset);
    *max = !comma ? *min : hi.empty() ? RegexNode::kUnbounded : ParseCount(hi, number_offset);
    if (*max < *min) Fail("min repeat greater than max repeat", number_offset);
    return true;
  }

  uint32_t ParseCount(const std::string& digits, size_t offset) const {
    uint64_t value = 0;
    for (char d : digits) {
      value = value * 10 + static_cast<uint64_t>(d - '0');
      if (value > kMaxRepeatCount) Fail("the repetition number is too large", offset);
    }
    return static_cast<uint32_t>(value);
  }

  RegexNode ParseAtom(const Flags& flags, size_t depth) {
    const size_t start = pos_;
    const uint32_t c = Next();
    switch (c) {
      case '(':
        return ParseGroup(flags, depth, start);
      case '[':
        return RegexNode::Class(ParseClass(flags, start), start);
      case '.':
        return RegexNode::Class(Dot(flags), start);
      case '^':
        if (!ecma() && flags.multiline) restricted_begin_offsets_.push_back(start);
        return RegexNode::Assert(RegexNode::Kind::kAssertBegin, start);
      case '$':
        if (!ecma()) restricted_end_offsets_.push_back(start);
        return RegexNode::Assert(RegexNode::Kind::kAssertEnd, start);
      case '\\': {
        Escape escape = ParseEscape(flags, /*in_class=*/false, start);
        switch (escape.kind) {
          case Escape::Kind::kBegin:
            return RegexNode::Assert(RegexNode::Kind::kAssertBegin, start);
          case Escape::Kind::kEnd:
            return RegexNode::Assert(RegexNode::Kind::kAssertEnd, start);
          case Escape::Kind::kSet:
            return RegexNode::Class(std::move(escape.set), start);
          case Escape::Kind::kCodePoint:
            return RegexNode::Class(Literal(escape.code_point, flags), start);
        }
        break;
      }
      default:
        break;
    }
    return RegexNode::Class(Literal(c, flags), start);
  }

  CodePointSet Literal(uint32_t c, const Flags& flags) const {
    CodePointSet set = CodePointSet::Single(c);
    if (flags.ignore_case) AddCaseVariants(flags, &set);
    return set;
  }

  static void AddCaseVariants(const Flags& flags, CodePointSet* set) {
    if (flags.ascii) {
      set->AddAsciiCaseVariants();
    } else {
      set->AddPythonCaseVariants();
    }
  }

  CodePointSet Dot(const Flags& flags) const {
    CodePointSet set = CodePointSet::All();
    if (flags.dot_all) return set;
    CodePointSet excluded = CodePointSet::Single('\n');
    if (ecma()) {
      excluded.Add('\r');
      excluded.AddRange(0x2028, 0x2029);
    }
    set.Subtract(excluded);
    return set;
  }

  // After '('.
  RegexNode ParseGroup(const Flags& flags, size_t depth, size_t start) {
    Flags inner = flags;
    if (Consume('?')) {
      const size_t ext = start + 1;  // sre reports unknown extensions at the '?'
      const uint32_t c = Next();
      if (c == ':') {
        // non-capturing
      } else if (c == 'P' && !ecma()) {
        const uint32_t kind = Next();
        if (kind == '<') {
          ParseGroupName(ext);
        } else if (kind == '=') {
          Fail("backreferences ((?P=name)) are not supported", start);
        } else {
          Fail("unknown extension ?P" + (kind == kEndOfPattern ? "" : Printable(kind)), ext);
        }
      } else if ((c == '!' || c == '=') && !ecma()) {
        RegexNode body = ParseAlternation(inner, depth + 1);
        if (!Consume(')')) Fail("missing ), unterminated subpattern", start);
        RegexNode lookahead;
        lookahead.kind = c == '!' ? RegexNode::Kind::kNegativeLookahead
                                  : RegexNode::Kind::kPositiveLookahead;
        lookahead.children.push_back(std::move(body));
        lookahead.offset = start;
        return lookahead;  // folded into kExceptWords or kProduct by FoldLookaheads, or refused
      } else if (c == '=' || c == '!') {
        Fail("lookahead assertions are not supported", start);
      } else if (c == '<') {
        if (Peek() == '=' || Peek() == '!') Fail("lookbehind assertions are not supported", start);
        if (!ecma()) Fail("unknown extension ?<" + Printable(Peek()), ext);
        ParseGroupName(ext);
      } else if (c == '(') {
        Fail("conditional groups are not supported", start);
      } else if (c == '>') {
        Fail("atomic groups are not supported", start);
      } else if (!ecma() && (IsFlagLetter(c) || c == '-')) {
        --pos_;
        ParseScopedFlags(start, &inner);
      } else {
        Fail("unknown extension ?" + Printable(c), ext);
      }
    }
    RegexNode body = ParseAlternation(inner, depth + 1);
    if (!Consume(')')) Fail("missing ), unterminated subpattern", start);
    return body;
  }

  void ParseGroupName(size_t offset) {
    const size_t name_start = pos_;
    while (!AtEnd() && Peek() != '>') ++pos_;
    if (AtEnd() || pos_ == name_start) Fail("missing or unterminated group name", offset);
    ++pos_;
  }

  // At "flags[-flags]:" after "(?". A ')' instead of ':' is a global flag in the middle.
  void ParseScopedFlags(size_t group_start, Flags* flags) {
    bool on = true;
    while (true) {
      const size_t offset = pos_;
      const uint32_t c = Next();
      if (c == ':') return;
      if (c == ')') Fail("global flags not at the start of the expression", group_start);
      if (c == '-') {
        if (!on) Fail("bad inline flags: multiple '-'", offset);
        on = false;
        continue;
      }
      if (!IsFlagLetter(c)) Fail("unknown flag " + Printable(c), offset);
      if (!on && c != 'i' && c != 'm' && c != 's' && c != 'x') {
        Fail("bad inline flags: cannot turn off flag " + Printable(c), offset);
      }
      ApplyFlag(c, on, offset, flags);
    }
  }

  // After '['.
  CodePointSet ParseClass(const Flags& flags, size_t start) {
    const bool negate = Consume('^');
    CodePointSet cased;    // literals and ranges: subject to IGNORECASE
    CodePointSet uncased;  // \d \w \s ... and \p{..}: not case-folded (as in sre)
    bool first = true;
    while (true) {
      if (AtEnd()) Fail("unterminated character set", start);
      if (Peek() == ']' && (!first || ecma())) {
        ++pos_;
        break;
      }
      first = false;
      const size_t item_start = pos_;
      Escape lo = ParseClassItem(flags);
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != kEndOfPattern) {
        ++pos_;
        const size_t hi_start = pos_;
        Escape hi = ParseClassItem(flags);
        if (lo.kind != Escape::Kind::kCodePoint || hi.kind != Escape::Kind::kCodePoint) {
          Fail("bad character range", lo.kind != Escape::Kind::kCodePoint ? item_start : hi_start);
        }
        if (hi.code_point < lo.code_point) Fail("bad character range", item_start);
        cased.AddRange(lo.code_point, hi.code_point);
      } else if (lo.kind == Escape::Kind::kSet) {
        uncased.AddSet(lo.set);
      } else {
        cased.Add(lo.code_point);
      }
    }
    if (flags.ignore_case) AddCaseVariants(flags, &cased);
    cased.AddSet(uncased);
    if (negate) cased.Complement();
    return cased;
  }

  Escape ParseClassItem(const Flags& flags) {
    const size_t start = pos_;
    const uint32_t c = Next();
    if (c == '\\') return ParseEscape(flags, /*in_class=*/true, start);
    Escape item;
    item.code_point = c;
    return item;
  }

  static Escape SetEscape(CodePointSet set, bool negate) {
    Escape escape;
    escape.kind = Escape::Kind::kSet;
    if (negate) set.Complement();
    escape.set = std::move(set);
    return escape;
  }
  static Escape CodePointEscape(uint32_t cp) {
    Escape escape;
    escape.code_point = cp;
    return escape;
  }

  // Reads exactly `count` hex digits (Python \x \u \U, ECMA \x \u).
  uint32_t ReadHex(size_t count, size_t start, const char* what) {
    uint32_t value = 0;
    for (size_t i = 0; i < count; ++i) {
      const int digit = HexValue(Peek());
      if (digit < 0) Fail(std::string("incomplete escape ") + what, start);
      ++pos_;
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    return value;
  }

  // After '\\' (start = offset of the backslash).
  Escape ParseEscape(const Flags& flags, bool in_class, size_t start) {
    return ecma() ? ParseEcmaEscape(in_class, start) : ParsePythonEscape(flags, in_class, start);
  }

  Escape ParsePythonEscape(const Flags& flags, bool in_class, size_t start) {
    const uint32_t c = Next();
    switch (c) {
      case kEndOfPattern:
        Fail("bad escape (end of pattern)", start);
      case 'd':
      case 'D':
        return SetEscape(flags.ascii ? AsciiDigits() : PythonDigits(), c == 'D');
      case 'w':
      case 'W':
        return SetEscape(flags.ascii ? AsciiWord() : PythonWord(), c == 'W');
      case 's':
      case 'S':
        return SetEscape(flags.ascii ? PythonAsciiSpace() : PythonSpace(), c == 'S');
      case 'a':
        return CodePointEscape(7);
      case 'f':
        return CodePointEscape('\f');
      case 'n':
        return CodePointEscape('\n');
      case 'r':
        return CodePointEscape('\r');
      case 't':
        return CodePointEscape('\t');
      case 'v':
        return CodePointEscape('\v');
      case 'b':
        if (in_class) return CodePointEscape(8);
        Fail("word boundaries (\\b) are not supported", start);
      case 'B':
        if (in_class) Fail("bad escape \\B", start);
        Fail("word boundaries (\\B) are not supported", start);
      case 'A':
      case 'Z': {
        if (in_class) Fail(std::string("bad escape \\") + static_cast<char>(c), start);
        Escape escape;
        escape.kind = c == 'A' ? Escape::Kind::kBegin : Escape::Kind::kEnd;
        return escape;
      }
      case 'x':
        return CodePointEscape(ReadHex(2, start, "\\x"));
      case 'u':
        return CodePointEscape(ReadHex(4, start, "\\u"));
      case 'U': {
        const uint32_t value = ReadHex(8, start, "\\U");
        if (value > CodePointSet::kMaxCodePoint) Fail("bad escape \\U", start);
        return CodePointEscape(value);
      }
      case 'N':
        Fail("named Unicode escapes (\\N{...}) are not supported", start);
      default:
        break;
    }
    if (IsAsciiDigit(c)) {
      // sre: "\0" and in-class digits are octal (up to 3 digits); outside a class a 3-digit
      // octal number is a character and anything else is a group reference.
      if (c == '0' || in_class) {
        if (!IsOctalDigit(c)) Fail(std::string("bad escape \\") + static_cast<char>(c), start);
        uint32_t value = c - '0';
        for (int i = 0; i < 2 && IsOctalDigit(Peek()); ++i) value = value * 8 + (Next() - '0');
        if (value > 0377) Fail("octal escape value outside of range 0-0o377", start);
        return CodePointEscape(value);
      }
      if (IsOctalDigit(c) && IsOctalDigit(Peek()) && IsOctalDigit(Peek(1))) {
        const uint32_t value = (c - '0') * 64 + (Peek() - '0') * 8 + (Peek(1) - '0');
        pos_ += 2;
        if (value > 0377) Fail("octal escape value outside of range 0-0o377", start);
        return CodePointEscape(value);
      }
      Fail("backreferences are not supported", start);
    }
    if (IsAsciiLetter(c)) Fail(std::string("bad escape \\") + static_cast<char>(c), start);
    return CodePointEscape(c);
  }

  Escape ParseEcmaEscape(bool in_class, size_t start) {
    const uint32_t c = Next();
    switch (c) {
      case kEndOfPattern:
        Fail("\\ at end of pattern", start);
      case 'd':
      case 'D':
        return SetEscape(AsciiDigits(), c == 'D');
      case 'w':
      case 'W':
        return SetEscape(AsciiWord(), c == 'W');
      case 's':
      case 'S':
        return SetEscape(EcmaSpace(), c == 'S');
      case 'f':
        return CodePointEscape('\f');
      case 'n':
        return CodePointEscape('\n');
      case 'r':
        return CodePointEscape('\r');
      case 't':
        return CodePointEscape('\t');
      case 'v':
        return CodePointEscape('\v');
      case 'b':
        if (in_class) return CodePointEscape(8);
        Fail("word boundaries (\\b) are not supported", start);
      case 'B':
        Fail("word boundaries (\\B) are not supported", start);
      case '0':
        if (IsAsciiDigit(Peek())) Fail("octal escapes are not supported in ECMA patterns", start);
        return CodePointEscape(0);
      case 'c': {
        const uint32_t letter = Next();
        if (!IsAsciiLetter(letter)) Fail("invalid control escape \\c", start);
        return CodePointEscape(letter % 32);
      }
      case 'x':
        return CodePointEscape(ReadHex(2, start, "\\x"));
      case 'u':
        return CodePointEscape(ParseEcmaUnicodeEscape(start));
      case 'p':
      case 'P':
        return SetEscape(ParseProperty(start), c == 'P');
      case 'k':
        Fail("backreferences (\\k<name>) are not supported", start);
      default:
        break;
    }
    if (IsAsciiDigit(c)) Fail("backreferences are not supported", start);
    // Identity escapes: any non-alphanumeric character (`\_`, `\/`, `\-`, ...) stands for
    // itself, which is what every ECMA mode that accepts it means. `\a`-style letter escapes
    // differ between Annex B and u-mode, so they are errors.
    if (IsAsciiAlnum(c)) Fail(std::string("bad escape \\") + static_cast<char>(c), start);
    return CodePointEscape(c);
  }

  // After "\u": \u{h...} or \uhhhh, joining a \uD8xx\uDCxx surrogate pair into one code point.
  uint32_t ParseEcmaUnicodeEscape(size_t start) {
    if (Consume('{')) {
      uint32_t value = 0;
      size_t digits = 0;
      while (HexValue(Peek()) >= 0) {
        value = value * 16 + static_cast<uint32_t>(HexValue(Next()));
        if (value > CodePointSet::kMaxCodePoint) Fail("\\u{...} escape out of range", start);
        ++digits;
      }
      if (digits == 0 || !Consume('}')) Fail("incomplete escape \\u{...}", start);
      return value;
    }
    const uint32_t value = ReadHex(4, start, "\\u");
    if (value >= 0xD800 && value <= 0xDBFF && Peek() == '\\' && Peek(1) == 'u') {
      const size_t save = pos_;
      pos_ += 2;
      bool ok = true;
      uint32_t low = 0;
      for (int i = 0; i < 4; ++i) {
        const int digit = HexValue(Peek());
        if (digit < 0) {
          ok = false;
          break;
        }
        ++pos_;
        low = low * 16 + static_cast<uint32_t>(digit);
      }
      if (ok && low >= 0xDC00 && low <= 0xDFFF) {
        return 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00);
      }
      pos_ = save;
    }
    return value;
  }

  // After "\p" / "\P": {Name}, {gc=Name}, {General_Category=Name}, {Any}, {ASCII}, {Assigned}.
  CodePointSet ParseProperty(size_t start) {
    if (!Consume('{')) Fail("\\p must be followed by {property}", start);
    std::string name;
    while (!AtEnd() && Peek() != '}') {
      const uint32_t c = Next();
      if (c >= 0x80) Fail("bad Unicode property name", start);
      name += static_cast<char>(c);
    }
    if (!Consume('}')) Fail("unterminated \\p{...}", start);
    std::string value = name;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      const std::string key = name.substr(0, eq);
      value = name.substr(eq + 1);
      if (key != "gc" && key != "General_Category") {
        Fail("Unicode property " + key + " is not supported (only General_Category)", start);
      }
    } else if (name == "Any") {
      return CodePointSet::All();
    } else if (name == "ASCII") {
      return CodePointSet::Range(0, 0x7F);
    } else if (name == "Assigned") {
      CodePointSet set = CodePointSet::FromTable(*FindCategory("Cn"));
      set.Complement();
      return set;
    }
    CodePointSet set;
    if (!GeneralCategorySet(value, &set)) {
      Fail("Unicode property \\p{" + name +
               "} is not supported (only general categories, Any, ASCII, Assigned)",
           start);
    }
    return set;
  }

  // Python's `$` (it also matches before a final newline) and multiline `^` are only accepted
  // where nothing can be consumed after / before them, so that they mean exactly end / start.
  void CheckRestrictedAnchors(const RegexNode& node, bool at_start, bool at_end) const {
    switch (node.kind) {
      case RegexNode::Kind::kAssertBegin:
        if (!at_start && IsIn(restricted_begin_offsets_, node.offset)) {
          Fail("'^' with MULTILINE is only supported at the start of the pattern", node.offset);
        }
        return;
      case RegexNode::Kind::kAssertEnd:
        if (!at_end && IsIn(restricted_end_offsets_, node.offset)) {
          Fail("'$' is only supported at the end of the pattern", node.offset);
        }
        return;
      case RegexNode::Kind::kEmpty:
      case RegexNode::Kind::kClass:
      case RegexNode::Kind::kNegativeLookahead:  // folded before this check
      case RegexNode::Kind::kPositiveLookahead:
      case RegexNode::Kind::kAutomaton:  // never parsed
      case RegexNode::Kind::kProgram:
        return;
      case RegexNode::Kind::kExceptWords:
      case RegexNode::Kind::kProduct:
        for (const RegexNode& child : node.children) CheckRestrictedAnchors(child, false, false);
        return;
      case RegexNode::Kind::kAlternate:
        for (const RegexNode& child : node.children) {
          CheckRestrictedAnchors(child, at_start, at_end);
        }
        return;
      case RegexNode::Kind::kRepeat: {
        const bool once = node.max <= 1;
        CheckRestrictedAnchors(node.children[0], at_start && once, at_end && once);
        return;
      }
      case RegexNode::Kind::kConcat: {
        const size_t n = node.children.size();
        std::vector<bool> width_after(n + 1, false);  // some child after i consumes
        for (size_t i = n; i-- > 0;) {
          width_after[i] = width_after[i + 1] || !node.children[i].IsZeroWidth();
        }
        bool width_before = false;
        for (size_t i = 0; i < n; ++i) {
          CheckRestrictedAnchors(node.children[i], at_start && !width_before,
                                 at_end && !width_after[i + 1]);
          width_before = width_before || !node.children[i].IsZeroWidth();
        }
        return;
      }
    }
  }

  static bool IsIn(const std::vector<size_t>& offsets, size_t offset) {
    for (size_t o : offsets) {
      if (o == offset) return true;
    }
    return false;
  }

  std::vector<uint32_t> cps_;
  RegexOptions options_;
  size_t pos_ = 0;
  std::vector<size_t> restricted_begin_offsets_;
  std::vector<size_t> restricted_end_offsets_;
};

}  // namespace

RegexNode ParseRegex(std::string_view pattern, const RegexOptions& options) {
  return Parser(DecodeUtf8(pattern), options).Parse();
}

}  // namespace jaxguide
