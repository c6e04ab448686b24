// Tests for EliminateStates: small DFAs written back by hand (elimination order, loops,
// alternatives grouped), no string, the state bound, the length budget in code points.
#include "native/lexer/state_elimination.h"

#include <string>
#include <vector>

#include "native/support/testing.h"

namespace jaxguide {
namespace {

using Status = EliminationResult::Status;

// Atoms 0, 1, 2 read "a", "b", "c" (`a_text` replaces "a"); several atoms, a class of them.
EdgePiece Letters(const std::string& a_text = "a") {
  return [a_text](const std::vector<uint32_t>& atoms) -> std::optional<std::string> {
    static const char* const kNames[] = {"", "b", "c"};
    if (atoms.size() == 1) return atoms[0] == 0 ? a_text : std::string(kNames[atoms[0]]);
    std::string out = "[";
    for (uint32_t atom : atoms) out += atom == 0 ? a_text : std::string(kNames[atom]);
    return out + "]";
  };
}

// a b*: state 0 -a-> 1, 1 -b-> 1 (final), 2 dead.
const std::vector<uint32_t> kAStarB = {1, 2, 2, 2, 1, 2, 2, 2, 2};
const std::vector<uint8_t> kAStarBFinal = {0, 1, 0};

JG_TEST(StateElimination, LoopsBecomeStars) {
  const EliminationResult r =
      EliminateStates(kAStarB.data(), 3, 3, kAStarBFinal, Letters(), 0, 1000);
  JG_EXPECT_TRUE(r.status == Status::kRegex);
  JG_EXPECT_EQ(r.regex, std::string("a(?:b)*"));
  JG_EXPECT_EQ(r.live_states, size_t{2});
}

JG_TEST(StateElimination, ParallelPathsAreAlternativesGrouped) {
  // 0 -a-> 2 (final), 0 -b-> 1 -b-> 2, 3 dead: the degree-2 state 1 goes first ("a|bb"),
  // then 0 before 2 (equal degrees: the lower state); wrap looks for a `|` anywhere, so the
  // group is grouped again when 2 goes.
  const std::vector<uint32_t> table = {2, 1, 3, 3, 2, 3, 3, 3, 3, 3, 3, 3};
  const EliminationResult r = EliminateStates(table.data(), 4, 3, {0, 0, 1, 0}, Letters(), 0,
                                              1000);
  JG_EXPECT_EQ(r.regex, std::string("(?:(?:a|bb))"));
}

JG_TEST(StateElimination, NoStringNoBoundNoBudget) {
  const EliminationResult none =
      EliminateStates(kAStarB.data(), 3, 3, {0, 0, 0}, Letters(), 0, 1000);
  JG_EXPECT_TRUE(none.status == Status::kNoString);
  const EliminationResult bound =
      EliminateStates(kAStarB.data(), 3, 3, kAStarBFinal, Letters(), 1, 1000);
  JG_EXPECT_TRUE(bound.status == Status::kTooManyStates);
  JG_EXPECT_EQ(bound.live_states, size_t{2});
  JG_EXPECT_TRUE(EliminateStates(kAStarB.data(), 3, 3, kAStarBFinal, Letters(), 2, 1000).status ==
                 Status::kRegex);
}

JG_TEST(StateElimination, TheBudgetCountsCodePoints) {
  // "é(?:b)*": 7 code points, 8 bytes.
  const EdgePiece accented = Letters("\xC3\xA9");
  const EliminationResult fits =
      EliminateStates(kAStarB.data(), 3, 3, kAStarBFinal, accented, 0, 7);
  JG_EXPECT_TRUE(fits.status == Status::kRegex);
  JG_EXPECT_EQ(fits.regex, std::string("\xC3\xA9(?:b)*"));
  JG_EXPECT_TRUE(EliminateStates(kAStarB.data(), 3, 3, kAStarBFinal, accented, 0, 6).status ==
                 Status::kTooLong);
}

JG_TEST(StateElimination, AnEdgeWithoutAPieceIsNoEdge) {
  // b has no piece: 0 -a-> 1 and nothing loops.
  const EdgePiece no_b = [](const std::vector<uint32_t>& atoms) -> std::optional<std::string> {
    if (atoms.size() == 1 && atoms[0] == 1) return std::nullopt;
    return std::string("a");
  };
  const EliminationResult r = EliminateStates(kAStarB.data(), 3, 3, kAStarBFinal, no_b, 0, 100);
  JG_EXPECT_EQ(r.regex, std::string("a"));
}

}  // namespace
}  // namespace jaxguide

JG_TEST_MAIN()
