// The optimizer step (optimizer_step.h) against its closed form: a mixed-precision Adam step
// reads and writes 30 bytes of HBM a parameter (fp32 master weight, gradient, m and v read, 16;
// weight, m and v written, 12; the bf16 copy, 2), so it lasts P·30 / (HBM bandwidth × memory
// efficiency) over the P parameters a rank updates (1/shards of its own with ZeRO-1).
#include "parallel/optimizer_step.h"

#include <gtest/gtest.h>

#include <vector>

#include "parallel/parallel_common.h"
#include "parallel/parallel_test_util.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

// 2e12 B/s of HBM at 75%: 1.5e12 B/s, so a parameter's 30 bytes take 2e-11 s.
ClusterSpec HbmCluster() {
  ClusterSpec cluster = NanosecondPerByteCluster();
  cluster.hbm_bytes_per_s = 2e12;
  cluster.memory_efficiency = 0.75;
  return cluster;
}

Schedule OneFOneB(int32_t pp) {
  auto schedule = GenerateOneFOneB({pp, 1, 4, 0});
  EXPECT_TRUE(schedule.ok());
  return schedule.ok() ? schedule.value() : Schedule();
}

TEST(OptimizerStepTest, AStepMovesThirtyBytesAParameterAtTheHbmBandwidth) {
  const std::vector<Time> steps = OptimizerSteps(HbmCluster(), OneFOneB(2), {1e9, 2e9}, 1);
  EXPECT_EQ(steps,
            (std::vector<Time>{FromSeconds(1e9 * 30 / 1.5e12), FromSeconds(2e9 * 30 / 1.5e12)}));
}

TEST(OptimizerStepTest, ShardingTheOptimizerStateDividesTheStep) {
  const std::vector<Time> whole = OptimizerSteps(HbmCluster(), OneFOneB(2), {1e9, 2e9}, 1);
  const std::vector<Time> quarter = OptimizerSteps(HbmCluster(), OneFOneB(2), {1e9, 2e9}, 4);
  EXPECT_EQ(quarter[0], FromSeconds(1e9 / 4 * 30 / 1.5e12));
  EXPECT_EQ(quarter[1] * 4, whole[1]);
}

TEST(OptimizerStepTest, DoublingTheParametersDoublesTheStep) {
  const std::vector<Time> once = OptimizerSteps(HbmCluster(), OneFOneB(1), {3e8}, 1);
  const std::vector<Time> twice = OptimizerSteps(HbmCluster(), OneFOneB(1), {6e8}, 1);
  EXPECT_EQ(twice[0], once[0] * 2);
}

TEST(OptimizerStepTest, DualPipesRanksUpdateBothModelCopiesStages) {
  auto dual = GenerateDualPipe({2, 1, 4, 0});
  ASSERT_TRUE(dual.ok());
  // Rank 0 holds stage 0 of one copy and stage 1 of the other; rank 1 the reverse.
  const std::vector<Time> steps = OptimizerSteps(HbmCluster(), dual.value(), {1e9, 2e9}, 1);
  const Time both = FromSeconds(1e9 * 30 / 1.5e12) + FromSeconds(2e9 * 30 / 1.5e12);
  EXPECT_EQ(steps, (std::vector<Time>{both, both}));
  EXPECT_EQ(RankParams(dual.value(), {1e9, 2e9}), (std::vector<double>{3e9, 3e9}));
}

TEST(OptimizerStepTest, AnUnknownHbmBandwidthCostsNothing) {
  ClusterSpec cluster = HbmCluster();
  cluster.hbm_bytes_per_s = 0;
  EXPECT_EQ(OptimizerSteps(cluster, OneFOneB(2), {1e9, 2e9}, 1),
            (std::vector<Time>{Time(), Time()}));
}

TEST(OptimizerStepTest, TheStateIsShardedWithZeroOneAndUp) {
  ParallelSpec parallel;
  EXPECT_EQ(OptimizerShards(parallel, 8), 1);
  parallel.distributed_optimizer = true;
  EXPECT_EQ(OptimizerShards(parallel, 8), 8);
  parallel.distributed_optimizer = false;
  parallel.zero_stage = 1;
  EXPECT_EQ(OptimizerShards(parallel, 8), 8);
}

}  // namespace
}  // namespace stagecraft
