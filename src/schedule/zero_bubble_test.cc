// The Zero-Bubble handcrafted schedules ZB-H1 and ZB-H2 (Qi et al., ICLR 2024, §3.1): shape,
// order and the program-order memory counts. Timing (makespan, bubble) is tested against the
// closed forms in analysis/closed_form_test.cc, which can simulate.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "schedule/generator.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

std::string Joined(const std::vector<Action>& actions) {
  std::string text;
  for (const Action& action : actions) text += (text.empty() ? "" : " ") + FormatAction(action);
  return text;
}

// Every (stage, microbatch) gets exactly one F, I and W (no B) on its own rank, in the order
// F, I, W on that rank.
void ExpectCompleteSplitBackward(const Schedule& schedule, const GeneratorParams& params) {
  SCOPED_TRACE(schedule.name + " pp=" + std::to_string(params.pp) +
               " m=" + std::to_string(params.microbatches));
  EXPECT_EQ(schedule.num_ranks, params.pp);
  EXPECT_EQ(schedule.num_stages, params.pp);
  EXPECT_EQ(schedule.num_microbatches, params.microbatches);
  EXPECT_EQ(schedule.placement, Placement::kLoop);
  ASSERT_EQ(schedule.rank_actions.size(), static_cast<size_t>(params.pp));
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    std::map<std::tuple<int32_t, ActionKind>, size_t> position;
    const auto& actions = schedule.rank_actions[rank];
    EXPECT_EQ(actions.size(), 3u * static_cast<size_t>(params.microbatches));
    for (size_t index = 0; index < actions.size(); ++index) {
      const Action& action = actions[index];
      EXPECT_EQ(action.stage, StageId(rank)) << FormatAction(action);
      EXPECT_NE(action.kind, ActionKind::kBackward) << FormatAction(action);
      const bool inserted =
          position.emplace(std::make_tuple(action.microbatch.value(), action.kind), index).second;
      EXPECT_TRUE(inserted) << "twice: " << FormatAction(action);
    }
    for (int32_t microbatch = 0; microbatch < params.microbatches; ++microbatch) {
      const auto at = [&](ActionKind kind) {
        const auto found = position.find({microbatch, kind});
        return found == position.end() ? SIZE_MAX : found->second;
      };
      ASSERT_NE(at(ActionKind::kWeightGrad), SIZE_MAX) << rank << "W" << microbatch;
      EXPECT_LT(at(ActionKind::kForward), at(ActionKind::kInputGrad)) << rank << "F" << microbatch;
      EXPECT_LT(at(ActionKind::kInputGrad), at(ActionKind::kWeightGrad))
          << rank << "I" << microbatch;
    }
  }
}

// Program-order counts on one rank: activations held (F until I), W passes pending (I until W),
// and the forwards before the first I.
struct RankCounts {
  int32_t peak_activations = 0;
  int32_t peak_pending_weight_grads = 0;
  int32_t leading_forwards = 0;
};

RankCounts CountsOf(const std::vector<Action>& actions) {
  RankCounts counts;
  int32_t activations = 0;
  int32_t pending = 0;
  bool seen_input_grad = false;
  for (const Action& action : actions) {
    if (action.kind == ActionKind::kForward) ++activations;
    if (action.kind == ActionKind::kInputGrad) --activations, ++pending, seen_input_grad = true;
    if (action.kind == ActionKind::kWeightGrad) --pending;
    if (!seen_input_grad) counts.leading_forwards = activations;
    counts.peak_activations = std::max(counts.peak_activations, activations);
    counts.peak_pending_weight_grads = std::max(counts.peak_pending_weight_grads, pending);
  }
  return counts;
}

TEST(ZeroBubbleTest, RegisteredWithDescriptions) {
  for (const char* name : {"zb-h1", "zb-h2"}) {
    const Result<const ScheduleGenerator*> generator = FindScheduleGenerator(name);
    ASSERT_TRUE(generator.ok()) << name;
    EXPECT_TRUE(Contains(generator.value()->description, "Zero Bubble")) << name;
  }
  EXPECT_EQ(FindScheduleGenerator("zb-h1").value()->generate, GenerateZbH1);
  EXPECT_EQ(FindScheduleGenerator("zb-h2").value()->generate, GenerateZbH2);
}

TEST(ZeroBubbleTest, OneChunkPerRank) {
  for (const GenerateFn generate : {GenerateZbH1, GenerateZbH2}) {
    const Result<Schedule> schedule = generate({4, 2, 8, 0});
    ASSERT_FALSE(schedule.ok());
    EXPECT_TRUE(Contains(schedule.error().message, "vpp = 2")) << schedule.error().message;
    EXPECT_TRUE(Contains(schedule.error().message, "one chunk per rank"));
  }
  EXPECT_EQ(GenerateZbH1({4, 3, 8, 0}).error().message.rfind("zb-h1: ", 0), 0u);
  EXPECT_EQ(GenerateZbH2({4, 3, 8, 0}).error().message.rfind("zb-h2: ", 0), 0u);
  EXPECT_TRUE(Contains(GenerateZbH2({0, 1, 8, 0}).error().message, "pp must be at least 1"));
  EXPECT_TRUE(Contains(GenerateZbH1({4, 1, 0, 0}).error().message, "microbatches"));
}

TEST(ZeroBubbleTest, EveryActionExactlyOnceInOrder) {
  for (const GenerateFn generate : {GenerateZbH1, GenerateZbH2}) {
    for (int32_t pp : {1, 2, 3, 4, 5, 8, 16}) {
      for (int32_t microbatches : {1, 2, 3, 4, 7, 8, 15, 16, 33}) {
        const GeneratorParams params{pp, 1, microbatches, 0};
        const Result<Schedule> schedule = generate(params);
        ASSERT_TRUE(schedule.ok()) << schedule.error().message;
        ExpectCompleteSplitBackward(schedule.value(), params);
      }
    }
  }
}

// Figure 3 (top) of the paper for p = 4: rank 0 runs 1F1B with W right after each I; the last
// rank defers p − 1 = 3 W passes to its cool-down.
TEST(ZbH1Test, HandWrittenP4M6) {
  const Schedule schedule = GenerateZbH1({4, 1, 6, 0}).value();
  EXPECT_EQ(schedule.name, "zb-h1");
  EXPECT_EQ(Joined(schedule.rank_actions[0]),
            "0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0I3 0W3 0I4 0W4 0I5 0W5");
  EXPECT_EQ(Joined(schedule.rank_actions[1]),
            "1F0 1F1 1F2 1I0 1F3 1I1 1W0 1F4 1I2 1W1 1F5 1I3 1W2 1I4 1W3 1I5 1W4 1W5");
  EXPECT_EQ(Joined(schedule.rank_actions[3]),
            "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3W3 3W4 3W5");
}

// Rank r: 1F1B's forwards before the first I (min(p − r, m)), so at most p − r activations, and
// r deferred W passes (worker i = r + 1 holds (p − i + 1)·M_B + (i − 1)·M_W, paper §3.1): r + 1
// are pending between an I and the W that follows it.
TEST(ZbH1Test, KeepsOneFOneBInFlightAndDefersRWeightGrads) {
  for (int32_t pp : {1, 2, 4, 7, 8, 16}) {
    for (int32_t microbatches : {1, 3, 8, 16, 24}) {
      const Schedule schedule = GenerateZbH1({pp, 1, microbatches, 0}).value();
      for (int32_t rank = 0; rank < pp; ++rank) {
        SCOPED_TRACE("pp=" + std::to_string(pp) + " m=" + std::to_string(microbatches) +
                     " rank=" + std::to_string(rank));
        const RankCounts counts = CountsOf(schedule.rank_actions[rank]);
        EXPECT_EQ(counts.leading_forwards, std::min(pp - rank, microbatches));
        EXPECT_EQ(counts.peak_activations, std::min(pp - rank, microbatches));
        EXPECT_EQ(counts.peak_pending_weight_grads, std::min(rank + 1, microbatches));
      }
    }
  }
}

// Figure 3 (bottom) for p = 3: rank 0 runs 2p − 1 = 5 forwards before its first I, the last rank
// defers 2(p − 1) = 4 W passes.
TEST(ZbH2Test, HandWrittenP3M6) {
  const Schedule schedule = GenerateZbH2({3, 1, 6, 0}).value();
  EXPECT_EQ(schedule.name, "zb-h2");
  EXPECT_EQ(Joined(schedule.rank_actions[0]),
            "0F0 0F1 0F2 0F3 0F4 0I0 0W0 0F5 0I1 0W1 0I2 0W2 0I3 0W3 0I4 0W4 0I5 0W5");
  EXPECT_EQ(Joined(schedule.rank_actions[1]),
            "1F0 1F1 1F2 1I0 1F3 1I1 1F4 1I2 1W0 1F5 1I3 1W1 1I4 1W2 1I5 1W3 1W4 1W5");
  EXPECT_EQ(Joined(schedule.rank_actions[2]),
            "2F0 2I0 2F1 2I1 2F2 2I2 2F3 2I3 2F4 2I4 2W0 2F5 2I5 2W1 2W2 2W3 2W4 2W5");
}

// Rank r runs 2(p − r) − 1 forwards before its first I (Table 2: peak (2p − 1)·M_B on rank 0)
// and defers 2r W passes (2r + 1 pending between an I and the W after it) when m > 2r.
TEST(ZbH2Test, DoublesWarmupAndDeferral) {
  for (int32_t pp : {1, 2, 4, 7, 8, 16}) {
    for (int32_t microbatches : {1, 3, 8, 16, 31, 40}) {
      const Schedule schedule = GenerateZbH2({pp, 1, microbatches, 0}).value();
      for (int32_t rank = 0; rank < pp; ++rank) {
        SCOPED_TRACE("pp=" + std::to_string(pp) + " m=" + std::to_string(microbatches) +
                     " rank=" + std::to_string(rank));
        const RankCounts counts = CountsOf(schedule.rank_actions[rank]);
        EXPECT_EQ(counts.leading_forwards, std::min(2 * (pp - rank) - 1, microbatches));
        EXPECT_EQ(counts.peak_activations, std::min(2 * (pp - rank) - 1, microbatches));
        EXPECT_EQ(counts.peak_pending_weight_grads, std::min(2 * rank + 1, microbatches));
      }
      if (microbatches >= 2 * pp - 1) {
        EXPECT_EQ(CountsOf(schedule.rank_actions[0]).peak_activations, 2 * pp - 1);
      }
    }
  }
}

}  // namespace
}  // namespace stagecraft
