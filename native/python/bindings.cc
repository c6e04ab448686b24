// The only pybind11 file: jaxguide._native.
//
// Rules for everything bound here: validate every buffer that crosses the boundary (dtype,
// contiguity, shape) and every id; take raw pointers while holding the GIL, release it for long
// native work; never let pybind11 copy an output buffer silently. Native exceptions map to the
// Python classes in jaxguide/errors.py (registered by jaxguide/__init__.py through
// _register_error_classes).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "native/batch/batch_mask_filler.h"
#include "native/batch/thread_pool.h"
#include "native/lexer/lexer_dfa.h"
#include "native/lexer/regex_error.h"
#include "native/lexer/unicode_tables.h"
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
void BindLexer(py::module_& m) {
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
  m.attr("UNICODE_VERSION") = py::str(kUnicodeVersion);

  using StateId = LexerDfa::StateId;
  auto checked_state = [](const LexerDfa& dfa, int64_t state) {
    if (state < 0 || static_cast<uint64_t>(state) >= dfa.num_states()) {
      throw py::index_error("lexer state " + std::to_string(state) + " does not exist (" +
                            std::to_string(dfa.num_states()) + " states)");
    }
    return static_cast<StateId>(state);
  };
  auto no_error = [](const LexerDfa& dfa, StateId state) {
    if (dfa.IsError(state)) {
      throw BudgetExceededError(
          "lexer DFA budget exceeded (max_states=" + std::to_string(dfa.options().max_states) +
          ", max_memory_bytes=" + std::to_string(dfa.options().max_memory_bytes) + ")");
    }
    return state;
  };
  auto start = [no_error](const LexerDfa& dfa,
                          const std::optional<std::vector<uint32_t>>& allowed) {
    if (!allowed) return dfa.StartState();
    for (uint32_t t : *allowed) {
      if (t >= dfa.num_terminals()) {
        throw py::index_error("terminal " + std::to_string(t) + " out of range (" +
                              std::to_string(dfa.num_terminals()) + " terminals)");
      }
    }
    return no_error(dfa, dfa.StartState(*allowed));
  };
  auto feed = [no_error](const LexerDfa& dfa, StateId state, const py::bytes& data) {
    const std::string_view view = data;
    {
      py::gil_scoped_release release;
      state = dfa.Feed(state, view);
    }
    return no_error(dfa, state);
  };

  py::class_<LexerDfa, std::shared_ptr<LexerDfa>>(
      m, "RegexLexer",
      "N terminal regexes compiled to one lazily built byte-level DFA (thread-safe, shared).")
      .def(py::init([](const std::vector<std::string>& patterns, const std::string& dialect,
                       bool ignore_case, bool dotall, bool multiline, bool verbose, bool ascii,
                       bool ecma_search, size_t max_states, size_t max_memory_bytes,
                       size_t max_nfa_instructions) {
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
           }),
           py::arg("patterns"), py::arg("dialect") = "python", py::kw_only(),
           py::arg("ignore_case") = false, py::arg("dotall") = false, py::arg("multiline") = false,
           py::arg("verbose") = false, py::arg("ascii") = false, py::arg("ecma_search") = true,
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
                             [](const LexerDfa& dfa) { return dfa.nfa().insts().size(); })
      .def("start_state", start, py::arg("allowed") = py::none(),
           "Start state for all terminals, or only for the terminal ids in `allowed`.")
      .def(
          "next",
          [checked_state, no_error](const LexerDfa& dfa, int64_t state, int byte) {
            if (byte < 0 || byte > 255) throw py::value_error("byte must be in 0..255");
            return no_error(dfa, dfa.Next(checked_state(dfa, state), static_cast<uint8_t>(byte)));
          },
          py::arg("state"), py::arg("byte"))
      .def(
          "feed",
          [checked_state, feed](const LexerDfa& dfa, int64_t state, const py::bytes& data) {
            return feed(dfa, checked_state(dfa, state), data);
          },
          py::arg("state"), py::arg("data"),
          "State after all of `data` (native loop, GIL released); stops early when dead.")
      .def(
          "is_dead",
          [checked_state](const LexerDfa& dfa, int64_t state) {
            return dfa.IsDead(checked_state(dfa, state));
          },
          py::arg("state"))
      .def(
          "is_match",
          [checked_state](const LexerDfa& dfa, int64_t state) {
            return dfa.IsMatch(checked_state(dfa, state));
          },
          py::arg("state"))
      .def(
          "matched_terminals",
          [checked_state](const LexerDfa& dfa, int64_t state) {
            return dfa.MatchedTerminals(checked_state(dfa, state));
          },
          py::arg("state"), "Sorted ids of the terminals that fully match the bytes read.")
      .def(
          "possible_terminals",
          [checked_state](const LexerDfa& dfa, int64_t state) {
            return dfa.PossibleTerminals(checked_state(dfa, state));
          },
          py::arg("state"), "Sorted ids of the terminals the bytes read are a prefix of.")
      .def(
          "fullmatch",
          [start, feed](const LexerDfa& dfa, uint32_t index, const py::bytes& data) {
            const StateId end = feed(dfa, start(dfa, std::vector<uint32_t>{index}), data);
            return dfa.IsMatch(end);
          },
          py::arg("index"), py::arg("data"), "Whether terminal `index` fully matches `data`.")
      .def(
          "is_viable_prefix",
          [start, feed](const LexerDfa& dfa, const py::bytes& data,
                        const std::optional<std::vector<uint32_t>>& allowed) {
            return !dfa.IsDead(feed(dfa, start(dfa, allowed), data));
          },
          py::arg("data"), py::arg("allowed") = py::none(),
          "Whether `data` can be extended to a match of some (allowed) terminal.");
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

void BindMatcher(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const GrammarError& e) {
      PyErr_SetString(PyGrammarError().ptr(), e.what());
    }
  });
  py::class_<CompiledGrammar, std::shared_ptr<CompiledGrammar>>(
      m, "CompiledGrammar", "A grammar compiled against a tokenizer (immutable, thread-safe).")
      .def(py::init([](const std::vector<std::tuple<std::string, std::string, bool, py::bytes,
                                                    py::bytes>>& terminals,
                       const std::vector<std::string>& nonterminals,
                       const std::vector<std::pair<int32_t, std::vector<int32_t>>>& rules,
                       int32_t start, const std::vector<int32_t>& ignore,
                       std::shared_ptr<const TokenizerInfo> tokenizer,
                       const std::vector<std::pair<int32_t, uint32_t>>& special_tokens) {
             CompiledGrammarSpec spec;
             for (const auto& [name, regex, lazy, forbidden_next, may_end_before] : terminals) {
               spec.terminals.push_back(TerminalSpec{name, regex, lazy,
                                                     static_cast<std::string>(forbidden_next),
                                                     static_cast<std::string>(may_end_before)});
             }
             spec.nonterminal_names = nonterminals;
             for (const auto& [lhs, rhs] : rules) spec.rules.push_back({lhs, rhs});
             spec.start = start;
             spec.ignore = ignore;
             spec.special_tokens = special_tokens;
             py::gil_scoped_release release;
             return std::make_shared<CompiledGrammar>(spec, std::move(tokenizer));
           }),
           py::arg("terminals"), py::arg("nonterminals"), py::arg("rules"), py::arg("start"),
           py::arg("ignore"), py::arg("tokenizer"),
           py::arg("special_tokens") = std::vector<std::pair<int32_t, uint32_t>>{})
      .def_property_readonly("num_lexer_states",
                             [](const CompiledGrammar& g) { return g.lexer().num_states(); });

  py::class_<Matcher>(m, "Matcher", "The grammar state of one sequence.")
      .def(py::init([](std::shared_ptr<const CompiledGrammar> grammar, uint64_t budget) {
             return std::make_unique<Matcher>(std::move(grammar), budget);
           }),
           py::arg("compiled"), py::arg("mask_step_budget") = Matcher::kDefaultMaskStepBudget)
      .def("accept_token", &Matcher::AcceptToken, py::arg("token_id"),
           py::call_guard<py::gil_scoped_release>())
      .def(
          "accept_bytes",
          [](Matcher& matcher, const py::bytes& data) {
            const std::string copy = data;
            py::gil_scoped_release release;
            return matcher.AcceptBytes(copy);
          },
          py::arg("data"))
      .def("rollback", &Matcher::Rollback, py::arg("num_steps"))
      .def("reset", &Matcher::Reset)
      .def("fork", [](const Matcher& matcher) { return std::make_unique<Matcher>(matcher); })
      .def("is_accepting", &Matcher::IsAccepting, py::call_guard<py::gil_scoped_release>())
      .def("min_terminals_to_accept", &Matcher::MinTerminalsToAccept,
           py::call_guard<py::gil_scoped_release>())
      .def(
          "shortest_lexeme_completion",
          [](Matcher& matcher, size_t max_states) -> py::object {
            std::optional<std::string> completion;
            {
              py::gil_scoped_release release;
              completion = matcher.ShortestLexemeCompletion(max_states);
            }
            if (!completion) return py::none();
            return py::bytes(*completion);
          },
          py::arg("max_states") = Matcher::kDefaultCompletionStates)
      .def("is_terminated", &Matcher::IsTerminated)
      .def("is_token_allowed", &Matcher::IsTokenAllowed, py::arg("token_id"),
           py::call_guard<py::gil_scoped_release>())
      .def(
          "require_prefix",
          [](Matcher& matcher, const py::bytes& prefix) {
            return matcher.RequirePrefix(static_cast<std::string>(prefix));
          },
          py::arg("prefix"))
      .def_property_readonly("earley_items_created", &Matcher::earley_items_created)
      .def_property_readonly("earley_sets", &Matcher::earley_sets)
      .def_property_readonly("lexing_threads", &Matcher::lexing_threads)
      .def_property_readonly("pending_prefix", [](const Matcher& matcher) {
        return py::bytes(std::string(matcher.pending_prefix()));
      })
      .def(
          "compute_forced",
          [](Matcher& matcher, size_t max_bytes) {
            std::vector<Matcher::ForcedPiece> pieces;
            {
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
          },
          py::arg("max_bytes") = 256,
          "What the grammar forces next: a list of bytes and special-token ids (state "
          "unchanged).")
      .def(
          "fill_next_token_bitmask",
          [](Matcher& matcher, py::array bitmask, int64_t row) {
            const size_t width = matcher.tokenizer().bitmask_width();
            uint32_t* data = CheckedBitmaskRow(bitmask, row, width);
            const size_t total = static_cast<size_t>(bitmask.shape(1));
            py::gil_scoped_release release;
            matcher.FillNextTokenBitmask(data);
            std::fill(data + width, data + total, 0u);
          },
          py::arg("bitmask"), py::arg("row") = 0)
      .def_property_readonly("num_steps", &Matcher::num_steps)
      .def_property_readonly("error", &Matcher::error);
}

// BatchMatcher / BatchFillHandle (native/batch). Every buffer and index is checked here with the
// GIL held (bitmask: a numpy uint32 ndarray, 2-D, C-contiguous, aligned, writeable, wide enough;
// rows: distinct, in range); raw row pointers are taken then. A handle keeps the bitmask and the
// matchers alive and its destructor waits for the operation (GIL released), so no worker ever
// writes into freed memory. Matchers may be jaxguide.Matcher objects (their `.native` is used) or
// _native.Matcher; the last batch's resolved MatcherSet is cached by object identity, so a decode
// loop that passes the same matchers every step pays no per-matcher conversion.
py::object& PyMatcherBusyError() {
  static py::object* cls = new py::object(py::reinterpret_borrow<py::object>(PyExc_RuntimeError));
  return *cls;
}

// Every pool created here, so that interpreter exit can shut them all down (jaxguide/__init__).
std::vector<std::weak_ptr<ThreadPool>>& LivePools() {
  static auto* pools = new std::vector<std::weak_ptr<ThreadPool>>();
  return *pools;
}

std::shared_ptr<ThreadPool> NewPool(size_t num_threads) {
  std::shared_ptr<ThreadPool> pool;
  {
    py::gil_scoped_release release;
    pool = std::make_shared<ThreadPool>(num_threads);
  }
  auto& pools = LivePools();
  pools.erase(std::remove_if(pools.begin(), pools.end(),
                             [](const std::weak_ptr<ThreadPool>& p) { return p.expired(); }),
              pools.end());
  pools.push_back(pool);
  return pool;
}

// The process-wide pool (DefaultNumThreads() workers), created on first use; a forked child
// gets its own.
std::shared_ptr<ThreadPool> SharedPool() {
  static auto* pool = new std::shared_ptr<ThreadPool>();
  static int64_t owner_pid = -1;
  const int64_t pid = static_cast<int64_t>(getpid());
  if (*pool == nullptr || owner_pid != pid) {
    *pool = NewPool(0);
    owner_pid = pid;
  }
  return *pool;
}

struct BatchFillHandle {
  std::shared_ptr<BatchOperation> op;
  py::object bitmask;         // kept alive until the operation is done
  py::object natives;         // tuple of the _native.Matcher objects
  std::vector<int64_t> rows;  // bitmask row of each matcher

  BatchFillHandle() = default;
  BatchFillHandle(const BatchFillHandle&) = delete;
  BatchFillHandle& operator=(const BatchFillHandle&) = delete;
  ~BatchFillHandle() {
    if (op != nullptr && !op->done()) {
      py::gil_scoped_release release;
      op->Wait();
    }
  }

  void Wait(std::optional<double> timeout) const {
    if (op->done()) return;
    bool finished = true;
    {
      py::gil_scoped_release release;
      if (!timeout) {
        op->Wait();
      } else {
        const double seconds = std::max(0.0, *timeout);
        finished = op->WaitFor(std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::duration<double>(std::min(seconds, 1e9))));
      }
    }
    if (!finished) {
      PyErr_SetString(PyExc_TimeoutError, "the batch operation did not finish in time");
      throw py::error_already_set();
    }
  }

  py::dict Errors() const {
    if (!op->done()) {
      throw py::value_error("the batch operation is still running: call wait() first");
    }
    py::dict errors;
    const auto& messages = op->errors();
    for (size_t i = 0; i < messages.size(); ++i) {
      if (!messages[i].empty()) errors[py::int_(rows[i])] = py::str(messages[i]);
    }
    return errors;
  }
};

class PyBatchMatcher {
 public:
  explicit PyBatchMatcher(std::optional<int64_t> num_threads)
      : filler_(MakePool(num_threads)), shared_(!num_threads.has_value()) {}

  size_t num_threads() const { return filler_.pool().num_threads(); }
  bool shared() const { return shared_; }

  struct Batch {
    std::shared_ptr<const MatcherSet> set;
    py::object natives;
  };

  // Resolves a sequence of matchers (cached by the identity of its items).
  Batch Resolve(const py::handle& matchers) {
    py::object seq = py::reinterpret_steal<py::object>(
        PySequence_Fast(matchers.ptr(), "matchers must be a sequence of jaxguide.Matcher"));
    if (!seq) throw py::error_already_set();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    if (last_set_ != nullptr && static_cast<Py_ssize_t>(last_items_.size()) == n) {
      bool same = true;
      for (Py_ssize_t i = 0; i < n && same; ++i)
        same = items[i] == PyTuple_GET_ITEM(last_items_.ptr(), i);
      if (same) return Batch{last_set_, last_natives_};
    }
    py::tuple item_refs(n), natives(n);
    std::vector<Matcher*> raw(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      py::handle item(items[i]);
      py::object native = py::reinterpret_borrow<py::object>(item);
      if (!py::isinstance<Matcher>(native) && py::hasattr(item, "native")) {
        native = item.attr("native");
      }
      if (!py::isinstance<Matcher>(native)) {
        throw py::type_error("matchers[" + std::to_string(i) + "] is a " +
                             std::string(py::str(py::type::handle_of(item).attr("__name__"))) +
                             ", not a jaxguide.Matcher");
      }
      raw[static_cast<size_t>(i)] = native.cast<Matcher*>();
      item_refs[i] = item;
      natives[i] = native;
    }
    auto set = std::make_shared<const MatcherSet>(std::move(raw));  // ValueError on duplicates
    last_items_ = std::move(item_refs);
    last_natives_ = natives;
    last_set_ = set;
    return Batch{std::move(set), std::move(natives)};
  }

  std::unique_ptr<BatchFillHandle> FillAsync(const py::handle& matchers,
                                             const py::object& bitmask_obj,
                                             const py::object& rows_obj,
                                             const py::object& tokens_obj) {
    Batch batch = Resolve(matchers);
    const size_t n = batch.set->size();
    if (!py::isinstance<py::array>(bitmask_obj)) {
      throw py::value_error(
          "bitmask must be a numpy uint32 array (see allocate_token_bitmask), "
          "got " +
          std::string(py::str(py::type::handle_of(bitmask_obj).attr("__name__"))));
    }
    py::array bitmask = py::reinterpret_borrow<py::array>(bitmask_obj);
    if (!bitmask.dtype().equal(py::dtype::of<uint32_t>())) {
      throw py::value_error("bitmask must be a numpy uint32 array, got dtype " +
                            std::string(py::str(bitmask.dtype())));
    }
    if (bitmask.ndim() != 2) {
      throw py::value_error("bitmask must be 2-D [batch, words], got " +
                            std::to_string(bitmask.ndim()) + " dimensions");
    }
    const int flags = bitmask.flags();
    if (!(flags & py::array::c_style)) throw py::value_error("bitmask must be C-contiguous");
    if (!(flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_)) {
      throw py::value_error("bitmask must be aligned to 4 bytes");
    }
    if (!bitmask.writeable()) {
      throw py::value_error(
          "bitmask must be writeable (a MaskQueue buffer is read-only once "
          "submitted: acquire() a new one)");
    }
    const int64_t num_rows = bitmask.shape(0);
    const size_t words = static_cast<size_t>(bitmask.shape(1));
    std::vector<int64_t> rows;
    if (rows_obj.is_none()) {
      if (static_cast<int64_t>(n) != num_rows) {
        throw py::value_error(std::to_string(n) + " matchers but the bitmask has " +
                              std::to_string(num_rows) +
                              " rows; pass rows= to fill a subset of the rows");
      }
      rows.resize(n);
      for (size_t i = 0; i < n; ++i) rows[i] = static_cast<int64_t>(i);
    } else {
      rows = IntVector(rows_obj, "rows", n);
      std::vector<char> seen(static_cast<size_t>(num_rows), 0);
      for (size_t i = 0; i < n; ++i) {
        if (rows[i] < 0 || rows[i] >= num_rows) {
          throw py::value_error("rows[" + std::to_string(i) + "] = " + std::to_string(rows[i]) +
                                " is out of range for a bitmask of " + std::to_string(num_rows) +
                                " rows");
        }
        if (seen[static_cast<size_t>(rows[i])]++) {
          throw py::value_error("row " + std::to_string(rows[i]) +
                                " appears twice in rows; each matcher needs its own row");
        }
      }
    }
    std::optional<std::vector<uint32_t>> tokens;
    if (!tokens_obj.is_none()) tokens = TokenVector(tokens_obj, n);
    uint32_t* data = static_cast<uint32_t*>(bitmask.mutable_data());
    std::vector<uint32_t*> pointers(n);
    for (size_t i = 0; i < n; ++i) pointers[i] = data + static_cast<size_t>(rows[i]) * words;
    auto handle = std::make_unique<BatchFillHandle>();
    {
      // Quick (a registry check and a wake-up), unless the pool is shut down: then the fill
      // runs right here.
      py::gil_scoped_release release;
      handle->op = filler_.FillNextTokenBitmaskAsync(batch.set, std::move(pointers), words,
                                                     std::move(tokens));
    }
    handle->bitmask = bitmask;
    handle->natives = std::move(batch.natives);
    handle->rows = std::move(rows);
    return handle;
  }

  py::array_t<bool> AcceptTokens(const py::handle& matchers, const py::object& tokens_obj) {
    Batch batch = Resolve(matchers);
    std::vector<uint32_t> tokens = TokenVector(tokens_obj, batch.set->size());
    std::shared_ptr<BatchOperation> op;
    {
      py::gil_scoped_release release;
      op = filler_.AcceptTokens(batch.set, std::move(tokens));
    }
    py::array_t<bool> out(static_cast<py::ssize_t>(batch.set->size()));
    bool* flags = out.mutable_data();
    for (size_t i = 0; i < batch.set->size(); ++i) flags[i] = op->accepted()[i] != 0;
    return out;
  }

  void Rollback(const py::handle& matchers, const py::object& steps_obj) {
    Batch batch = Resolve(matchers);
    const size_t n = batch.set->size();
    std::vector<size_t> steps(n);
    if (py::isinstance<py::int_>(steps_obj)) {
      const int64_t k = steps_obj.cast<int64_t>();
      if (k < 0) throw py::value_error("num_tokens must be >= 0, got " + std::to_string(k));
      std::fill(steps.begin(), steps.end(), static_cast<size_t>(k));
    } else {
      const std::vector<int64_t> values = IntVector(steps_obj, "num_tokens", n);
      for (size_t i = 0; i < n; ++i) {
        if (values[i] < 0) {
          throw py::value_error("num_tokens[" + std::to_string(i) + "] must be >= 0, got " +
                                std::to_string(values[i]));
        }
        steps[i] = static_cast<size_t>(values[i]);
      }
    }
    py::gil_scoped_release release;
    filler_.Rollback(batch.set, std::move(steps));
  }

  void Shutdown() {
    if (shared_) return;  // the shared pool lives until interpreter exit
    py::gil_scoped_release release;
    filler_.pool().Shutdown();
  }

 private:
  static std::shared_ptr<ThreadPool> MakePool(std::optional<int64_t> num_threads) {
    if (!num_threads) return SharedPool();
    if (*num_threads < 1 || *num_threads > 4096) {
      throw py::value_error("num_threads must be in 1..4096 (or None for the shared pool), got " +
                            std::to_string(*num_threads));
    }
    return NewPool(static_cast<size_t>(*num_threads));
  }

  // A 1-D integer array-like of length n (copied: these are inputs, never written).
  static std::vector<int64_t> IntVector(const py::object& obj, const char* name, size_t n) {
    py::array array = py::array::ensure(obj);
    if (!array) {
      PyErr_Clear();
      throw py::value_error(std::string(name) + " must be a 1-D sequence of integers");
    }
    const char kind = array.dtype().kind();
    if (array.ndim() != 1 || (kind != 'i' && kind != 'u' && !(kind == 'f' && array.size() == 0))) {
      throw py::value_error(std::string(name) + " must be a 1-D sequence of integers, got " +
                            std::to_string(array.ndim()) + "-D dtype " +
                            std::string(py::str(array.dtype())));
    }
    if (static_cast<size_t>(array.shape(0)) != n) {
      throw py::value_error(std::string(name) + " has " + std::to_string(array.shape(0)) +
                            " entries for " + std::to_string(n) + " matchers");
    }
    if (kind == 'u' && array.itemsize() == 8) {
      auto values = py::array_t<uint64_t, py::array::forcecast>::ensure(array);
      std::vector<int64_t> out(n);
      for (size_t i = 0; i < n; ++i) {
        out[i] = values.at(i) > static_cast<uint64_t>(INT64_MAX)
                     ? -1
                     : static_cast<int64_t>(values.at(i));
      }
      return out;
    }
    auto values = py::array_t<int64_t, py::array::forcecast>::ensure(array);
    if (!values) throw py::error_already_set();
    return std::vector<int64_t>(values.data(), values.data() + n);
  }

  static std::vector<uint32_t> TokenVector(const py::object& obj, size_t n) {
    const std::vector<int64_t> values = IntVector(obj, "tokens", n);
    std::vector<uint32_t> tokens(n);
    for (size_t i = 0; i < n; ++i) {
      if (values[i] < 0 || values[i] > 0xFFFFFFFFll) {
        throw py::value_error("tokens[" + std::to_string(i) + "] = " + std::to_string(values[i]) +
                              " is not a token id");
      }
      tokens[i] = static_cast<uint32_t>(values[i]);
    }
    return tokens;
  }

  BatchMaskFiller filler_;
  bool shared_;
  py::tuple last_items_;
  py::object last_natives_;
  std::shared_ptr<const MatcherSet> last_set_;
};

void BindBatch(py::module_& m) {
  m.def(
      "_register_matcher_busy_error", [](py::object cls) { PyMatcherBusyError() = std::move(cls); },
      "Installs the Python class that native MatcherBusyError maps to.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const MatcherBusyError& e) {
      PyErr_SetString(PyMatcherBusyError().ptr(), e.what());
    }
  });
  m.def(
      "_matcher_in_flight", [](const Matcher& matcher) { return IsMatcherInFlight(&matcher); },
      py::arg("matcher"),
      "Whether the matcher belongs to a batch operation that has not finished.");
  m.def(
      "_shutdown_batch_pools",
      [] {
        std::vector<std::shared_ptr<ThreadPool>> pools;
        for (const auto& weak : LivePools()) {
          if (auto pool = weak.lock()) pools.push_back(std::move(pool));
        }
        py::gil_scoped_release release;
        for (const auto& pool : pools) pool->Shutdown();
      },
      "Finishes every batch operation and joins every pool's workers (at interpreter exit); "
      "operations started later run on the calling thread.");
  m.def("default_num_threads", &ThreadPool::DefaultNumThreads,
        "Threads of the shared pool: the cores this process may run on.");

  py::class_<BatchFillHandle>(m, "BatchFillHandle",
                              "A batch mask fill in flight; its destructor waits for it.")
      .def("done", [](const BatchFillHandle& h) { return h.op->done(); })
      .def(
          "wait",
          [](const BatchFillHandle& h, std::optional<double> timeout) {
            h.Wait(timeout);
            return h.Errors();
          },
          py::arg("timeout") = py::none())
      .def_property_readonly("errors", &BatchFillHandle::Errors)
      .def_property_readonly(
          "accepted",
          [](const BatchFillHandle& h) -> py::object {
            if (!h.op->done()) {
              throw py::value_error("the batch operation is still running: call wait() first");
            }
            if (h.op->kind() != BatchOperation::Kind::kAcceptAndFill) {
              return py::none();
            }
            py::array_t<bool> out(static_cast<py::ssize_t>(h.rows.size()));
            for (size_t i = 0; i < h.rows.size(); ++i) {
              out.mutable_data()[i] = h.op->accepted()[i] != 0;
            }
            return std::move(out);
          })
      .def_property_readonly("rows",
                             [](const BatchFillHandle& h) {
                               py::array_t<int64_t> out(static_cast<py::ssize_t>(h.rows.size()));
                               std::copy(h.rows.begin(), h.rows.end(), out.mutable_data());
                               return out;
                             })
      .def_property_readonly("bitmask", [](const BatchFillHandle& h) { return h.bitmask; })
      .def("__len__", [](const BatchFillHandle& h) { return h.rows.size(); })
      .def("__repr__", [](const BatchFillHandle& h) {
        return "BatchFillHandle(" + std::to_string(h.rows.size()) + " rows, " +
               (h.op->done() ? "done" : "running") + ")";
      });

  py::class_<PyBatchMatcher>(m, "BatchMatcher",
                             "Fills, accepts and rolls back many matchers on a thread pool.")
      .def(py::init<std::optional<int64_t>>(), py::arg("num_threads") = py::none())
      .def_property_readonly("num_threads", &PyBatchMatcher::num_threads)
      .def_property_readonly("shared", &PyBatchMatcher::shared)
      .def("fill_next_token_bitmask_async", &PyBatchMatcher::FillAsync, py::arg("matchers"),
           py::arg("bitmask"), py::arg("rows") = py::none(), py::arg("tokens") = py::none())
      .def("accept_tokens", &PyBatchMatcher::AcceptTokens, py::arg("matchers"), py::arg("tokens"))
      .def("rollback", &PyBatchMatcher::Rollback, py::arg("matchers"), py::arg("num_tokens"))
      .def("shutdown", &PyBatchMatcher::Shutdown,
           "Finishes pending work and joins this matcher's own pool (no-op for the shared one).");
}

}  // namespace
}  // namespace jaxguide

PYBIND11_MODULE(_native, m) {
  m.doc() = "jaxguide native core (C++17). Use the typed Python front in jaxguide.*.";
  jaxguide::BindErrors(m);
  jaxguide::BindTokenizer(m);
  jaxguide::BindLexer(m);
  jaxguide::BindMatcher(m);
  jaxguide::BindBatch(m);
}
