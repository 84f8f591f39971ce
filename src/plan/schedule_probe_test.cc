#include "plan/schedule_probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "analysis/closed_form.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

Time Ns(int64_t ns) { return Time::Nanoseconds(ns); }

// On the schedules that have one, the compute-only run lands exactly on the closed form (both
// assume uniform stages and no transfer time), over random shapes and costs.
TEST(ScheduleProbeTest, MatchesTheClosedFormsWhereTheyAreExact) {
  std::mt19937 random(20261203);
  int compared = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int32_t pp = 2 + static_cast<int32_t>(random() % 7);
    const int64_t forward = 1'000 + random() % 9'000;
    const int64_t input_grad = 1'000 + random() % 9'000;
    const int64_t weight_grad = 1'000 + random() % 9'000;
    for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b"}) {
      const int32_t vpp = std::string(name) == "interleaved-1f1b" ? 2 : 1;
      const int32_t microbatches = pp * (1 + static_cast<int32_t>(random() % 4));
      auto form = DeriveClosedForm({name, pp, vpp, microbatches, Ns(forward),
                                    Ns(input_grad + weight_grad), Ns(weight_grad)});
      ASSERT_TRUE(form.ok()) << name << ": " << form.error().message;
      if (!form.value().exact) continue;
      auto probe =
          ProbeSchedule(name, pp, vpp, microbatches, Ns(forward), Ns(input_grad), Ns(weight_grad));
      ASSERT_TRUE(probe.ok()) << name << ": " << probe.error().message;
      EXPECT_EQ(probe.value().makespan, form.value().makespan)
          << name << " pp " << pp << " m " << microbatches << " F " << forward << " I "
          << input_grad << " W " << weight_grad;
      ++compared;
    }
  }
  EXPECT_GT(compared, 500);
}

// The activations held: 1F1B min(m, p), GPipe m, ZB-H2 its 2(p - 1) warm-up forwards and one;
// the automatic schedules within their limits (p and 2p), and the V-shape family in its order
// (V-Min below V-Half below ZB-V, which holds 1F1B's 2p chunks of half a stage).
TEST(ScheduleProbeTest, CountsTheChunksARankHolds) {
  const Time f = Ns(1'000), i = Ns(1'000), w = Ns(1'000);
  const auto peak = [&](const char* name, int32_t pp, int32_t vpp, int32_t m) {
    auto probe = ProbeSchedule(name, pp, vpp, m, f, i, w);
    EXPECT_TRUE(probe.ok()) << name << ": " << probe.error().message;
    return probe.ok() ? probe.value().peak_chunks : -1;
  };
  EXPECT_EQ(peak("1f1b", 4, 1, 16), 4);
  EXPECT_EQ(peak("1f1b", 8, 1, 3), 3);
  EXPECT_EQ(peak("gpipe", 4, 1, 16), 16);
  EXPECT_EQ(peak("zb-h2", 4, 1, 16), 7);
  EXPECT_LE(peak("zb-1p", 8, 1, 32), 8);
  EXPECT_GT(peak("zb-2p", 8, 1, 32), 8);
  EXPECT_LE(peak("zb-2p", 8, 1, 32), 16);
  const int64_t v_min = peak("v-min", 8, 2, 32);
  const int64_t v_half = peak("v-half", 8, 2, 32);
  const int64_t zb_v = peak("zb-v", 8, 2, 32);
  EXPECT_LT(v_min, v_half);
  EXPECT_LT(v_half, zb_v);
  EXPECT_LE(zb_v, 16);
}

// Zero Bubble's automatic schedules, with I twice F and W a quarter of I: ZB-2P leaves less
// idle than ZB-1P, which leaves less than 1F1B (Qi et al., ICLR 2024, Table 4's ordering), and
// none beats the last rank's bound: its first forward waits (p - 1)F, then m(F + I + W) of work.
TEST(ScheduleProbeTest, AutomaticZeroBubbleBeats1F1B) {
  const Time f = Ns(1'000), i = Ns(2'000), w = Ns(500);
  const auto makespan = [&](const char* name) {
    auto probe = ProbeSchedule(name, 8, 1, 32, f, i, w);
    EXPECT_TRUE(probe.ok()) << name << ": " << probe.error().message;
    return probe.ok() ? probe.value().makespan.ns() : 0;
  };
  const int64_t bound = 32 * 3'500 + 7 * 1'000;
  EXPECT_EQ(makespan("1f1b"), 39 * 3'500);
  EXPECT_LT(makespan("zb-1p"), makespan("1f1b"));
  EXPECT_LT(makespan("zb-2p"), makespan("zb-1p"));
  EXPECT_GE(makespan("zb-2p"), bound);
}

TEST(ScheduleProbeTest, RefusesWhatTheGeneratorRefusesAndADeadlock) {
  auto refused = ProbeSchedule("v-half", 4, 1, 8, Ns(1), Ns(1), Ns(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("vpp"), std::string::npos) << refused.error().message;
  EXPECT_FALSE(ProbeSchedule("no-such", 4, 1, 8, Ns(1), Ns(1), Ns(1)).ok());

  // Rank 0 asks for microbatch 0's input gradient before running its forward.
  Schedule stuck;
  stuck.name = "stuck";
  stuck.num_ranks = 2;
  stuck.num_stages = 2;
  stuck.num_microbatches = 1;
  const MicrobatchId mb(0);
  stuck.rank_actions = {
      {{StageId(0), ActionKind::kInputGrad, mb}, {StageId(0), ActionKind::kForward, mb}},
      {{StageId(1), ActionKind::kForward, mb}, {StageId(1), ActionKind::kInputGrad, mb}}};
  EXPECT_FALSE(RunComputeOnly(stuck, Ns(1), Ns(1), Ns(1)).has_value());
  // In order, it runs: F F I I, 4 units on the chain.
  std::swap(stuck.rank_actions[0][0], stuck.rank_actions[0][1]);
  const auto ran = RunComputeOnly(stuck, Ns(1), Ns(1), Ns(1));
  ASSERT_TRUE(ran.has_value());
  EXPECT_EQ(ran->makespan, Ns(4));
  EXPECT_EQ(ran->peak_chunks, 1);
}

}  // namespace
}  // namespace stagecraft
