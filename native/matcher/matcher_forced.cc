// Matcher::ComputeForced: what the grammar forces next (fast-forward), without changing the
// state.
//
// Design note. From the current threads, every byte 0..255 is stepped; exactly one that keeps
// the output alive (and no special token) is forced, and the search goes on from it. It stops
// where the output may end, where two bytes or a byte and a special token are possible, or
// after max_bytes. A lone special token allowed where the lexeme can end is a piece of its
// own. The Earley sets built are dropped again. Cost: 256 lexer steps per forced byte (plus
// the parser's scans at lexeme ends), bounded by max_bytes and the call's work meters.
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
  try {
    std::vector<Thread> threads = current_, next, only;
    std::vector<uint32_t> ends;
    size_t forced_bytes = 0;
    if (!pending_prefix().empty()) {  // the healed bytes come first
      pieces.push_back(ForcedPiece{std::string(pending_prefix().substr(0, max_bytes))});
      forced_bytes = pieces.back().bytes.size();
    }
    while (forced_bytes < max_bytes && !ThreadsAccept(threads)) {
      // The bytes that keep the output viable: forced when exactly one.
      int forced = -1;
      for (int byte = 0; byte < 256; ++byte) {
        if (!Step(threads, static_cast<uint8_t>(byte), &next)) continue;
        if (forced >= 0) {
          forced = -2;
          break;
        }
        forced = byte;
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
  if (grammar_->has_unique_arrays()) DropRepeatedItems(&pieces);
  return pieces;
}

}  // namespace jaxguide
