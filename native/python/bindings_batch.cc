// jaxguide._native, second part: BatchMatcher / BatchFillHandle (native/batch). The module itself
// and every other class are bound in bindings.cc, which calls BindBatch; the rules written at the
// top of bindings.cc hold here too.
//
// Every buffer and index is checked here with the GIL held (bitmask: a numpy uint32 ndarray, 2-D,
// C-contiguous, aligned, writeable, wide enough; rows: distinct, in range); raw row pointers are
// taken then. A handle keeps the bitmask and the matchers alive and its destructor waits for the
// operation (GIL released), so no worker ever writes into freed memory. Matchers may be
// jaxguide.Matcher objects (their `.native` is used) or _native.Matcher; the last batch's
// resolved MatcherSet is cached by object identity, so a decode loop that passes the same
// matchers every step pays no per-matcher conversion.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "native/batch/batch_mask_filler.h"
#include "native/batch/thread_pool.h"
#include "native/matcher/matcher.h"

namespace py = pybind11;

namespace jaxguide {

void BindBatch(py::module_& m);  // called by PYBIND11_MODULE in bindings.cc

namespace {

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

// Occupies every worker of a BatchMatcher's own pool until released, so that an operation
// submitted meanwhile is reliably in flight (queued behind it) however fast its masks are. For
// tests of the busy rules; not part of the public API. Its Python owner releases it when it is
// dropped, so a forgotten hold never wedges the pool.
class WorkerHold : public ParallelTask {
 public:
  explicit WorkerHold(size_t workers) : ParallelTask(workers) {}

  // Waits until every worker runs an item of this task; false after `timeout`.
  bool WaitUntilHeld(std::chrono::nanoseconds timeout) {
    std::unique_lock<std::mutex> lock(hold_mutex_);
    return hold_cv_.wait_for(lock, timeout, [&] { return started_ == num_items(); });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(hold_mutex_);
    released_ = true;
    hold_cv_.notify_all();
  }

 protected:
  void RunItem(size_t) override {
    std::unique_lock<std::mutex> lock(hold_mutex_);
    ++started_;
    hold_cv_.notify_all();
    hold_cv_.wait(lock, [&] { return released_; });
  }

 private:
  std::mutex hold_mutex_;
  std::condition_variable hold_cv_;
  size_t started_ = 0;
  bool released_ = false;
};

struct PyWorkerHold {
  std::shared_ptr<WorkerHold> task;
  ~PyWorkerHold() { task->Release(); }
};

// ------------------------------------------------------------------------ argument validation

// A 1-D integer array-like of length n (copied: these are inputs, never written).
std::vector<int64_t> IntVector(const py::object& obj, const char* name, size_t n) {
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

std::vector<uint32_t> TokenVector(const py::object& obj, size_t n) {
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

// The bitmask of a batch fill: a numpy uint32 ndarray, 2-D, C-contiguous, aligned, writeable.
py::array CheckedBatchBitmask(const py::object& bitmask_obj) {
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
  return bitmask;
}

// The bitmask row of each of n matchers: rows_obj (distinct, in range), or 0..n-1 when None
// (then the bitmask must have exactly n rows).
std::vector<int64_t> CheckedBatchRows(const py::object& rows_obj, size_t n, int64_t num_rows) {
  std::vector<int64_t> rows;
  if (rows_obj.is_none()) {
    if (static_cast<int64_t>(n) != num_rows) {
      throw py::value_error(std::to_string(n) + " matchers but the bitmask has " +
                            std::to_string(num_rows) +
                            " rows; pass rows= to fill a subset of the rows");
    }
    rows.resize(n);
    for (size_t i = 0; i < n; ++i) rows[i] = static_cast<int64_t>(i);
    return rows;
  }
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
  return rows;
}

// ------------------------------------------------------------------------ BatchFillHandle

struct BatchFillHandle {
  std::shared_ptr<BatchOperation> op;
  py::object bitmask;         // kept alive until the operation is done
  py::object natives;         // tuple of the _native.Matcher objects
  std::vector<int64_t> rows;  // bitmask row of each matcher

  BatchFillHandle() = default;
  BatchFillHandle(const BatchFillHandle&) = delete;
  BatchFillHandle& operator=(const BatchFillHandle&) = delete;
  ~BatchFillHandle() {
    // An operation orphaned by fork() never finishes in this process: do not wait for it (its
    // workers' writes cannot happen here either).
    if (op != nullptr && !op->done() && !op->orphaned()) {
      py::gil_scoped_release release;
      op->Wait();
    }
  }

  void Wait(std::optional<double> timeout) const {
    if (op->done()) return;
    if (op->orphaned()) {
      PyErr_SetString(PyExc_RuntimeError,
                      "this batch operation was running when the process forked: it never "
                      "finishes in the child (its matchers stay busy there)");
      throw py::error_already_set();
    }
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

// ------------------------------------------------------------------------ PyBatchMatcher

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
    // The cache is updated with no Python code in between (releasing the old objects could run
    // some and let another thread in with a half-updated cache): the old values go last.
    py::object old_items = std::move(last_items_), old_natives = std::move(last_natives_);
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
    py::array bitmask = CheckedBatchBitmask(bitmask_obj);
    const size_t words = static_cast<size_t>(bitmask.shape(1));
    std::vector<int64_t> rows = CheckedBatchRows(rows_obj, n, bitmask.shape(0));
    std::optional<std::vector<uint32_t>> tokens;
    if (!tokens_obj.is_none()) tokens = TokenVector(tokens_obj, n);
    uint32_t* data = static_cast<uint32_t*>(bitmask.mutable_data());
    std::vector<uint32_t*> pointers(n);
    for (size_t i = 0; i < n; ++i) pointers[i] = data + static_cast<size_t>(rows[i]) * words;
    auto handle = std::make_unique<BatchFillHandle>();
    BatchMaskFiller filler = Filler();
    {
      // Quick (a registry check and a wake-up), unless the pool is shut down: then the fill
      // runs right here.
      py::gil_scoped_release release;
      handle->op = filler.FillNextTokenBitmaskAsync(batch.set, std::move(pointers), words,
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
    BatchMaskFiller filler = Filler();
    {
      py::gil_scoped_release release;
      op = filler.AcceptTokens(batch.set, std::move(tokens));
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
    BatchMaskFiller filler = Filler();
    py::gil_scoped_release release;
    filler.Rollback(batch.set, std::move(steps));
  }

  std::unique_ptr<PyWorkerHold> HoldWorkers() {
    if (shared_) {
      throw py::value_error("only a BatchMatcher's own pool can be held, not the shared one");
    }
    BatchMaskFiller filler = Filler();
    ThreadPool& pool = filler.pool();
    if (pool.is_shut_down() || pool.forked()) {
      throw py::value_error("the pool has no workers to hold (shut down, or in a fork() child)");
    }
    auto hold = std::make_unique<PyWorkerHold>();
    hold->task = std::make_shared<WorkerHold>(pool.num_threads());
    bool held;
    {
      py::gil_scoped_release release;
      pool.Submit(hold->task);
      held = hold->task->WaitUntilHeld(std::chrono::seconds(60));
    }
    if (!held) throw py::value_error("the pool's workers did not all reach the hold in 60 s");
    return hold;
  }

  void Shutdown() {
    if (shared_) return;  // the shared pool lives until interpreter exit
    py::gil_scoped_release release;
    filler_.pool().Shutdown();
  }

 private:
  // The filler for one operation, copied with the GIL held (so that threads sharing this
  // BatchMatcher never race on filler_). In a fork() child, a BatchMatcher on the shared pool
  // moves to the child's own shared pool (the parent's has no workers here).
  BatchMaskFiller Filler() {
    if (shared_ && filler_.pool().forked()) filler_ = BatchMaskFiller(SharedPool());
    return filler_;
  }

  static std::shared_ptr<ThreadPool> MakePool(std::optional<int64_t> num_threads) {
    if (!num_threads) return SharedPool();
    if (*num_threads < 1 || *num_threads > 4096) {
      throw py::value_error("num_threads must be in 1..4096 (or None for the shared pool), got " +
                            std::to_string(*num_threads));
    }
    return NewPool(static_cast<size_t>(*num_threads));
  }

  BatchMaskFiller filler_;
  bool shared_;
  py::tuple last_items_;
  py::object last_natives_;
  std::shared_ptr<const MatcherSet> last_set_;
};

// ------------------------------------------------------------------------ bindings

void BindBatchFunctions(py::module_& m) {
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
}

py::object HandleAccepted(const BatchFillHandle& h) {
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
}

void BindBatchFillHandle(py::module_& m) {
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
      .def_property_readonly("accepted", &HandleAccepted)
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
}

void BindBatchMatcher(py::module_& m) {
  py::class_<PyWorkerHold>(m, "_WorkerHold",
                           "Every worker of a pool parked until release() (tests only).")
      .def("release", [](PyWorkerHold& h) { h.task->Release(); })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyWorkerHold& h, py::args) { h.task->Release(); });
  py::class_<PyBatchMatcher>(m, "BatchMatcher",
                             "Fills, accepts and rolls back many matchers on a thread pool.")
      .def(py::init<std::optional<int64_t>>(), py::arg("num_threads") = py::none())
      .def_property_readonly("num_threads", &PyBatchMatcher::num_threads)
      .def_property_readonly("shared", &PyBatchMatcher::shared)
      .def("fill_next_token_bitmask_async", &PyBatchMatcher::FillAsync, py::arg("matchers"),
           py::arg("bitmask"), py::arg("rows") = py::none(), py::arg("tokens") = py::none())
      .def("accept_tokens", &PyBatchMatcher::AcceptTokens, py::arg("matchers"), py::arg("tokens"))
      .def("rollback", &PyBatchMatcher::Rollback, py::arg("matchers"), py::arg("num_tokens"))
      .def("_hold_workers", &PyBatchMatcher::HoldWorkers,
           "Parks every worker of this BatchMatcher's own pool until the returned hold is "
           "released (or dropped): operations submitted meanwhile stay in flight. Tests only.")
      .def("shutdown", &PyBatchMatcher::Shutdown,
           "Finishes pending work and joins this matcher's own pool (no-op for the shared one).");
}

}  // namespace

void BindBatch(py::module_& m) {
  BindBatchFunctions(m);
  BindBatchFillHandle(m);
  BindBatchMatcher(m);
}

}  // namespace jaxguide
