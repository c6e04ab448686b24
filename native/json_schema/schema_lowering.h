// The JSON Schema front-end's common shapes, lowered to grammar rules in C++.
//
// Contract: for a schema made only of the shapes below, LowerSimpleSchema returns the grammar IR
// that the Python front-end (jaxguide/grammars/json_schema: Normalizer + Emitter) builds for it
// with the same options: the same terminals, nonterminals (names included) and rules, created in
// the same order. For any other schema it returns nullopt and the Python front-end lowers it
// (the caller falls back). The shapes, each a JSON object whose keywords other than these are
// ones the normalizer never reads (annotations, `x-...`):
//   * leaf: only leaf keywords (type/enum/const/format/pattern/lengths/bounds/multipleOf) with
//     scalar values or lists of scalars, a scalar type or types (or none, with enum/const):
//     its rules come from LoweringHooks::leaf_rules, once per distinct keyword set (a long
//     free string's chunk chain as a recorded group, spliced once per length window);
//   * reference: only `$ref`, a JSON pointer into the root (`#`, `#/a/b`) naming an object;
//     or only `allOf` of one such reference;
//   * object: `type: "object"` with `properties`, `required` (names not declared take the
//     additionalProperties schema, as declared properties after the others),
//     `additionalProperties` (absent, a boolean or a schema) and `patternProperties` (key
//     classes from LoweringHooks::pattern_members, each of one schema);
//   * array: `type: "array"` with `items` (absent, true or a schema), `minItems` up to
//     kMaxArrayCount - 1, `maxItems` up to kMaxArrayCount;
//   * a type list of those beside other types (`["object", "null"]`), or no type, with only
//     object and array keywords besides keywords of the types not admitted (which no form
//     reads; their values pass the normalizer's checks, schema_keywords.h): each type's form
//     in sorted order, as the normalizer's conjunction emits them (scalar ones without
//     keywords: LoweringHooks::plain_type_rules);
//     a schema object with no keyword read at all is any value;
//   * `anyOf` alone, of leaves, references and object / array forms (up to 16): each branch's
//     rules in order; `oneOf` alone likewise when its branches are leaves of one type each,
//     the types disjoint (Kubernetes' int-or-string);
//   * `true` / `{}` (any value: the any-value group, LoweringHooks::any_value_group), `false`.
// Everything the Python side owns (regexes of leaves and keys, the any-value group) comes through
// the hooks, so there is one definition of each; a hook answering false makes the whole schema
// fall back. Cost: linear in the schema's nodes plus the rules it emits; budgets (rule count,
// value nesting) are checked as the Python emitter checks them, and a schema that would exceed
// one falls back (the Python side then raises its error).
#ifndef JAXGUIDE_NATIVE_JSON_SCHEMA_SCHEMA_LOWERING_H_
#define JAXGUIDE_NATIVE_JSON_SCHEMA_SCHEMA_LOWERING_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace jaxguide {

// A JSON value of a schema document. Objects keep their members in order; `text` is a string's
// UTF-8 content or a number's exact spelling (ints in decimal, floats as Python's repr), so that
// equal texts mean equal values of the same kind. kOpaque: a value that is not JSON.
struct SchemaNode {
  enum class Kind : uint8_t {
    kNull, kFalse, kTrue, kInt, kFloat, kString, kArray, kObject, kOpaque
  };
  Kind kind = Kind::kNull;
  std::string text;
  std::vector<std::pair<std::string, const SchemaNode*>> members;  // kObject
  std::vector<const SchemaNode*> items;                             // kArray
  const void* handle = nullptr;  // the caller's object for this value (passed to the hooks)

  bool IsObject() const { return kind == Kind::kObject; }
  // The member named `key` (nullptr: none).
  const SchemaNode* Find(std::string_view key) const;
};

// Owns the nodes of one schema document (stable addresses).
struct SchemaDocument {
  std::deque<SchemaNode> nodes;
  const SchemaNode* root = nullptr;
  SchemaNode* Add() { return &nodes.emplace_back(); }
};

// A group of rules the Python front-end recorded once and the core splices where the emitter
// would lower them, numbered on from the grammar's: the any-value group (jaxguide/grammars/
// json_schema/any_value.py) and a long free string's chunk chain (Emitter.chunked_string).
struct RecordedGroup {
  std::vector<std::string> names;  // nonterminals, the group's first
  std::vector<bool> numbered;      // named "v<its number>": renamed for its place
  std::vector<std::pair<int32_t, std::vector<int32_t>>> rules;  // terminal ~i: keys[i]
  std::vector<std::string> keys;     // terminal regexes by recorded index
  std::vector<uint32_t> key_order;   // recorded indices in the order first asked for
  size_t depth = 0;                  // the deepest value below the group
};

// A symbol of a leaf's rules: a terminal regex, or (group set) the first nonterminal of a
// recorded group, spliced at its first use and shared by every later use of the same memo key
// `text` (as Emitter.chunked_string's memo shares a chain).
struct LeafSymbol {
  std::string text;  // the terminal regex, or the group's memo key
  std::shared_ptr<const RecordedGroup> group;
};
using LeafRules = std::vector<std::vector<LeafSymbol>>;

struct LoweringOptions {
  // Punctuation terminals of a non-indented layout (jaxguide/grammars/json_schema/layout.py).
  std::string comma, open_brace, close_brace, open_bracket, close_bracket, colon;
  bool additional_properties_default = true;
  // units.CANONICAL_UNIT: the unit of the keys other than some plain words (empty: ask
  // LoweringHooks::other_keys_regex for every such key terminal).
  std::string canonical_unit;
  size_t max_rules = 0;          // json_schema/limits.py MAX_RULES
  size_t max_value_nesting = 0;  // json_schema/limits.py MAX_VALUE_NESTING
  // Keywords the normalizer reads (implemented or refused, annotations excepted): any other
  // member of a schema object is ignored. And the leaf keywords (leaf_recipes._LEAF_KEYWORDS).
  // Shared: fixed per process, the rest per call.
  std::shared_ptr<const std::unordered_set<std::string>> read_keywords, leaf_keywords;
};

struct LoweringHooks {
  // The rules of a leaf schema, each a list of symbols; false: not lowered here.
  std::function<bool(const SchemaNode& leaf, LeafRules* rules)> leaf_rules;
  // The rules of a scalar type's form without keywords ("string", "number", "integer"): those
  // of the leaf {"type": name}.
  std::function<bool(const std::string& type, LeafRules* rules)> plain_type_rules;
  // The key terminal of a declared property name that is not a plain word.
  std::function<bool(const std::string& name, std::string* regex)> key_regex;
  // The key terminal of the names other than `declared` (all of an object's declared names).
  std::function<bool(const std::vector<std::string>& declared, std::string* regex)>
      other_keys_regex;
  // The undeclared member classes of an object with patternProperties whose properties are
  // `declared`, in order: (key terminal regex, value) with value -1 (any value), i (the i-th
  // patternProperties schema) or their count (additionalProperties); false: not lowered here.
  std::function<bool(const SchemaNode& object, const std::vector<std::string>& declared,
                     std::vector<std::pair<std::string, int32_t>>* classes)>
      pattern_members;
  std::function<bool(RecordedGroup* group)> any_value_group;
};

// The IR: terminals (regexes, named T<i> by the caller), nonterminals (names; 0 is the start),
// rules (lhs: a nonterminal's index; right-hand symbols numbered terminals first: terminal i is
// i, nonterminal j is terminals.size() + j), as jaxguide.grammars.ir.GrammarIR holds them.
struct LoweredGrammar {
  std::vector<std::string> terminals;
  std::vector<std::string> nonterminals;
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> rules;
};

// Arrays with counts above this fall back (the Python emitter counts long runs in binary).
inline constexpr int64_t kMaxArrayCount = 256;

// The IR of `root` (see the file comment), or nullopt: lower it in Python. Exceptions thrown
// by the hooks propagate.
std::optional<LoweredGrammar> LowerSimpleSchema(const SchemaNode& root,
                                                const LoweringOptions& options,
                                                const LoweringHooks& hooks);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_JSON_SCHEMA_SCHEMA_LOWERING_H_
