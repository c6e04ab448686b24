// jaxguide._native, third part: lower_json_schema (native/json_schema/schema_lowering.h), the
// JSON Schema front-end's common shapes lowered in C++. Bound by BindJsonSchema, which
// PYBIND11_MODULE in bindings.cc calls; the rules at the top of bindings.cc hold here too.
//
// The schema (Python dicts, lists and scalars, as json.loads makes them) is copied into a
// SchemaDocument with the GIL held (dict identity kept: a dict reached twice is one node, as the
// Python emitter's memo sees it); the hooks call back into Python (jaxguide/grammars/json_schema/
// native_lowering.py) and may raise, which propagates. A value jaxguide cannot read as JSON (a
// non-str key, a lone surrogate, nesting past kMaxDepth) makes the call answer None: the Python
// front-end lowers it and reports what is wrong. Annotation values (descriptions, examples,
// defaults: SchemaCopier::IsAnnotation) are not copied: the core reads none of them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "native/json_schema/schema_lowering.h"

namespace py = pybind11;

namespace jaxguide {

void BindJsonSchema(py::module_& m);  // called by PYBIND11_MODULE in bindings.cc

namespace {

constexpr int kMaxDepth = 1000;  // JSON nesting copied (deeper: the Python side decides)

// Options fixed per process (configure_json_schema_lowering); the layout comes per call.
LoweringOptions& ConfiguredOptions() {
  static auto* options = new LoweringOptions();
  return *options;
}

class SchemaCopier {
 public:
  explicit SchemaCopier(SchemaDocument* document) : document_(document) {}

  // The node of `value`, or nullptr when it is not JSON that jaxguide can read.
  // (`names`: `value` maps names to schemas, as `properties` does: no member an annotation.)
  const SchemaNode* Copy(PyObject* value, int depth, bool names = false) {
    if (depth > kMaxDepth) return nullptr;
    if (PyDict_Check(value)) return CopyDict(value, depth, names);
    SchemaNode* node = document_->Add();
    node->handle = value;
    if (value == Py_None) {
      node->kind = SchemaNode::Kind::kNull;
    } else if (value == Py_True) {
      node->kind = SchemaNode::Kind::kTrue;
    } else if (value == Py_False) {
      node->kind = SchemaNode::Kind::kFalse;
    } else if (PyLong_Check(value)) {
      node->kind = SchemaNode::Kind::kInt;
      if (!Text(PyObject_Str(value), &node->text)) return nullptr;
    } else if (PyFloat_Check(value)) {
      node->kind = SchemaNode::Kind::kFloat;
      if (!Text(PyObject_Repr(value), &node->text)) return nullptr;
    } else if (PyUnicode_Check(value)) {
      node->kind = SchemaNode::Kind::kString;
      if (!Utf8(value, &node->text)) return nullptr;
    } else if (PyList_Check(value)) {
      node->kind = SchemaNode::Kind::kArray;
      const Py_ssize_t n = PyList_GET_SIZE(value);
      node->items.reserve(static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        const SchemaNode* item = Copy(PyList_GET_ITEM(value, i), depth + 1);
        if (item == nullptr) return nullptr;
        node->items.push_back(item);
      }
    } else {
      node->kind = SchemaNode::Kind::kOpaque;
    }
    return node;
  }

 private:
  const SchemaNode* CopyDict(PyObject* dict, int depth, bool names) {
    const auto seen = dicts_.find(dict);
    if (seen != dicts_.end()) return seen->second;
    SchemaNode* node = document_->Add();
    node->kind = SchemaNode::Kind::kObject;
    node->handle = dict;
    dicts_.emplace(dict, node);
    node->members.reserve(static_cast<size_t>(PyDict_Size(dict)));
    Py_ssize_t position = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(dict, &position, &key, &value)) {
      std::string name;
      if (!PyUnicode_Check(key) || !Utf8(key, &name)) return nullptr;
      const SchemaNode* member = !names && IsAnnotation(name)
                                     ? Opaque(value)
                                     : Copy(value, depth + 1, !names && IsNameMap(name));
      if (member == nullptr) return nullptr;
      node->members.emplace_back(std::move(name), member);
    }
    return node;
  }

  // Members of a schema whose values the core never reads (descriptions, examples: often most
  // of a schema's text) are not copied: an opaque node, which the core treats as nothing it
  // can lower (a $ref into one falls back). Not `definitions` / `$defs`: references name them.
  // (A dict met again keeps its first copy: one met first as a schema may lack a property
  // named "title", which then falls back.)
  static bool IsAnnotation(const std::string& name) {
    return name == "description" || name == "title" || name == "$comment" ||
           name == "examples" || name == "example" || name == "default";
  }

  // Keywords whose value maps names (a property called "title") to schemas.
  static bool IsNameMap(const std::string& name) {
    return name == "properties" || name == "patternProperties" || name == "definitions" ||
           name == "$defs" || name == "dependentSchemas" || name == "dependencies";
  }

  SchemaNode* Opaque(PyObject* value) {
    SchemaNode* node = document_->Add();
    node->kind = SchemaNode::Kind::kOpaque;
    node->handle = value;
    return node;
  }

  static bool Utf8(PyObject* text, std::string* out) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(text, &size);
    if (data == nullptr) {  // a lone surrogate
      PyErr_Clear();
      return false;
    }
    out->assign(data, static_cast<size_t>(size));
    return true;
  }

  // Takes the new reference `text` (a str, or nullptr after an error).
  static bool Text(PyObject* text, std::string* out) {
    if (text == nullptr) {
      PyErr_Clear();
      return false;
    }
    const bool ok = Utf8(text, out);
    Py_DECREF(text);
    return ok;
  }

  SchemaDocument* document_;
  std::unordered_map<PyObject*, const SchemaNode*> dicts_;
};

py::handle Handle(const SchemaNode& node) {
  return py::handle(static_cast<PyObject*>(const_cast<void*>(node.handle)));
}

// A str result of a hook into `out`; false for None.
bool StrResult(const py::object& result, std::string* out) {
  if (result.is_none()) return false;
  *out = result.cast<std::string>();
  return true;
}

// A group the Python front-end recorded (native_lowering.py: any_value_group, a leaf's chunk
// chain), its symbols checked.
RecordedGroup ParseRecordedGroup(const py::object& result) {
  const auto fields = result.cast<py::tuple>();
  if (fields.size() != 6) throw py::value_error("a recorded group has 6 fields");
  RecordedGroup group;
  group.names = fields[0].cast<std::vector<std::string>>();
  group.numbered = fields[1].cast<std::vector<bool>>();
  group.rules = fields[2].cast<std::vector<std::pair<int32_t, std::vector<int32_t>>>>();
  group.keys = fields[3].cast<std::vector<std::string>>();
  group.key_order = fields[4].cast<std::vector<uint32_t>>();
  group.depth = fields[5].cast<size_t>();
  const auto names = static_cast<int64_t>(group.names.size());
  const auto keys = static_cast<int64_t>(group.keys.size());
  bool ok = group.numbered.size() == group.names.size();
  for (const uint32_t i : group.key_order) ok = ok && i < keys;
  for (const auto& [lhs, rhs] : group.rules) {
    ok = ok && lhs >= 0 && lhs < names;
    for (const int32_t s : rhs) ok = ok && (s < 0 ? ~int64_t{s} < keys : s < names);
  }
  if (!ok) throw py::value_error("a recorded group's symbol is out of range");
  return group;
}

// The any-value group of the Python front-end's recording (one per set of lowering options, kept
// for the process, the same tuple each time): read once per tuple, which stays referenced here.
const RecordedGroup& ReadAnyValueGroup(const py::object& result) {
  static auto* groups = new std::unordered_map<PyObject*, RecordedGroup>();
  const auto known = groups->find(result.ptr());
  if (known != groups->end()) return known->second;
  RecordedGroup group = ParseRecordedGroup(result);
  result.inc_ref();  // (kept: its address is the key)
  return groups->emplace(result.ptr(), std::move(group)).first->second;
}

// A rules result of a hook into `out`; false for None. Each rule a sequence of symbols: a
// terminal regex, or (memo key, recorded group) for a group's first nonterminal.
bool RulesResult(const py::object& result, LeafRules* out) {
  if (result.is_none()) return false;
  out->clear();
  for (const py::handle rule : result) {
    std::vector<LeafSymbol>& symbols = out->emplace_back();
    for (const py::handle symbol : rule) {
      if (py::isinstance<py::str>(symbol)) {
        symbols.push_back(LeafSymbol{symbol.cast<std::string>(), nullptr});
        continue;
      }
      const auto pair = symbol.cast<py::tuple>();
      if (pair.size() != 2) throw py::value_error("a group symbol is (memo key, group)");
      symbols.push_back(LeafSymbol{pair[0].cast<std::string>(),
                                   std::make_shared<const RecordedGroup>(ParseRecordedGroup(
                                       py::reinterpret_borrow<py::object>(pair[1])))});
    }
  }
  return true;
}

LoweringHooks MakeHooks(const py::function& leaf_rules, const py::function& key_regex,
                        const py::function& other_keys_regex,
                        const py::function& pattern_members,
                        const py::function& any_value_group) {
  LoweringHooks hooks;
  hooks.leaf_rules = [&leaf_rules](const SchemaNode& leaf, LeafRules* rules) {
    return RulesResult(leaf_rules(Handle(leaf)), rules);
  };
  hooks.plain_type_rules = [&leaf_rules](const std::string& type, LeafRules* rules) {
    return RulesResult(leaf_rules(py::dict(py::arg("type") = type)), rules);
  };
  hooks.key_regex = [&key_regex](const std::string& name, std::string* regex) {
    return StrResult(key_regex(name), regex);
  };
  hooks.other_keys_regex = [&other_keys_regex](const std::vector<std::string>& names,
                                               std::string* regex) {
    return StrResult(other_keys_regex(names), regex);
  };
  hooks.pattern_members = [&pattern_members](
                              const SchemaNode& object, const std::vector<std::string>& names,
                              std::vector<std::pair<std::string, int32_t>>* classes) {
    const py::object result = pattern_members(Handle(object), names);
    if (result.is_none()) return false;
    *classes = result.cast<std::vector<std::pair<std::string, int32_t>>>();
    return true;
  };
  hooks.any_value_group = [&any_value_group](RecordedGroup* group) {
    const py::object result = any_value_group();
    if (result.is_none()) return false;
    *group = ReadAnyValueGroup(result);
    return true;
  };
  return hooks;
}

// (terminals, nonterminals, rules) as GrammarIR takes them; rules a tuple of (lhs, rhs tuple).
// The rule tuples hold ints only, so no cycle runs through them: they leave the garbage
// collector's lists at once (CPython untracks such a tuple at its first collection anyway),
// and the thousands of a large grammar add nothing to the collections that follow.
py::tuple ToPython(const LoweredGrammar& grammar) {
  py::tuple rules(grammar.rules.size());
  for (size_t r = 0; r < grammar.rules.size(); ++r) {
    const auto& [lhs, rhs] = grammar.rules[r];
    py::tuple symbols(rhs.size());
    for (size_t i = 0; i < rhs.size(); ++i) symbols[i] = py::int_(rhs[i]);
    PyObject_GC_UnTrack(symbols.ptr());
    py::tuple rule = py::make_tuple(lhs, std::move(symbols));
    PyObject_GC_UnTrack(rule.ptr());
    rules[r] = std::move(rule);
  }
  PyObject_GC_UnTrack(rules.ptr());
  return py::make_tuple(grammar.terminals, grammar.nonterminals, std::move(rules));
}

py::object LowerJsonSchema(const py::dict& schema, const py::tuple& layout,
                           bool additional_properties_default, const py::function& leaf_rules,
                           const py::function& key_regex, const py::function& other_keys_regex,
                           const py::function& pattern_members,
                           const py::function& any_value_group) {
  if (layout.size() != 6) throw py::value_error("layout: (comma, {, }, [, ], colon)");
  LoweringOptions options = ConfiguredOptions();
  if (options.max_rules == 0) throw py::value_error("configure_json_schema_lowering first");
  options.comma = layout[0].cast<std::string>();
  options.open_brace = layout[1].cast<std::string>();
  options.close_brace = layout[2].cast<std::string>();
  options.open_bracket = layout[3].cast<std::string>();
  options.close_bracket = layout[4].cast<std::string>();
  options.colon = layout[5].cast<std::string>();
  options.additional_properties_default = additional_properties_default;
  SchemaDocument document;
  SchemaCopier copier(&document);
  document.root = copier.Copy(schema.ptr(), 0);
  if (document.root == nullptr) return py::none();
  const LoweringHooks hooks =
      MakeHooks(leaf_rules, key_regex, other_keys_regex, pattern_members, any_value_group);
  const std::optional<LoweredGrammar> lowered = LowerSimpleSchema(*document.root, options, hooks);
  if (!lowered) return py::none();
  return ToPython(*lowered);
}

}  // namespace

void BindJsonSchema(py::module_& m) {
  m.def(
      "configure_json_schema_lowering",
      [](std::vector<std::string> read_keywords, std::vector<std::string> leaf_keywords,
         size_t max_rules, size_t max_value_nesting, std::string canonical_unit) {
        if (max_rules == 0) throw py::value_error("max_rules must be positive");
        LoweringOptions& options = ConfiguredOptions();
        options.read_keywords = std::make_shared<const std::unordered_set<std::string>>(
            read_keywords.begin(), read_keywords.end());
        options.leaf_keywords = std::make_shared<const std::unordered_set<std::string>>(
            leaf_keywords.begin(), leaf_keywords.end());
        options.max_rules = max_rules;
        options.max_value_nesting = max_value_nesting;
        options.canonical_unit = std::move(canonical_unit);
      },
      py::arg("read_keywords"), py::arg("leaf_keywords"), py::arg("max_rules"),
      py::arg("max_value_nesting"), py::arg("canonical_unit"),
      "The JSON Schema front-end's constants for lower_json_schema (once per process).");
  m.def("lower_json_schema", &LowerJsonSchema, py::arg("schema"), py::arg("layout"),
        py::arg("additional_properties_default"), py::arg("leaf_rules"), py::arg("key_regex"),
        py::arg("other_keys_regex"), py::arg("pattern_members"), py::arg("any_value_group"),
        "The grammar IR (terminals, nonterminals, rules) of a schema of the common shapes, or "
        "None (see native/json_schema/schema_lowering.h).");
}

}  // namespace jaxguide
