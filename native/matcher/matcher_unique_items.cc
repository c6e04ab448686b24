// The checked-containers half of Matcher (unique arrays, keyed objects; see unique_items.h for
// the scanner and the design): masks filtered of the tokens that would repeat an item or a key
// (or close a keyed object that lacks a required key), or leave only repeats to write, and the
// bounded search that decides the second.
//
// Cost: a mask pays only where a unique array is open. Outside strings every allowed token is
// fed to the scanner (a few bytes each) and asked AtRisk; inside a string only the tokens that
// can end it (a quote or backslash) or that follow an earlier item's string (found by walking
// the token trie along the rest of those strings). Only tokens after which an item is at risk
// get the search: at most kUniqueSearchSteps live byte steps each, its answers memoized per
// state over one mask (many tokens reach the same state a byte later; states that differ only
// in white space between tokens are one: the hundreds of white-space tokens of a 128k
// vocabulary, where the grammar takes any run alike, share one search).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "native/matcher/matcher.h"

namespace jaxguide {

void Matcher::FilterUniqueItems(uint32_t* row) {
  const TokenizerInfo& tokenizer = grammar_->tokenizer();
  // The checks below build Earley sets (and memoize Steps over them, when a mask's memo is
  // on): all are kept until every token is checked, then dropped at once.
  const size_t sets_before = parser_.num_sets();
  struct DropSets {
    Matcher* matcher;
    size_t sets;
    ~DropSets() {
      matcher->boundary_memo_.End();
      matcher->lexeme_ends_.End();
      matcher->TruncateSets(sets);
    }
  } const drop_sets{this, sets_before};
  std::unordered_map<std::string, bool> memo;  // ItemsCanDiffer's, over this mask's tokens
  unique_search_memo_ = &memo;
  unique_search_items_before_ = unique_.num_items();
  struct ClearMemo {
    Matcher* matcher;
    ~ClearMemo() { matcher->unique_search_memo_ = nullptr; }
  } const clear_memo{this};
  const UniqueItems::Checkpoint before = unique_.Save();
  auto check = [&](uint32_t id) {
    uint32_t& word = row[id >> 5];
    const uint32_t bit = uint32_t{1} << (id & 31);
    if ((word & bit) == 0) return;
    const std::string_view bytes = tokenizer.token_bytes(id);
    if (bytes.empty()) return;  // EOS, special tokens
    size_t prefix_pos = 0;
    std::string_view rest = bytes;
    if (!pending_prefix().empty() && !SplitPrefix(bytes, &prefix_pos, &rest)) return;
    if (!TokenKeepsItemsUnique(rest, /*keep_sets=*/true, &before)) word &= ~bit;
  };
  auto check_all = [&] {
    const size_t width = tokenizer.bitmask_width();
    for (size_t w = 0; w < width; ++w) {
      for (uint32_t bits = row[w]; bits != 0; bits &= bits - 1) {
        check(static_cast<uint32_t>(w * 32 + __builtin_ctz(bits)));
      }
    }
  };
  try {
    if (!unique_.Active()) {
      // Outside every checked container: only a token that opens one can repeat anything.
      for (const uint32_t id : grammar_->tokens_opening_containers()) check(id);
    } else if (unique_.InString() && pending_prefix().empty()) {
      // Inside a string, a token without a quote or a backslash only extends it: it can put
      // an item at risk only by following the rest of an earlier item's string.
      std::vector<std::string> remainders;
      const bool at_risk = unique_.AtRisk(&remainders);
      for (const uint32_t id : grammar_->tokens_with_quote_or_backslash()) check(id);
      if (at_risk) {
        const TokenTrie& trie = tokenizer.trie();
        const auto& nodes = trie.nodes();
        for (const std::string& rest : remainders) {
          size_t node = 0;
          for (const char c : rest) {
            const int64_t child = trie.FindChild(node, static_cast<uint8_t>(c));
            if (child < 0) break;
            node = static_cast<size_t>(child);
            if (!nodes[node].has_token()) continue;
            check(nodes[node].token);
            for (const uint32_t id : trie.DuplicateTokens(nodes[node])) check(id);
          }
        }
      }
    } else {
      check_all();
    }
  } catch (const std::exception& e) {
    SetError(e.what());
    WriteEosOnly(row);
  }
}

bool Matcher::TokenKeepsItemsUnique(std::string_view bytes, bool keep_sets,
                                    const UniqueItems::Checkpoint* now) {
  // A cheap pass first: the scanner alone, every array opened inside the token taken as
  // unique (sound: more arrays checked). Most tokens leave no item at risk.
  const UniqueItems::Checkpoint saved = now == nullptr ? unique_.Save() : UniqueItems::Checkpoint{};
  const UniqueItems::Checkpoint& before = now == nullptr ? saved : *now;
  bool fed = true;
  for (const char c : bytes) {
    if (!unique_.Feed(static_cast<uint8_t>(c), UniqueItems::kAssumeChecked)) {
      fed = false;
      break;
    }
  }
  const bool settled = fed && !unique_.AtRisk();
  unique_.Restore(before);
  if (settled) return true;
  // Exactly: the parser says which arrays opened in the token are unique, and a search says
  // whether the items at risk can still differ.
  const size_t sets_before = parser_.num_sets();
  std::vector<Thread> threads = current_;
  size_t budget = kUniqueSearchSteps;
  const bool keeps = AdvanceBytes(bytes, &threads, &unique_) && ItemsCanDiffer(threads, &budget);
  unique_.Restore(before);
  if (!keep_sets) TruncateSets(sets_before);
  return keeps;
}

namespace {

bool IsJsonSpace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

// The order in which ItemsCanDiffer tries bytes: what closes a string, a number, a container
// first (an item is decided soonest), then digits, letters, other printable ASCII, the rest,
// and white space last.
struct SearchOrder {
  std::array<uint8_t, 256> bytes{};
  SearchOrder() {
    size_t n = 0;
    std::array<bool, 256> taken{};
    auto add = [&](int b) {
      if (!taken[b]) {
        taken[b] = true;
        bytes[n++] = static_cast<uint8_t>(b);
      }
    };
    for (const char c : std::string_view("\"]},")) add(static_cast<uint8_t>(c));
    for (int b = '0'; b <= '9'; ++b) add(b);
    for (int b = 'a'; b <= 'z'; ++b) add(b);
    for (int b = 'A'; b <= 'Z'; ++b) add(b);
    for (int b = 0x21; b < 0x7f; ++b) add(b);
    for (int b = 0; b < 256; ++b) {
      if (!IsJsonSpace(static_cast<uint8_t>(b))) add(b);
    }
    for (const char c : std::string_view(" \n\t\r")) add(static_cast<uint8_t>(c));
  }
};

const SearchOrder& TheSearchOrder() {
  static const SearchOrder order;
  return order;
}

}  // namespace

bool Matcher::ItemsCanDiffer(const std::vector<Thread>& threads, size_t* budget,
                             bool after_space) {
  if (!unique_.AtRisk()) return true;
  if (*budget == 0) return true;  // unproven: allowed (see kUniqueSearchSteps)
  // Many tokens lead to the same state a byte or two later (every run of white space before
  // the same quote): what a search proved there is remembered for the mask.
  std::string key;
  if (unique_search_memo_ != nullptr) {
    key.assign(reinterpret_cast<const char*>(threads.data()), threads.size() * sizeof(Thread));
    key.push_back(after_space);
    unique_.AppendStateKey(unique_search_items_before_, &key);
    const auto found = unique_search_memo_->find(key);
    if (found != unique_search_memo_->end()) return found->second;
  }
  std::vector<Thread> next, after_space_threads;
  bool tried_space = false, other_bytes = false, differs = false;
  for (const uint8_t byte : TheSearchOrder().bytes) {
    const bool space = IsJsonSpace(byte);
    // White space changes no value, and where the layout makes it optional a run of it is
    // as good as none: after a white space byte, more is tried only where nothing else can
    // follow (an indent). The search stays linear in a run of flexible white space.
    if (space && after_space && other_bytes) break;
    parser_.ExtendWorkLimit(kEarleyStepsPerByte);
    scanned_ = UniqueItems::Scanned{};
    if (!Step(threads, byte, &next)) continue;
    if (space) {
      // JSON white space bytes are one to the scanner: one that leads to the threads another
      // led to has the same continuations.
      if (tried_space && next == after_space_threads) continue;
      tried_space = true;
      after_space_threads = next;
    } else {
      other_bytes = true;
    }
    --*budget;
    const UniqueItems::Checkpoint before = unique_.Save();
    differs = unique_.Feed(byte, scanned_) && ItemsCanDiffer(next, budget, space);
    unique_.Restore(before);
    if (*budget == 0) return true;  // unproven (not remembered)
    if (differs) break;
  }
  if (unique_search_memo_ != nullptr) unique_search_memo_->emplace(std::move(key), differs);
  return differs;
}

void Matcher::DropRepeatedItems(std::vector<ForcedPiece>* pieces, size_t prefix_bytes,
                                const std::vector<UniqueItems::Scanned>& scanned) {
  // Forced bytes the scanner refuses are left out, with what follows them (the masks go on
  // from there).
  const UniqueItems::Checkpoint before = unique_.Save();
  size_t n = 0;  // bytes seen so far, healed ones included
  for (size_t i = 0; i < pieces->size(); ++i) {
    const std::string& bytes = (*pieces)[i].bytes;
    size_t ok = 0;
    for (; ok < bytes.size(); ++ok, ++n) {
      if (n < prefix_bytes) continue;
      const size_t k = n - prefix_bytes;
      if (!unique_.Feed(static_cast<uint8_t>(bytes[ok]),
                        k < scanned.size() ? scanned[k] : UniqueItems::kAssumeChecked)) {
        break;
      }
    }
    if (ok < bytes.size()) {
      (*pieces)[i].bytes.resize(ok);
      pieces->resize(ok == 0 ? i : i + 1);
      break;
    }
  }
  unique_.Restore(before);
}

}  // namespace jaxguide
