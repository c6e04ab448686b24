// CompiledGrammar construction: the Grammar (rules) and one LexerDfa over all terminals.
#include "native/matcher/compiled_grammar.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "native/lexer/regex_error.h"
#include "native/lexer/pinned_terminals.h"
#include "native/lexer/regex_parser.h"
#include "native/support/error.h"

namespace jaxguide {
namespace {

// An explicit terminal automaton as TerminalSpec::automaton promises it: at least one state,
// targets in range, non-empty and pairwise disjoint sets per state. O(transitions log).
void CheckAutomaton(const TerminalSpec& terminal) {
  const CodePointAutomaton& automaton = *terminal.automaton;
  const auto fail = [&](const std::string& what) {
    throw GrammarError("terminal " + terminal.name + ": its automaton " + what);
  };
  if (automaton.states.empty()) fail("has no state");
  for (size_t s = 0; s < automaton.states.size(); ++s) {
    std::vector<CodePointRange> ranges;
    for (const CodePointAutomaton::Transition& t : automaton.states[s].transitions) {
      if (t.target >= automaton.states.size()) {
        fail("goes from state " + std::to_string(s) + " to state " + std::to_string(t.target) +
             ", which it does not have");
      }
      if (t.set.Empty()) fail("has an empty transition in state " + std::to_string(s));
      ranges.insert(ranges.end(), t.set.ranges().begin(), t.set.ranges().end());
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
    for (size_t i = 1; i < ranges.size(); ++i) {
      if (ranges[i].lo <= ranges[i - 1].hi) {
        fail("has overlapping transitions in state " + std::to_string(s));
      }
    }
  }
}

}  // namespace

CompiledGrammar::CompiledGrammar(const CompiledGrammarSpec& spec,
                                 std::shared_ptr<const TokenizerInfo> tokenizer)
    : tokenizer_(std::move(tokenizer)) {
  GrammarSpec rules;
  for (const TerminalSpec& terminal : spec.terminals) {
    rules.terminal_names.push_back(terminal.name);
    lazy_.push_back(terminal.lazy);
    std::array<uint64_t, 4> forbidden{};
    for (const char c : terminal.forbidden_next) {
      const auto byte = static_cast<uint8_t>(c);
      forbidden[byte >> 6] |= uint64_t{1} << (byte & 63);
      has_follow_restrictions_ = true;
    }
    forbidden_next_.push_back(forbidden);
    std::array<uint64_t, 4> early{};
    for (const char c : terminal.may_end_before) {
      const auto byte = static_cast<uint8_t>(c);
      early[byte >> 6] |= uint64_t{1} << (byte & 63);
      has_follow_restrictions_ = true;
    }
    may_end_before_.push_back(early);
  }

  ignore_ = TerminalSet(spec.terminals.size());
  for (int32_t t : spec.ignore) {
    if (t < 0 || static_cast<size_t>(t) >= spec.terminals.size()) {
      throw GrammarError("%ignore terminal id " + std::to_string(t) + " is out of range");
    }
    ignore_.Insert(static_cast<size_t>(t));
  }
  for (const auto& [terminal, token] : spec.special_tokens) {
    if (terminal < 0 || static_cast<size_t>(terminal) >= spec.terminals.size()) {
      throw GrammarError("special-token terminal id " + std::to_string(terminal) +
                         " is out of range");
    }
    if (token >= tokenizer_->vocab_size() || !tokenizer_->token_bytes(token).empty()) {
      throw GrammarError("terminal " + spec.terminals[terminal].name + ": token id " +
                         std::to_string(token) + " is not a special token of the tokenizer");
    }
    special_tokens_.emplace_back(token, static_cast<uint32_t>(terminal));
  }
  if (!spec.unique_array_opens.empty() || !spec.keyed_object_opens.empty()) {
    opens_.assign(spec.terminals.size(), UniqueItems::Scanned{});
    auto check_id = [&](int32_t t) {
      if (t < 0 || static_cast<size_t>(t) >= spec.terminals.size()) {
        throw GrammarError("checked-container terminal id " + std::to_string(t) +
                           " is out of range");
      }
    };
    for (const int32_t t : spec.unique_array_opens) {
      check_id(t);
      opens_[t].unique_array = true;
      has_unique_arrays_ = true;
    }
    for (const int32_t t : spec.keyed_object_opens) {
      check_id(t);
      opens_[t].keyed_object = true;
      has_keyed_objects_ = true;
    }
    for (uint32_t id = 0; id < tokenizer_->vocab_size(); ++id) {
      const std::string_view bytes = tokenizer_->token_bytes(id);
      if (bytes.find_first_of("\"\\") != std::string_view::npos) {
        tokens_with_quote_or_backslash_.push_back(id);
      }
      if (bytes.find_first_of("[{") != std::string_view::npos) {
        tokens_opening_containers_.push_back(id);
      }
    }
  }
  std::sort(special_tokens_.begin(), special_tokens_.end());
  special_tokens_.erase(std::unique(special_tokens_.begin(), special_tokens_.end()),
                        special_tokens_.end());
  std::vector<RegexNode> parsed;
  parsed.reserve(spec.terminals.size());
  Nfa::Programs pinned(spec.terminals.size());  // pinned_terminals.h: copied, not compiled
  for (size_t i = 0; i < spec.terminals.size(); ++i) {
    try {
      if (spec.terminals[i].automaton) {
        CheckAutomaton(spec.terminals[i]);
        parsed.push_back(RegexNode::Automaton(spec.terminals[i].automaton));
        continue;
      }
      const std::string& regex = spec.terminals[i].regex;
      pinned[i] = FindPinnedTerminal(regex);
      if (pinned[i] != nullptr) {
        parsed.push_back(RegexNode::Empty());
      } else if (std::optional<RegexNode> shaped = ShapedTerminal(regex)) {
        parsed.push_back(std::move(*shaped));  // a key: its name read, its colon pinned
      } else {
        parsed.push_back(ParseRegex(regex));
      }
    } catch (const RegexError& e) {
      throw GrammarError("terminal " + spec.terminals[i].name + " /" + spec.terminals[i].regex +
                         "/: " + e.message() + " at position " + std::to_string(e.offset()));
    }
  }
  LexerOptions options;
  options.lazy_terminals = lazy_;
  for (const TerminalSpec& terminal : spec.terminals) {
    options.early_end_bytes.push_back(terminal.may_end_before);
  }
  lexer_ = std::make_unique<LexerDfa>(parsed, options, pinned);

  // The rules, with terminals whose regex matches nothing unproductive (a grammar whose start
  // then derives nothing is refused). Special-token terminals are matched by token id, not by
  // their (deliberately empty) regex: they stay productive.
  rules.nonterminal_names = spec.nonterminal_names;
  rules.rules = spec.rules;
  rules.start = spec.start;
  rules.empty_terminals = lexer_->nfa().TerminalsMatchingNothing();
  for (const auto& [terminal, token] : spec.special_tokens) {
    rules.empty_terminals[static_cast<size_t>(terminal)] = false;
  }
  grammar_ = std::make_shared<const Grammar>(rules);

  special_terminals_ = TerminalSet(spec.terminals.size());
  for (const auto& [token, terminal] : special_tokens_) special_terminals_.Insert(terminal);
  // The DFA states these searches build count against one budget (a metered build that runs
  // out returns the error state, caches nothing, and the search then keeps the terminal).
  uint64_t exit_search_work = 0;
  BuildMeter meter{&exit_search_work, kExitSearchBuildBudget};
  const LexerDfa::ScopedBuildMeter metered(&meter);
  ignore_.ForEach([&](size_t t) {
    const auto terminal = static_cast<uint32_t>(t);
    IgnoredTerminal ignored{terminal, ExitBytesOf(terminal), {}};
    const LexerDfa::StateId start = lexer_->StartState({terminal});
    for (int b = 0; b < 256; ++b) {  // the error state (budget) counts as a first byte: safe
      if (!lexer_->IsDead(lexer_->Next(start, static_cast<uint8_t>(b)))) {
        ignored.firsts[b >> 6] |= uint64_t{1} << (b & 63);
      }
    }
    ignored_.push_back(ignored);
  });
}

namespace {

uint64_t MixKey(uint64_t key) {
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDull;
  key ^= key >> 33;
  key *= 0xC4CEB9FE1A85EC53ull;
  return key ^ (key >> 33);
}

}  // namespace

LexemeMaskCache::LexemeMaskCache() {
  for (auto& segment : segments_) segment.store(nullptr, std::memory_order_relaxed);
}

LexemeMaskCache::~LexemeMaskCache() {
  for (auto& segment : segments_) delete segment.load(std::memory_order_relaxed);
}

std::atomic<LexemeMaskCache::Entry*>* LexemeMaskCache::SlotIfPresent(size_t slot) const {
  Segment* segment = segments_[slot / kSegmentSlots].load(std::memory_order_acquire);
  return segment == nullptr ? nullptr : &(*segment)[slot % kSegmentSlots];
}

std::atomic<LexemeMaskCache::Entry*>& LexemeMaskCache::SlotForInsert(size_t slot) {
  std::atomic<Segment*>& place = segments_[slot / kSegmentSlots];
  Segment* segment = place.load(std::memory_order_acquire);
  if (segment == nullptr) {
    auto fresh = std::make_unique<Segment>();
    for (auto& entry : *fresh) entry.store(nullptr, std::memory_order_relaxed);
    if (place.compare_exchange_strong(segment, fresh.get(), std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      segment = fresh.release();
    }  // else another thread installed one first: `segment` now points to it
  }
  return (*segment)[slot % kSegmentSlots];
}

const LexemeMask* LexemeMaskCache::Find(uint64_t key) const {
  for (size_t i = MixKey(key) & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
    const std::atomic<Entry*>* slot = SlotIfPresent(i);
    if (slot == nullptr) return nullptr;  // a missing segment: an empty slot
    const Entry* entry = slot->load(std::memory_order_acquire);
    if (entry == nullptr) return nullptr;
    if (entry->key == key) return entry->mask.get();
  }
}

bool LexemeMaskCache::HasRoom() const {
  return entries_.load(std::memory_order_relaxed) < kMaxEntries &&
         bytes_.load(std::memory_order_relaxed) < kMaxBytes;
}

const LexemeMask* LexemeMaskCache::Insert(uint64_t key, std::unique_ptr<LexemeMask> mask) {
  const size_t bytes = mask->MemoryBytes();
  auto entry = std::make_unique<Entry>(Entry{key, std::move(mask)});
  // Callers check HasRoom first, so at most kMaxEntries + (number of racing threads) entries
  // are ever stored: the probe always meets an empty slot.
  for (size_t i = MixKey(key) & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
    Entry* expected = nullptr;
    if (SlotForInsert(i).compare_exchange_strong(expected, entry.get(), std::memory_order_acq_rel,
                                                 std::memory_order_acquire)) {
      entries_.fetch_add(1, std::memory_order_relaxed);
      bytes_.fetch_add(bytes, std::memory_order_relaxed);
      const LexemeMask* stored = entry->mask.get();
      std::lock_guard<std::mutex> lock(stored_mutex_);
      stored_.push_back(std::move(entry));
      return stored;
    }
    if (expected->key == key) return expected->mask.get();
  }
}

void CompiledGrammar::WalkLexerOnly(uint32_t node, LexerDfa::StateId state,
                                    LexemeMask* mask) const {
  // The hot loop of a cold mask (a comment's state walks the whole trie): pointers in locals,
  // no branch on whether a node has a token (a node without one sets a bit of a sink word past
  // the row), and a state that loops on a byte keeps its parent's row.
  const TokenTrie& walked = TrieOf(mask->trie);
  const TokenTrie::Node* const nodes = walked.nodes().data();
  const LexerDfa& lexer = *lexer_;
  const size_t width = tokenizer_->bitmask_width();
  const uint32_t sink_token = static_cast<uint32_t>(width * 32);
  // Allowed tokens go to a zeroed bitmask (and the sink word); the words touched are listed.
  std::vector<uint32_t> scratch(width + 1, 0);
  // (Every word and the sink listed, the next set_bit still writes one entry past them.)
  std::vector<uint32_t> touched(width + 2);
  uint32_t* const words = scratch.data();
  uint32_t* const touched_words = touched.data();
  size_t num_touched = 0;
  auto set_bit = [&](uint32_t id) {
    uint32_t& word = words[id >> 5];
    touched_words[num_touched] = id >> 5;
    num_touched += word == 0;
    word |= uint32_t{1} << (id & 31);
  };
  // Per depth: the lexer state after the path to the last node visited there, and its row.
  struct DepthState {
    LexerDfa::StateId state;
    LexerDfa::Row row;
  };
  std::vector<DepthState> depth_states(walked.max_depth() + 1);
  DepthState* const at_depth = depth_states.data();
  at_depth[nodes[node].depth] = DepthState{state, lexer.RowOf(state)};
  const size_t end = node + nodes[node].subtree_size();
  for (size_t i = node + 1; i < end;) {
    const TokenTrie::Node& child = nodes[i];
    const DepthState parent = at_depth[child.depth - 1];
    const uint32_t step = lexer.NextWithBoundary(parent.state, parent.row, child.byte());
    if (step & LexerDfa::kBoundaryBit) {
      // The parser decides, unless no thread lives past the byte whatever it decides (such
      // nodes, a letter after an operator, are most of a boundary's children).
      if (!DeadAtBoundary(step, child.byte())) {
        mask->frontier.emplace_back(static_cast<uint32_t>(i), parent.state);
      }
      i += child.subtree_size();
      continue;
    }
    if (step <= LexerDfa::kErrorState) {
      if (lexer.IsError(step)) throw BudgetExceededError("lexer DFA budget exceeded");
      i += child.subtree_size();  // dead
      continue;
    }
    // (A leaf's entry is never read: the next node is no deeper.)
    at_depth[child.depth] = DepthState{step, step == parent.state ? parent.row : lexer.RowOf(step)};
    set_bit(child.has_token() ? child.token : sink_token);
    if (child.has_duplicates()) {
      for (uint32_t id : walked.DuplicateTokens(child)) set_bit(id);
    }
    ++i;
  }
  // The nonzero words in order: sorted from the list when few, else read off the row.
  mask->words.clear();
  if (num_touched * 16 < width) {
    std::sort(touched_words, touched_words + num_touched);
    for (size_t k = 0; k < num_touched; ++k) {
      const uint32_t w = touched_words[k];
      if (w < width) mask->words.emplace_back(w, words[w]);  // (not the sink word)
    }
  } else {
    for (size_t w = 0; w < width; ++w) {
      if (words[w] != 0) mask->words.emplace_back(static_cast<uint32_t>(w), words[w]);
    }
  }
}

const LexemeMask* CompiledGrammar::LexemeMaskOf(uint32_t node, LexerDfa::StateId state,
                                                 uint8_t trie) const {
  // Node ids are below 2^24 (TokenTrie::kMaxNodes): the trie goes in the top bits.
  const uint64_t key = (uint64_t{node | (uint32_t{trie} << 28)} << 32) | uint64_t{state};
  if (const LexemeMask* found = lexeme_masks_.Find(key)) return found;
  if (!lexeme_masks_.HasRoom()) return nullptr;
  // Walk the subtree with the lexer alone (a concurrent duplicate walk is harmless: the first
  // mask stored wins). At the root of a state that reads any string text without a boundary,
  // the string slice is taken whole and only the other tokens are walked.
  auto mask = std::make_unique<LexemeMask>();
  if (node == 0 && trie == 0) {
    // Slices go from the longest texts to the shortest: take the first one the state reads
    // whole (one exploration answers for every level).
    // The NFA-level proof (string_text.h) once it exists, else the exploration of DFA states,
    // which is cheap where it succeeds (most grammars never need the proof); where the
    // exploration falls short, the proof is built (once per grammar) and tried.
    const size_t longest = tokenizer_->string_slice(0).max_chars;
    auto proven = [&] {
      return state > LexerDfa::kErrorState &&
             string_text().ReadsAnyText(lexer_->Threads(state), lexer_->IsMatch(state));
    };
    size_t readable = 0;
    if (string_text_ready_.load(std::memory_order_acquire) && proven()) {
      readable = longest;
    } else {
      readable = StringTextCharsWithoutBoundary(state, longest, &mask->text_meets_boundary);
      if (readable < longest && proven()) readable = longest;
    }
    for (size_t level = 0; level < TokenizerInfo::kNumStringSlices; ++level) {
      if (readable >= tokenizer_->string_slice(level).max_chars) {
        mask->slice = static_cast<uint8_t>(level + 1);
        trie = mask->slice;
        break;
      }
    }
  }
  mask->trie = trie;
  WalkLexerOnly(node, state, mask.get());
  mask->words.shrink_to_fit();
  mask->frontier.shrink_to_fit();
  return lexeme_masks_.Insert(key, std::move(mask));
}

const CompiledGrammar::FirstLexemeMask* CompiledGrammar::FirstLexemeMaskOf(
    const std::vector<LexerDfa::StateId>& states) const {
  for (const auto& slot : first_lexeme_masks_) {
    const FirstLexemeMask* mask = slot.load(std::memory_order_acquire);
    if (mask == nullptr) return nullptr;  // slots fill in order
    if (mask->lexer_states == states) return mask;
  }
  return nullptr;
}

void CompiledGrammar::OfferFirstLexemeMask(const std::vector<LexerDfa::StateId>& states,
                                           const uint32_t* row, size_t width,
                                           uint64_t steps) const {
  std::unique_ptr<const FirstLexemeMask> mask;
  for (size_t i = 0; i < kMaxFirstLexemeMasks; ++i) {
    const FirstLexemeMask* stored = first_lexeme_masks_[i].load(std::memory_order_acquire);
    if (stored == nullptr) {
      if (mask == nullptr) {
        mask = std::make_unique<const FirstLexemeMask>(
            FirstLexemeMask{states, std::vector<uint32_t>(row, row + width), steps});
      }
      if (first_lexeme_masks_[i].compare_exchange_strong(stored, mask.get(),
                                                         std::memory_order_acq_rel)) {
        first_lexeme_owned_[i] = std::move(mask);  // only the winner of slot i writes it
        return;
      }
      // Another offer took the slot: `stored` is its mask now.
    }
    if (stored->lexer_states == states) return;
  }
}

const StringTextAnalysis& CompiledGrammar::string_text() const {
  std::call_once(string_text_once_, [this] {
    string_text_ = std::make_unique<StringTextAnalysis>(lexer_->nfa());
    string_text_ready_.store(true, std::memory_order_release);
  });
  return *string_text_;
}

const std::vector<CompiledGrammar::TextCharForm>& CompiledGrammar::text_char_forms() const {
  std::call_once(text_char_forms_once_, [this] {
    // Bytes that nothing tells apart: the same lexer byte class (fixed per DFA) and, where
    // terminals restrict what follows them, the same place in every such byte set.
    std::array<uint32_t, 256> kind{};
    std::map<std::vector<uint64_t>, uint32_t> kinds;
    for (int b = 0; b < 256; ++b) {
      std::vector<uint64_t> signature = {lexer_->ByteClassOf(static_cast<uint8_t>(b))};
      for (size_t t = 0; has_follow_restrictions_ && t < forbidden_next_.size(); ++t) {
        signature.push_back(((forbidden_next_[t][b >> 6] >> (b & 63)) & 1) |
                            (((may_end_before_[t][b >> 6] >> (b & 63)) & 1) << 1));
      }
      kind[b] = kinds.emplace(std::move(signature), kinds.size()).first->second;
    }
    // One representative byte per kind inside [lo, hi].
    auto representatives = [&kind](int lo, int hi) {
      std::vector<uint8_t> bytes;
      std::vector<bool> seen(256, false);
      for (int b = lo; b <= hi; ++b) {
        if (!seen[kind[b]]) {
          seen[kind[b]] = true;
          bytes.push_back(static_cast<uint8_t>(b));
        }
      }
      return bytes;
    };
    // ASCII text characters are 0x20-0x7E except `"` and `\`; then the valid multi-byte
    // UTF-8 forms (a lead byte range, the first continuation's range, further continuations).
    std::vector<TextCharForm> forms;
    for (const auto& [lo, hi] : {std::pair<int, int>{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}}) {
      forms.push_back(TextCharForm{{representatives(lo, hi)}});
    }
    struct Utf8Form {
      int lead_lo, lead_hi, first_lo, first_hi, continuations;
    };
    static constexpr Utf8Form kUtf8Forms[] = {
        {0xC2, 0xDF, 0x80, 0xBF, 1}, {0xE0, 0xE0, 0xA0, 0xBF, 2}, {0xE1, 0xEC, 0x80, 0xBF, 2},
        {0xED, 0xED, 0x80, 0x9F, 2}, {0xEE, 0xEF, 0x80, 0xBF, 2}, {0xF0, 0xF0, 0x90, 0xBF, 3},
        {0xF1, 0xF3, 0x80, 0xBF, 3}, {0xF4, 0xF4, 0x80, 0x8F, 3}};
    for (const Utf8Form& f : kUtf8Forms) {
      TextCharForm form{{representatives(f.lead_lo, f.lead_hi)}};
      for (int k = 0; k < f.continuations; ++k) {
        form.steps.push_back(k == 0 ? representatives(f.first_lo, f.first_hi)
                                    : representatives(0x80, 0xBF));
      }
      forms.push_back(std::move(form));
    }
    text_char_forms_ = std::move(forms);
  });
  return text_char_forms_;
}

size_t CompiledGrammar::StringTextCharsWithoutBoundary(LexerDfa::StateId start,
                                                     size_t max_chars,
                                                     bool* stopped_at_boundary) const {
  // Breadth-first over lexer states at character boundaries: a character is read byte by byte
  // through the valid UTF-8 forms of the JSON-string text class, one byte per kind of byte
  // (text_char_forms).
  // The first character at which some path meets a boundary, the dead state or the error state
  // is at the shortest distance, so each state is expanded once, at its first (shallowest)
  // visit: the answer is that character's depth minus one. The exploration stops after
  // kSliceCheckMaxStates states (each costs ~10 to 20 us of cold DFA construction, while the
  // walk that a slice saves costs a few ms) or kSliceCheckMaxSteps of building them: a key
  // position that is a prefix of hundreds of property names then gets a shorter slice, or
  // none.
  const LexerDfa& lexer = *lexer_;
  const std::vector<TextCharForm>& forms = text_char_forms();
  if (stopped_at_boundary != nullptr) *stopped_at_boundary = false;
  const uint64_t steps_before = LexerDfa::MeteredSteps();
  std::unordered_set<LexerDfa::StateId> visited = {start};
  std::vector<LexerDfa::StateId> frontier = {start}, next_frontier, cur, next;
  for (size_t depth = 1; depth <= max_chars; ++depth) {
    next_frontier.clear();
    for (const LexerDfa::StateId state : frontier) {
      for (const TextCharForm& form : forms) {
        cur.assign(1, state);
        for (const std::vector<uint8_t>& step : form.steps) {
          next.clear();
          for (const LexerDfa::StateId s : cur) {
            for (const uint8_t byte : step) {
              const uint32_t after = lexer.NextWithBoundary(s, byte);
              if ((after & LexerDfa::kBoundaryBit) || after <= LexerDfa::kErrorState) {
                if (stopped_at_boundary != nullptr) {
                  *stopped_at_boundary = (after & LexerDfa::kBoundaryBit) != 0;
                }
                return depth - 1;
              }
              if (std::find(next.begin(), next.end(), after) == next.end()) next.push_back(after);
            }
          }
          cur.swap(next);
        }
        for (const LexerDfa::StateId s : cur) {
          if (!visited.insert(s).second) continue;
          // Past the budget, depth `depth` is not fully explored: claim only the levels below.
          if (visited.size() > kSliceCheckMaxStates ||
              LexerDfa::MeteredSteps() - steps_before > kSliceCheckMaxSteps) {
            return depth - 1;
          }
          next_frontier.push_back(s);
        }
      }
    }
    frontier.swap(next_frontier);
    if (frontier.empty()) return max_chars;  // every state within reach was expanded
  }
  return max_chars;
}

std::pair<const std::pair<uint32_t, uint32_t>*, const std::pair<uint32_t, uint32_t>*>
CompiledGrammar::SpecialTerminalsOf(uint32_t token_id) const {
  const auto* begin = special_tokens_.data();
  const auto* end = begin + special_tokens_.size();
  const auto* lo = std::lower_bound(
      begin, end, token_id,
      [](const std::pair<uint32_t, uint32_t>& p, uint32_t t) { return p.first < t; });
  const auto* hi = lo;
  while (hi != end && hi->first == token_id) ++hi;
  return {lo, hi};
}

// Ignored lexemes that lead nowhere. A start state normally admits every %ignore'd terminal.
// An ignored lexeme ends only before a byte that cannot continue it (maximal munch) and is
// allowed to follow it; the next lexeme starts with that byte, at the same Earley set. If no
// byte that may follow any of its lexemes starts an allowed terminal, or another ignored
// terminal that leads on, and the set is not a sentence yet (so the input cannot simply end),
// every lexeme of that terminal is a dead end that never dies: the lexer and the parser both
// stay alive on every byte, yet no sentence contains it. IgnoredThatLeadOn finds the others
// (a least fixpoint over the few ignored terminals, each step one lexer transition per byte
// tried), so StartState leaves those out. Exit bytes are found once per terminal, by a search
// over the lexer states of that terminal alone (at most kExitSearchStates, and the states built
// at most kExitSearchBuildBudget lexer steps for all terminals; past either, every byte counts
// as an exit, which only keeps the terminal).
CompiledGrammar::ByteSet CompiledGrammar::ExitBytesOf(uint32_t terminal) const {
  ByteSet exits{};
  auto all_bytes = [] { return ByteSet{~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}}; };
  std::vector<LexerDfa::StateId> queue = {lexer_->StartState({terminal})};
  std::unordered_set<LexerDfa::StateId> seen(queue.begin(), queue.end());
  for (size_t i = 0; i < queue.size(); ++i) {
    const LexerDfa::StateId state = queue[i];
    const bool matched = lexer_->IsMatch(state);
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<uint8_t>(b);
      const LexerDfa::StateId next = lexer_->Next(state, byte);
      if (lexer_->IsError(next)) return all_bytes();
      const bool continues = !lexer_->IsDead(next);
      if (matched && !ForbidsNext(terminal, byte) &&
          (!continues || IsLazy(terminal) || MayEndBefore(terminal, byte))) {
        exits[b >> 6] |= uint64_t{1} << (b & 63);
      }
      if (continues && seen.insert(next).second) {
        if (queue.size() >= kExitSearchStates) return all_bytes();
        queue.push_back(next);
      }
    }
  }
  return exits;
}

TerminalSet CompiledGrammar::IgnoredThatLeadOn(const TerminalSet& allowed) const {
  TerminalSet leads_on(grammar_->num_terminals());
  ByteSet follow{};  // bytes known to start a lexeme that leads on
  std::vector<uint32_t> scanned;
  allowed.ForEach([&](size_t t) {
    if (!ignore_.Contains(t)) scanned.push_back(static_cast<uint32_t>(t));
  });
  const LexerDfa::StateId scanned_start =
      scanned.empty() ? LexerDfa::kDeadState : lexer_->StartState(scanned);
  std::array<int8_t, 256> starts_scanned;  // -1: not asked yet
  starts_scanned.fill(-1);
  auto follows = [&](int b) {
    if ((follow[b >> 6] >> (b & 63)) & 1) return true;
    if (starts_scanned[b] < 0) {
      const LexerDfa::StateId next =
          scanned.empty() ? LexerDfa::kDeadState
                          : lexer_->Next(scanned_start, static_cast<uint8_t>(b));
      starts_scanned[b] = lexer_->IsDead(next) ? 0 : 1;  // the error state: keep (safe)
    }
    return starts_scanned[b] == 1;
  };
  std::vector<bool> done(ignored_.size(), false);
  auto include = [&](size_t k) {
    done[k] = true;
    leads_on.Insert(ignored_[k].terminal);
    for (size_t w = 0; w < follow.size(); ++w) follow[w] |= ignored_[k].firsts[w];
  };
  for (size_t k = 0; k < ignored_.size(); ++k) {
    if (allowed.Contains(ignored_[k].terminal)) include(k);  // also scanned by the parser
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < ignored_.size(); ++k) {
      if (done[k]) continue;
      for (int b = 0; b < 256 && !done[k]; ++b) {
        if (((ignored_[k].exits[b >> 6] >> (b & 63)) & 1) && follows(b)) {
          include(k);
          changed = true;
        }
      }
    }
  }
  return leads_on;
}

LexerDfa::StateId CompiledGrammar::StartState(const TerminalSet& allowed, bool accepting) const {
  TerminalSet lexed = allowed;
  bool special_allowed = false;
  special_terminals_.ForEach([&](size_t t) { special_allowed |= allowed.Contains(t); });
  // Where the input may end, or a special token may come after any lexeme, every ignored
  // lexeme leads on.
  lexed.UnionWith(accepting || special_allowed || ignored_.empty() ? ignore_
                                                                   : IgnoredThatLeadOn(allowed));
  std::vector<uint32_t> ids;
  lexed.ForEach([&](size_t t) { ids.push_back(static_cast<uint32_t>(t)); });
  return lexer_->StartState(ids);
}

}  // namespace jaxguide
