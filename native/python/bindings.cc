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

#include <string>
#include <vector>

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
      [](py::object tokenizer_error, py::object budget_error) {
        PyTokenizerError() = std::move(tokenizer_error);
        PyBudgetError() = std::move(budget_error);
      },
      "Installs the Python classes that native TokenizerError / BudgetExceededError map to.");
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
      .def_property_readonly("special_token_ids",
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
          py::arg("prefix"), "Sorted ids (uint32 array) of all tokens whose bytes start with prefix.")
      .def(
          "tokens_prefixing",
          [](const TokenizerInfo& info, const py::bytes& text) {
            const std::string_view view = text;
            return ToArray(info.trie().TokensPrefixing(view));
          },
          py::arg("text"), "Sorted ids (uint32 array) of all tokens whose bytes are a prefix of text.")
      .def_property_readonly("trie_num_nodes",
                             [](const TokenizerInfo& info) { return info.trie().num_nodes(); })
      .def_property_readonly("max_token_bytes",
                             [](const TokenizerInfo& info) { return info.trie().max_depth(); })
      .def_property_readonly("memory_bytes", &TokenizerInfo::MemoryBytes);
}

}  // namespace
}  // namespace jaxguide

PYBIND11_MODULE(_native, m) {
  m.doc() = "jaxguide native core (C++17). Use the typed Python front in jaxguide.*.";
  jaxguide::BindErrors(m);
  jaxguide::BindTokenizer(m);
}
