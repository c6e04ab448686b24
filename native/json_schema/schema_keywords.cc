// See schema_keywords.h. The Python rules these mirror: combinators.KEYWORD_SHAPES and
// trivial_or_checked, combinators._TYPE_KEYWORDS (a keyword's type), units.literal_units and
// units.not_names_units.
#include "native/json_schema/schema_keywords.h"

#include <algorithm>
#include <unordered_map>

namespace jaxguide {

bool IsScalar(const SchemaNode& node) {
  switch (node.kind) {
    case SchemaNode::Kind::kNull:
    case SchemaNode::Kind::kFalse:
    case SchemaNode::Kind::kTrue:
    case SchemaNode::Kind::kInt:
    case SchemaNode::Kind::kFloat:
    case SchemaNode::Kind::kString:
      return true;
    default:
      return false;
  }
}

bool IsLeafType(const std::string& name) {
  return name == "string" || name == "number" || name == "integer" || name == "boolean" ||
         name == "null";
}

bool IsPlainWord(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           c == '_';
  });
}

void AppendScalar(const SchemaNode& node, std::string* out) {
  out->push_back(static_cast<char>('0' + static_cast<int>(node.kind)));
  out->append(std::to_string(node.text.size()));
  out->push_back(':');
  out->append(node.text);
}

bool OtherPlainWordsKey(std::vector<std::string> names, const std::string& canonical_unit,
                        const std::string& colon, std::string* regex) {
  if (names.empty() || canonical_unit.empty() ||
      !std::all_of(names.begin(), names.end(), IsPlainWord)) {
    return false;
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  *regex = "\"(?!(?:";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i != 0) regex->push_back('|');
    regex->append(names[i]);
  }
  regex->append(")\")");
  regex->append(canonical_unit);
  regex->append("*\"");
  regex->append(colon);
  return true;
}

bool IsObjectKeyword(const std::string& key) {
  return key == "properties" || key == "required" || key == "additionalProperties" ||
         key == "patternProperties";
}

bool IsArrayKeyword(const std::string& key) {
  return key == "items" || key == "minItems" || key == "maxItems";
}

KeywordType OwnerType(const std::string& key) {
  static const auto* const kOwners = new std::unordered_map<std::string, KeywordType>{
      {"properties", KeywordType::kObject},       {"required", KeywordType::kObject},
      {"additionalProperties", KeywordType::kObject},
      {"patternProperties", KeywordType::kObject}, {"propertyNames", KeywordType::kObject},
      {"minProperties", KeywordType::kObject},    {"maxProperties", KeywordType::kObject},
      {"items", KeywordType::kArray},             {"prefixItems", KeywordType::kArray},
      {"additionalItems", KeywordType::kArray},   {"minItems", KeywordType::kArray},
      {"maxItems", KeywordType::kArray},          {"uniqueItems", KeywordType::kArray},
      {"minLength", KeywordType::kString},        {"maxLength", KeywordType::kString},
      {"pattern", KeywordType::kString},          {"format", KeywordType::kString},
      {"minimum", KeywordType::kNumber},          {"maximum", KeywordType::kNumber},
      {"exclusiveMinimum", KeywordType::kNumber}, {"exclusiveMaximum", KeywordType::kNumber},
      {"multipleOf", KeywordType::kNumber},
  };
  const auto found = kOwners->find(key);
  return found == kOwners->end() ? KeywordType::kNone : found->second;
}

bool WellFormedKeyword(const std::string& key, const SchemaNode& value) {
  using Kind = SchemaNode::Kind;
  const bool schema = value.IsObject() || value.kind == Kind::kTrue || value.kind == Kind::kFalse;
  if (value.kind == Kind::kNull || value.kind == Kind::kOpaque) return false;
  if (key == "required") {  // (draft 4's `required: true` too: the Python side decides)
    return value.kind == Kind::kArray &&
           std::all_of(value.items.begin(), value.items.end(),
                       [](const SchemaNode* name) { return name->kind == Kind::kString; });
  }
  if (key == "prefixItems") return value.kind == Kind::kArray;
  if (key == "properties" || key == "patternProperties") return value.IsObject();
  if (key == "items") return schema || value.kind == Kind::kArray;
  if (key == "additionalItems" || key == "additionalProperties" || key == "propertyNames") {
    return schema;
  }
  if (key == "format" || key == "pattern") return value.kind == Kind::kString;
  return true;
}

}  // namespace jaxguide
