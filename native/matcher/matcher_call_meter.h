// Matcher::CallMeter (private to the matcher's .cc files): the work meters of one public call.
// Every public call but a mask (which installs its own) holds one: a DFA build meter and an
// Earley work meter of mask_step_budget each (the Earley one grows by kEarleyStepsPerByte per
// byte the call reads, see AdvanceBytes). Nested calls share the outer call's meters.
#ifndef JAXGUIDE_NATIVE_MATCHER_MATCHER_CALL_METER_H_
#define JAXGUIDE_NATIVE_MATCHER_MATCHER_CALL_METER_H_

#include <cstdint>
#include <optional>

#include "native/lexer/lexer_dfa.h"
#include "native/matcher/matcher.h"

namespace jaxguide {

class Matcher::CallMeter {
 public:
  explicit CallMeter(Matcher* matcher) : matcher_(matcher) {
    if (matcher_->meter_ != nullptr) return;  // nested in another public call: its meter
    meter_ = BuildMeter{&used_, matcher_->mask_step_budget_};
    matcher_->meter_ = &*meter_;
    // Earley work has a meter of its own: it grows with the bytes the call reads
    // (AdvanceBytes), and must not eat the DFA build allowance of a long accept.
    matcher_->parser_.SetWorkMeter(&earley_used_, matcher_->mask_step_budget_);
    scoped_.emplace(&*meter_);
  }
  ~CallMeter() {
    if (meter_) {
      matcher_->meter_ = nullptr;
      matcher_->parser_.SetWorkMeter(nullptr, 0);
    }
  }
  CallMeter(const CallMeter&) = delete;
  CallMeter& operator=(const CallMeter&) = delete;

 private:
  Matcher* matcher_;
  uint64_t used_ = 0;
  uint64_t earley_used_ = 0;
  std::optional<BuildMeter> meter_;
  std::optional<LexerDfa::ScopedBuildMeter> scoped_;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_MATCHER_CALL_METER_H_
