// LowerSimpleSchema: the Python JSON Schema emitter's walk, for its common shapes, in C++.
//
// Design note. The Python front-end normalizes each subschema (expand, union, conjunction,
// object_form / array_form) and emits rules for the normal form (emit.Emitter); for a schema of
// plain objects, arrays, references and leaves most of that work is bookkeeping around a few
// rules per property, and it is most of a typical schema's time to first mask. This file walks
// such a schema once and emits the same rules in the same order, mirroring, function for
// function: Emitter.value (memo by object identity, `v<n>` names), Emitter.members and
// member_chain (declared members in order, optional ones skippable, undeclared members between
// them), ArrayRules.array (A<c> states), splice_any_value, and Emitter.finish (terminals numbered
// first). What a shape needs from the Python side it asks the hooks for (leaf rules once per
// distinct keyword set, key regexes, the any-value group), so each regex has one definition.
// Anything outside the shapes throws Fallback, caught at the top: the caller lowers in Python.
// The Python and native IRs are compared schema by schema in tests/grammars/
// test_native_lowering.py and by tools/grammar_fingerprints.py over MaskBench.
//
// Cost: one visit per schema node (memoized), one hash probe per terminal use; recursion depth
// bounded by max_value_nesting (objects and arrays nest one level per value).
#include "native/json_schema/schema_lowering.h"

#include <algorithm>
#include <unordered_map>

#include "native/json_schema/schema_keywords.h"

namespace jaxguide {

const SchemaNode* SchemaNode::Find(std::string_view key) const {
  for (const auto& [name, value] : members) {
    if (name == key) return value;
  }
  return nullptr;
}

namespace {

struct Fallback {};  // the schema leaves the shapes: lower it in Python

constexpr std::string_view kMarkerPrefix = "jaxguide:";  // the normalizer's own keys

class Lowering {
 public:
  Lowering(const SchemaNode& root, const LoweringOptions& options, const LoweringHooks& hooks)
      : root_(root), options_(options), hooks_(hooks) {}

  LoweredGrammar Run() {
    if (!root_.IsObject()) throw Fallback();
    const int32_t start = NewNonterminal("start");
    const int32_t value = Value(&root_, 0);
    Rule(start, {value});
    return Finish();
  }

 private:
  // Symbols while building, as Emitter's: terminal i is ~i (negative), a nonterminal its index.
  int32_t Terminal(const std::string& regex) {
    const auto next = static_cast<int32_t>(terminals_.size());
    auto [it, inserted] = terminal_index_.try_emplace(regex, next);
    if (inserted) terminals_.push_back(regex);
    return ~it->second;
  }

  int32_t NewNonterminal(std::string name) {
    nonterminals_.push_back(std::move(name));
    return static_cast<int32_t>(nonterminals_.size() - 1);
  }

  int32_t NewValueNonterminal() {
    return NewNonterminal("v" + std::to_string(nonterminals_.size()));
  }

  void Rule(int32_t lhs, std::vector<int32_t> rhs) {
    rules_.emplace_back(lhs, std::move(rhs));
    if (rules_.size() > options_.max_rules) throw Fallback();  // (Python raises its error)
  }

  bool IsRead(const std::string& key) const {
    if (key.compare(0, kMarkerPrefix.size(), kMarkerPrefix) == 0) throw Fallback();
    return options_.read_keywords->count(key) != 0;
  }

  // Whether the normalizer reads any of the object's keywords (else it is any value).
  bool Reads(const SchemaNode& schema) const {
    return std::any_of(schema.members.begin(), schema.members.end(),
                       [this](const auto& member) { return IsRead(member.first); });
  }

  // Emitter.value: the nonterminal of the values of `schema`.
  int32_t Value(const SchemaNode* schema, size_t depth) {
    if (depth > options_.max_value_nesting) throw Fallback();
    MemoKey memo_key{schema, false};
    if (schema->IsObject()) {
      memo_key = MemoKeyOf(*schema);
      const auto known = memo_.find(memo_key);
      if (known != memo_.end()) return known->second;
    }
    const int32_t nt = NewValueNonterminal();
    switch (schema->kind) {
      case SchemaNode::Kind::kTrue:
        Rule(nt, {AnyValue(depth)});
        return nt;
      case SchemaNode::Kind::kFalse:
        return nt;  // no value
      case SchemaNode::Kind::kObject:
        break;
      default:
        throw Fallback();
    }
    memo_.emplace(memo_key, nt);
    if (schema->members.empty()) {
      Rule(nt, {AnyValue(depth)});
      return nt;
    }
    std::string leaf_key;
    if (LeafKey(*schema, &leaf_key)) {
      Leaf(nt, *schema, leaf_key);
      return nt;
    }
    const SchemaNode* type = nullptr;
    const SchemaNode* branches = nullptr;
    bool has_ref = false;
    size_t read = 0;
    for (const auto& [key, value] : schema->members) {
      if (!IsRead(key)) continue;
      ++read;
      if (key == "type") {
        type = value;
      } else if (key == "$ref") {
        has_ref = true;
      } else if (key == "oneOf" || key == "anyOf") {
        branches = value;
      }
    }
    if (has_ref) {
      Reference(nt, *schema, depth);
    } else if (const SchemaNode* all_of = schema->Find("allOf"); all_of != nullptr) {
      // allOf of one reference alone: the reference (expand's single conjunct)
      if (read != 1 || all_of->kind != SchemaNode::Kind::kArray || all_of->items.size() != 1 ||
          !all_of->items[0]->IsObject() || all_of->items[0]->Find("$ref") == nullptr) {
        throw Fallback();
      }
      Reference(nt, *all_of->items[0], depth);
    } else if (branches != nullptr) {
      if (read != 1) throw Fallback();  // a combinator beside other keywords: a merge
      Branches(nt, *branches, schema->Find("oneOf") != nullptr, depth);
    } else {
      Typed(nt, *schema, type, depth);
    }
    return nt;
  }

  // anyOf / oneOf alone (combinators.expand_once: the branches' expansions, in order, are the
  // alternatives; each emitted into `nt`). A branch is a leaf, a reference or an object / array
  // form; `true` or an object of unread keywords only among them makes any value, `false` adds
  // nothing. A oneOf of two or
  // more branches only of leaves of one type each, no two types overlapping (integer is a
  // number): then no branch excludes another.
  void Branches(int32_t nt, const SchemaNode& list, bool one_of, size_t depth) {
    if (list.kind != SchemaNode::Kind::kArray || list.items.empty() ||
        list.items.size() > kMaxBranches) {
      throw Fallback();
    }
    if (one_of && list.items.size() > 1) {
      DisjointLeafTypes(list);
    }
    for (const SchemaNode* branch : list.items) {  // (a branch expanding to "any")
      if (branch->kind == SchemaNode::Kind::kTrue || (branch->IsObject() && !Reads(*branch))) {
        Rule(nt, {AnyValue(depth)});
        return;
      }
    }
    for (const SchemaNode* branch : list.items) {
      if (branch->kind == SchemaNode::Kind::kFalse) continue;
      if (!branch->IsObject()) throw Fallback();
      std::string key;
      if (LeafKey(*branch, &key)) {
        Leaf(nt, *branch, key);
        continue;
      }
      if (branch->Find("$ref") != nullptr) {
        Reference(nt, *branch, depth);  // (which refuses any other keyword read)
        continue;
      }
      for (const auto& [name, value] : branch->members) {
        if (IsRead(name) && (name == "allOf" || name == "anyOf" || name == "oneOf")) {
          throw Fallback();
        }
      }
      Typed(nt, *branch, branch->Find("type"), depth);
    }
  }

  static constexpr size_t kMaxBranches = 16;

  void DisjointLeafTypes(const SchemaNode& list) const {
    std::vector<std::string> types;
    std::string key;
    for (const SchemaNode* branch : list.items) {
      if (!branch->IsObject() || !LeafKey(*branch, &key)) throw Fallback();
      const SchemaNode* type = branch->Find("type");
      if (type == nullptr || type->kind != SchemaNode::Kind::kString ||
          branch->Find("enum") != nullptr || branch->Find("const") != nullptr) {
        throw Fallback();
      }
      types.push_back(type->text == "integer" ? "number" : type->text);
    }
    std::sort(types.begin(), types.end());
    if (std::adjacent_find(types.begin(), types.end()) != types.end()) throw Fallback();
  }

  // normalize.conjunction for objects and arrays, alone or beside null / boolean: one form per
  // type, in sorted order, into the same nonterminal.
  void Typed(int32_t nt, const SchemaNode& schema, const SchemaNode* type, size_t depth) {
    std::vector<std::string> types;
    if (type != nullptr && type->kind == SchemaNode::Kind::kString) {
      types.push_back(type->text);
    } else if (type != nullptr && type->kind == SchemaNode::Kind::kArray) {
      for (const SchemaNode* name : type->items) {
        if (name->kind != SchemaNode::Kind::kString) throw Fallback();
        types.push_back(name->text);
      }
    } else if (type != nullptr) {
      throw Fallback();
    } else {  // no type: every type's form (integer within number), or any value when nothing
      // is read at all (expand: no conjunct)
      if (!Reads(schema)) {
        Rule(nt, {AnyValue(depth)});
        return;
      }
      types = {"array", "boolean", "null", "number", "object", "string"};
    }
    std::sort(types.begin(), types.end());
    if (std::adjacent_find(types.begin(), types.end()) != types.end()) throw Fallback();
    const auto has = [&types](const char* name) {
      return std::find(types.begin(), types.end(), name) != types.end();
    };
    if (has("integer") && has("number")) {
      types.erase(std::find(types.begin(), types.end(), "integer"));
    }
    const bool object = has("object"), array = has("array");
    const bool string = has("string"), number = has("number") || has("integer");
    for (const auto& [key, value] : schema.members) {  // each read keyword, a form's
      if (!IsRead(key) || key == "type") continue;
      if ((object && IsObjectKeyword(key)) || (array && IsArrayKeyword(key))) continue;
      // A keyword of a type the schema does not admit constrains nothing (no form reads it).
      // (Its value is still checked: the Python side refuses a malformed one anyway.)
      const KeywordType owner = OwnerType(key);
      if (((owner == KeywordType::kObject && !object) || (owner == KeywordType::kArray && !array) ||
           (owner == KeywordType::kString && !string) ||
           (owner == KeywordType::kNumber && !number)) &&
          WellFormedKeyword(key, *value)) {
        continue;
      }
      throw Fallback();
    }
    for (const std::string& name : types) {
      if (name == "array") {
        Array(nt, schema, depth);
      } else if (name == "object") {
        Object(nt, schema, depth);
      } else if (name == "boolean") {
        Rule(nt, {Terminal("true|false")});
      } else if (name == "null") {
        Rule(nt, {Terminal("null")});
      } else if (name == "string" || name == "number" || name == "integer") {
        PlainType(nt, name);  // (no keyword of its form is present: its plain form)
      } else {
        throw Fallback();
      }
    }
  }

  // The rules of a scalar type's form without keywords: those of the leaf {"type": name}.
  void PlainType(int32_t nt, const std::string& name) {
    EmitLeafRules(nt, std::string("\x01plain ") + name,  // (no leaf key starts so)
                  [&](auto* rules) { return hooks_.plain_type_rules(name, rules); });
  }

  // emit.identity_key: a schema object by identity, except one that holds only an allOf (what a
  // merge writes afresh), keyed by its parts' identities: here a single part, not itself such.
  struct MemoKey {
    const SchemaNode* node;
    bool all_of_part;
    bool operator==(const MemoKey& other) const {
      return node == other.node && all_of_part == other.all_of_part;
    }
  };
  struct MemoKeyHash {
    size_t operator()(const MemoKey& key) const {
      return std::hash<const SchemaNode*>()(key.node) ^ static_cast<size_t>(key.all_of_part);
    }
  };

  static MemoKey MemoKeyOf(const SchemaNode& schema) {
    if (schema.members.size() != 1 || schema.members[0].first != "allOf" ||
        schema.members[0].second->kind != SchemaNode::Kind::kArray) {
      return {&schema, false};
    }
    const SchemaNode& parts = *schema.members[0].second;
    if (parts.items.size() != 1) throw Fallback();
    const SchemaNode& part = *parts.items[0];
    if (part.IsObject() && part.members.size() == 1 && part.members[0].first == "allOf") {
      throw Fallback();  // (a nested key)
    }
    return {&part, true};
  }

  // leaf_recipes.leaf_key's test, with an injective key of the keywords it keeps.
  bool LeafKey(const SchemaNode& schema, std::string* key) const {
    key->clear();
    const SchemaNode* type = nullptr;
    bool literal = false;
    for (const auto& [name, value] : schema.members) {
      if (options_.leaf_keywords->count(name) == 0) {
        if (name.compare(0, kMarkerPrefix.size(), kMarkerPrefix) == 0) return false;
        if (options_.read_keywords->count(name) != 0) return false;
        continue;  // a keyword the normalizer never reads
      }
      key->append(name);
      key->push_back('\0');
      if (value->kind == SchemaNode::Kind::kArray) {
        key->push_back('[');
        for (const SchemaNode* item : value->items) {
          if (!IsScalar(*item)) return false;
          AppendScalar(*item, key);
        }
        key->push_back(']');
      } else if (IsScalar(*value)) {
        AppendScalar(*value, key);
      } else {
        return false;
      }
      key->push_back('\0');
      if (name == "type") type = value;
      if (name == "enum" || name == "const") literal = true;
    }
    if (type == nullptr || type->kind == SchemaNode::Kind::kNull) return literal;
    if (type->kind == SchemaNode::Kind::kString) return IsLeafType(type->text);
    if (type->kind != SchemaNode::Kind::kArray) return false;
    return std::all_of(type->items.begin(), type->items.end(), [](const SchemaNode* t) {
      return t->kind == SchemaNode::Kind::kString && IsLeafType(t->text);
    });
  }

  void Leaf(int32_t nt, const SchemaNode& schema, const std::string& key) {
    EmitLeafRules(nt, key, [&](auto* rules) { return hooks_.leaf_rules(schema, rules); });
  }

  // The rules kept under `key` (asked of the Python side once per lowering: `ask` fills them,
  // false to fall back), emitted into `nt`.
  template <typename Ask>
  void EmitLeafRules(int32_t nt, const std::string& key, Ask ask) {
    auto found = leaf_rules_.find(key);
    if (found == leaf_rules_.end()) {
      LeafRules rules;
      if (!ask(&rules)) throw Fallback();
      found = leaf_rules_.emplace(key, std::move(rules)).first;
    }
    for (const auto& symbols : found->second) {
      std::vector<int32_t> rhs;
      rhs.reserve(symbols.size());
      for (const LeafSymbol& symbol : symbols) {
        rhs.push_back(symbol.group == nullptr ? Terminal(symbol.text) : SharedGroup(symbol));
      }
      Rule(nt, std::move(rhs));
    }
  }

  // The group's first nonterminal: spliced at the first use of its memo key.
  int32_t SharedGroup(const LeafSymbol& symbol) {
    const auto known = shared_groups_.find(symbol.text);
    if (known != shared_groups_.end()) return known->second;
    const int32_t first = SpliceGroup(*symbol.group);
    shared_groups_.emplace(symbol.text, first);
    return first;
  }

  // A `$ref` alone (annotations aside): nt -> the target's values (refs.References.resolve).
  void Reference(int32_t nt, const SchemaNode& schema, size_t depth) {
    const SchemaNode* ref = nullptr;
    for (const auto& [key, value] : schema.members) {
      if (!IsRead(key)) continue;
      if (key != "$ref") throw Fallback();  // $ref beside other keywords: a merge
      ref = value;
    }
    if (ref->kind != SchemaNode::Kind::kString) throw Fallback();
    const std::string& text = ref->text;
    if (text.empty() || text[0] != '#' || text.find('%') != std::string::npos) throw Fallback();
    const SchemaNode* node = &root_;
    if (text.size() > 1) {
      if (text[1] != '/') throw Fallback();  // a plain-name fragment ($anchor)
      size_t begin = 2;
      while (true) {
        const size_t end = std::min(text.find('/', begin), text.size());
        std::string part = text.substr(begin, end - begin);
        Replace(&part, "~1", "/");
        Replace(&part, "~0", "~");
        if (!node->IsObject()) throw Fallback();
        node = node->Find(part);
        if (node == nullptr) throw Fallback();
        if (end == text.size()) break;
        begin = end + 1;
      }
    }
    if (!node->IsObject()) throw Fallback();
    Rule(nt, {Value(node, depth)});
  }

  static void Replace(std::string* text, std::string_view from, std::string_view to) {
    for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at)) {
      text->replace(at, from.size(), to);
      at += to.size();
    }
  }

  struct Property {
    const std::string* name;
    const SchemaNode* schema;
    bool required;
  };

  // An undeclared member class: its key terminal and value (emit.Emitter.members' extras).
  struct Extra {
    std::string key_regex;
    const SchemaNode* value;
  };

  // normalize.object_form + Emitter.object_in_order for plain objects.
  void Object(int32_t nt, const SchemaNode& schema, size_t depth) {
    const SchemaNode* properties = nullptr;
    const SchemaNode* required = nullptr;
    const SchemaNode* additional = nullptr;
    const SchemaNode* patterns = nullptr;
    for (const auto& [key, value] : schema.members) {  // (Typed checked the others)
      if (key == "properties") {
        properties = value;
      } else if (key == "required") {
        required = value;
      } else if (key == "additionalProperties") {
        additional = value;
      } else if (key == "patternProperties") {
        patterns = value;
      }
    }
    std::vector<Property> declared;
    if (properties != nullptr) {
      if (!properties->IsObject()) throw Fallback();
      for (const auto& [name, value] : properties->members) {
        const auto kind = value->kind;
        if (kind != SchemaNode::Kind::kObject && kind != SchemaNode::Kind::kTrue &&
            kind != SchemaNode::Kind::kFalse) {
          throw Fallback();
        }
        declared.push_back(Property{&name, value, false});
      }
    }
    if (additional != nullptr && additional->kind != SchemaNode::Kind::kTrue &&
        additional->kind != SchemaNode::Kind::kFalse && !additional->IsObject()) {
      throw Fallback();
    }
    if (required != nullptr) {
      if (required->kind != SchemaNode::Kind::kArray) throw Fallback();
      for (const SchemaNode* name : required->items) {
        if (name->kind != SchemaNode::Kind::kString) throw Fallback();
        auto it = std::find_if(declared.begin(), declared.end(),
                               [&](const Property& p) { return *p.name == name->text; });
        if (it == declared.end()) {  // required, not declared: additionalProperties' value
          declared.push_back(Property{&name->text, UndeclaredValue(additional, patterns), true});
        } else {
          it->required = true;
        }
      }
    }
    std::vector<Extra> extras;
    if (patterns != nullptr) {
      extras = PatternExtras(schema, *patterns, additional, declared);
    } else {  // the undeclared members' value: none (closed), any value, or a schema
      const SchemaNode* extra_value = nullptr;
      if (additional == nullptr) {
        extra_value = options_.additional_properties_default ? &kTrueNode : nullptr;
      } else if (additional->kind == SchemaNode::Kind::kTrue ||
                 (additional->IsObject() && additional->members.empty())) {
        extra_value = &kTrueNode;
      } else if (additional->IsObject()) {
        extra_value = additional;
      }
      if (extra_value != nullptr) extras.push_back({OtherKeysRegex(declared), extra_value});
    }
    EmitObject(nt, declared, extras, depth);
  }

  // The value of a required name that `properties` does not declare (object_form's
  // undeclared_schemas): additionalProperties, or any value; no object (additionalProperties
  // false) and a name patterns may match are the Python side's.
  const SchemaNode* UndeclaredValue(const SchemaNode* additional,
                                    const SchemaNode* patterns) const {
    if (patterns != nullptr) throw Fallback();
    if (additional == nullptr) {
      if (!options_.additional_properties_default) throw Fallback();
      return &kTrueNode;
    }
    if (additional->kind == SchemaNode::Kind::kFalse) throw Fallback();
    if (additional->kind == SchemaNode::Kind::kTrue || additional->members.empty()) {
      return &kTrueNode;
    }
    return additional;
  }

  // normalize.undeclared_members' key classes (ObjectForm.extras) of an object with
  // patternProperties, from LoweringHooks::pattern_members: each class's value is any value,
  // one pattern's schema or additionalProperties (a class of several schemas, or a declared
  // name a pattern matches, is a merge: the hook answers false).
  std::vector<Extra> PatternExtras(const SchemaNode& schema, const SchemaNode& patterns,
                                   const SchemaNode* additional,
                                   const std::vector<Property>& declared) {
    if (!patterns.IsObject()) throw Fallback();
    std::vector<std::string> names;
    for (const Property& property : declared) names.push_back(*property.name);
    std::vector<std::pair<std::string, int32_t>> classes;
    if (!hooks_.pattern_members(schema, names, &classes)) throw Fallback();
    std::vector<Extra> extras;
    const auto count = static_cast<int32_t>(patterns.members.size());
    for (auto& [regex, index] : classes) {
      const SchemaNode* value = index < 0        ? &kTrueNode
                                : index < count  ? patterns.members[index].second
                                : index == count ? additional
                                                 : nullptr;
      if (value == nullptr || !(value->IsObject() || value == &kTrueNode)) throw Fallback();
      extras.push_back({std::move(regex), value});
    }
    return extras;
  }

  void EmitObject(int32_t nt, const std::vector<Property>& declared,
                  const std::vector<Extra>& extra_members, size_t depth) {
    const size_t n = declared.size();
    std::vector<bool> required_after(n + 1, false);
    for (size_t i = n; i-- > 0;) required_after[i] = required_after[i + 1] || declared[i].required;
    std::vector<int32_t> pairs;  // Emitter.members
    pairs.reserve(n);
    for (const Property& property : declared) {
      const int32_t pair = NewNonterminal("prop");
      const int32_t key = KeyTerminal(*property.name);
      Rule(pair, {key, Value(property.schema, depth + 1)});
      pairs.push_back(pair);
    }
    std::vector<int32_t> extras;
    for (const Extra& member : extra_members) {
      const int32_t extra = NewNonterminal("extra");
      const int32_t key = Terminal(member.key_regex);
      Rule(extra, {key, Value(member.value, depth + 1)});
      extras.push_back(extra);
    }
    const int32_t comma = Terminal(options_.comma);
    const int32_t first = MemberChain(declared, required_after, pairs, extras, comma);
    const int32_t open = Terminal(options_.open_brace);
    Rule(nt, {open, first, Terminal(options_.close_brace)});
    if (!required_after[0]) {
      const int32_t empty_open = Terminal(options_.open_brace);
      Rule(nt, {empty_open, Terminal(options_.close_brace)});
    }
  }

  // Emitter.member_chain, step for step (its docstring has the recursion it unrolls).
  int32_t MemberChain(const std::vector<Property>& declared,
                      const std::vector<bool>& required_after, const std::vector<int32_t>& pairs,
                      const std::vector<int32_t>& extras, int32_t comma) {
    const size_t n = declared.size();
    const int32_t first = NewNonterminal("F0_0");
    std::vector<int32_t> rest(n + 1, -1), next(n + 1, -1);  // R(i), NX(i)
    auto named = [](const char* kind, size_t i) { return kind + std::to_string(i) + "_0"; };
    auto next_of = [&](size_t i) {
      if (next[i] < 0) next[i] = NewNonterminal(named("NX", i));
      return next[i];
    };
    if (n != 0) {
      const int32_t first_next = NewNonterminal("FN0_0");
      for (size_t i = 1; i <= n; ++i) {
        rest[i] = NewNonterminal(named("R", i));
        if (!required_after[i]) Rule(rest[i], {});
        if (i < n) next[i] = NewNonterminal(named("NX", i));
      }
      for (const int32_t e : extras) Rule(rest[n], {comma, e, rest[n]});
      for (size_t i = n - 1; i >= 1; --i) {
        Rule(next[i], {comma, pairs[i], rest[i + 1]});
        if (!declared[i].required) Rule(next[i], {next_of(i + 1)});
        Rule(rest[i], {next[i]});
        for (const int32_t e : extras) Rule(rest[i], {comma, e, rest[i]});
      }
      Rule(first_next, {pairs[0], rest[1]});
      if (!declared[0].required) {
        std::vector<int32_t> chain{first_next};
        for (size_t j = 1;; ++j) {
          chain.push_back(NewNonterminal(named("FN", j)));
          if (j < n) Rule(chain.back(), {pairs[j], rest[j + 1]});
          if (j >= n || declared[j].required) break;
        }
        for (size_t k = chain.size() - 1; k-- > 0;) Rule(chain[k], {chain[k + 1]});
      }
      Rule(first, {first_next});
    }
    if (!extras.empty()) {
      rest[0] = NewNonterminal("R0_0");
      if (!required_after[0]) Rule(rest[0], {});
      if (n != 0) {
        next[0] = NewNonterminal("NX0_0");
        Rule(next[0], {comma, pairs[0], rest[1]});
        if (!declared[0].required) Rule(next[0], {next_of(1)});
        Rule(rest[0], {next[0]});
      }
      for (const int32_t e : extras) Rule(rest[0], {comma, e, rest[0]});
      for (const int32_t e : extras) Rule(first, {e, rest[0]});
    }
    return first;
  }

  int32_t KeyTerminal(const std::string& name) {
    if (IsPlainWord(name)) return Terminal("\"" + name + "\"" + options_.colon);
    auto found = key_regexes_.find(name);
    if (found == key_regexes_.end()) {
      std::string regex;
      if (!hooks_.key_regex(name, &regex)) throw Fallback();
      found = key_regexes_.emplace(name, std::move(regex)).first;
    }
    return Terminal(found->second);
  }

  const std::string& OtherKeysRegex(const std::vector<Property>& declared) {
    std::vector<std::string> names;
    std::string key;
    for (const Property& property : declared) {
      names.push_back(*property.name);
      key.append(*property.name);
      key.push_back('\0');
    }
    auto found = other_keys_regexes_.find(key);
    if (found == other_keys_regexes_.end()) {
      std::string regex;
      if (!OtherPlainWordsKey(names, options_.canonical_unit, options_.colon, &regex) &&
          !hooks_.other_keys_regex(names, &regex)) {
        throw Fallback();
      }
      found = other_keys_regexes_.emplace(key, std::move(regex)).first;
    }
    return found->second;
  }

  // normalize.array_form + ArrayRules.array for `items` and item counts.
  void Array(int32_t nt, const SchemaNode& schema, size_t depth) {
    const SchemaNode* items = &kTrueNode;
    int64_t min_items = 0, max_items = -1;  // -1: no maximum
    for (const auto& [key, value] : schema.members) {  // (Typed checked the others)
      if (key == "items") {
        if (value->kind != SchemaNode::Kind::kTrue && !value->IsObject()) throw Fallback();
        items = value;
      } else if (key == "minItems") {
        min_items = Count(*value);
      } else if (key == "maxItems") {
        max_items = Count(*value);
      }
    }
    if (min_items >= kMaxArrayCount || max_items > kMaxArrayCount) throw Fallback();
    if (max_items >= 0 && max_items < min_items) return;  // no valid array: no rules
    const int32_t item = Value(items, depth + 1);
    const int32_t comma = Terminal(options_.comma);
    const int64_t counted = max_items < 0 ? min_items : max_items;
    std::unordered_map<int64_t, int32_t> states;
    // S(c), after c items: -> <empty> when c is a valid count; -> , item S(c + 1).
    std::function<int32_t(int64_t)> state = [&](int64_t c) {
      c = std::min(c, counted);
      const auto known = states.find(c);
      if (known != states.end()) return known->second;
      const int32_t sym = NewNonterminal("A" + std::to_string(c));
      states.emplace(c, sym);
      if (c >= min_items && (max_items < 0 || c <= max_items)) Rule(sym, {});
      if (max_items < 0 || c < max_items) {
        const int32_t after = state(c + 1);
        Rule(sym, {comma, item, after});
      }
      return sym;
    };
    if (max_items < 0 || max_items >= 1) {
      const int32_t open = Terminal(options_.open_bracket);
      const int32_t rest = state(1);
      Rule(nt, {open, item, rest, Terminal(options_.close_bracket)});
    }
    if (min_items == 0) {
      const int32_t open = Terminal(options_.open_bracket);
      Rule(nt, {open, Terminal(options_.close_bracket)});
    }
  }

  // normalize.count: a non-negative integer, or a float of integral value.
  static int64_t Count(const SchemaNode& value) {
    if (value.kind == SchemaNode::Kind::kInt && value.text.size() <= 9 &&
        value.text.find('-') == std::string::npos) {
      return std::stoll(value.text);
    }
    throw Fallback();  // (floats, negatives, huge counts: the Python side decides)
  }

  // Emitter.any_value through splice_any_value: the recorded group, numbered on.
  int32_t AnyValue(size_t depth) {
    if (any_value_ >= 0) return any_value_;
    if (!any_group_loaded_) {
      if (!hooks_.any_value_group(&any_group_)) throw Fallback();
      any_group_loaded_ = true;
    }
    if (depth + any_group_.depth > options_.max_value_nesting) throw Fallback();
    any_value_ = SpliceGroup(any_group_);
    return any_value_;
  }

  // any_value.splice_any_value's replay: the group's nonterminals numbered on (`v<n>` names
  // renamed), its new terminals numbered in the order first asked for, its rules appended.
  int32_t SpliceGroup(const RecordedGroup& group) {
    const int32_t base = static_cast<int32_t>(nonterminals_.size());
    for (size_t i = 0; i < group.names.size(); ++i) {
      NewNonterminal(group.numbered[i] ? "v" + std::to_string(base + static_cast<int32_t>(i))
                                       : group.names[i]);
    }
    std::vector<int32_t> terminal(group.keys.size(), 0);
    for (const uint32_t i : group.key_order) terminal[i] = Terminal(group.keys[i]);
    for (const auto& [lhs, rhs] : group.rules) {
      std::vector<int32_t> symbols;
      symbols.reserve(rhs.size());
      for (const int32_t s : rhs) symbols.push_back(s < 0 ? terminal[~s] : s + base);
      Rule(lhs + base, std::move(symbols));
    }
    return base;
  }

  // Emitter.finish: right-hand symbols numbered terminals first (T<i>), then nonterminals.
  LoweredGrammar Finish() {
    LoweredGrammar out;
    const auto num_terminals = static_cast<uint32_t>(terminals_.size());
    out.rules.reserve(rules_.size());
    for (auto& [lhs, rhs] : rules_) {
      std::vector<uint32_t> symbols;
      symbols.reserve(rhs.size());
      for (const int32_t s : rhs) {
        symbols.push_back(s < 0 ? static_cast<uint32_t>(~s)
                                : num_terminals + static_cast<uint32_t>(s));
      }
      out.rules.emplace_back(static_cast<uint32_t>(lhs), std::move(symbols));  // (lhs: by index)
    }
    out.terminals = std::move(terminals_);
    out.nonterminals = std::move(nonterminals_);
    return out;
  }

  static const SchemaNode kTrueNode;

  const SchemaNode& root_;
  const LoweringOptions& options_;
  const LoweringHooks& hooks_;
  std::vector<std::string> terminals_;
  std::unordered_map<std::string, int32_t> terminal_index_;
  std::vector<std::string> nonterminals_;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> rules_;
  std::unordered_map<MemoKey, int32_t, MemoKeyHash> memo_;
  std::unordered_map<std::string, LeafRules> leaf_rules_;
  std::unordered_map<std::string, int32_t> shared_groups_;  // memo key -> first nonterminal
  std::unordered_map<std::string, std::string> key_regexes_, other_keys_regexes_;
  RecordedGroup any_group_;
  bool any_group_loaded_ = false;
  int32_t any_value_ = -1;
};

const SchemaNode Lowering::kTrueNode = [] {
  SchemaNode node;
  node.kind = SchemaNode::Kind::kTrue;
  return node;
}();

}  // namespace

std::optional<LoweredGrammar> LowerSimpleSchema(const SchemaNode& root,
                                                const LoweringOptions& options,
                                                const LoweringHooks& hooks) {
  try {
    return Lowering(root, options, hooks).Run();
  } catch (const Fallback&) {
    return std::nullopt;
  }
}

}  // namespace jaxguide
