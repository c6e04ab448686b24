// RegexNode constructors and debug rendering.
#include "native/lexer/regex_ast.h"

#include <cstdio>
#include <utility>

namespace jaxguide {

RegexNode RegexNode::Empty(size_t offset) {
  RegexNode node;
  node.offset = offset;
  return node;
}

RegexNode RegexNode::Class(CodePointSet set, size_t offset) {
  RegexNode node;
  node.kind = Kind::kClass;
  node.set = std::move(set);
  node.offset = offset;
  return node;
}

RegexNode RegexNode::Concat(std::vector<RegexNode> children, size_t offset) {
  if (children.empty()) return Empty(offset);
  if (children.size() == 1) return std::move(children[0]);
  RegexNode node;
  node.kind = Kind::kConcat;
  node.children = std::move(children);
  node.offset = offset;
  return node;
}

RegexNode RegexNode::Alternate(std::vector<RegexNode> children, size_t offset) {
  if (children.size() == 1) return std::move(children[0]);
  RegexNode node;
  node.kind = Kind::kAlternate;
  node.children = std::move(children);
  node.offset = offset;
  return node;
}

RegexNode RegexNode::Repeat(RegexNode child, uint32_t min, uint32_t max, size_t offset) {
  RegexNode node;
  node.kind = Kind::kRepeat;
  node.children.push_back(std::move(child));
  node.min = min;
  node.max = max;
  node.offset = offset;
  return node;
}

RegexNode RegexNode::Assert(Kind kind, size_t offset) {
  RegexNode node;
  node.kind = kind;
  node.offset = offset;
  return node;
}

RegexNode RegexNode::Except(RegexNode unit, ExceptWords except, size_t offset) {
  RegexNode node;
  node.kind = Kind::kExceptWords;
  node.children.push_back(std::move(unit));
  node.except = std::make_shared<const ExceptWords>(std::move(except));
  node.offset = offset;
  return node;
}

RegexNode RegexNode::MakeProduct(std::vector<RegexNode> children, Product product,
                                 size_t offset) {
  RegexNode node;
  node.kind = Kind::kProduct;
  node.children = std::move(children);
  node.product = std::make_shared<const Product>(std::move(product));
  node.offset = offset;
  return node;
}

RegexNode RegexNode::Automaton(std::shared_ptr<const CodePointAutomaton> automaton) {
  RegexNode node;
  node.kind = Kind::kAutomaton;
  node.automaton = std::move(automaton);
  return node;
}

RegexNode RegexNode::Program(std::shared_ptr<const TerminalProgram> program, size_t offset) {
  RegexNode node;
  node.kind = Kind::kProgram;
  node.program = std::move(program);
  node.offset = offset;
  return node;
}

bool RegexNode::IsZeroWidth() const {
  switch (kind) {
    case Kind::kEmpty:
    case Kind::kAssertBegin:
    case Kind::kAssertEnd:
    case Kind::kNegativeLookahead:
    case Kind::kPositiveLookahead:
      return true;
    case Kind::kProduct:
      return children[0].IsZeroWidth();
    case Kind::kAutomaton:
    case Kind::kProgram:
      return false;  // conservative: only used to skip zero-width parts
    case Kind::kClass:
      return false;
    case Kind::kExceptWords:
      if (except->unit_dfa != nullptr) return false;  // (its unit not at hand: conservative)
      [[fallthrough]];
    case Kind::kConcat:
    case Kind::kAlternate:
    case Kind::kRepeat:
      for (const RegexNode& child : children) {
        if (!child.IsZeroWidth()) return false;
      }
      return true;
  }
  return false;
}

std::string RegexNode::ToString() const {
  char buffer[48];
  switch (kind) {
    case Kind::kEmpty:
      return "()";
    case Kind::kAssertBegin:
      return "^";
    case Kind::kAssertEnd:
      return "$";
    case Kind::kClass: {
      std::string out = "[";
      bool first = true;
      for (const CodePointRange& r : set.ranges()) {
        if (!first) out += ' ';
        first = false;
        if (r.lo == r.hi) {
          std::snprintf(buffer, sizeof(buffer), "0x%X", r.lo);
        } else {
          std::snprintf(buffer, sizeof(buffer), "0x%X-0x%X", r.lo, r.hi);
        }
        out += buffer;
      }
      return out + "]";
    }
    case Kind::kConcat:
    case Kind::kAlternate: {
      std::string out = kind == Kind::kConcat ? "(cat" : "(alt";
      for (const RegexNode& child : children) out += " " + child.ToString();
      return out + ")";
    }
    case Kind::kRepeat: {
      std::string max_text = max == kUnbounded ? "inf" : std::to_string(max);
      return "(rep " + std::to_string(min) + " " + max_text + " " + children[0].ToString() + ")";
    }
    case Kind::kExceptWords: {
      std::string out = "(except " + children[0].ToString();
      for (const std::vector<uint32_t>& word : except->words) {
        out += " \"";
        for (uint32_t c : word) out += c < 0x80 ? std::string(1, static_cast<char>(c)) : "?";
        out += '"';
      }
      return out + ")";
    }
    case Kind::kNegativeLookahead:
      return "(?! " + children[0].ToString() + ")";
    case Kind::kPositiveLookahead:
      return "(?= " + children[0].ToString() + ")";
    case Kind::kProduct: {
      std::string out = "(product " + children[0].ToString();
      for (size_t i = 1; i < children.size(); ++i) {
        out += (product->positive[i - 1] ? " +" : " -") + children[i].ToString();
      }
      return out + ")";
    }
    case Kind::kAutomaton:
      return "(automaton)";
    case Kind::kProgram:
      return "(program)";
  }
  return "?";
}

}  // namespace jaxguide
