#include "core/splitmix.h"

#include <gtest/gtest.h>

#include <vector>

namespace stagecraft {
namespace {

// The reference outputs of Vigna's splitmix64.c for seed 1234567 (Rosetta Code,
// "Pseudo-random numbers/Splitmix64"): the generator is SplitMix64, bit for bit.
TEST(SplitMix64Test, MatchesTheReferenceOutputs) {
  SplitMix64 random(1234567);
  const std::vector<uint64_t> expected = {6457827717110365317ULL, 3203168211198807973ULL,
                                          9817491932198370423ULL, 4593380528125082431ULL,
                                          16408922859458223821ULL};
  for (uint64_t value : expected) EXPECT_EQ(random.Next(), value);
}

TEST(SplitMix64Test, UnitDrawsStayInTheirIntervals) {
  SplitMix64 random(7);
  for (int i = 0; i < 10000; ++i) {
    const double closed = random.NextUnit();
    EXPECT_GT(closed, 0.0);
    EXPECT_LE(closed, 1.0);
    const double open = random.NextOpenUnit();
    EXPECT_GT(open, 0.0);
    EXPECT_LT(open, 1.0);
  }
}

TEST(SplitMix64Test, BelowCoversTheRangeAndNothingElse) {
  SplitMix64 random(3);
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 5000; ++i) {
    const uint64_t value = random.NextBelow(5);
    ASSERT_LT(value, 5u);
    ++seen[value];
  }
  for (int count : seen) EXPECT_GT(count, 800);  // about 1000 each
  EXPECT_EQ(random.NextBelow(1), 0u);
}

}  // namespace
}  // namespace stagecraft
