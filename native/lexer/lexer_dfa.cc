// LexerDfa: lazy subset construction over the terminals' NFA, with a shared, lock-free-read
// transition cache.
//
// Design note.
//   What. A DFA state is the canonical (sorted) set of NFA threads (instruction, Utf8Class
//   node) alive after the bytes read; kMatch threads say which terminals matched. States are
//   built only when first reached (on-demand subset construction, as in RE2's DFA), so a
//   pattern like `[a-z]{0,1000}` or `.{5,200}`, whose full DFA would be large, only ever builds
//   the states its inputs visit, and exponential cases ((a|b)*a(a|b){20}) hit the state budget
//   instead of running away. A start state is flagged apart from the state with the same
//   threads that bytes reach (`a*c` before and after "a"): the grammar engine reads "lexer
//   state == start state" as "the lexeme is empty", and must not end a pending lexeme there.
//   Why threads carry a Utf8Class node. Consuming instructions read a code point through a
//   shared per-class byte automaton, so the NFA stays linear in the pattern even for Unicode
//   classes. All threads of a state have read the same bytes, hence they are all at the same
//   position inside a multi-byte character: a state has at most one thread per instruction,
//   which bounds a state's content by the NFA size (itself under max_nfa_instructions).
//   Byte classes. Bytes that every class automaton treats alike form one class; a transition
//   row has one entry per class (often 20-80 instead of 256), which keeps rows in cache.
//   Thread safety. Rows and state data live in fixed-size chunks that never move; a directory
//   of chunk pointers is preallocated for max_states. Readers do an acquire load of the
//   transition; kUnknown sends them to ComputeNext, which takes the mutex, re-checks, builds or
//   finds the target state, writes its data and chunk before publishing the id with a release
//   store. Readers therefore never see a half-built state, and never lock once warm.
//   Budgets. Creating a state past max_states or max_memory_bytes returns kErrorState (cached
//   in the transition), never throws on the hot path and never loops. A single state can cost
//   up to the NFA's size to build (`(?:(?:.|a*|b{84,}){62,}){170}` has ~900k instructions and
//   states that hold most of them), so the caller's per-operation budget (a Matcher call's
//   step budget, a compile-time search's) also covers construction: a thread-local
//   BuildMeter, read only on this slow path, is charged per instruction visited and stops a
//   build past its limit without caching anything (the next caller, with its own budget,
//   builds the state afresh).
//   Complexity. Warm Next: O(1) (two dependent loads). Building a transition: O(|state| log
//   |state|) plus the closure, linear in the instructions visited.
#include "native/lexer/lexer_dfa.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "native/lexer/regex_error.h"

namespace jaxguide {
namespace {

std::vector<RegexNode> ParseAll(const std::vector<std::string>& patterns,
                                const RegexOptions& options) {
  std::vector<RegexNode> terminals;
  terminals.reserve(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) {
    try {
      terminals.push_back(ParseRegex(patterns[i], options));
    } catch (const RegexError& e) {
      throw e.WithPatternIndex(i);
    }
  }
  return terminals;
}

// Mixed into the content hash of start states (which never equal a state reached by bytes).
constexpr uint64_t kStartSalt = 0xC2B2AE3D27D4EB4Full;

uint64_t HashThreads(const std::vector<uint64_t>& threads) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ threads.size();
  for (uint64_t t : threads) {
    h ^= t + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  }
  return h;
}

size_t StateDataBytes(size_t threads, size_t matched, size_t possible) {
  // Vectors' heap blocks, the StateData itself, its owner pointer and a hash map node.
  return threads * 8 + (matched + possible) * 4 + 3 * 24 + 8 + 48;
}

}  // namespace

thread_local BuildMeter* LexerDfa::current_meter_ = nullptr;

uint64_t LexerDfa::BuildAllowance() {
  const BuildMeter* meter = current_meter_;
  if (meter == nullptr) return UINT64_MAX;
  if (meter->exceeded || *meter->used >= meter->limit) return 0;
  return (meter->limit - *meter->used) / kBuildWorkWeight;
}

void LexerDfa::ChargeBuild(uint64_t units, bool stopped) {
  BuildMeter* meter = current_meter_;
  if (meter == nullptr) return;
  const uint64_t cost =
      units > UINT64_MAX / kBuildWorkWeight ? UINT64_MAX : units * kBuildWorkWeight;
  *meter->used = cost > UINT64_MAX - *meter->used ? UINT64_MAX : *meter->used + cost;
  if (stopped) meter->exceeded = true;
}

LexerDfa::LexerDfa(const std::vector<std::string>& patterns, const LexerOptions& options)
    : options_(options),
      nfa_(ParseAll(patterns, options.regex), options.max_nfa_instructions) {
  Initialize();
}

LexerDfa::LexerDfa(const std::vector<RegexNode>& terminals, const LexerOptions& options,
                   const Nfa::Programs& programs)
    : options_(options), nfa_(terminals, options.max_nfa_instructions, programs) {
  Initialize();
}

LexerDfa::~LexerDfa() {
  for (size_t c = 0; c < num_chunks_; ++c) {
    delete[] rows_[c].load(std::memory_order_relaxed);
    delete[] data_[c].load(std::memory_order_relaxed);
  }
}

void LexerDfa::Initialize() {
  options_.max_states = std::clamp<size_t>(options_.max_states, 2, LexerOptions::kMaxStatesLimit);
  // Byte classes: the union of every class automaton's boundaries.
  Utf8Class::ByteBits boundary{};
  for (const auto& c : nfa_.classes()) c->MarkByteBoundaries(&boundary);
  const auto mark = [&boundary](uint32_t b) { boundary[b >> 6] |= uint64_t{1} << (b & 63); };
  for (const std::string& bytes : options_.early_end_bytes) {
    for (const char c : bytes) {
      const auto b = static_cast<uint8_t>(c);
      mark(b);
      if (b < 255) mark(b + 1);
    }
  }
  uint8_t current = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    if (b > 0 && ((boundary[b >> 6] >> (b & 63)) & 1) != 0) ++current;
    byte_class_[b] = current;
  }
  stride_ = static_cast<size_t>(current) + 1;

  num_chunks_ = (options_.max_states + kChunkStates - 1) / kChunkStates;
  rows_.reset(new std::atomic<std::atomic<uint32_t>*>[num_chunks_]);
  data_.reset(new std::atomic<const StateData**>[num_chunks_]);
  for (size_t c = 0; c < num_chunks_; ++c) {
    rows_[c].store(nullptr, std::memory_order_relaxed);
    data_[c].store(nullptr, std::memory_order_relaxed);
  }
  visit_mark_.assign(nfa_.insts().size() * 2, 0);

  // The two sinks: their rows loop to themselves and are never computed.
  std::lock_guard<std::mutex> lock(mutex_);
  build_allowance_ = UINT64_MAX;  // the constructor's own builds are not metered
  for (StateId sink : {kDeadState, kErrorState}) {
    owned_.push_back(std::make_unique<StateData>());
    Install(sink, owned_.back().get());
    std::atomic<uint32_t>* row = rows_[0].load(std::memory_order_relaxed) + sink * stride_;
    for (size_t k = 0; k < stride_; ++k) row[k].store(sink, std::memory_order_relaxed);
    num_states_.store(sink + 1, std::memory_order_release);
  }

  std::vector<uint32_t> all(num_terminals());
  for (uint32_t t = 0; t < all.size(); ++t) all[t] = t;
  ++generation_;
  scratch_threads_.clear();
  for (uint32_t t : all) AddClosure(nfa_.start(t), /*at_begin=*/true);
  start_all_ = Intern(/*start=*/true);
  start_cache_.emplace(std::move(all), start_all_);
}

void LexerDfa::Install(StateId id, const StateData* data) const {
  const size_t chunk = id >> kChunkShift;
  std::atomic<uint32_t>* rows = rows_[chunk].load(std::memory_order_relaxed);
  const StateData** datas = data_[chunk].load(std::memory_order_relaxed);
  if (rows == nullptr) {
    rows = new std::atomic<uint32_t>[kChunkStates * stride_];
    // Every entry kUnknown (all bits set) by one memset before the chunk is published (a
    // store loop over the atomics is not vectorized: it was 10% of a small grammar's compile).
    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && kUnknown == 0xFFFFFFFFu,
                  "kUnknown rows are filled bytewise");
    static_assert(std::atomic<uint32_t>::is_always_lock_free, "rows are plain words");
    std::memset(static_cast<void*>(rows), 0xFF, kChunkStates * stride_ * sizeof(uint32_t));
    datas = new const StateData*[kChunkStates]();
    memory_bytes_.fetch_add(kChunkStates * (stride_ * sizeof(uint32_t) + sizeof(void*)),
                            std::memory_order_relaxed);
    rows_[chunk].store(rows, std::memory_order_release);
    data_[chunk].store(datas, std::memory_order_release);
  }
  datas[id & (kChunkStates - 1)] = data;
}

LexerDfa::StateId LexerDfa::StartState(const std::vector<uint32_t>& allowed) const {
  std::vector<uint32_t> key = allowed;
  std::sort(key.begin(), key.end());
  key.erase(std::unique(key.begin(), key.end()), key.end());
  if (!key.empty() && key.back() >= num_terminals()) {
    throw std::out_of_range("terminal id " + std::to_string(key.back()) + " out of range (" +
                            std::to_string(num_terminals()) + " terminals)");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = start_cache_.find(key);
  if (it != start_cache_.end()) return it->second;
  build_work_ = 0;
  build_allowance_ = BuildAllowance();
  ++generation_;
  scratch_threads_.clear();
  bool complete = true;
  for (size_t i = 0; i < key.size() && complete; ++i) {
    complete = AddClosure(nfa_.start(key[i]), /*at_begin=*/true);
  }
  build_work_ += scratch_threads_.size();
  if (!complete || build_work_ > build_allowance_) {
    ChargeBuild(build_work_, /*stopped=*/true);
    return kErrorState;
  }
  const StateId state = Intern(/*start=*/true);
  ChargeBuild(build_work_, /*stopped=*/false);
  // The error state is not cached: it reflects the budget, not the set.
  if (state != kErrorState) start_cache_.emplace(std::move(key), state);
  return state;
}

LexerDfa::StateId LexerDfa::Feed(StateId state, std::string_view bytes) const {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t i = 0; i < bytes.size() && state > kErrorState; ++i) state = Next(state, data[i]);
  return state;
}

uint32_t LexerDfa::ComputeNext(StateId state, uint8_t byte) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::atomic<uint32_t>& slot = MutableRowOf(state)[byte_class_[byte]];
  const uint32_t cached = slot.load(std::memory_order_relaxed);
  if (cached != kUnknown) return cached;  // another thread built it meanwhile

  const StateData& data = *DataOf(state);
  build_work_ = 0;
  build_allowance_ = BuildAllowance();
  ++generation_;
  scratch_threads_.clear();
  bool complete = true;
  for (size_t i = 0; i < data.threads.size() && complete; ++i) {
    const uint64_t thread = data.threads[i];
    if (++build_work_ > build_allowance_) {
      complete = false;
      break;
    }
    const auto inst_id = static_cast<uint32_t>(thread >> 32);
    const NfaInst& inst = nfa_.inst(inst_id);
    if (inst.op != NfaInst::Op::kClass) continue;  // kMatch threads do not consume
    // A lazy terminal's lexeme ends at its first match: once matched, it reads no more bytes.
    // An empty match (in a start state) is no lexeme: there the terminal reads on, so
    // `(.|\n)*?` ends after its first byte as `(.|\n)+?` does (it used to read nothing at all).
    const uint32_t terminal = nfa_.terminal_of(inst_id);
    if (!data.start && terminal < options_.lazy_terminals.size() &&
        options_.lazy_terminals[terminal] &&
        std::binary_search(data.matched.begin(), data.matched.end(), terminal)) {
      continue;
    }
    const int32_t step = nfa_.cls(inst.arg).Step(static_cast<uint32_t>(thread), byte);
    if (step == Utf8Class::kReject) continue;
    if (step == Utf8Class::kAccept) {
      complete = AddClosure(inst.out, /*at_begin=*/false) && complete;
    } else {
      scratch_threads_.push_back((uint64_t{inst_id} << 32) | static_cast<uint32_t>(step));
    }
  }
  build_work_ += scratch_threads_.size();  // sorting and interning them
  if (!complete || build_work_ > build_allowance_) {
    ChargeBuild(build_work_, /*stopped=*/true);  // nothing cached: the slot stays unknown
    return kErrorState;
  }
  const StateId next = Intern();
  ChargeBuild(build_work_, /*stopped=*/false);
  // The boundary bit: a terminal matched before the byte that is lazy or cannot read it.
  const std::vector<uint32_t>& possible = DataOf(next)->possible;
  bool boundary = false;
  for (const uint32_t terminal : data.matched) {
    const bool lazy = !data.start && terminal < options_.lazy_terminals.size() &&
                      options_.lazy_terminals[terminal];
    const bool early = terminal < options_.early_end_bytes.size() &&
                       options_.early_end_bytes[terminal].find(static_cast<char>(byte)) !=
                           std::string::npos;
    if (lazy || early || !std::binary_search(possible.begin(), possible.end(), terminal)) {
      boundary = true;
    }
  }
  const uint32_t packed = next | (boundary ? kBoundaryBit : 0u);
  slot.store(packed, std::memory_order_release);
  return packed;
}

bool LexerDfa::AddClosure(uint32_t start, bool at_begin) const {
  closure_stack_.clear();
  closure_stack_.emplace_back(start, false);
  while (!closure_stack_.empty()) {
    if (++build_work_ > build_allowance_) return false;
    const auto [id, end_only] = closure_stack_.back();
    closure_stack_.pop_back();
    uint32_t& mark = visit_mark_[id * 2 + (end_only ? 1 : 0)];
    if (mark == generation_) continue;
    mark = generation_;
    const NfaInst& inst = nfa_.inst(id);
    switch (inst.op) {
      case NfaInst::Op::kClass:
        if (!end_only && nfa_.live(id)) scratch_threads_.push_back(uint64_t{id} << 32);
        break;
      case NfaInst::Op::kMatch:
        scratch_threads_.push_back(uint64_t{id} << 32);
        break;
      case NfaInst::Op::kNop:
        closure_stack_.emplace_back(inst.out, end_only);
        break;
      case NfaInst::Op::kSplit:
        closure_stack_.emplace_back(inst.arg, end_only);
        closure_stack_.emplace_back(inst.out, end_only);
        break;
      case NfaInst::Op::kAssertBegin:
        if (at_begin) closure_stack_.emplace_back(inst.out, end_only);
        break;
      case NfaInst::Op::kAssertEnd:
        closure_stack_.emplace_back(inst.out, true);
        break;
    }
  }
  return true;
}

LexerDfa::StateId LexerDfa::Intern(bool start) const {
  std::vector<uint64_t>& threads = scratch_threads_;
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  if (threads.empty()) return kDeadState;
  const uint64_t hash = HashThreads(threads) ^ (start ? kStartSalt : 0);
  auto range = by_content_.equal_range(hash);
  for (auto it = range.first; it != range.second; ++it) {
    const StateData* found = DataOf(it->second);
    if (found->start == start && found->threads == threads) return it->second;
  }

  auto data = std::make_unique<StateData>();
  data->threads = threads;
  data->start = start;
  for (uint64_t thread : threads) {
    const auto inst_id = static_cast<uint32_t>(thread >> 32);
    const uint32_t terminal = nfa_.terminal_of(inst_id);
    if (nfa_.inst(inst_id).op == NfaInst::Op::kMatch) data->matched.push_back(terminal);
    data->possible.push_back(terminal);
  }
  for (auto* list : {&data->matched, &data->possible}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
    list->shrink_to_fit();
  }

  const size_t id = num_states_.load(std::memory_order_relaxed);
  const bool new_chunk = (id & (kChunkStates - 1)) == 0;
  const size_t cost =
      StateDataBytes(threads.size(), data->matched.size(), data->possible.size()) +
      (new_chunk ? kChunkStates * (stride_ * sizeof(uint32_t) + sizeof(void*)) : 0);
  if (id >= options_.max_states ||
      memory_bytes_.load(std::memory_order_relaxed) + cost > options_.max_memory_bytes) {
    budget_exceeded_.store(true, std::memory_order_relaxed);
    return kErrorState;
  }
  const auto state = static_cast<StateId>(id);
  Install(state, data.get());
  memory_bytes_.fetch_add(
      StateDataBytes(threads.size(), data->matched.size(), data->possible.size()),
      std::memory_order_relaxed);
  by_content_.emplace(hash, state);
  owned_.push_back(std::move(data));
  num_states_.store(id + 1, std::memory_order_release);
  return state;
}

}  // namespace jaxguide
