// Matcher: lexing hypotheses over a graph of Earley sets, and masks by a token-trie walk.
//
// Design note. The state after some bytes is a small set of *threads*, each a lexing hypothesis:
// (Earley set where the current lexeme started, lexer state after the lexeme's bytes so far).
// The lexer of a thread is restricted to the terminals its Earley set allows (plus %ignore), so
// a live thread is a viable prefix. One byte advances every thread:
//   * continue the lexeme: lexer.Next(state, byte);
//   * or end it just before this byte: for each terminal T the lexeme matches (and, unless T is
//     lazy, that the byte cannot continue — maximal munch), the parser scans T (an %ignore
//     terminal leaves the parse as it is), and a new lexeme starts with this byte from the
//     resulting set's start state.
// Threads are deduplicated by (set, lexer state), and threads sharing a lexer state have their
// Earley sets merged (EarleyParser::Merge): they stand at the same point of the input, so one
// set holds both parses, as in textbook Earley. That keeps ambiguous lexing (a lexeme that can
// end at several places) polynomial instead of exponential in the number of histories. Usually
// there are one or two threads.
//
// Scan(set, T) does not depend on the lexeme's length, so the parser memoizes it: during a
// mask computation the trie walk reaches the same (set, T) from thousands of tokens and pays
// the Earley step once. What a boundary does not owe to the byte (the terminals the lexeme
// matches, the sets their scans reach, the start states there) is kept per thread for the
// mask (LexemeEndMemo): the walk crosses a boundary from one thread before hundreds of bytes.
// The walk visits the token trie in pre-order with one thread row per depth (row d = threads
// after the first d bytes of the current node's path); a node whose row is empty is skipped
// together with its whole subtree.
//
// Lexer-only subtrees (our form of llguidance's "slices", but exact): below a node, for each
// thread, every token whose bytes only continue the thread's lexeme is allowed iff the lexer
// survives it, whatever the parser state (threads are independent hypotheses: the mask is the
// OR of their masks, so several threads use the cache one by one). CompiledGrammar::LexemeMaskOf caches, per
// (trie node, lexer state), those tokens' bits and the "frontier" nodes where the lexeme may
// end (the lexer's boundary bit); a mask ORs the bits and walks only the frontier with the
// parser. Used at the root and after every lexeme boundary above a large subtree (after a
// space, most of a 128k vocabulary is words that start a new lexeme).
//
// Sets built by the walk are kept after the mask (the parser only appends), so the next mask
// from the same Earley sets — e.g. the next token of the same identifier — finds its scans
// memoized; an accept that needs new sets drops them first (AcceptBytes), so they stay bounded.
//
// A mask is a function of the threads alone while their Earley sets stand, so the matcher keeps
// its last mask with the threads it was computed for: the next mask from the same threads (the
// next token inside an identifier, a string, a run of whitespace: the lexer state loops) is a
// copy. TruncateSets drops it when a set it depends on goes (a rollback may rebuild the index).
// Until a matcher scans its first lexeme (every thread on the initial set, which is the same
// in every matcher of a grammar), its mask is a function of the threads' lexer states alone:
// the first matcher to compute one hands it to the CompiledGrammar (FirstLexemeMaskOf), and
// the others copy it (a new matcher's first mask, the masks inside a first number or word).
//
// Special tokens named by the grammar are terminals matched by token id: allowed where the
// current lexeme can end and the parser then expects the terminal (LexemeEnds).
//
// Elsewhere: the mask walk itself, with the memo of subtree answers across masks, is in
// matcher_mask.cc; JSON Schema's uniqueItems, checked beside the grammar, filters masks after
// the walk (matcher_unique_items.cc); ComputeForced (fast-forward) is in matcher_forced.cc.
//
// Cost: one lexer transition per live thread per visited trie node, plus one Earley step per
// distinct (set, terminal) reached; bounded by mask_step_budget (error state beyond). Lexer DFA
// states built during the walk (the lexer is lazy) are charged to the same budget through the
// lexer's per-thread BuildMeter, so one state with a huge NFA closure cannot stall a mask, and
// so is the work of building Earley sets (EarleyParser::SetWorkMeter: a highly ambiguous
// grammar completes each of ~10^5 items into many others, seconds per set otherwise).
// Every other public call (accepts, queries, fast-forward, Reset) installs a meter of the same
// size for the DFA states it builds and one for the Earley sets it builds (CallMeter; that one
// grows by kEarleyStepsPerByte per byte the call reads, so long accepts stay linear): a state of a
// ~10^6-instruction NFA costs milliseconds, and a walk through thousands of them (accept_bytes
// of a long text, the breadth-first search of ShortestLexemeCompletion) would otherwise run for
// seconds.
#include "native/matcher/matcher.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "native/matcher/matcher_call_meter.h"
#include "native/support/error.h"

namespace jaxguide {

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar, uint64_t mask_step_budget)
    : grammar_(std::move(grammar)),
      parser_(grammar_->shared_grammar()),
      mask_step_budget_(mask_step_budget) {
  Reset();
}

void Matcher::Reset() {
  const CallMeter metered(this);
  TruncateSets(1);
  start_state_of_set_.clear();
  current_.clear();
  step_rows_.clear();
  terminated_ = false;
  error_.clear();
  prefix_pos_ = 0;
  unique_ = UniqueItems();
  unique_.Configure(grammar_->has_unique_arrays(), grammar_->has_keyed_objects());
  try {
    current_.push_back(Thread{0, StartStateOf(0)});
  } catch (const std::exception& e) {
    SetError(e.what());
  }
  step_rows_.push_back(StepRow{current_, parser_.num_sets(), 0, UniqueCheckpoint()});
}

bool Matcher::RequirePrefix(std::string prefix) {
  if (num_steps() != 0 || prefix_pos_ != 0) return false;
  required_prefix_ = std::move(prefix);
  return true;
}

bool Matcher::SplitPrefix(std::string_view bytes, size_t* prefix_pos,
                          std::string_view* rest) const {
  const std::string_view pending = pending_prefix();
  const size_t overlap = std::min(pending.size(), bytes.size());
  if (bytes.substr(0, overlap) != pending.substr(0, overlap)) return false;
  *prefix_pos = prefix_pos_ + overlap;
  *rest = bytes.substr(overlap);
  return true;
}

void Matcher::SetError(const std::string& message) {
  if (error_.empty()) error_ = message.empty() ? "internal error" : message;
}

LexerDfa::StateId Matcher::StartStateOf(uint32_t set) {
  if (start_state_of_set_.size() <= set) start_state_of_set_.resize(set + 1, kUnknownState);
  LexerDfa::StateId& state = start_state_of_set_[set];
  if (state != kUnknownState) return state;
  // Sets come and go (rollbacks, accepts that drop retained sets) but their terminal sets
  // repeat: remember the start state per terminal set (the grammar's cache takes a lock).
  // (Which %ignore'd terminals the state admits depends on whether the set is a sentence.)
  const TerminalSet& allowed = parser_.AllowedTerminals(set);
  const bool accepting = parser_.IsAccepting(set);
  auto& by_terminals = start_state_by_terminals_[accepting ? 1 : 0];
  auto found = by_terminals.find(allowed);
  if (found == by_terminals.end()) {
    const LexerDfa::StateId start = grammar_->StartState(allowed, accepting);
    // kErrorState is not remembered: it may be a call's build budget, not the DFA's.
    if (grammar_->lexer().IsError(start)) ThrowLexerBudget();
    found = by_terminals.emplace(allowed, start).first;
  }
  state = found->second;
  return state;
}

bool Matcher::Step(const std::vector<Thread>& from, uint8_t byte, std::vector<Thread>* to,
                   bool memoize) {
  const LexerDfa& lexer = grammar_->lexer();
  to->clear();
  // Fast path (most trie nodes): one thread whose lexeme cannot end before this byte.
  if (from.size() == 1) {
    const uint32_t step = lexer.NextWithBoundary(from[0].lexer, byte);
    if (!(step & LexerDfa::kBoundaryBit)) {
      ++steps_;
      if (lexer.IsDead(step)) return false;
      if (lexer.IsError(step)) ThrowLexerBudget();
      to->push_back(Thread{from[0].set, step});
      return true;
    }
    // Dead in every parser state: the lexeme's ends need not be scanned.
    if (grammar_->DeadAtBoundary(step, byte)) {
      ++steps_;
      return false;
    }
  }
  crossed_boundary_ = true;
  BoundaryMemo::Entry* memo =
      memoize && from.size() == 1 ? boundary_memo_.SlotFor(from[0], byte) : nullptr;
  if (memo != nullptr && boundary_memo_.Hit(*memo, from[0], byte)) {
    ++steps_;
    to->assign(memo->threads, memo->threads + memo->size);
    return memo->size != 0;
  }
  auto add = [&](uint32_t set, LexerDfa::StateId state) {
    if (lexer.IsDead(state)) return;
    if (lexer.IsError(state)) ThrowLexerBudget();
    const Thread thread{set, state};
    if (std::find(to->begin(), to->end(), thread) == to->end()) to->push_back(thread);
  };
  for (const Thread& thread : from) {
    ++steps_;
    const LexerDfa::StateId next = lexer.Next(thread.lexer, byte);
    add(thread.set, next);
    if (!lexer.IsMatch(thread.lexer)) continue;
    const std::vector<uint32_t>& possible_next = lexer.PossibleTerminals(next);
    LexemeEndMemo::Ending* end = nullptr;
    LexemeEndMemo::Ending* ends_end = nullptr;
    if (!lexeme_ends_.Find(thread.set, thread.lexer, &end, &ends_end)) {
      LexemeEndsOf(thread, &end, &ends_end);
    }
    for (; end != ends_end; ++end) {
      const uint32_t terminal = end->terminal;
      // Maximal munch: a greedy lexeme does not end where the next byte continues it.
      if (!end->lazy && !grammar_->MayEndBefore(terminal, byte) &&
          std::binary_search(possible_next.begin(), possible_next.end(), terminal)) {
        continue;
      }
      if (grammar_->ForbidsNext(terminal, byte)) continue;  // a trailing negative lookahead
      if (end->ignored) {
        if (end->ignore_start == LexemeEndMemo::kUnset) {
          end->ignore_start = StartStateOf(thread.set);
        }
        add(thread.set, lexer.Next(end->ignore_start, byte));
      }
      if (!end->allowed) continue;
      if (end->after == LexemeEndMemo::kUnset) {
        end->after = parser_.Scan(thread.set, terminal);
        if (end->after != EarleyParser::kNoSet) end->after_start = StartStateOf(end->after);
      }
      if (end->after != EarleyParser::kNoSet) {
        if (const UniqueItems::Scanned* opens = grammar_->ChecksOpenedBy(terminal)) {
          scanned_.unique_array |= opens->unique_array;
          scanned_.keyed_object |= opens->keyed_object;
        }
        add(end->after, lexer.Next(end->after_start, byte));
      }
    }
  }
  if (to->size() > 1) MergeSameLexerState(to);
  if (memo != nullptr) boundary_memo_.Store(memo, from[0], byte, *to);
  return !to->empty();
}

void Matcher::LexemeEndsOf(const Thread& thread, LexemeEndMemo::Ending** begin,
                           LexemeEndMemo::Ending** end) {
  const TerminalSet& allowed = parser_.AllowedTerminals(thread.set);
  ends_scratch_.clear();
  for (const uint32_t terminal : grammar_->lexer().MatchedTerminals(thread.lexer)) {
    ends_scratch_.push_back(LexemeEndMemo::Ending{terminal, grammar_->IsLazy(terminal),
                                               grammar_->ignore().Contains(terminal),
                                               allowed.Contains(terminal)});
  }
  lexeme_ends_.Add(thread.set, thread.lexer, ends_scratch_, begin, end);
}

void Matcher::MergeSameLexerState(std::vector<Thread>* threads) {
  if (threads->size() < 2) return;
  std::sort(threads->begin(), threads->end(), [](const Thread& a, const Thread& b) {
    return a.lexer != b.lexer ? a.lexer < b.lexer : a.set < b.set;
  });
  size_t out = 0;
  for (size_t i = 0; i < threads->size();) {
    size_t j = i + 1;
    while (j < threads->size() && (*threads)[j].lexer == (*threads)[i].lexer) ++j;
    if (j - i == 1) {
      (*threads)[out++] = (*threads)[i];
    } else {
      merge_scratch_.clear();
      for (size_t k = i; k < j; ++k) merge_scratch_.push_back((*threads)[k].set);
      (*threads)[out++] = Thread{parser_.Merge(merge_scratch_), (*threads)[i].lexer};
    }
    i = j;
  }
  threads->resize(out);
}

std::string Matcher::MaskBudgetMessage() const {
  return "mask computation exceeded its budget of " + std::to_string(mask_step_budget_) +
         " lexer steps";
}

std::string Matcher::BuildBudgetMessage() const {
  return "building lexer DFA states exceeded the budget of " +
         std::to_string(mask_step_budget_) + " lexer steps of one matcher call (mask step budget)";
}

void Matcher::ThrowLexerBudget() const {
  if (meter_ != nullptr && meter_->exceeded) throw BudgetExceededError(BuildBudgetMessage());
  const LexerOptions& options = grammar_->lexer().options();
  throw BudgetExceededError(
      "lexer DFA budget exceeded (max_states=" + std::to_string(options.max_states) +
      ", max_memory_bytes=" + std::to_string(options.max_memory_bytes) + ")");
}

void Matcher::LexemeEnds(const std::vector<Thread>& threads, std::vector<uint32_t>* sets) {
  const LexerDfa& lexer = grammar_->lexer();
  sets->clear();
  auto add = [sets](uint32_t set) {
    if (std::find(sets->begin(), sets->end(), set) == sets->end()) sets->push_back(set);
  };
  for (const Thread& thread : threads) {
    // No pending lexeme: bytes never lead back to a start state (LexerDfa's contract), even
    // where the lexer's threads are the same again (`[^\n]*\n` after "abc").
    if (thread.lexer == StartStateOf(thread.set)) add(thread.set);
    for (const uint32_t terminal : lexer.MatchedTerminals(thread.lexer)) {
      if (grammar_->ignore().Contains(terminal)) add(thread.set);
      if (parser_.AllowedTerminals(thread.set).Contains(terminal)) {
        const uint32_t after = parser_.Scan(thread.set, terminal);
        if (after != EarleyParser::kNoSet) add(after);
      }
    }
  }
}

bool Matcher::ThreadsAccept(const std::vector<Thread>& threads) {
  std::vector<uint32_t> ends;
  LexemeEnds(threads, &ends);
  for (const uint32_t set : ends) {
    if (parser_.IsAccepting(set)) return true;
  }
  return false;
}

bool Matcher::AdvanceSpecial(uint32_t token_id, std::vector<Thread>* threads) {
  const auto [begin, end] = grammar_->SpecialTerminalsOf(token_id);
  if (begin == end) return false;
  std::vector<uint32_t> ends;
  LexemeEnds(*threads, &ends);
  std::vector<Thread> next;
  for (const uint32_t set : ends) {
    for (const auto* special = begin; special != end; ++special) {
      if (!parser_.AllowedTerminals(set).Contains(special->second)) continue;
      const uint32_t after = parser_.Scan(set, special->second);
      if (after == EarleyParser::kNoSet) continue;
      const Thread thread{after, StartStateOf(after)};
      if (grammar_->lexer().IsError(thread.lexer)) ThrowLexerBudget();
      if (std::find(next.begin(), next.end(), thread) == next.end()) next.push_back(thread);
    }
  }
  MergeSameLexerState(&next);
  threads->swap(next);
  return !threads->empty();
}

bool Matcher::IsAccepting() {
  if (has_error() || terminated_ || !pending_prefix().empty()) return false;
  const CallMeter metered(this);
  const size_t sets_before = parser_.num_sets();
  bool accepting = false;
  try {
    accepting = ThreadsAccept(current_);
  } catch (const std::exception& e) {
    SetError(e.what());
  }
  TruncateSets(sets_before);
  return accepting;
}

uint32_t Matcher::MinTerminalsToAccept() {
  if (terminated_) return 0;
  if (has_error() || !pending_prefix().empty()) return Grammar::kNoYield;
  const CallMeter metered(this);
  const size_t sets_before = parser_.num_sets();
  const LexerDfa& lexer = grammar_->lexer();
  uint32_t best = Grammar::kNoYield;
  try {
    for (const Thread& thread : current_) {
      if (thread.lexer == StartStateOf(thread.set)) {  // no lexeme in progress
        best = std::min(best, parser_.MinTerminalsToAccept(thread.set));
        continue;
      }
      // The lexeme in progress becomes one of the terminals it can still match; count from
      // the set after it, plus one if the lexeme cannot end as that terminal yet (what is left
      // inside it is one more piece to write: `"wif` under a pattern that needs "wifi").
      const std::vector<uint32_t>& matched = lexer.MatchedTerminals(thread.lexer);
      for (const uint32_t terminal : lexer.PossibleTerminals(thread.lexer)) {
        const uint32_t unfinished =
            std::find(matched.begin(), matched.end(), terminal) == matched.end() ? 1 : 0;
        uint32_t after_lexeme = Grammar::kNoYield;
        if (grammar_->ignore().Contains(terminal)) {
          after_lexeme = parser_.MinTerminalsToAccept(thread.set);
        } else if (parser_.AllowedTerminals(thread.set).Contains(terminal)) {
          after_lexeme = parser_.MinTerminalsToAccept(parser_.Scan(thread.set, terminal));
        }
        best = std::min(best, std::min(Grammar::kNoYield, after_lexeme + unfinished));
      }
    }
  } catch (const std::exception& e) {
    SetError(e.what());
    best = Grammar::kNoYield;
  }
  TruncateSets(sets_before);
  return best;
}

namespace {

// One byte per byte class of `lexer`: the first of the class in the order lowercase letters,
// digits, uppercase letters, other printable ASCII, then every other byte, so completions read
// well. (A path to a matching state is valid UTF-8 whatever bytes stand for the classes: the
// lexer matches only valid UTF-8.)
std::vector<uint8_t> ClassRepresentatives(const LexerDfa& lexer) {
  std::vector<int> first(lexer.num_byte_classes(), -1);
  auto offer = [&](int byte) {
    int& slot = first[lexer.ByteClassOf(static_cast<uint8_t>(byte))];
    if (slot < 0) slot = byte;
  };
  for (int b = 'a'; b <= 'z'; ++b) offer(b);
  for (int b = '0'; b <= '9'; ++b) offer(b);
  for (int b = 'A'; b <= 'Z'; ++b) offer(b);
  for (int b = 0x20; b < 0x7F; ++b) offer(b);
  for (int b = 0; b < 256; ++b) offer(b);
  return std::vector<uint8_t>(first.begin(), first.end());
}

}  // namespace

std::optional<std::string> Matcher::ShortestLexemeCompletion(size_t max_states) {
  if (terminated_ || has_error() || !pending_prefix().empty()) return std::nullopt;
  const CallMeter metered(this);
  const LexerDfa& lexer = grammar_->lexer();
  const std::vector<uint8_t> bytes = ClassRepresentatives(lexer);
  std::optional<std::string> best;
  try {
    for (const Thread& thread : current_) {
      if (thread.lexer == StartStateOf(thread.set)) return std::string();
      const TerminalSet& allowed = parser_.AllowedTerminals(thread.set);
      auto can_end = [&](LexerDfa::StateId state) {
        for (const uint32_t t : lexer.MatchedTerminals(state)) {
          if (allowed.Contains(t) || grammar_->ignore().Contains(t)) return true;
        }
        return false;
      };
      struct Node {
        LexerDfa::StateId state;
        uint32_t parent;
        uint32_t depth;
        uint8_t byte;
      };
      std::vector<Node> nodes = {{thread.lexer, 0, 0, 0}};
      std::unordered_set<LexerDfa::StateId> seen = {thread.lexer};
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (best && nodes[i].depth >= best->size()) break;
        if (can_end(nodes[i].state)) {
          std::string path(nodes[i].depth, '\0');
          for (size_t n = i; n != 0; n = nodes[n].parent) {
            path[nodes[n].depth - 1] = static_cast<char>(nodes[n].byte);
          }
          best = std::move(path);
          break;
        }
        for (const uint8_t byte : bytes) {
          const LexerDfa::StateId next = lexer.Next(nodes[i].state, byte);
          // Past the call's budget the search stops, as past max_states (nullopt, no error
          // state: the search is a guide); the DFA's own budget only leaves the state out.
          if (lexer.IsError(next) && meter_->exceeded) return std::nullopt;
          if (lexer.IsDead(next) || lexer.IsError(next) || !seen.insert(next).second) {
            continue;
          }
          if (nodes.size() >= max_states) break;
          nodes.push_back({next, static_cast<uint32_t>(i), nodes[i].depth + 1, byte});
        }
      }
    }
  } catch (const std::exception& e) {
    if (!meter_->exceeded) SetError(e.what());  // (a start state past the budget: as above)
    return std::nullopt;
  }
  return best;
}

void Matcher::TruncateSets(size_t num_sets) {
  if (num_sets <= last_mask_max_set_) last_mask_valid_ = false;
  parser_.Truncate(num_sets);
  if (lexeme_ends_.active()) lexeme_ends_.Begin();  // its entries may name popped sets
  subtree_memo_.DropSetsFrom(static_cast<uint32_t>(num_sets));
  start_state_of_set_.resize(std::min(start_state_of_set_.size(), num_sets));
}

bool Matcher::AdvanceBytes(std::string_view bytes, std::vector<Thread>* threads,
                           UniqueItems* unique) {
  std::vector<Thread> next;
  for (const char c : bytes) {
    parser_.ExtendWorkLimit(kEarleyStepsPerByte);  // a long text is no ambiguity
    scanned_ = UniqueItems::Scanned{};
    if (!Step(*threads, static_cast<uint8_t>(c), &next)) return false;
    threads->swap(next);
    if (unique != nullptr && !unique->Feed(static_cast<uint8_t>(c), scanned_)) {
      return false;
    }
  }
  return true;
}

bool Matcher::IsEos(uint32_t token_id) const {
  const auto& eos = grammar_->tokenizer().eos_token_ids();
  return std::binary_search(eos.begin(), eos.end(), token_id);
}

void Matcher::SetEosBits(uint32_t* row) const {
  for (uint32_t id : grammar_->tokenizer().eos_token_ids())
    row[id >> 5] |= uint32_t{1} << (id & 31);
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  const CallMeter metered(this);
  size_t prefix_pos = 0;
  std::string_view rest;
  if (!SplitPrefix(bytes, &prefix_pos, &rest)) return false;
  if (!grammar_->has_value_checks()) {
    return Accept([&](std::vector<Thread>* threads) { return AdvanceBytes(rest, threads); },
                  prefix_pos);
  }
  const UniqueItems::Checkpoint before = unique_.Save();
  const bool accepted = Accept(
      [&](std::vector<Thread>* threads) {
        unique_.Restore(before);  // Accept may advance twice
        if (!AdvanceBytes(rest, threads, &unique_)) return false;
        // As the masks do: no state from which only duplicates can follow.
        const size_t sets = parser_.num_sets();
        size_t budget = kUniqueSearchSteps;
        const bool can_differ = ItemsCanDiffer(*threads, &budget);
        TruncateSets(sets);
        return can_differ;
      },
      prefix_pos);
  if (!accepted) unique_.Restore(before);
  return accepted;
}

template <typename Advance>
bool Matcher::Accept(const Advance& advance, size_t prefix_pos) {
  if (has_error() || terminated_) return false;
  const size_t sets_before = parser_.num_sets();
  const size_t committed = committed_sets();
  std::vector<Thread> threads = current_;
  size_t committed_after = committed;
  try {
    if (!advance(&threads)) {
      TruncateSets(sets_before);
      return false;
    }
    const bool uses_new_sets = std::any_of(threads.begin(), threads.end(), [&](const Thread& t) {
      return t.set >= committed;
    });
    if (!uses_new_sets) {
      // The state still stands on committed sets: the sets retained from the last mask stay
      // (the next mask reuses their scans).
      TruncateSets(sets_before);
    } else {
      if (sets_before > committed) {
        // The new state needs sets built after the retained ones: drop those and advance
        // again, so that committed sets stay contiguous and retained ones stay bounded.
        TruncateSets(committed);
        threads = current_;
        if (!advance(&threads)) throw std::logic_error("accept is not repeatable");
      }
      committed_after = parser_.num_sets();
    }
  } catch (const std::exception& e) {
    SetError(e.what());
    return false;
  }
  current_ = std::move(threads);
  prefix_pos_ = prefix_pos;
  step_rows_.push_back(StepRow{current_, committed_after, prefix_pos_, UniqueCheckpoint()});
  return true;
}

bool Matcher::AcceptToken(uint32_t token_id) {
  if (has_error() || terminated_) return false;
  const CallMeter metered(this);
  const TokenizerInfo& tokenizer = grammar_->tokenizer();
  if (token_id >= tokenizer.vocab_size()) return false;
  const std::string_view bytes = tokenizer.token_bytes(token_id);
  if (bytes.empty()) {
    // A special token the grammar names as a terminal, else EOS.
    const auto [begin, end] = grammar_->SpecialTerminalsOf(token_id);
    if (!pending_prefix().empty()) return false;
    if (begin != end &&
        Accept([&](std::vector<Thread>* threads) { return AdvanceSpecial(token_id, threads); },
               prefix_pos_)) {
      return true;
    }
    if (has_error() || !IsEos(token_id) || !IsAccepting()) return false;
    terminated_ = true;
    step_rows_.push_back(StepRow{current_, committed_sets(), prefix_pos_, UniqueCheckpoint()});
    return true;
  }
  return AcceptBytes(bytes);
}

void Matcher::Rollback(size_t num_steps) {
  num_steps = std::min(num_steps, step_rows_.size() - 1);
  if (num_steps == 0) return;
  step_rows_.resize(step_rows_.size() - num_steps);
  const StepRow& row = step_rows_.back();
  current_ = row.threads;
  prefix_pos_ = row.prefix_pos;
  if (grammar_->has_value_checks()) unique_.Restore(row.unique);
  TruncateSets(row.num_sets);
  terminated_ = false;
}

bool Matcher::IsTokenAllowed(uint32_t token_id) {
  if (has_error() || terminated_) return has_error() && IsEos(token_id);
  const TokenizerInfo& tokenizer = grammar_->tokenizer();
  if (token_id >= tokenizer.vocab_size()) return false;
  const CallMeter metered(this);
  const std::string_view bytes = tokenizer.token_bytes(token_id);
  if (bytes.empty() && IsEos(token_id) && IsAccepting()) return true;
  if (bytes.empty() && !pending_prefix().empty()) return false;
  size_t prefix_pos = 0;
  std::string_view rest;
  if (!bytes.empty() && !SplitPrefix(bytes, &prefix_pos, &rest)) return false;
  const size_t sets_before = parser_.num_sets();
  bool allowed = false;
  try {
    std::vector<Thread> threads = current_;
    allowed = bytes.empty() ? AdvanceSpecial(token_id, &threads) : AdvanceBytes(rest, &threads);
    TruncateSets(sets_before);
    if (allowed && !bytes.empty() && grammar_->has_value_checks()) {
      allowed = TokenKeepsItemsUnique(rest);
    }
  } catch (const std::exception& e) {
    SetError(e.what());
    allowed = false;
  }
  TruncateSets(sets_before);
  return allowed;
}

}  // namespace jaxguide
