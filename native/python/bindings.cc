// The pybind11 module jaxguide._native: errors, TokenizerInfo, RegexLexer, CompiledGrammar and
// Matcher here; BatchMatcher and BatchFillHandle in bindings_batch.cc (BindBatch); the JSON Schema
// lowering of native/json_schema in bindings_json_schema.cc (BindJsonSchema).
//
// Rules for everything bound in either file: validate every buffer that crosses the boundary (dtype,
// contiguity, shape) and every id; take raw pointers while holding the GIL, release it for long
// native work; never let pybind11 copy an output buffer silently. Native exceptions map to the
// Python classes in jaxguide/errors.py (registered by jaxguide/engine/_core.py through
// _register_error_classes).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "native/batch/batch_mask_filler.h"
#include "native/lexer/lexer_dfa.h"
#include "native/lexer/nfa_product.h"
#include "native/lexer/state_elimination.h"
#include "native/lexer/pinned_terminals.h"
#include "native/lexer/regex_error.h"
#include "native/lexer/unicode_tables.h"
#include "native/lexer/utf8_class.h"
#include "native/matcher/compiled_grammar.h"
#include "native/matcher/matcher.h"
#include "native/support/error.h"
#include "native/tokenizer/tokenizer_info.h"

namespace py = pybind11;

namespace jaxguide {
namespace {

// Python exception classes, set once by _register_error_classes (jaxguide/errors.py).
py::object& PyTokenizerError() {
  static py::object* cls = new py::object(py::reinterpret_borrow<py::object>(PyExc_ValueError));
  return *cls;
}
py::object& PyGrammarError() {
  static py::object* cls = new py::object(py::reinterpret_borrow<py::object>(PyExc_ValueError));
  return *cls;
}
py::object& PyBudgetError() {
  static py::object* cls = new py::object(py::reinterpret_borrow<py::object>(PyExc_RuntimeError));
  return *cls;
}

py::array_t<uint32_t> ToArray(const std::vector<uint32_t>& ids) {
  py::array_t<uint32_t> out(static_cast<py::ssize_t>(ids.size()));
  std::copy(ids.begin(), ids.end(), out.mutable_data());
  return out;
}

std::shared_ptr<TokenizerInfo> MakeTokenizerInfo(const py::sequence& token_bytes,
                                                 size_t logits_width,
                                                 std::vector<uint32_t> eos_token_ids) {
  const size_t n = py::len(token_bytes);
  if (n > TokenizerInfo::kMaxVocabSize) {
    throw TokenizerError("vocabulary of " + std::to_string(n) + " tokens exceeds the limit of " +
                         std::to_string(TokenizerInfo::kMaxVocabSize));
  }
  std::string flat;
  std::vector<uint32_t> offsets;
  offsets.reserve(n + 1);
  offsets.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    py::handle item = token_bytes[i];
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (!PyBytes_Check(item.ptr()) || PyBytes_AsStringAndSize(item.ptr(), &data, &size) != 0) {
      PyErr_Clear();
      throw TokenizerError("token_bytes[" + std::to_string(i) + "] is not a bytes object");
    }
    flat.append(data, static_cast<size_t>(size));
    if (flat.size() > 0xFFFFFFFFu) throw TokenizerError("the vocabulary holds over 4 GiB of bytes");
    offsets.push_back(static_cast<uint32_t>(flat.size()));
  }
  py::gil_scoped_release release;
  return std::make_shared<TokenizerInfo>(std::move(flat), std::move(offsets), logits_width,
                                         std::move(eos_token_ids));
}

uint32_t CheckedId(const TokenizerInfo& info, int64_t id) {
  if (id < 0 || static_cast<uint64_t>(id) >= info.vocab_size()) {
    throw py::index_error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(info.vocab_size()));
  }
  return static_cast<uint32_t>(id);
}

void BindErrors(py::module_& m) {
  m.def(
      "_register_error_classes",
      [](py::object tokenizer_error, py::object budget_error, py::object grammar_error) {
        PyTokenizerError() = std::move(tokenizer_error);
        PyBudgetError() = std::move(budget_error);
        PyGrammarError() = std::move(grammar_error);
      },
      "Installs the Python classes that native TokenizerError / BudgetExceededError / "
      "GrammarError map to.");
  m.def("clear_shared_caches", &ClearSharedUtf8Classes,
        "Empties the process-wide caches that grammars share (UTF-8 classes of character "
        "sets); compiled grammars keep what they hold. Pinned terminals and their classes stay.");
  m.def("pin_terminal_regexes", &PinTerminalRegexes, py::arg("regexes"),
        py::call_guard<py::gil_scoped_release>(),
        "Parses and compiles these terminal regexes once for the life of the process "
        "(native/lexer/pinned_terminals.h): a grammar terminal with one of them copies its "
        "program. For a front-end's own terminals; at most 64 in all.");
  m.def("num_pinned_terminals", &NumPinnedTerminals);
  m.def("pin_terminal_suffixes", &PinTerminalSuffixes, py::arg("suffixes"),
        py::arg("except_units"), py::call_guard<py::gil_scoped_release>(),
        "Compiles these suffixes of key terminals and except units once for the life of the "
        "process (native/lexer/pinned_terminals.h): a terminal made of literals and a suffix, "
        "or of `\"(?!(?:w1|...|wn)\")`, an except unit, `*` and a suffix, is then built "
        "without the regex parser. At most 64 of each.");
  m.def("num_pinned_suffixes", &NumPinnedSuffixes);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TokenizerError& e) {
      PyErr_SetString(PyTokenizerError().ptr(), e.what());
    } catch (const BudgetExceededError& e) {
      PyErr_SetString(PyBudgetError().ptr(), e.what());
    }
  });
}

void BindTokenizer(py::module_& m) {
  py::class_<TokenizerInfo, std::shared_ptr<TokenizerInfo>>(
      m, "TokenizerInfo",
      "Immutable vocabulary: token bytes, EOS ids, logits width and the token trie.")
      .def(py::init(&MakeTokenizerInfo), py::arg("token_bytes"), py::arg("logits_width"),
           py::arg("eos_token_ids"))
      .def_property_readonly("vocab_size", &TokenizerInfo::vocab_size)
      .def_property_readonly("logits_width", &TokenizerInfo::logits_width)
      .def_property_readonly("bitmask_width", &TokenizerInfo::bitmask_width)
      .def_property_readonly("eos_token_ids", &TokenizerInfo::eos_token_ids)
      .def_property_readonly(
          "special_token_ids",
          [](const TokenizerInfo& info) { return ToArray(info.special_token_ids()); })
      .def(
          "token_bytes",
          [](const TokenizerInfo& info, int64_t id) {
            const std::string_view bytes = info.token_bytes(CheckedId(info, id));
            return py::bytes(bytes.data(), bytes.size());
          },
          py::arg("token_id"))
      .def(
          "tokens_with_prefix",
          [](const TokenizerInfo& info, const py::bytes& prefix) {
            const std::string_view view = prefix;
            return ToArray(info.trie().TokensWithPrefix(view));
          },
          py::arg("prefix"),
          "Sorted ids (uint32 array) of all tokens whose bytes start with prefix.")
      .def(
          "tokens_prefixing",
          [](const TokenizerInfo& info, const py::bytes& text) {
            const std::string_view view = text;
            return ToArray(info.trie().TokensPrefixing(view));
          },
          py::arg("text"),
          "Sorted ids (uint32 array) of all tokens whose bytes are a prefix of text.")
      .def_property_readonly("trie_num_nodes",
                             [](const TokenizerInfo& info) { return info.trie().num_nodes(); })
      .def_property_readonly("max_token_bytes",
                             [](const TokenizerInfo& info) { return info.trie().max_depth(); })
      .def_property_readonly("memory_bytes", &TokenizerInfo::MemoryBytes);
}

// RegexLexer: LexerDfa (native/lexer/lexer_dfa.h) for tests, benchmarks and the grammar layer.
// Regex errors raise _native.RegexError (a ValueError with .msg, .pos and .pattern_index); a
// DFA budget running out raises the BudgetExceededError class installed by BindErrors.
void BindRegexError(py::module_& m) {
  static py::exception<RegexError> regex_error(m, "RegexError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const RegexError& e) {
      py::object error = py::handle(regex_error.ptr())(e.what());
      error.attr("msg") = e.message();
      error.attr("pos") = e.offset();
      error.attr("pattern_index") = e.pattern_index() == RegexError::kNoIndex
                                        ? py::none()
                                        : py::object(py::int_(e.pattern_index()));
      PyErr_SetObject(regex_error.ptr(), error.ptr());
    }
  });
}

using LexerClass = py::class_<LexerDfa, std::shared_ptr<LexerDfa>>;
using LexerState = LexerDfa::StateId;

LexerState CheckedLexerState(const LexerDfa& dfa, int64_t state) {
  if (state < 0 || static_cast<uint64_t>(state) >= dfa.num_states()) {
    throw py::index_error("lexer state " + std::to_string(state) + " does not exist (" +
                          std::to_string(dfa.num_states()) + " states)");
  }
  return static_cast<LexerState>(state);
}

// `state`, unless it is the error state of a DFA whose budget ran out (BudgetExceededError).
LexerState NoLexerError(const LexerDfa& dfa, LexerState state) {
  if (dfa.IsError(state)) {
    throw BudgetExceededError(
        "lexer DFA budget exceeded (max_states=" + std::to_string(dfa.options().max_states) +
        ", max_memory_bytes=" + std::to_string(dfa.options().max_memory_bytes) + ")");
  }
  return state;
}

LexerState LexerStart(const LexerDfa& dfa, const std::optional<std::vector<uint32_t>>& allowed) {
  if (!allowed) return dfa.StartState();
  for (uint32_t t : *allowed) {
    if (t >= dfa.num_terminals()) {
      throw py::index_error("terminal " + std::to_string(t) + " out of range (" +
                            std::to_string(dfa.num_terminals()) + " terminals)");
    }
  }
  return NoLexerError(dfa, dfa.StartState(*allowed));
}

LexerState LexerFeed(const LexerDfa& dfa, LexerState state, const py::bytes& data) {
  const std::string_view view = data;
  {
    py::gil_scoped_release release;
    state = dfa.Feed(state, view);
  }
  return NoLexerError(dfa, state);
}

std::shared_ptr<LexerDfa> MakeRegexLexer(const std::vector<std::string>& patterns,
                                         const std::string& dialect, bool ignore_case,
                                         bool dotall, bool multiline, bool verbose, bool ascii,
                                         bool ecma_search, size_t max_states,
                                         size_t max_memory_bytes, size_t max_nfa_instructions) {
  LexerOptions options;
  if (dialect == "python") {
    options.regex.dialect = RegexDialect::kPython;
  } else if (dialect == "ecma") {
    options.regex.dialect = RegexDialect::kEcma;
  } else {
    throw py::value_error("dialect must be 'python' or 'ecma', not '" + dialect + "'");
  }
  options.regex.ignore_case = ignore_case;
  options.regex.dot_all = dotall;
  options.regex.multiline = multiline;
  options.regex.verbose = verbose;
  options.regex.ascii = ascii;
  options.regex.ecma_search = ecma_search;
  options.max_states = max_states;
  options.max_memory_bytes = max_memory_bytes;
  options.max_nfa_instructions = max_nfa_instructions;
  py::gil_scoped_release release;
  return std::make_shared<LexerDfa>(patterns, options);
}

// The constructor, constants and sizes of RegexLexer.
void BindLexerLifecycle(LexerClass& lexer) {
  lexer
      .def(py::init(&MakeRegexLexer), py::arg("patterns"), py::arg("dialect") = "python",
           py::kw_only(), py::arg("ignore_case") = false, py::arg("dotall") = false,
           py::arg("multiline") = false, py::arg("verbose") = false, py::arg("ascii") = false,
           py::arg("ecma_search") = true,
           py::arg("max_states") = LexerOptions::kDefaultMaxStates,
           py::arg("max_memory_bytes") = LexerOptions::kDefaultMaxMemoryBytes,
           py::arg("max_nfa_instructions") = Nfa::kDefaultMaxInstructions)
      .def_property_readonly_static("DEAD_STATE", [](py::object) { return LexerDfa::kDeadState; })
      .def_property_readonly_static("ERROR_STATE", [](py::object) { return LexerDfa::kErrorState; })
      .def_property_readonly("num_terminals", &LexerDfa::num_terminals)
      .def_property_readonly("num_states", &LexerDfa::num_states)
      .def_property_readonly("memory_bytes", &LexerDfa::MemoryBytes)
      .def_property_readonly("num_byte_classes", &LexerDfa::num_byte_classes)
      .def_property_readonly("budget_exceeded", &LexerDfa::budget_exceeded)
      .def_property_readonly("num_nfa_instructions",
                             [](const LexerDfa& dfa) { return dfa.nfa().insts().size(); });
}

// Walking the DFA: start states, transitions and what a state matches.
void BindLexerWalk(LexerClass& lexer) {
  lexer
      .def("start_state", &LexerStart, py::arg("allowed") = py::none(),
           "Start state for all terminals, or only for the terminal ids in `allowed`.")
      .def(
          "next",
          [](const LexerDfa& dfa, int64_t state, int byte) {
            if (byte < 0 || byte > 255) throw py::value_error("byte must be in 0..255");
            return NoLexerError(dfa,
                                dfa.Next(CheckedLexerState(dfa, state), static_cast<uint8_t>(byte)));
          },
          py::arg("state"), py::arg("byte"))
      .def(
          "feed",
          [](const LexerDfa& dfa, int64_t state, const py::bytes& data) {
            return LexerFeed(dfa, CheckedLexerState(dfa, state), data);
          },
          py::arg("state"), py::arg("data"),
          "State after all of `data` (native loop, GIL released); stops early when dead.")
      .def(
          "is_dead",
          [](const LexerDfa& dfa, int64_t state) {
            return dfa.IsDead(CheckedLexerState(dfa, state));
          },
          py::arg("state"))
      .def(
          "is_match",
          [](const LexerDfa& dfa, int64_t state) {
            return dfa.IsMatch(CheckedLexerState(dfa, state));
          },
          py::arg("state"))
      .def(
          "matched_terminals",
          [](const LexerDfa& dfa, int64_t state) {
            return dfa.MatchedTerminals(CheckedLexerState(dfa, state));
          },
          py::arg("state"), "Sorted ids of the terminals that fully match the bytes read.")
      .def(
          "possible_terminals",
          [](const LexerDfa& dfa, int64_t state) {
            return dfa.PossibleTerminals(CheckedLexerState(dfa, state));
          },
          py::arg("state"), "Sorted ids of the terminals the bytes read are a prefix of.");
}

// Whole-input questions answered in one native call.
void BindLexerMatching(LexerClass& lexer) {
  lexer
      .def(
          "fullmatch",
          [](const LexerDfa& dfa, uint32_t index, const py::bytes& data) {
            const LexerState end = LexerFeed(dfa, LexerStart(dfa, std::vector<uint32_t>{index}),
                                             data);
            return dfa.IsMatch(end);
          },
          py::arg("index"), py::arg("data"), "Whether terminal `index` fully matches `data`.")
      .def(
          "is_viable_prefix",
          [](const LexerDfa& dfa, const py::bytes& data,
             const std::optional<std::vector<uint32_t>>& allowed) {
            return !dfa.IsDead(LexerFeed(dfa, LexerStart(dfa, allowed), data));
          },
          py::arg("data"), py::arg("allowed") = py::none(),
          "Whether `data` can be extended to a match of some (allowed) terminal.");
}

void BindLexer(py::module_& m) {
  BindRegexError(m);
  m.attr("UNICODE_VERSION") = py::str(kUnicodeVersion);
  LexerClass lexer(
      m, "RegexLexer",
      "N terminal regexes compiled to one lazily built byte-level DFA (thread-safe, shared).");
  BindLexerLifecycle(lexer);
  BindLexerWalk(lexer);
  BindLexerMatching(lexer);
}

// CompiledGrammar / Matcher (native/matcher). Buffers are checked here (dtype uint32,
// C-contiguous, 2-D, row in range, width >= the tokenizer's bitmask width); the row pointer is
// taken with the GIL held, then the GIL is released for the mask computation. Words beyond the
// tokenizer's bitmask width (a wider model row) are cleared.
uint32_t* CheckedBitmaskRow(py::array& bitmask, int64_t row, size_t min_width) {
  if (!py::isinstance<py::array_t<uint32_t>>(bitmask) || bitmask.dtype().kind() != 'u' ||
      bitmask.itemsize() != 4) {
    throw py::value_error("bitmask must be a numpy uint32 array, got dtype " +
                          std::string(py::str(bitmask.dtype())));
  }
  if (bitmask.ndim() != 2) {
    throw py::value_error("bitmask must be 2-D [batch, words], got " +
                          std::to_string(bitmask.ndim()) + " dimensions");
  }
  if (!(bitmask.flags() & py::array::c_style)) {
    throw py::value_error("bitmask must be C-contiguous");
  }
  if (!bitmask.writeable()) throw py::value_error("bitmask must be writeable");
  if (row < 0 || row >= bitmask.shape(0)) {
    throw py::value_error("row " + std::to_string(row) + " is out of range for a bitmask of " +
                          std::to_string(bitmask.shape(0)) + " rows");
  }
  if (static_cast<size_t>(bitmask.shape(1)) < min_width) {
    throw py::value_error("bitmask width " + std::to_string(bitmask.shape(1)) +
                          " words is below the tokenizer's " + std::to_string(min_width));
  }
  return static_cast<uint32_t*>(bitmask.mutable_data()) + row * bitmask.shape(1);
}

// (terminal id, its automaton's states: (accept, [(lo, hi, target), ...])), see
// TerminalSpec::automaton.
using TerminalAutomaton = std::pair<
    int32_t, std::vector<std::pair<bool, std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>>>>;

// One int32 of a rule (an int in range), or TypeError naming `what`.
int32_t RuleInt(PyObject* value, const char* what) {
  if (!PyLong_Check(value)) {
    throw py::type_error(std::string("a rule's ") + what + " must be an int, not " +
                         Py_TYPE(value)->tp_name);
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0 || v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    throw py::type_error(std::string("a rule's ") + what + " is out of the int32 range");
  }
  return static_cast<int32_t>(v);
}

// A list or tuple (anything else: TypeError) as its items, borrowed: valid while `value` is
// alive and unchanged (no Python code runs while the rules are read).
std::pair<PyObject**, Py_ssize_t> SequenceItems(PyObject* value, const char* error) {
  if (!PyList_Check(value) && !PyTuple_Check(value)) throw py::type_error(error);
  return {PySequence_Fast_ITEMS(value), PySequence_Fast_GET_SIZE(value)};
}

// The IR's rules, (lhs, (symbol, ...)) pairs in a list or tuple, read with the CPython API:
// pybind11's generic casters spent ~0.4 us a rule, a tenth of a large schema's compile.
std::vector<GrammarSpec::Rule> ReadRules(const py::handle& rules) {
  constexpr const char* kShape = "rules must be a list of (lhs, (symbol, ...)) pairs";
  const auto [items, n] = SequenceItems(rules.ptr(), kShape);
  std::vector<GrammarSpec::Rule> out(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    const auto [pair, size] = SequenceItems(items[i], kShape);
    if (size != 2) throw py::type_error(kShape);
    GrammarSpec::Rule& rule = out[static_cast<size_t>(i)];
    rule.lhs = RuleInt(pair[0], "lhs");
    const auto [symbols, length] = SequenceItems(pair[1], kShape);
    rule.rhs.resize(static_cast<size_t>(length));
    for (Py_ssize_t k = 0; k < length; ++k) rule.rhs[k] = RuleInt(symbols[k], "symbol");
  }
  return out;
}

std::shared_ptr<CompiledGrammar> MakeCompiledGrammar(
    const std::vector<std::tuple<std::string, std::string, bool, py::bytes, py::bytes>>& terminals,
    const std::vector<std::string>& nonterminals, const py::handle& rules, int32_t start,
    const std::vector<int32_t>& ignore, std::shared_ptr<const TokenizerInfo> tokenizer,
    const std::vector<std::pair<int32_t, uint32_t>>& special_tokens,
    const std::vector<int32_t>& unique_array_opens,
    const std::vector<int32_t>& keyed_object_opens,
    const std::vector<TerminalAutomaton>& automata) {
  CompiledGrammarSpec spec;
  for (const auto& [name, regex, lazy, forbidden_next, may_end_before] : terminals) {
    spec.terminals.push_back(TerminalSpec{name, regex, lazy,
                                          static_cast<std::string>(forbidden_next),
                                          static_cast<std::string>(may_end_before)});
  }
  for (const auto& [terminal, states] : automata) {
    if (terminal < 0 || static_cast<size_t>(terminal) >= spec.terminals.size()) {
      throw py::value_error("automaton for terminal " + std::to_string(terminal) +
                            ", which the grammar does not have");
    }
    auto automaton = std::make_shared<CodePointAutomaton>();
    for (const auto& [accept, transitions] : states) {
      CodePointAutomaton::State state;
      state.accept = accept;
      for (const auto& [lo, hi, target] : transitions) {
        if (lo > hi || hi > CodePointSet::kMaxCodePoint) {
          throw py::value_error("automaton transition with code points " + std::to_string(lo) +
                                ".." + std::to_string(hi));
        }
        state.transitions.push_back({CodePointSet::Range(lo, hi), target});
      }
      automaton->states.push_back(std::move(state));
    }
    spec.terminals[static_cast<size_t>(terminal)].automaton = std::move(automaton);
  }
  spec.nonterminal_names = nonterminals;
  spec.rules = ReadRules(rules);
  spec.start = start;
  spec.ignore = ignore;
  spec.special_tokens = special_tokens;
  spec.unique_array_opens = unique_array_opens;
  spec.keyed_object_opens = keyed_object_opens;
  py::gil_scoped_release release;
  return std::make_shared<CompiledGrammar>(spec, std::move(tokenizer));
}

// One NFA of nfa_product's argument, checked: every state, label and atom index in range.
NfaTables NfaTablesFrom(const py::handle& item, uint32_t atoms) {
  auto fields = item.cast<py::tuple>();
  if (fields.size() != 5) throw py::value_error("an NFA is (eps, edges, labels, start, end)");
  NfaTables nfa;
  nfa.eps = fields[0].cast<std::vector<std::vector<uint32_t>>>();
  nfa.edges = fields[1].cast<std::vector<std::vector<std::pair<uint32_t, uint32_t>>>>();
  nfa.labels = fields[2].cast<std::vector<std::vector<std::pair<uint32_t, uint32_t>>>>();
  nfa.start = fields[3].cast<uint32_t>();
  nfa.end = fields[4].cast<uint32_t>();
  const size_t n = nfa.eps.size();
  bool ok = nfa.edges.size() == n && nfa.start < n && nfa.end < n;
  for (size_t s = 0; ok && s < n; ++s) {
    for (uint32_t t : nfa.eps[s]) ok = ok && t < n;
    for (const auto& [label, t] : nfa.edges[s]) ok = ok && label < nfa.labels.size() && t < n;
  }
  for (const auto& intervals : nfa.labels) {
    for (const auto& [first, end] : intervals) ok = ok && first < end && end <= atoms;
  }
  if (!ok) throw py::value_error("nfa_product: a state, label or atom index is out of range");
  return nfa;
}

void BindNfaProduct(py::module_& m) {
  m.def(
      "nfa_product",
      [](const py::sequence& nfas, uint32_t atoms, size_t max_states) -> py::object {
        std::vector<NfaTables> tables;
        for (const py::handle& item : nfas) tables.push_back(NfaTablesFrom(item, atoms));
        std::optional<NfaProduct> built;
        {
          py::gil_scoped_release release;
          built = BuildNfaProduct(tables, atoms, max_states);
        }
        if (!built) return py::none();
        const auto states = static_cast<py::ssize_t>(built->states);
        py::array_t<uint32_t> transitions({states, static_cast<py::ssize_t>(atoms)});
        std::copy(built->transitions.begin(), built->transitions.end(),
                  transitions.mutable_data());
        py::array_t<uint8_t> accepts({states, static_cast<py::ssize_t>(tables.size())});
        std::copy(built->accepts.begin(), built->accepts.end(), accepts.mutable_data());
        return py::make_tuple(transitions, accepts);
      },
      py::arg("nfas"), py::arg("atoms"), py::arg("max_states"),
      "The product DFA of NFAs over atoms (native/lexer/nfa_product.h): None past max_states, "
      "else (transitions [states, atoms] uint32, accepts [states, nfas] uint8).");
}

void BindStateElimination(py::module_& m) {
  using Transitions = py::array_t<uint32_t, py::array::c_style | py::array::forcecast>;
  m.def(
      "eliminate_states",
      [](const Transitions& transitions, const std::vector<bool>& final,
         const py::function& piece, size_t max_states, size_t max_chars) -> py::tuple {
        if (transitions.ndim() != 2) throw py::value_error("transitions must be [states, atoms]");
        const auto states = static_cast<size_t>(transitions.shape(0));
        const auto atoms = static_cast<size_t>(transitions.shape(1));
        const uint32_t* table = transitions.data();
        if (final.size() != states ||
            std::any_of(table, table + states * atoms, [&](uint32_t t) { return t >= states; })) {
          throw py::value_error("eliminate_states: a target or the final flags are out of range");
        }
        const std::vector<uint8_t> finals(final.begin(), final.end());
        const EdgePiece edge = [&piece](const std::vector<uint32_t>& atom_list) {
          py::object text = piece(atom_list);
          return text.is_none() ? std::nullopt
                                : std::optional<std::string>(text.cast<std::string>());
        };
        const EliminationResult result =
            EliminateStates(table, states, atoms, finals, edge, max_states, max_chars);
        static constexpr const char* kStatus[] = {"regex", "none", "states", "long"};
        py::object regex = py::none();
        if (result.status == EliminationResult::Status::kRegex) regex = py::str(result.regex);
        return py::make_tuple(kStatus[static_cast<int>(result.status)], regex,
                              result.live_states);
      },
      py::arg("transitions"), py::arg("final"), py::arg("piece"), py::arg("max_states"),
      py::arg("max_chars"),
      "A DFA written back as a regex by state elimination (native/lexer/state_elimination.h): "
      "(status, regex, live states), status 'regex', 'none' (no string), 'states' (more than "
      "max_states live states; 0: no bound) or 'long' (a regex passed max_chars).");
}

void BindCompiledGrammar(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const GrammarError& e) {
      PyErr_SetString(PyGrammarError().ptr(), e.what());
    }
  });
  py::class_<CompiledGrammar, std::shared_ptr<CompiledGrammar>>(
      m, "CompiledGrammar", "A grammar compiled against a tokenizer (immutable, thread-safe).")
      .def(py::init(&MakeCompiledGrammar), py::arg("terminals"), py::arg("nonterminals"),
           py::arg("rules"), py::arg("start"), py::arg("ignore"), py::arg("tokenizer"),
           py::arg("special_tokens") = std::vector<std::pair<int32_t, uint32_t>>{},
           py::arg("unique_array_opens") = std::vector<int32_t>{},
           py::arg("keyed_object_opens") = std::vector<int32_t>{},
           py::arg("automata") = std::vector<TerminalAutomaton>{})
      .def_property_readonly("num_lexer_states",
                             [](const CompiledGrammar& g) { return g.lexer().num_states(); });
}

// Matcher construction, token/byte acceptance, rollback and the state queries.
// Every Matcher method claims its matcher for the call (MatcherClaim, native/batch): a
// Matcher used from two threads at once, or during a batch operation that owns it, raises
// MatcherBusyError in the second caller instead of racing. The claim is taken with the GIL held;
// the work runs without it.
template <typename R, typename... Args>
auto Claimed(R (Matcher::*method)(Args...)) {
  return [method](Matcher& matcher, Args... args) -> R {
    MatcherClaim claim(&matcher);
    py::gil_scoped_release release;
    return (matcher.*method)(args...);
  };
}

template <typename R, typename... Args>
auto Claimed(R (Matcher::*method)(Args...) const) {
  return [method](const Matcher& matcher, Args... args) -> R {
    MatcherClaim claim(&matcher);
    py::gil_scoped_release release;
    return (matcher.*method)(args...);
  };
}

void BindMatcherLifecycle(py::class_<Matcher>& matcher_class) {
  matcher_class
      .def(py::init([](std::shared_ptr<const CompiledGrammar> grammar, uint64_t budget) {
             return std::make_unique<Matcher>(std::move(grammar), budget);
           }),
           py::arg("compiled"), py::arg("mask_step_budget") = Matcher::kDefaultMaskStepBudget)
      .def("accept_token", Claimed(&Matcher::AcceptToken), py::arg("token_id"))
      .def(
          "accept_bytes",
          [](Matcher& matcher, const py::bytes& data) {
            const std::string copy = data;
            MatcherClaim claim(&matcher);
            py::gil_scoped_release release;
            return matcher.AcceptBytes(copy);
          },
          py::arg("data"))
      .def("rollback", Claimed(&Matcher::Rollback), py::arg("num_steps"))
      .def("reset", Claimed(&Matcher::Reset))
      .def("fork",
           [](const Matcher& matcher) {
             MatcherClaim claim(&matcher);
             return std::make_unique<Matcher>(matcher);
           })
      .def("is_accepting", Claimed(&Matcher::IsAccepting))
      .def("min_terminals_to_accept", Claimed(&Matcher::MinTerminalsToAccept))
      .def(
          "shortest_lexeme_completion",
          [](Matcher& matcher, size_t max_states) -> py::object {
            std::optional<std::string> completion;
            {
              MatcherClaim claim(&matcher);
              py::gil_scoped_release release;
              completion = matcher.ShortestLexemeCompletion(max_states);
            }
            if (!completion) return py::none();
            return py::bytes(*completion);
          },
          py::arg("max_states") = Matcher::kDefaultCompletionStates)
      .def("is_terminated", Claimed(&Matcher::IsTerminated))
      .def("is_token_allowed", Claimed(&Matcher::IsTokenAllowed), py::arg("token_id"))
      .def(
          "require_prefix",
          [](Matcher& matcher, const py::bytes& prefix) {
            const std::string copy = prefix;
            MatcherClaim claim(&matcher);
            return matcher.RequirePrefix(copy);
          },
          py::arg("prefix"));
}

// Statistics and state read without changing it (each claimed like the methods).
void BindMatcherProperties(py::class_<Matcher>& matcher_class) {
  matcher_class
      .def_property_readonly("earley_items_created", Claimed(&Matcher::earley_items_created))
      .def_property_readonly("earley_sets", Claimed(&Matcher::earley_sets))
      .def_property_readonly("lexing_threads", Claimed(&Matcher::lexing_threads))
      .def_property_readonly("pending_prefix",
                             [](const Matcher& matcher) {
                               std::string prefix;
                               {
                                 MatcherClaim claim(&matcher);
                                 prefix = std::string(matcher.pending_prefix());
                               }
                               return py::bytes(prefix);
                             })
      .def_property_readonly("num_steps", Claimed(&Matcher::num_steps))
      .def_property_readonly("error", [](const Matcher& matcher) {
        MatcherClaim claim(&matcher);
        return matcher.error();
      });
}

py::list ComputeForced(Matcher& matcher, size_t max_bytes) {
  std::vector<Matcher::ForcedPiece> pieces;
  {
    MatcherClaim claim(&matcher);
    py::gil_scoped_release release;
    pieces = matcher.ComputeForced(max_bytes);
  }
  py::list out;
  for (const Matcher::ForcedPiece& piece : pieces) {
    if (piece.special_token >= 0) {
      out.append(py::int_(piece.special_token));
    } else {
      out.append(py::bytes(piece.bytes));
    }
  }
  return out;
}

// What the grammar forces next and the token mask of one row.
void BindMatcherMasks(py::class_<Matcher>& matcher_class) {
  matcher_class
      .def("compute_forced", &ComputeForced, py::arg("max_bytes") = 256,
           "What the grammar forces next: a list of bytes and special-token ids (state "
           "unchanged).")
      .def(
          "fill_next_token_bitmask",
          [](Matcher& matcher, py::array bitmask, int64_t row) {
            const size_t width = matcher.tokenizer().bitmask_width();
            uint32_t* data = CheckedBitmaskRow(bitmask, row, width);
            const size_t total = static_cast<size_t>(bitmask.shape(1));
            MatcherClaim claim(&matcher);
            py::gil_scoped_release release;
            matcher.FillNextTokenBitmask(data);
            std::fill(data + width, data + total, 0u);
          },
          py::arg("bitmask"), py::arg("row") = 0);
}

void BindMatcher(py::module_& m) {
  BindCompiledGrammar(m);
  py::class_<Matcher> matcher_class(m, "Matcher", "The grammar state of one sequence.");
  BindMatcherLifecycle(matcher_class);
  BindMatcherProperties(matcher_class);
  BindMatcherMasks(matcher_class);
}

}  // namespace

void BindBatch(py::module_& m);       // bindings_batch.cc
void BindJsonSchema(py::module_& m);  // bindings_json_schema.cc

}  // namespace jaxguide

PYBIND11_MODULE(_native, m) {
  m.doc() = "jaxguide native core (C++17). Use the typed Python front in jaxguide.*.";
  jaxguide::BindErrors(m);
  jaxguide::BindTokenizer(m);
  jaxguide::BindLexer(m);
  jaxguide::BindNfaProduct(m);
  jaxguide::BindStateElimination(m);
  jaxguide::BindMatcher(m);
  jaxguide::BindBatch(m);
  jaxguide::BindJsonSchema(m);
}
