// Matcher's mask: the token-trie walk that FillNextTokenBitmask runs (the matcher's design
// note, in matcher.cc, describes the walk: thread rows per depth, lexer-only subtrees from the
// grammar's LexemeMask cache, the lexeme ends per thread, the last mask kept).
//
// Design note (subtree memo). Below a lexeme boundary above a large subtree, and at the root,
// the walk goes thread by thread (WalkCachedThreads); what one thread allows below one node is
// a function of (node, thread) while the thread's Earley set stands, so the matcher keeps those
// answers across masks (SubtreeMemo), in the smaller of two forms: a bitset over the subtree's
// nodes, or the nonzero words of the answer's row. A state that
// crosses a lexeme boundary at every byte (a string whose every character is a lexeme, a
// keyword that may end anywhere) gets no help from the lexer-only cache, and its masks walk
// most of the trie with the parser (milliseconds); but one byte later the threads are the
// same from one mask to the next (the same Earley set, the lexer state of that byte), so with
// the memo such a mask walks the few nodes above the memo points. An answer is captured on the
// second visit of its key, if its first walk was costly for the subtree's size (the walk
// writes into a zeroed scratch row, then the answer is read off it: a small subtree's nodes
// one by one, a large one's through the row's nonzero words and the trie's token -> node
// table), so masks whose Earley sets are new every time (most) pay two hash probes per memo
// point. Popped sets take their answers with them (TruncateSets).
//
// Design note (slices across boundaries). The lexer-only cache allows a string slice at the
// root only where the lexeme reads its texts without a boundary. A long string lexed in
// 256-unit chunks ends its lexeme within a slice's reach near every chunk's end, and the text
// goes on in the next chunk; there the matcher asks the parser (ReadsAnyTextAcrossBoundaries:
// a breadth-first search over thread rows at character boundaries, one byte per kind of text
// byte, each row expanded once, bounded) whether every text of up to 16 characters keeps a
// thread alive; if so the slice is allowed whole and only the slice's other tokens are
// walked. Where the search runs out of rows (text read as many keywords at once), the cached
// lexeme mask remembers it and the walk goes on as before.
#include "native/matcher/matcher.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <vector>

#include "native/matcher/matcher_call_meter.h"
#include "native/support/error.h"

namespace jaxguide {

void Matcher::WriteEosOnly(uint32_t* row) const {
  const TokenizerInfo& tokenizer = grammar_->tokenizer();
  std::memset(row, 0, tokenizer.bitmask_width() * sizeof(uint32_t));
  SetEosBits(row);
}

void Matcher::FillNextTokenBitmask(uint32_t* row) {
  const TokenizerInfo& tokenizer = grammar_->tokenizer();
  if (has_error() || terminated_) {
    WriteEosOnly(row);
    return;
  }
  const size_t width = tokenizer.bitmask_width();
  const bool memoizable = pending_prefix().empty();
  if (memoizable && last_mask_valid_ && last_mask_threads_ == current_) {
    // The same threads on the same Earley sets as the last mask (the next token inside an
    // identifier, a string, a run of whitespace): the same mask.
    std::memcpy(row, last_mask_.data(), width * sizeof(uint32_t));
    if (grammar_->has_value_checks()) {
      const CallMeter metered(this);
      FilterUniqueItems(row);
    }
    return;
  }
  // Nothing scanned yet (every thread on the initial set): the grammar's shared mask of these
  // lexer states, once a matcher of the grammar computed it.
  first_lexeme_states_.clear();
  bool first_lexeme = memoizable && !current_.empty();
  for (size_t i = 0; first_lexeme && i < current_.size(); ++i) {
    first_lexeme = current_[i].set == 0;
    first_lexeme_states_.push_back(current_[i].lexer);
  }
  const CompiledGrammar::FirstLexemeMask* shared =
      first_lexeme ? grammar_->FirstLexemeMaskOf(first_lexeme_states_) : nullptr;
  if (shared != nullptr && shared->steps <= mask_step_budget_) {
    std::memcpy(row, shared->row.data(), width * sizeof(uint32_t));
    RememberMask(row);
    if (grammar_->has_value_checks()) {
      const CallMeter metered(this);
      FilterUniqueItems(row);
    }
    return;
  }
  std::memset(row, 0, width * sizeof(uint32_t));
  const TokenTrie& trie = tokenizer.trie();
  const auto& nodes = trie.nodes();
  steps_ = 0;
  // Building lexer DFA states on the way is charged to the same budget (LexerDfa's meter).
  BuildMeter meter{&steps_, mask_step_budget_};
  const LexerDfa::ScopedBuildMeter metered(&meter);
  meter_ = &meter;
  // Earley work (an ambiguous grammar's sets) is charged to the same budget.
  parser_.SetWorkMeter(&steps_, mask_step_budget_);
  boundary_memo_.Begin();
  lexeme_ends_.Begin();
  struct ClearMeter {
    BuildMeter** meter;
    EarleyParser* parser;
    BoundaryMemo* memo;
    LexemeEndMemo* ends;
    ~ClearMeter() {
      *meter = nullptr;
      parser->SetWorkMeter(nullptr, 0);
      memo->End();
      ends->End();
    }
  } const clear_meter{&meter_, &parser_, &boundary_memo_, &lexeme_ends_};
  try {
    if (walk_rows_.size() < trie.max_depth() + 1) walk_rows_.resize(trie.max_depth() + 1);
    walk_rows_[0] = current_;
    // One thread (the common case, e.g. inside a JSON string or an identifier): the lexer-only
    // part of the mask is cached per lexer state; only the subtrees where the lexeme may end
    // are walked with the parser.
    if (!pending_prefix().empty()) {
      WalkPendingPrefix(row);
    } else {
      std::vector<Thread> uncached;
      WalkCachedThreads(0, current_, row, 0, &uncached);
      if (!uncached.empty()) {
        walk_rows_[0] = std::move(uncached);
        WalkSubtrees(1, nodes.size(), row);
      }
      if (ThreadsAccept(current_)) SetEosBits(row);
      if (!grammar_->special_tokens().empty()) SetSpecialTokenBits(row);
    }
  } catch (const std::exception& e) {
    SetError(meter.exceeded ? MaskBudgetMessage() + " (building lexer DFA states included)"
                            : std::string(e.what()));
    TruncateSets(committed_sets());
    WriteEosOnly(row);
    return;
  }
  // The sets this walk built stay (retained) until an accept moves past them: the next mask
  // from the same Earley sets (e.g. the next token of the same identifier) finds its scans
  // memoized. Bounded: beyond kMaxRetainedSets they are dropped.
  if (parser_.num_sets() - committed_sets() > kMaxRetainedSets) TruncateSets(committed_sets());
  if (memoizable) RememberMask(row);
  if (first_lexeme) grammar_->OfferFirstLexemeMask(first_lexeme_states_, row, width, steps_);
  if (grammar_->has_value_checks()) FilterUniqueItems(row);  // after the memo: it keeps the
                                                               // grammar's mask alone
}

void Matcher::RememberMask(const uint32_t* row) {
  last_mask_.assign(row, row + grammar_->tokenizer().bitmask_width());
  last_mask_threads_ = current_;
  last_mask_max_set_ = 0;
  for (const Thread& t : current_) last_mask_max_set_ = std::max(last_mask_max_set_, t.set);
  last_mask_valid_ = true;
}

void Matcher::WalkPendingPrefix(uint32_t* row) {
  // Tokens that are a prefix of the pending bytes are allowed; below the node that spells all
  // of them, the grammar decides as usual.
  const TokenTrie& trie = grammar_->tokenizer().trie();
  const auto& nodes = trie.nodes();
  size_t node = 0;
  for (const char c : pending_prefix()) {
    const int64_t child = trie.FindChild(node, static_cast<uint8_t>(c));
    if (child < 0) return;
    node = static_cast<size_t>(child);
    if (nodes[node].has_token()) {
      row[nodes[node].token >> 5] |= uint32_t{1} << (nodes[node].token & 31);
      for (uint32_t id : trie.DuplicateTokens(nodes[node])) row[id >> 5] |= uint32_t{1} << (id & 31);
    }
  }
  walk_rows_[nodes[node].depth] = current_;
  WalkSubtrees(node + 1, node + nodes[node].subtree_size(), row);
}

void Matcher::SetSpecialTokenBits(uint32_t* row) {
  std::vector<uint32_t> ends;
  LexemeEnds(current_, &ends);
  for (const auto& [token, terminal] : grammar_->special_tokens()) {
    for (const uint32_t set : ends) {
      if (parser_.AllowedTerminals(set).Contains(terminal)) {
        row[token >> 5] |= uint32_t{1} << (token & 31);
        break;
      }
    }
  }
}

bool Matcher::WalkCachedSubtree(uint32_t node, const Thread& thread, uint32_t* row,
                                uint8_t trie) {
  constexpr size_t kFrontierPrefetch = 8;
  const LexemeMask* cached = grammar_->LexemeMaskOf(node, thread.lexer, trie);
  if (cached == nullptr) return false;
  uint8_t slice = cached->slice;
  // At the root of a lexeme that ends within the longest slice's reach but whose text goes on
  // in the next lexeme (a long string's chunk near its end): the longest slice is allowed
  // whole when the parser lets every text through the boundary, and only the slice's other
  // tokens are walked (lexer-only up to the boundary, as usual).
  constexpr uint8_t kLongestSlice = 1;
  // (A state whose search ran out of rows once, e.g. a position of a SQL grammar where text
  // lexes as many keywords at once, is not searched again: the search would cost about what
  // the walk does.)
  if (node == 0 && trie == 0 && slice != kLongestSlice && cached->text_meets_boundary &&
      !cached->text_search_ran_out.load(std::memory_order_relaxed)) {
    const size_t chars = grammar_->tokenizer().string_slice(kLongestSlice - 1u).max_chars;
    const TextSearch found = ReadsAnyTextAcrossBoundaries(thread, chars);
    if (found == TextSearch::kRanOut) {
      cached->text_search_ran_out.store(true, std::memory_order_relaxed);
    } else if (found == TextSearch::kReadsAny) {
      if (const LexemeMask* rest = grammar_->LexemeMaskOf(0, thread.lexer, kLongestSlice)) {
        cached = rest;
        slice = kLongestSlice;
      }
    }
  }
  if (slice != 0) {
    const std::vector<uint32_t>& bits = grammar_->tokenizer().string_slice(slice - 1u).bits;
    for (size_t w = 0; w < bits.size(); ++w) row[w] |= bits[w];
  }
  for (const auto& [word, bits] : cached->words) row[word] |= bits;
  const auto& nodes = grammar_->TrieOf(cached->trie).nodes();
  // The frontier lies in trie order but scattered over the trie: its nodes are loaded ahead
  // (kFrontierPrefetch entries), so that in a cold cache (the model's forward pass ran in
  // between) their misses overlap instead of following each other.
  const auto& frontier = cached->frontier;
  for (size_t k = 0; k < frontier.size(); ++k) {
    if (k + kFrontierPrefetch < frontier.size()) {
      __builtin_prefetch(&nodes[frontier[k + kFrontierPrefetch].first]);
    }
    const auto& [start, lexer_state] = frontier[k];
    const size_t depth = nodes[start].depth;
    walk_rows_[depth - 1].assign(1, Thread{thread.set, lexer_state});
    WalkSubtrees(start, start + nodes[start].subtree_size(), row, cached->trie);
  }
  return true;
}

Matcher::TextSearch Matcher::ReadsAnyTextAcrossBoundaries(const Thread& thread,
                                                           size_t max_chars) {
  const std::vector<CompiledGrammar::TextCharForm>& forms = grammar_->text_char_forms();
  std::vector<std::vector<Thread>> visited = {{thread}};
  std::vector<std::vector<Thread>> frontier = {{thread}}, next_frontier, cur, next;
  std::vector<Thread> after;
  for (size_t depth = 1; depth <= max_chars && !frontier.empty(); ++depth) {
    next_frontier.clear();
    for (const std::vector<Thread>& threads : frontier) {
      for (const CompiledGrammar::TextCharForm& form : forms) {
        cur.assign(1, threads);
        for (const std::vector<uint8_t>& bytes : form.steps) {
          next.clear();
          for (const std::vector<Thread>& from : cur) {
            for (const uint8_t byte : bytes) {
              if (!Step(from, byte, &after, /*memoize=*/false)) return TextSearch::kDies;
              if (std::find(next.begin(), next.end(), after) == next.end()) next.push_back(after);
            }
          }
          cur.swap(next);
        }
        for (std::vector<Thread>& row : cur) {
          if (std::find(visited.begin(), visited.end(), row) != visited.end()) continue;
          if (visited.size() >= kTextCheckMaxRows) return TextSearch::kRanOut;
          visited.push_back(row);
          next_frontier.push_back(std::move(row));
        }
      }
    }
    frontier.swap(next_frontier);
    if (steps_ > mask_step_budget_) throw BudgetExceededError(MaskBudgetMessage());
  }
  return TextSearch::kReadsAny;
}

void Matcher::WalkCachedThreads(uint32_t node, std::vector<Thread> threads, uint32_t* row,
                                uint8_t trie, std::vector<Thread>* uncached) {
  // `threads` is a copy: the caller may pass a walk row that the cached walks overwrite.
  uncached->clear();
  for (const Thread& thread : threads) {
    if (!WalkMemoizedSubtree(node, thread, row, trie)) uncached->push_back(thread);
  }
}

bool Matcher::WalkMemoizedSubtree(uint32_t node, const Thread& thread, uint32_t* row,
                                  uint8_t trie) {
  const SubtreeMemo::Key key{node, thread.set, thread.lexer, trie};
  const SubtreeMemo::Answer* stored = nullptr;
  const size_t subtree_size = grammar_->TrieOf(trie).nodes()[node].subtree_size();
  const SubtreeMemo::Visit visit = subtree_memo_.Find(key, subtree_size, &stored);
  if (visit == SubtreeMemo::Visit::kHit) {
    SetAnswerBits(node, trie, *stored, row);
    return true;
  }
  if (visit == SubtreeMemo::Visit::kWalk) {
    const uint64_t steps_before = steps_;
    if (!WalkCachedSubtree(node, thread, row, trie)) return false;
    subtree_memo_.NoteWalk(key, steps_ - steps_before);
    return true;
  }
  // Capture: walk into a zeroed scratch row of this nesting level, read the answer off it into
  // the memo and into `row`, and leave the scratch zeroed (also when the walk throws).
  const size_t width = grammar_->tokenizer().bitmask_width();
  if (capture_rows_.size() <= capture_depth_) capture_rows_.emplace_back(width, 0u);
  uint32_t* scratch = capture_rows_[capture_depth_].data();
  struct Release {
    Matcher* matcher;
    uint32_t* scratch;
    size_t width;
    ~Release() {
      std::memset(scratch, 0, width * sizeof(uint32_t));
      --matcher->capture_depth_;
    }
  } const release{this, scratch, width};
  ++capture_depth_;
  if (!WalkCachedSubtree(node, thread, scratch, trie)) return false;
  subtree_memo_.Store(key, TakeAnswer(node, trie, scratch, row));
  return true;
}

SubtreeMemo::Answer Matcher::TakeAnswer(uint32_t node, uint8_t trie, const uint32_t* scratch,
                                       uint32_t* row) const {
  const TokenTrie& walked = grammar_->TrieOf(trie);
  const auto& nodes = walked.nodes();
  const size_t begin = node + 1, end = node + nodes[node].subtree_size();
  const size_t width = grammar_->tokenizer().bitmask_width();
  const size_t node_words = (end - begin + 63) / 64;
  if (end - begin < width) {
    // A subtree of fewer nodes than the row has words: its nodes read off the scratch row.
    SubtreeMemo::Answer bits{SubtreeMemo::Answer::Form::kNodeBits,
                             std::vector<uint64_t>(node_words, 0)};
    for (size_t i = begin; i < end; ++i) {
      const uint32_t token = nodes[i].token;
      if (token == TokenTrie::kNoToken || !((scratch[token >> 5] >> (token & 31)) & 1)) continue;
      bits.data[(i - begin) >> 6] |= uint64_t{1} << ((i - begin) & 63);
    }
    SetAnswerBits(node, trie, bits, row);
    return bits;
  }
  // The nonzero words (into `row` too): the answer as row words, kept if no larger than the
  // node-order bitset (a sparse answer).
  SubtreeMemo::Answer words{SubtreeMemo::Answer::Form::kRowWords, {}};
  for (size_t w = 0; w < width; ++w) {
    if (scratch[w] == 0) continue;
    row[w] |= scratch[w];
    words.data.push_back(uint64_t{w} << 32 | scratch[w]);
  }
  if (words.data.size() <= node_words) return words;
  // Else each token's node, through the trie's table (O(tokens), not O(subtree)).
  SubtreeMemo::Answer by_node{SubtreeMemo::Answer::Form::kNodeBits,
                              std::vector<uint64_t>(node_words, 0)};
  for (const uint64_t packed : words.data) {
    const uint32_t base = static_cast<uint32_t>(packed >> 32) * 32;
    for (uint32_t bits = static_cast<uint32_t>(packed); bits != 0; bits &= bits - 1) {
      const uint32_t at = walked.NodeOfToken(base + static_cast<uint32_t>(__builtin_ctz(bits)));
      if (at < begin || at >= end) return words;  // not below the node (never expected)
      by_node.data[(at - begin) >> 6] |= uint64_t{1} << ((at - begin) & 63);
    }
  }
  return by_node;
}

void Matcher::SetAnswerBits(uint32_t node, uint8_t trie, const SubtreeMemo::Answer& answer,
                            uint32_t* row) const {
  if (answer.form == SubtreeMemo::Answer::Form::kRowWords) {
    for (const uint64_t packed : answer.data) row[packed >> 32] |= static_cast<uint32_t>(packed);
    return;
  }
  const TokenTrie& walked = grammar_->TrieOf(trie);
  const auto& nodes = walked.nodes();
  const size_t begin = node + 1;
  for (size_t w = 0; w < answer.data.size(); ++w) {
    for (uint64_t word = answer.data[w]; word != 0; word &= word - 1) {
      const TokenTrie::Node& n = nodes[begin + w * 64 + static_cast<size_t>(__builtin_ctzll(word))];
      row[n.token >> 5] |= uint32_t{1} << (n.token & 31);
      if (n.has_duplicates()) {
        for (uint32_t id : walked.DuplicateTokens(n)) row[id >> 5] |= uint32_t{1} << (id & 31);
      }
    }
  }
}

void Matcher::WalkSubtrees(size_t begin, size_t end, uint32_t* row, uint8_t trie_id) {
  const TokenTrie& trie = grammar_->TrieOf(trie_id);
  const auto& nodes = trie.nodes();
  size_t i = begin;
  while (i < end) {
    const TokenTrie::Node& node = nodes[i];
    crossed_boundary_ = false;
    // (No boundary memo here: its probes cost the walk about what they save, now that the
    // byte-independent part of a boundary comes from lexeme_ends_.)
    if (!Step(walk_rows_[node.depth - 1], node.byte(), &walk_rows_[node.depth],
              /*memoize=*/false)) {
      i += node.subtree_size();
      continue;
    }
    if (node.has_token()) {
      row[node.token >> 5] |= uint32_t{1} << (node.token & 31);
      if (node.has_duplicates()) {
        for (uint32_t id : trie.DuplicateTokens(node)) row[id >> 5] |= uint32_t{1} << (id & 31);
      }
    }
    // A lexeme boundary above a large subtree: the lexer-only part of each thread's walk is
    // the same for every parser state, so it comes from the cache (the walk resumes after it,
    // or goes on below with the threads the cache could not take).
    // (The cached walks' frontiers overwrite walk rows at this depth and below: the threads
    // left uncached go to a vector of their own.)
    if (crossed_boundary_ && node.subtree_size() >= CompiledGrammar::kMinCachedSubtree) {
      std::vector<Thread> uncached;
      WalkCachedThreads(static_cast<uint32_t>(i), walk_rows_[node.depth], row, trie_id,
                        &uncached);
      if (uncached.empty()) {
        i += node.subtree_size();
        continue;
      }
      walk_rows_[node.depth] = std::move(uncached);
    }
    if (steps_ > mask_step_budget_) throw BudgetExceededError(MaskBudgetMessage());
    ++i;
  }
}

}  // namespace jaxguide
