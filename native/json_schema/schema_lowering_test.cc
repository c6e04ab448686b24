// LowerSimpleSchema unit tests: the rules of a small object and an array written out by hand
// (the Python emitter's, tests/grammars/test_native_lowering.py compares the two on real
// schemas), the memo by node identity, references, the any-value splice, and fallbacks.
#include "native/json_schema/schema_lowering.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "native/support/testing.h"

namespace jaxguide {
namespace {

using Kind = SchemaNode::Kind;

class Builder {
 public:
  const SchemaNode* Str(std::string text) { return Node(Kind::kString, std::move(text)); }
  const SchemaNode* Int(std::string text) { return Node(Kind::kInt, std::move(text)); }
  const SchemaNode* True() { return Node(Kind::kTrue, ""); }
  const SchemaNode* False() { return Node(Kind::kFalse, ""); }
  const SchemaNode* Object(std::vector<std::pair<std::string, const SchemaNode*>> members) {
    SchemaNode* node = document_.Add();
    node->kind = Kind::kObject;
    node->members = std::move(members);
    return node;
  }
  const SchemaNode* Array(std::vector<const SchemaNode*> items) {
    SchemaNode* node = document_.Add();
    node->kind = Kind::kArray;
    node->items = std::move(items);
    return node;
  }

 private:
  const SchemaNode* Node(Kind kind, std::string text) {
    SchemaNode* node = document_.Add();
    node->kind = kind;
    node->text = std::move(text);
    return node;
  }
  SchemaDocument document_;
};

LoweringOptions Options() {
  LoweringOptions options;
  options.comma = ",";
  options.open_brace = "{";
  options.close_brace = "}";
  options.open_bracket = "[";
  options.close_bracket = "]";
  options.colon = ":";
  options.additional_properties_default = false;
  options.max_rules = 1000;
  options.max_value_nesting = 16;
  options.read_keywords = std::make_shared<const std::unordered_set<std::string>>(
      std::unordered_set<std::string>{"type", "properties", "required", "additionalProperties",
                                      "items", "minItems", "maxItems", "$ref", "enum",
                                      "anyOf", "patternProperties"});
  options.leaf_keywords = std::make_shared<const std::unordered_set<std::string>>(
      std::unordered_set<std::string>{"type", "enum"});
  return options;
}

// Leaves: one rule, the regex "<type>"; counts the calls.
struct Hooks {
  int leaf_calls = 0;
  LoweringHooks hooks;
  Hooks() {
    hooks.leaf_rules = [this](const SchemaNode& leaf, LeafRules* r) {
      ++leaf_calls;
      *r = {{LeafSymbol{"<" + leaf.Find("type")->text + ">", nullptr}}};
      return true;
    };
    hooks.plain_type_rules = [](const std::string& type, LeafRules* r) {
      *r = {{LeafSymbol{"<plain " + type + ">", nullptr}}};
      return true;
    };
    hooks.key_regex = [](const std::string& name, std::string* regex) {
      *regex = "KEY(" + name + ")";
      return true;
    };
    hooks.other_keys_regex = [](const std::vector<std::string>& names, std::string* regex) {
      *regex = "OTHER(" + std::to_string(names.size()) + ")";
      return true;
    };
    // Classes: the names matching the first pattern (its schema), then the others (any
    // value); none when a property is declared (a name a pattern could match: a merge).
    hooks.pattern_members = [](const SchemaNode&, const std::vector<std::string>& names,
                               std::vector<std::pair<std::string, int32_t>>* classes) {
      if (!names.empty()) return false;
      *classes = {{"PAT0:", 0}, {"REST:", -1}};
      return true;
    };
    hooks.any_value_group = [](RecordedGroup* group) {
      group->names = {"any", "v1"};
      group->numbered = {false, true};
      group->rules = {{0, {~0}}, {0, {1}}, {1, {~1, 0}}};
      group->keys = {"ANY", "WRAP"};
      group->key_order = {1, 0};
      group->depth = 2;
      return true;
    };
  }
};

std::string Rules(const LoweredGrammar& g) {
  std::string out;
  const auto n = static_cast<uint32_t>(g.terminals.size());
  for (const auto& [lhs, rhs] : g.rules) {
    out += g.nonterminals[lhs] + " ->";
    for (const uint32_t s : rhs) out += " " + (s < n ? g.terminals[s] : g.nonterminals[s - n]);
    out += ";";
  }
  return out;
}

JG_TEST(SchemaLowering, ObjectWithAnOptionalAndARequiredMember) {
  Builder b;
  const SchemaNode* leaf = b.Object({{"type", b.Str("string")}, {"description", b.Str("d")}});
  const SchemaNode* root = b.Object({{"type", b.Str("object")},
                                     {"properties", b.Object({{"a", leaf}, {"b c", leaf}})},
                                     {"required", b.Array({b.Str("b c")})}});
  Hooks hooks;
  const auto g = LowerSimpleSchema(*root, Options(), hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  // One leaf nonterminal (the same node twice), asked for once.
  JG_EXPECT_EQ(hooks.leaf_calls, 1);
  // Rules are added once their right-hand side is built (a member's after its value's).
  JG_EXPECT_EQ(Rules(*g), std::string(
      "v3 -> <string>;prop -> \"a\": v3;prop -> KEY(b c) v3;"
      "R2_0 ->;NX1_0 -> , prop R2_0;R1_0 -> NX1_0;FN0_0 -> prop R1_0;FN1_0 -> prop R2_0;"
      "FN0_0 -> FN1_0;F0_0 -> FN0_0;v1 -> { F0_0 };start -> v1;"));
}

JG_TEST(SchemaLowering, PatternPropertiesClassesAreExtraMembersInTheirOrder) {
  Builder b;
  const SchemaNode* leaf = b.Object({{"type", b.Str("integer")}});
  const SchemaNode* root = b.Object(
      {{"type", b.Str("object")}, {"patternProperties", b.Object({{"^x-", leaf}})}});
  Hooks hooks;
  const auto g = LowerSimpleSchema(*root, Options(), hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  JG_EXPECT_EQ(Rules(*g), std::string(
      "v3 -> <integer>;extra -> PAT0: v3;any -> ANY;any -> v7;v7 -> WRAP any;v5 -> any;"
      "extra -> REST: v5;R0_0 ->;R0_0 -> , extra R0_0;R0_0 -> , extra R0_0;"
      "F0_0 -> extra R0_0;F0_0 -> extra R0_0;v1 -> { F0_0 };v1 -> { };start -> v1;"));
  // A declared property: the hook refuses, the schema falls back.
  const SchemaNode* declared = b.Object({{"type", b.Str("object")},
                                         {"properties", b.Object({{"a", leaf}})},
                                         {"patternProperties", b.Object({{"^x-", leaf}})}});
  JG_EXPECT_FALSE(LowerSimpleSchema(*declared, Options(), hooks.hooks).has_value());
}

JG_TEST(SchemaLowering, BoundedArrayStatesAndTheEmptyArray) {
  Builder b;
  const SchemaNode* root = b.Object({{"type", b.Str("array")},
                                     {"items", b.Object({{"type", b.Str("integer")}})},
                                     {"maxItems", b.Int("2")}});
  Hooks hooks;
  const auto g = LowerSimpleSchema(*root, Options(), hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  JG_EXPECT_EQ(Rules(*g), std::string(
      "v2 -> <integer>;A1 ->;A2 ->;A1 -> , v2 A2;v1 -> [ v2 A1 ];v1 -> [ ];start -> v1;"));
}

JG_TEST(SchemaLowering, ReferencesResolveIntoTheRootAndCycleThroughTheMemo) {
  Builder b;
  const SchemaNode* node_ref = b.Object({{"$ref", b.Str("#/definitions/n~1x")}});
  const SchemaNode* node = b.Object({{"type", b.Str("object")},
                                     {"properties", b.Object({{"next", node_ref}})},
                                     {"required", b.Array({b.Str("next")})}});
  const SchemaNode* root = b.Object({{"definitions", b.Object({{"n/x", node}})},
                                     {"$ref", b.Str("#/definitions/n~1x")}});
  Hooks hooks;
  const auto g = LowerSimpleSchema(*root, Options(), hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  // v4 (the $ref inside) leads back to v2 (the definition, "~1" read as "/"): finite.
  JG_EXPECT_EQ(Rules(*g), std::string(
      "v4 -> v2;prop -> \"next\": v4;R1_0 ->;FN0_0 -> prop R1_0;F0_0 -> FN0_0;"
      "v2 -> { F0_0 };v1 -> v2;start -> v1;"));
}

JG_TEST(SchemaLowering, AnyValueIsSplicedOnceAndRenumbered) {
  Builder b;
  const SchemaNode* root = b.Object({{"type", b.Str("object")},
                                     {"properties", b.Object({{"a", b.True()}, {"b", b.True()}})},
                                     {"additionalProperties", b.True()}});
  Hooks hooks;
  const auto g = LowerSimpleSchema(*root, Options(), hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  const std::string rules = Rules(*g);
  // Spliced after v3 (prop, v3): "any" is nonterminal 4, its numbered member v5.
  JG_EXPECT_EQ(g->nonterminals[4], std::string("any"));
  JG_EXPECT_EQ(g->nonterminals[5], std::string("v5"));
  JG_EXPECT_TRUE(rules.find("any -> ANY;any -> v5;v5 -> WRAP any;") != std::string::npos);
  // Terminals in the recorded order of first use: WRAP before ANY.
  JG_EXPECT_TRUE(std::find(g->terminals.begin(), g->terminals.end(), "WRAP") <
                 std::find(g->terminals.begin(), g->terminals.end(), "ANY"));
  // Each `true` is its own value nonterminal, all of them the one group.
  JG_EXPECT_EQ(static_cast<int>(std::count(g->nonterminals.begin(), g->nonterminals.end(),
                                           std::string("any"))), 1);
  JG_EXPECT_TRUE(rules.find("extra -> OTHER(2)") != std::string::npos);
}

JG_TEST(SchemaLowering, LeafGroupsAreSplicedAtFirstUseAndSharedByMemoKey) {
  // A leaf's rules: a terminal, then a chain group under the memo key "chain <type>": leaves
  // with the same key (whatever their own keys) share one chain, another key gets its own.
  const auto chain = std::make_shared<RecordedGroup>();
  chain->names = {"str0", "str1"};
  chain->numbered = {false, false};
  chain->rules = {{0, {~0, 1}}, {1, {~1}}};
  chain->keys = {"FULL", "TAIL"};
  chain->key_order = {1, 0};
  Builder b;
  Hooks hooks;
  hooks.hooks.leaf_rules = [&hooks, chain](const SchemaNode& leaf, LeafRules* r) {
    ++hooks.leaf_calls;
    *r = {{LeafSymbol{"NULL", nullptr}}, {LeafSymbol{"chain " + leaf.Find("type")->text, chain}}};
    return true;
  };
  const SchemaNode* root = b.Object({{"anyOf", b.Array({
      b.Object({{"type", b.Str("string")}}),
      b.Object({{"type", b.Str("string")}, {"enum", b.Array({b.Str("x")})}}),
      b.Object({{"type", b.Str("integer")}})})}});
  const auto g = LowerSimpleSchema(*root, Options(), hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  JG_EXPECT_EQ(hooks.leaf_calls, 3);
  // The chain's rules before the leaf's rule that uses it; terminals in the recorded order.
  JG_EXPECT_EQ(Rules(*g), std::string(
      "v1 -> NULL;str0 -> FULL str1;str1 -> TAIL;v1 -> str0;v1 -> NULL;v1 -> str0;"
      "v1 -> NULL;str0 -> FULL str1;str1 -> TAIL;v1 -> str0;start -> v1;"));
  JG_EXPECT_TRUE(std::find(g->terminals.begin(), g->terminals.end(), "TAIL") <
                 std::find(g->terminals.begin(), g->terminals.end(), "FULL"));
}

JG_TEST(SchemaLowering, OtherKeysOfPlainWordsAreSpelledByTheCore) {
  // With the canonical unit configured, the other keys of plain-word names are a lookahead
  // over the sorted distinct names; any other name goes to the hook.
  Builder b;
  Hooks hooks;
  LoweringOptions options = Options();
  options.canonical_unit = "U";
  const SchemaNode* leaf = b.Object({{"type", b.Str("string")}});
  const SchemaNode* words = b.Object({{"type", b.Str("object")},
                                      {"properties", b.Object({{"b_2", leaf}, {"A", leaf}})},
                                      {"additionalProperties", b.True()}});
  auto g = LowerSimpleSchema(*words, options, hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  JG_EXPECT_TRUE(std::find(g->terminals.begin(), g->terminals.end(),
                           "\"(?!(?:A|b_2)\")U*\":") != g->terminals.end());
  const SchemaNode* other = b.Object({{"type", b.Str("object")},
                                      {"properties", b.Object({{"a b", leaf}})},
                                      {"additionalProperties", b.True()}});
  g = LowerSimpleSchema(*other, options, hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  JG_EXPECT_TRUE(std::find(g->terminals.begin(), g->terminals.end(), "OTHER(1)") !=
                 g->terminals.end());
}

JG_TEST(SchemaLowering, NoTypeIsEveryTypesFormAndNoKeywordAnyValue) {
  Builder b;
  Hooks hooks;
  const SchemaNode* root = b.Object({{"required", b.Array({})},
                                     {"properties", b.Object({{"d", b.Object({{"title",
                                                                            b.Str("t")}})}})}});
  const auto g = LowerSimpleSchema(*root, Options(), hooks.hooks);
  JG_ASSERT_TRUE(g.has_value());
  const std::string rules = Rules(*g);
  // Sorted forms: array (of any value), boolean, null, number, object, string.
  const size_t array = rules.find("v1 -> ["), boolean = rules.find("v1 -> true|false"),
               null = rules.find("v1 -> null"), number = rules.find("v1 -> <plain number>"),
               object = rules.find("v1 -> {"), string = rules.find("v1 -> <plain string>");
  JG_EXPECT_TRUE(array < boolean && boolean < null && null < number && number < object &&
                 object < string && string != std::string::npos);
  // The member with nothing read is any value.
  JG_EXPECT_TRUE(rules.find("prop -> \"d\": ") != std::string::npos);
  JG_EXPECT_TRUE(rules.find(" -> any;") != std::string::npos);
}

JG_TEST(SchemaLowering, OtherShapesAndBudgetsFallBack) {
  Builder b;
  Hooks hooks;
  // A combinator beside another keyword is a merge; an anyOf of a combinator too.
  const SchemaNode* any_of = b.Object({{"anyOf", b.Array({b.True()})}});
  JG_EXPECT_TRUE(LowerSimpleSchema(*any_of, Options(), hooks.hooks).has_value());
  const SchemaNode* merged = b.Object({{"anyOf", b.Array({b.True()})},
                                       {"type", b.Str("object")}});
  JG_EXPECT_TRUE(!LowerSimpleSchema(*merged, Options(), hooks.hooks).has_value());
  const SchemaNode* nested = b.Object({{"anyOf", b.Array({any_of})}});
  JG_EXPECT_TRUE(!LowerSimpleSchema(*nested, Options(), hooks.hooks).has_value());
  const SchemaNode* bad_ref = b.Object({{"$ref", b.Str("#/nowhere")}});
  JG_EXPECT_TRUE(!LowerSimpleSchema(*bad_ref, Options(), hooks.hooks).has_value());
  const SchemaNode* long_array = b.Object({{"type", b.Str("array")},
                                           {"maxItems", b.Int("1000")}});
  JG_EXPECT_TRUE(!LowerSimpleSchema(*long_array, Options(), hooks.hooks).has_value());
  // A leaf the hook refuses.
  Hooks refusing;
  refusing.hooks.leaf_rules = [](const SchemaNode&, LeafRules*) {
    return false;
  };
  const SchemaNode* leaf = b.Object({{"type", b.Str("string")}});
  JG_EXPECT_TRUE(!LowerSimpleSchema(*leaf, Options(), refusing.hooks).has_value());
  // The rule budget.
  LoweringOptions tight = Options();
  tight.max_rules = 3;
  const SchemaNode* object = b.Object({{"type", b.Str("object")},
                                       {"properties", b.Object({{"a", leaf}, {"b", leaf}})}});
  JG_EXPECT_TRUE(LowerSimpleSchema(*object, Options(), hooks.hooks).has_value());
  JG_EXPECT_TRUE(!LowerSimpleSchema(*object, tight, hooks.hooks).has_value());
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
