// Matcher::ComputeForced: what the grammar forces next (fast-forward), without changing the
// state.
//
// Design note. From the current threads, every byte 0..255 is stepped; exactly one that keeps
// the output alive (and no special token) is forced, and the search goes on from it. It stops
// where the output may end, where two bytes or a byte and a special token are possible, or
// after max_bytes. A lone special token allowed where the lexeme can end is a piece of its
// own. The Earley sets built are dropped again; where the grammar has checked containers
// (unique_items.h), forced bytes the scanner refuses are cut (DropRepeatedItems). Cost: 256
// lexer steps per forced byte (plus the parser's scans at lexeme ends), bounded by max_bytes
// and the call's work meters.
#include <string>
#include <vector>

#include "native/matcher/matcher.h"
#include "native/matcher/matcher_call_meter.h"

namespace jaxguide {

std::vector<Matcher::ForcedPiece> Matcher::ComputeForced(size_t max_bytes) {
  std::vector<ForcedPiece> pieces;
  if (has_error() || terminated_) return pieces;
  const CallMeter metered(this);
  const size_t sets_before = parser_.num_sets();
  size_t prefix_bytes = 0;                    // healed bytes first: no output of the grammar
  std::vector<UniqueItems::Scanned> scanned;  // what each forced byte scanned (for the checks)
  try {
    std::vector<Thread> threads = current_, next, only;
    std::vector<uint32_t> ends;
    size_t forced_bytes = 0;
    if (!pending_prefix().empty()) {  // the healed bytes come first
      pieces.push_back(ForcedPiece{std::string(pending_prefix().substr(0, max_bytes))});
      forced_bytes = prefix_bytes = pieces.back().bytes.size();
    }
    while (forced_bytes < max_bytes && !ThreadsAccept(threads)) {
      // The bytes that keep the output viable: forced when exactly one.
      int forced = -1;
      UniqueItems::Scanned forced_scanned;
      for (int byte = 0; byte < 256; ++byte) {
        scanned_ = UniqueItems::Scanned{};
        if (!Step(threads, static_cast<uint8_t>(byte), &next)) continue;
        if (forced >= 0) {
          forced = -2;
          break;
        }
        forced = byte;
        forced_scanned = scanned_;
        only.swap(next);
      }
      // Special tokens allowed here (where the current lexeme can end).
      int64_t special = -1;
      int specials = 0;
      if (!grammar_->special_tokens().empty()) {
        LexemeEnds(threads, &ends);
        for (const auto& [token, terminal] : grammar_->special_tokens()) {
          for (const uint32_t set : ends) {
            if (parser_.AllowedTerminals(set).Contains(terminal)) {
              if (special != static_cast<int64_t>(token)) ++specials;
              special = token;
              break;
            }
          }
        }
      }
      if (forced >= 0 && specials == 0) {
        if (pieces.empty() || pieces.back().bytes.empty()) pieces.push_back(ForcedPiece{});
        pieces.back().bytes.push_back(static_cast<char>(forced));
        scanned.push_back(forced_scanned);
        ++forced_bytes;
        threads.swap(only);
      } else if (forced == -1 && specials == 1) {
        pieces.push_back(ForcedPiece{"", special});
        if (!AdvanceSpecial(static_cast<uint32_t>(special), &threads)) break;
      } else {
        break;
      }
    }
  } catch (const std::exception& e) {
    SetError(e.what());
    pieces.clear();
  }
  TruncateSets(sets_before);
  if (grammar_->has_value_checks()) DropRepeatedItems(&pieces, prefix_bytes, scanned);
  return pieces;
}

}  // namespace jaxguide
