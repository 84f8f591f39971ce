#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "testing/test_util.h"

namespace stagecraft {
namespace {

std::vector<std::string> Names(const std::vector<Action>& actions) {
  std::vector<std::string> names;
  for (const Action& action : actions) names.push_back(FormatAction(action));
  return names;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(' ', begin), text.size());
    if (end > begin) names.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return names;
}

// The actions of one kind on a rank, in program order.
std::vector<std::string> OfKind(const Schedule& schedule, size_t rank, ActionKind kind) {
  std::vector<Action> selected;
  for (const Action& action : schedule.rank_actions.at(rank)) {
    if (action.kind == kind) selected.push_back(action);
  }
  return Names(selected);
}

std::string ErrorOf(GenerateFn generate, const GeneratorParams& params) {
  const Result<Schedule> schedule = generate(params);
  EXPECT_FALSE(schedule.ok()) << "pp=" << params.pp << " vpp=" << params.vpp
                              << " m=" << params.microbatches << " group=" << params.group_size;
  return schedule.ok() ? "" : schedule.error().message;
}

// Every (stage, microbatch) has exactly one F and one B, no I/W, each on the rank the loop
// placement assigns, and the schedule's shape fields are right.
void ExpectCompleteLoopSchedule(const Schedule& schedule, const GeneratorParams& params) {
  SCOPED_TRACE(schedule.name + " pp=" + std::to_string(params.pp) +
               " vpp=" + std::to_string(params.vpp) + " m=" + std::to_string(params.microbatches));
  EXPECT_EQ(schedule.num_ranks, params.pp);
  EXPECT_EQ(schedule.num_stages, params.pp * params.vpp);
  EXPECT_EQ(schedule.num_microbatches, params.microbatches);
  EXPECT_EQ(schedule.placement, Placement::kLoop);
  ASSERT_EQ(schedule.rank_actions.size(), static_cast<size_t>(params.pp));
  std::map<std::tuple<int32_t, int32_t, ActionKind>, int> count;
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    for (const Action& action : schedule.rank_actions[rank]) {
      EXPECT_EQ(StageToRank(action.stage, params.pp, Placement::kLoop).value(),
                static_cast<int32_t>(rank))
          << FormatAction(action);
      EXPECT_TRUE(action.kind == ActionKind::kForward || action.kind == ActionKind::kBackward);
      ++count[{action.stage.value(), action.microbatch.value(), action.kind}];
    }
  }
  EXPECT_EQ(schedule.num_actions(),
            2 * static_cast<size_t>(params.pp * params.vpp * params.microbatches));
  for (int32_t stage = 0; stage < params.pp * params.vpp; ++stage) {
    for (int32_t microbatch = 0; microbatch < params.microbatches; ++microbatch) {
      EXPECT_EQ((count[{stage, microbatch, ActionKind::kForward}]), 1)
          << stage << "F" << microbatch;
      EXPECT_EQ((count[{stage, microbatch, ActionKind::kBackward}]), 1)
          << stage << "B" << microbatch;
    }
  }
}

TEST(GeneratorRegistryTest, NamesInListOrder) {
  EXPECT_EQ(ScheduleNames(), (std::vector<std::string>{
                                 "gpipe", "1f1b", "interleaved-1f1b", "looped-bfs", "zb-h1",
                                 "zb-h2", "zb-v", "v-half", "v-min", "dualpipe", "dualpipev"}));
  for (const ScheduleGenerator& generator : ScheduleGenerators()) {
    EXPECT_NE(std::string(generator.description), "") << generator.name;
    const auto found = FindScheduleGenerator(generator.name);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found.value(), &generator);
  }
}

TEST(GeneratorRegistryTest, UnknownNameSuggestsAndPointsAtList) {
  const auto found = FindScheduleGenerator("gpipee");
  ASSERT_FALSE(found.ok());
  EXPECT_TRUE(Contains(found.error().message, "unknown schedule 'gpipee'"));
  EXPECT_TRUE(Contains(found.error().message, "did you mean 'gpipe'?"));
  EXPECT_TRUE(Contains(found.error().message, "stagecraft list schedules"));
  const auto far = FindScheduleGenerator("zero-bubble-v");
  ASSERT_FALSE(far.ok());
  EXPECT_FALSE(Contains(far.error().message, "did you mean"));
}

TEST(GeneratorTest, BasicParamErrors) {
  for (const ScheduleGenerator& generator : ScheduleGenerators()) {
    EXPECT_TRUE(Contains(ErrorOf(generator.generate, {0, 1, 4, 0}), "pp must be at least 1"));
    EXPECT_TRUE(Contains(ErrorOf(generator.generate, {2, 0, 4, 0}), "vpp must be at least 1"));
    EXPECT_TRUE(
        Contains(ErrorOf(generator.generate, {2, 1, 0, 0}), "microbatches must be at least 1"));
    EXPECT_EQ(ErrorOf(generator.generate, {2, 1, -3, 0}).rfind(std::string(generator.name), 0), 0u);
  }
}

// Issue 13 item 8: RequiredChunksPerRank names exactly the generators that refuse every vpp but
// one (the CLI implies it); p 4, m 8 is valid for all of them at that vpp.
TEST(GeneratorTest, RequiredChunksPerRankMatchesTheGenerators) {
  for (const ScheduleGenerator& generator : ScheduleGenerators()) {
    const int32_t required = RequiredChunksPerRank(generator.name);
    if (required == 0) continue;
    EXPECT_TRUE(generator.generate({4, required, 8, 0}).ok()) << generator.name;
    EXPECT_FALSE(generator.generate({4, 1, 8, 0}).ok()) << generator.name;
    EXPECT_FALSE(generator.generate({4, 3, 8, 0}).ok()) << generator.name;
  }
  for (const char* v_shape : {"zb-v", "v-half", "v-min", "dualpipev"}) {
    EXPECT_EQ(RequiredChunksPerRank(v_shape), 2) << v_shape;
  }
  EXPECT_EQ(RequiredChunksPerRank("interleaved-1f1b"), 0);
  EXPECT_EQ(RequiredChunksPerRank("1f1b"), 0);
}

TEST(GeneratorTest, OneChunkGeneratorsRejectVpp) {
  EXPECT_TRUE(Contains(ErrorOf(GenerateGpipe, {2, 2, 4, 0}), "vpp = 2"));
  EXPECT_TRUE(Contains(ErrorOf(GenerateOneFOneB, {2, 3, 4, 0}), "vpp = 3"));
}

TEST(GeneratorTest, EveryActionExactlyOnce) {
  int checked = 0;
  for (const ScheduleGenerator& generator : ScheduleGenerators()) {
    // Split backward (F, I, W): checked in zero_bubble_test.cc and v_shape_test.cc.
    if (generator.generate == GenerateZbH1 || generator.generate == GenerateZbH2 ||
        generator.generate == GenerateZbV || generator.generate == GenerateVHalf ||
        generator.generate == GenerateVMin || generator.generate == GenerateDualPipe ||
        generator.generate == GenerateDualPipeV) {  // and dualpipe_test.cc
      continue;
    }
    for (int32_t pp : {1, 2, 3, 4, 5, 8}) {
      for (int32_t vpp : {1, 2, 3, 4}) {
        for (int32_t microbatches : {1, 2, 3, 4, 5, 8, 10, 16}) {
          const GeneratorParams params{pp, vpp, microbatches, 0};
          const Result<Schedule> schedule = generator.generate(params);
          if (!schedule.ok()) continue;
          EXPECT_EQ(schedule.value().name, generator.name);
          ExpectCompleteLoopSchedule(schedule.value(), params);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(GpipeTest, Order) {
  const Schedule schedule = GenerateGpipe({3, 1, 3, 0}).value();
  EXPECT_EQ(Names(schedule.rank_actions[0]), Split("0F0 0F1 0F2 0B0 0B1 0B2"));
  EXPECT_EQ(Names(schedule.rank_actions[2]), Split("2F0 2F1 2F2 2B0 2B1 2B2"));
}

// Megatron's forward_backward_pipelining_without_interleaving: w = min(p − r − 1, m) warm-up
// forwards, m − w (F, B) pairs, w cool-down backwards — on every rank.
TEST(OneFOneBTest, WarmupSteadyCooldownOnEveryRank) {
  for (int32_t pp : {1, 2, 3, 4, 7, 8}) {
    for (int32_t microbatches : {1, 2, 3, 5, 8, 13}) {
      const Schedule schedule = GenerateOneFOneB({pp, 1, microbatches, 0}).value();
      for (int32_t rank = 0; rank < pp; ++rank) {
        SCOPED_TRACE("pp=" + std::to_string(pp) + " m=" + std::to_string(microbatches) +
                     " rank=" + std::to_string(rank));
        const auto& actions = schedule.rank_actions[rank];
        const int32_t warmup = std::min(pp - rank - 1, microbatches);
        ASSERT_EQ(actions.size(), 2u * static_cast<size_t>(microbatches));
        size_t position = 0;
        for (int32_t microbatch = 0; microbatch < warmup; ++microbatch) {
          EXPECT_EQ(actions[position++],
                    (Action{StageId(rank), ActionKind::kForward, MicrobatchId(microbatch)}));
        }
        for (int32_t step = 0; step < microbatches - warmup; ++step) {
          EXPECT_EQ(actions[position++],
                    (Action{StageId(rank), ActionKind::kForward, MicrobatchId(warmup + step)}));
          EXPECT_EQ(actions[position++],
                    (Action{StageId(rank), ActionKind::kBackward, MicrobatchId(step)}));
        }
        for (int32_t microbatch = microbatches - warmup; microbatch < microbatches; ++microbatch) {
          EXPECT_EQ(actions[position++],
                    (Action{StageId(rank), ActionKind::kBackward, MicrobatchId(microbatch)}));
        }
        // The warm-up count as the number of forwards before the first backward, minus the
        // first steady-state forward when there is one.
        const auto first_backward =
            std::find_if(actions.begin(), actions.end(),
                         [](const Action& action) { return action.kind == ActionKind::kBackward; });
        const int32_t leading = static_cast<int32_t>(first_backward - actions.begin());
        EXPECT_EQ(leading, std::min(pp - rank, microbatches));
      }
    }
  }
}

TEST(OneFOneBTest, HandWrittenP4M6) {
  const Schedule schedule = GenerateOneFOneB({4, 1, 6, 0}).value();
  EXPECT_EQ(Names(schedule.rank_actions[0]),
            Split("0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0B3 0B4 0B5"));
  EXPECT_EQ(Names(schedule.rank_actions[1]),
            Split("1F0 1F1 1F2 1B0 1F3 1B1 1F4 1B2 1F5 1B3 1B4 1B5"));
  EXPECT_EQ(Names(schedule.rank_actions[3]),
            Split("3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5"));
}

TEST(InterleavedTest, ConstraintErrors) {
  const GenerateFn generate = GenerateInterleavedOneFOneB;
  // One chunk per rank.
  const std::string vpp1 = ErrorOf(generate, {4, 1, 8, 0});
  EXPECT_TRUE(Contains(vpp1, "vpp = 1")) << vpp1;
  EXPECT_TRUE(Contains(vpp1, "'1f1b'")) << vpp1;
  // Group smaller than pp.
  const std::string small = ErrorOf(generate, {4, 2, 8, 3});
  EXPECT_TRUE(Contains(small, "group size 3 is smaller than pp = 4")) << small;
  // Group larger than m (explicit, and the default group = pp with m < pp).
  const std::string large = ErrorOf(generate, {2, 2, 4, 5});
  EXPECT_TRUE(Contains(large, "group size 5 exceeds microbatches m = 4")) << large;
  const std::string default_large = ErrorOf(generate, {4, 2, 3, 0});
  EXPECT_TRUE(Contains(default_large, "group size 4 exceeds microbatches m = 3")) << default_large;
  // m mod group in (0, p): a last group smaller than pp.
  const std::string remainder = ErrorOf(generate, {4, 2, 6, 0});
  EXPECT_TRUE(Contains(remainder, "last group of 2")) << remainder;
  EXPECT_TRUE(Contains(remainder, "try --microbatches 4 or 8")) << remainder;
  const std::string remainder_group = ErrorOf(generate, {4, 2, 13, 5});  // 13 mod 5 = 3 < 4
  EXPECT_TRUE(Contains(remainder_group, "last group of 3")) << remainder_group;
  EXPECT_TRUE(Contains(ErrorOf(generate, {2, 3, 7, 3}), "last group of 1"));
}

TEST(InterleavedTest, AllowedShapes) {
  EXPECT_TRUE(GenerateInterleavedOneFOneB({4, 2, 4, 0}).ok());
  EXPECT_TRUE(GenerateInterleavedOneFOneB({4, 2, 12, 0}).ok());
  EXPECT_TRUE(GenerateInterleavedOneFOneB({4, 2, 6, 6}).ok());   // group > pp
  EXPECT_TRUE(GenerateInterleavedOneFOneB({3, 2, 13, 5}).ok());  // 13 mod 5 = 3 >= pp
  EXPECT_TRUE(GenerateInterleavedOneFOneB({2, 3, 8, 2}).ok());
}

// Megatron-LM's interleaved order for p = 2, v = 2, m = 4, group = 2 (default = p), written
// out by hand from megatron/core/pipeline_parallel/schedules.py:
//  * get_schedule_table(m=4, chunks=2, group=2) lists virtual microbatches k = 0..7 as
//    (mb, chunk): (0,0) (1,0) (0,1) (1,1) (2,0) (3,0) (2,1) (3,1).
//  * forward k runs chunk table[k].chunk, i.e. stage chunk·p + r; backward k runs the reversed
//    chunk v − 1 − table[k].chunk on microbatch table[k].mb.
//  * warm-up: (p − r − 1)·2 + (v − 1)·group = 4 on rank 0, 2 on rank 1; then 1F1B pairs
//    (forward k + warm-up, backward k); then cool-down backwards.
// Rank 0 forwards: 0F0 0F1 2F0 2F1 0F2 0F3 2F2 2F3; backwards: 2B0 2B1 0B0 0B1 2B2 2B3 0B2 0B3.
// Rank 1 forwards: 1F0 1F1 3F0 3F1 1F2 1F3 3F2 3F3; backwards: 3B0 3B1 1B0 1B1 3B2 3B3 1B2 1B3.
TEST(InterleavedTest, MegatronOrderP2V2M4) {
  const Result<Schedule> schedule = GenerateInterleavedOneFOneB({2, 2, 4, 0});
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
  EXPECT_EQ(Names(schedule.value().rank_actions[0]),
            Split("0F0 0F1 2F0 2F1 "                  // warm-up: 4
                  "0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 "  // steady: 4 pairs
                  "2B2 2B3 0B2 0B3"));                // cool-down: 4
  EXPECT_EQ(Names(schedule.value().rank_actions[1]),
            Split("1F0 1F1 "                                          // warm-up: 2
                  "3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 "  // steady: 6 pairs
                  "1B2 1B3"));                                        // cool-down: 2
  // An explicit group of 2 is the default.
  EXPECT_EQ(GenerateInterleavedOneFOneB({2, 2, 4, 2}).value(), schedule.value());
}

// With a group larger than p and a partial last group (p = 2, v = 2, m = 5, group = 3; Megatron's
// get_schedule_table: groups {0,1,2} and {3,4}), the forward and backward orders on a rank.
TEST(InterleavedTest, MegatronTableWithPartialLastGroup) {
  const Result<Schedule> schedule = GenerateInterleavedOneFOneB({2, 2, 5, 3});
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
  EXPECT_EQ(OfKind(schedule.value(), 1, ActionKind::kForward),
            Split("1F0 1F1 1F2 3F0 3F1 3F2 1F3 1F4 3F3 3F4"));
  EXPECT_EQ(OfKind(schedule.value(), 1, ActionKind::kBackward),
            Split("3B0 3B1 3B2 1B0 1B1 1B2 3B3 3B4 1B3 1B4"));
  // Warm-up on rank 1: 2·0 + (2 − 1)·3 = 3 forwards, then a steady pair.
  EXPECT_EQ(Names(schedule.value().rank_actions[1]).at(3), "3F0");
  EXPECT_EQ(Names(schedule.value().rank_actions[1]).at(4), "3B0");
}

// Rank r runs min(m·v, 2(p − r − 1) + (v − 1)·group) forwards before its first backward pair.
TEST(InterleavedTest, WarmupCount) {
  for (int32_t pp : {2, 3, 4}) {
    for (int32_t vpp : {2, 3}) {
      for (int32_t microbatches : {pp, 2 * pp, 3 * pp}) {
        const Schedule schedule = GenerateInterleavedOneFOneB({pp, vpp, microbatches, 0}).value();
        for (int32_t rank = 0; rank < pp; ++rank) {
          const auto& actions = schedule.rank_actions[rank];
          const int32_t total = microbatches * vpp;
          const int32_t warmup = std::min(total, 2 * (pp - rank - 1) + (vpp - 1) * pp);
          const int32_t leading = static_cast<int32_t>(
              std::find_if(actions.begin(), actions.end(),
                           [](const Action& a) { return a.kind == ActionKind::kBackward; }) -
              actions.begin());
          EXPECT_EQ(leading, std::min(total, warmup + 1))
              << "pp=" << pp << " vpp=" << vpp << " m=" << microbatches << " rank=" << rank;
        }
      }
    }
  }
}

TEST(LoopedBfsTest, Order) {
  const Schedule schedule = GenerateLoopedBfs({2, 2, 3, 0}).value();
  EXPECT_EQ(Names(schedule.rank_actions[0]),
            Split("0F0 0F1 0F2 2F0 2F1 2F2 2B0 2B1 2B2 0B0 0B1 0B2"));
  EXPECT_EQ(Names(schedule.rank_actions[1]),
            Split("1F0 1F1 1F2 3F0 3F1 3F2 3B0 3B1 3B2 1B0 1B1 1B2"));
}

TEST(LoopedBfsTest, OneChunkIsGpipe) {
  Schedule looped = GenerateLoopedBfs({4, 1, 6, 0}).value();
  const Schedule gpipe = GenerateGpipe({4, 1, 6, 0}).value();
  looped.name = gpipe.name;
  EXPECT_EQ(looped, gpipe);
}

TEST(PlacementTest, StageToRank) {
  EXPECT_EQ(StageToRank(StageId(5), 4, Placement::kLoop), DeviceId(1));
  EXPECT_EQ(StageToRank(StageId(3), 4, Placement::kV), DeviceId(3));
  EXPECT_EQ(StageToRank(StageId(4), 4, Placement::kV), DeviceId(3));
  EXPECT_EQ(StageToRank(StageId(7), 4, Placement::kV), DeviceId(0));
  EXPECT_EQ(std::string(PlacementName(Placement::kV)), "v");
  EXPECT_EQ(ParsePlacement("loop").value(), Placement::kLoop);
  const auto bad = ParsePlacement("zigzag");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.error().message, "'loop', 'v' or 'dual'"));
  EXPECT_EQ(ParsePlacement("dual").value(), Placement::kDual);
}

TEST(ScheduleTest, StageRanks) {
  const Schedule schedule = GenerateInterleavedOneFOneB({2, 2, 2, 0}).value();
  EXPECT_EQ(StageRanks(schedule), (std::vector<int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(schedule.chunks_per_rank(), 2);
}

}  // namespace
}  // namespace stagecraft
