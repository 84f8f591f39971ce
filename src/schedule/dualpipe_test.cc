#include "schedule/dualpipe.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "schedule/generator.h"
#include "schedule/schedule_csv.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

// Every (stage, microbatch) has one F and either one B or one I and one W, on the rank the
// placement gives; F&B pairs are a forward then a full backward; W follows its I.
void ExpectComplete(const Schedule& schedule) {
  std::map<std::tuple<int32_t, int32_t, ActionKind>, int> count;
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    const auto& program = schedule.rank_actions[rank];
    for (size_t position = 0; position < program.size(); ++position) {
      const Action& action = program[position];
      EXPECT_EQ(PlacedRank(schedule, action), static_cast<int32_t>(rank)) << FormatAction(action);
      ++count[{action.stage.value(), action.microbatch.value(), action.kind}];
      if (action.overlapped) {
        ASSERT_GT(position, 0u);
        EXPECT_EQ(program[position - 1].kind, ActionKind::kForward);
        EXPECT_FALSE(program[position - 1].overlapped);
        EXPECT_EQ(action.kind, ActionKind::kBackward);
      }
      if (action.kind == ActionKind::kWeightGrad) {
        EXPECT_EQ(
            (count[{action.stage.value(), action.microbatch.value(), ActionKind::kInputGrad}]), 1)
            << "W before its I: " << FormatAction(action);
      }
    }
  }
  for (int32_t stage = 0; stage < schedule.num_stages; ++stage) {
    for (int32_t mb = 0; mb < schedule.num_microbatches; ++mb) {
      const std::string name = std::to_string(stage) + "/" + std::to_string(mb);
      EXPECT_EQ((count[{stage, mb, ActionKind::kForward}]), 1) << name;
      const int full = count[{stage, mb, ActionKind::kBackward}];
      const int input = count[{stage, mb, ActionKind::kInputGrad}];
      const int weight = count[{stage, mb, ActionKind::kWeightGrad}];
      EXPECT_TRUE((full == 1 && input == 0 && weight == 0) ||
                  (full == 0 && input == 1 && weight == 1))
          << name << " B=" << full << " I=" << input << " W=" << weight;
    }
  }
}

int32_t OverlappedOps(const std::vector<Action>& program) {
  int32_t ops = 0;
  for (const Action& action : program) ops += action.overlapped ? 1 : 0;
  return ops;
}

TEST(DualPipeTest, EveryActionOnceOnItsCopysRank) {
  for (int32_t pp : {2, 4, 6, 8, 16}) {
    for (int32_t microbatches : {2 * pp, 2 * pp + 2, 5 * pp}) {
      SCOPED_TRACE("p=" + std::to_string(pp) + " m=" + std::to_string(microbatches));
      const Schedule schedule = GenerateDualPipe({pp, 1, microbatches, 0}).value();
      EXPECT_EQ(schedule.placement, Placement::kDual);
      EXPECT_EQ(schedule.num_stages, pp);
      ExpectComplete(schedule);
      // Rank h from its end runs 2c − 3n + h + 1 F&B ops, one fewer at the turn (h = n − 1).
      const int32_t n = pp / 2;
      const int32_t c = microbatches / 2;
      for (int32_t rank = 0; rank < pp; ++rank) {
        const int32_t h = std::min(rank, pp - 1 - rank);
        EXPECT_EQ(OverlappedOps(schedule.rank_actions[rank]),
                  2 * c - 3 * n + h + 1 - (h == n - 1 ? 1 : 0))
            << "rank " << rank;
      }
    }
  }
}

TEST(DualPipeVTest, EveryActionOnceInTheV) {
  for (int32_t pp : {1, 2, 3, 4, 8, 16}) {
    for (int32_t microbatches : {2 * pp, 2 * pp + 1, 4 * pp}) {
      SCOPED_TRACE("p=" + std::to_string(pp) + " m=" + std::to_string(microbatches));
      const Schedule schedule = GenerateDualPipeV({pp, 2, microbatches, 0}).value();
      EXPECT_EQ(schedule.num_stages, 2 * pp);
      ExpectComplete(schedule);
      for (int32_t rank = 0; rank < pp; ++rank) {
        EXPECT_EQ(OverlappedOps(schedule.rank_actions[rank]),
                  2 * microbatches - 3 * pp + rank + 1 - (rank == pp - 1 ? 1 : 0))
            << "rank " << rank;
      }
    }
  }
}

// The first steps of rank 0 in DualPipeV p=4 m=8 (deepseek-ai/DualPipe's order): 2(p−1) = 6
// forwards of phase 0, then (F0, F1), then (I1, W, F1) x 3.
TEST(DualPipeVTest, Rank0Prefix) {
  const Schedule schedule = GenerateDualPipeV({4, 2, 8, 0}).value();
  std::string prefix;
  for (size_t index = 0; index < 17; ++index) {
    prefix += (index ? "," : "") + FormatAction(schedule.rank_actions[0][index]);
  }
  EXPECT_EQ(prefix, "0F0,0F1,0F2,0F3,0F4,0F5,0F6,7F0,7I0,7W0,7F1,7I1,7W1,7F2,7I2,7W2,7F3");
  EXPECT_TRUE(schedule.rank_actions[0][18].overlapped);  // (0F7;7B3)
}

TEST(DualPipeTest, Errors) {
  auto error = [](Result<Schedule> result) {
    EXPECT_FALSE(result.ok());
    return result.ok() ? std::string() : result.error().message;
  };
  EXPECT_TRUE(Contains(error(GenerateDualPipe({3, 1, 12, 0})), "even pipeline size"));
  EXPECT_TRUE(Contains(error(GenerateDualPipe({4, 1, 6, 0})), "at least 2p = 8"));
  EXPECT_TRUE(Contains(error(GenerateDualPipe({4, 1, 9, 0})), "even number of microbatches"));
  EXPECT_TRUE(Contains(error(GenerateDualPipe({4, 2, 8, 0})), "vpp 1"));
  EXPECT_TRUE(Contains(error(GenerateDualPipeV({4, 2, 7, 0})), "at least 2p = 8"));
  EXPECT_TRUE(Contains(error(GenerateDualPipeV({4, 1, 8, 0})), "vpp = 1"));
}

// torch.distributed.pipelining writes an overlapped pair as "(0F1;3B0)OVERLAP_F_B"; the CSV
// round trip keeps the pairs and finds the dual placement again.
TEST(DualPipeTest, CsvRoundTrip) {
  for (const Schedule& schedule :
       {GenerateDualPipe({4, 1, 8, 0}).value(), GenerateDualPipeV({4, 2, 8, 0}).value()}) {
    const std::string text = WriteScheduleCsv(schedule);
    EXPECT_TRUE(Contains(text, ")OVERLAP_F_B"));
    const Result<Schedule> parsed = ParseScheduleCsv(text, "dp.csv");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed.value().rank_actions, schedule.rank_actions);
    EXPECT_EQ(parsed.value().placement, schedule.placement);
  }
}

TEST(DualPipeTest, CsvOverlapErrors) {
  auto error = [](const std::string& text) {
    const Result<Schedule> parsed = ParseScheduleCsv(text, "bad.csv");
    EXPECT_FALSE(parsed.ok()) << text;
    return parsed.ok() ? std::string() : parsed.error().message;
  };
  EXPECT_TRUE(Contains(error("0F0,(0F1;0B0;0B1)OVERLAP_F_B\n"), "exactly two actions"));
  EXPECT_TRUE(Contains(error("0F0,(0F1;0B0)OVERLAP\n"), "bad overlapped action"));
  EXPECT_TRUE(Contains(error("0F0,(0F1;0X0)OVERLAP_F_B\n"), "unknown kind 'X'"));
  EXPECT_TRUE(Contains(error("0F0,(0F1;0B0)OVERLAP\n"), "bad.csv:1:5:"));
  EXPECT_TRUE(ParseScheduleCsv("0F0,(0F1;0B0)OVERLAP_F_B,0B1\n", "ok.csv").ok());
}

}  // namespace
}  // namespace stagecraft
