// Data parallelism, ZeRO and FSDP (data_parallel.h) against closed forms: DDP all-reduces the
// fp32 gradients, 2(n−1)/n of 4·P bytes on a ring; Megatron's distributed optimizer
// reduce-scatters them and all-gathers the bf16 parameters, (n−1)/n of 4·P and of 2·P (ZeRO-1,
// Rajbhandari et al. 2020, §5); ZeRO-3 / FSDP gathers the bf16 parameters before each forward
// and each backward and reduce-scatters the gradients after (ZeRO-3: 3Ψ of traffic, §7.2.2);
// PyTorch DDP's buckets are 25 MiB after a first of 1 MiB
// (torch.nn.parallel.DistributedDataParallel bucket_cap_mb, dist._DEFAULT_FIRST_BUCKET_BYTES) and
// Megatron's max(4e7, 1e6·dp) elements (megatron/core/distributed/distributed_data_parallel.py,
// bucket_size).
#include "parallel/data_parallel.h"

#include <gtest/gtest.h>

#include <vector>

#include "parallel/parallel_common.h"
#include "parallel/parallel_plan.h"
#include "parallel/parallel_test_util.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr double kParams = 1e6;  // a stage's parameters on one rank

// dp data-parallel ranks of tp 1, cp 1, all in one node while dp <= 8.
Config DataParallelConfig(int32_t dp) {
  Config config = ParallelTestConfig();
  config.parallel.dp = dp;
  return config;
}

StageCollectives Reduced(const Config& config, const StageParams& params) {
  StageCollectives c;
  AddDataParallel(config.parallel, config.cluster, DataParallelGroupOf(config, false), params, c);
  return c;
}

TEST(DataParallelTest, DdpAllReducesTheFp32Gradients) {
  const StageCollectives c = Reduced(DataParallelConfig(4), {kParams, 0, 0});
  EXPECT_EQ(c.dp_reduce, Ns(2.0 * 3 / 4 * 4 * kParams));
  EXPECT_TRUE(c.dp_buckets.empty());  // no buckets asked: one reduction after the backward
}

TEST(DataParallelTest, TheDistributedOptimizerReduceScattersAndGathersTheParameters) {
  Config config = DataParallelConfig(4);
  config.parallel.distributed_optimizer = true;
  const Time reduce_scatter = Ns(3.0 / 4 * 4 * kParams);
  const Time all_gather = Ns(3.0 / 4 * 2 * kParams);
  EXPECT_EQ(Reduced(config, {kParams, 0, 0}).dp_reduce, reduce_scatter + all_gather);
  // overlap_param_gather hides the all-gather behind the next forward.
  config.parallel.overlap_param_gather = true;
  EXPECT_EQ(Reduced(config, {kParams, 0, 0}).dp_reduce, reduce_scatter);
}

TEST(DataParallelTest, RoutedExpertsReduceOverTheRanksHoldingTheSameExperts) {
  Config config = DataParallelConfig(4);
  config.parallel.ep = 2;  // the experts' gradients over dp / ep = 2 ranks
  const StageCollectives c = Reduced(config, {kParams, kParams, 0});
  EXPECT_EQ(c.dp_reduce, Ns(2.0 * 3 / 4 * 4 * kParams) + Ns(2.0 * 1 / 2 * 4 * kParams));
}

TEST(DataParallelTest, DoublingTheParametersDoublesTheReduction) {
  const Config config = DataParallelConfig(8);
  EXPECT_EQ(Reduced(config, {2 * kParams, 0, 0}).dp_reduce,
            Reduced(config, {kParams, 0, 0}).dp_reduce * 2);
}

TEST(DataParallelTest, PytorchBucketsAreOneMibThenTwentyFiveMib) {
  const double mib = 1024.0 * 1024.0;
  // 60 MiB over 2 ranks (a ring all-reduce over 2 moves S: S ns here): 1 + 25 + 25 + 9 MiB.
  const std::vector<std::pair<double, Time>> buckets = GradientBuckets(
      GradBuckets::kPytorch, 2, NanosecondPerByteCluster(), Collective::kAllReduce, 2, 2, 60 * mib);
  const std::vector<std::pair<double, Time>> expected = {{1.0 / 60, Ns(mib)},
                                                         {26.0 / 60, Ns(25 * mib)},
                                                         {51.0 / 60, Ns(25 * mib)},
                                                         {1.0, Ns(9 * mib)}};
  ASSERT_EQ(buckets.size(), expected.size());
  for (size_t bucket = 0; bucket < buckets.size(); ++bucket) {
    EXPECT_DOUBLE_EQ(buckets[bucket].first, expected[bucket].first) << bucket;
    EXPECT_EQ(buckets[bucket].second, expected[bucket].second) << bucket;
  }
}

TEST(DataParallelTest, MegatronBucketsHoldFortyMillionElementsOrAMillionPerReplica) {
  const ClusterSpec cluster = NanosecondPerByteCluster();
  // dp 8: max(4e7, 8e6) = 4e7 fp32 elements, 1.6e8 bytes; 4e8 bytes make 1.6e8, 1.6e8, 0.8e8.
  const auto small =
      GradientBuckets(GradBuckets::kMegatron, 8, cluster, Collective::kAllReduce, 8, 8, 4e8);
  ASSERT_EQ(small.size(), 3u);
  EXPECT_DOUBLE_EQ(small[0].first, 0.4);
  EXPECT_EQ(small[0].second, Ns(2.0 * 7 / 8 * 1.6e8));
  EXPECT_EQ(small[2].second, Ns(2.0 * 7 / 8 * 0.8e8));
  // dp 100: 1e8 elements, 4e8 bytes: one bucket.
  EXPECT_EQ(GradientBuckets(GradBuckets::kMegatron, 100, cluster, Collective::kAllReduce, 8, 8, 4e8)
                .size(),
            1u);
}

TEST(DataParallelTest, NoBucketsForOneRankOrWhenNoneAreAsked) {
  const ClusterSpec cluster = NanosecondPerByteCluster();
  EXPECT_TRUE(
      GradientBuckets(GradBuckets::kNone, 8, cluster, Collective::kAllReduce, 8, 8, 4e8).empty());
  EXPECT_TRUE(GradientBuckets(GradBuckets::kPytorch, 1, cluster, Collective::kAllReduce, 1, 1, 4e8)
                  .empty());
  ParallelSpec parallel;
  EXPECT_EQ(BucketsOf(parallel), GradBuckets::kNone);
  parallel.overlap_grad_reduce = true;  // Megatron's --overlap-grad-reduce: its own buckets
  EXPECT_EQ(BucketsOf(parallel), GradBuckets::kMegatron);
  parallel.grad_buckets = GradBuckets::kPytorch;
  EXPECT_EQ(BucketsOf(parallel), GradBuckets::kPytorch);
}

TEST(DataParallelTest, TheGroupIsDataTimesContextRanksTensorParallelApart) {
  Config config = DataParallelConfig(4);
  config.parallel.cp = 2;
  config.parallel.tp = 2;
  const DataParallelGroup group = DataParallelGroupOf(config, false);
  EXPECT_EQ(group.reducers, 8);
  EXPECT_EQ(group.per_node, 4);  // 8 devices a node, tp 2 apart
  EXPECT_EQ(group.shards, 8);
  EXPECT_EQ(DataParallelGroupOf(config, true).shards, 4);  // hybrid: within a node
}

// ZeRO-3 over dp 4 for a stage of kParams: one gather moves the bf16 parameters.
Config FullShardConfig(ReshardAfterForward reshard) {
  Config config = DataParallelConfig(4);
  config.parallel.zero_stage = 3;
  config.parallel.reshard_after_forward = reshard;
  return config;
}

StageCollectives Sharded(const Config& config, bool pipelined, double* gathered = nullptr) {
  StageCollectives c;
  const double bytes =
      AddStageDataParallel(config.parallel, config.cluster, DataParallelGroupOf(config, false),
                           {kParams, 0, kParams}, pipelined, 3, c);
  if (gathered != nullptr) *gathered = bytes;
  return c;
}

TEST(DataParallelTest, FullShardingGathersBeforeEachForwardAndBackward) {
  double gathered = 0;
  const StageCollectives c =
      Sharded(FullShardConfig(ReshardAfterForward::kDefault), false, &gathered);
  EXPECT_DOUBLE_EQ(gathered, 2 * kParams);
  EXPECT_EQ(c.shard_gather, Ns(3.0 / 4 * 2 * kParams));
  EXPECT_TRUE(c.shard_gather_backward);  // two gathers a microbatch: before F and before B
  EXPECT_EQ(c.shard_units, 3);
  EXPECT_EQ(c.shard_reduce, Ns(3.0 / 4 * 4 * kParams));
  EXPECT_EQ(c.first_gather, Time());
  EXPECT_EQ(c.dp_reduce, Time());
}

TEST(DataParallelTest, KeepingTheParametersAfterTheForwardGathersOnceAMicrobatch) {
  const StageCollectives c = Sharded(FullShardConfig(ReshardAfterForward::kNo), false);
  EXPECT_EQ(c.shard_gather, Ns(3.0 / 4 * 2 * kParams));
  EXPECT_FALSE(c.shard_gather_backward);
}

TEST(DataParallelTest, UnderPipelineParallelismFsdpGathersOnceAnIteration) {
  const StageCollectives c = Sharded(FullShardConfig(ReshardAfterForward::kDefault), true);
  EXPECT_EQ(c.first_gather, Ns(3.0 / 4 * 2 * kParams));
  EXPECT_EQ(c.shard_gather, Time());
  // One reduce-scatter of the 4e6 gradient bytes, in one Megatron bucket (1.6e8 bytes).
  ASSERT_EQ(c.dp_buckets.size(), 1u);
  EXPECT_EQ(c.dp_buckets[0].second, Ns(3.0 / 4 * 4 * kParams));
}

TEST(DataParallelTest, HybridShardingShardsInANodeAndAllReducesTheShardsAcross) {
  Config config = FullShardConfig(ReshardAfterForward::kDefault);
  config.parallel.dp = 16;  // two nodes of 8
  config.parallel.hybrid_shard = true;
  StageCollectives c;
  AddFullSharding(config.parallel, config.cluster, DataParallelGroupOf(config, true),
                  {kParams, 0, kParams}, false, 1, c);
  EXPECT_EQ(c.shard_gather, Ns(7.0 / 8 * 2 * kParams));
  // The 1/8 shard's fp32 gradients all-reduced over the 2 nodes: one rank a node, 10 ns a byte.
  EXPECT_EQ(c.dp_reduce, Ns(2.0 * 1 / 2 * (kParams / 8 * 4) * 10));
}

TEST(DataParallelTest, TheFloat8AllGatherSendsTheDecodersWeightsInOneByte) {
  Config config = FullShardConfig(ReshardAfterForward::kDefault);
  config.parallel.fp8 = true;
  config.parallel.fp8_all_gather = true;
  StageCollectives c;
  // 8e5 of the stage's 1e6 parameters in decoders: FP8; the embedding's 2e5 stay bf16.
  const double gathered =
      AddFullSharding(config.parallel, config.cluster, DataParallelGroupOf(config, false),
                      {kParams, 0, 0.8 * kParams}, false, 1, c);
  EXPECT_DOUBLE_EQ(gathered, 0.2 * kParams * 2 + 0.8 * kParams);
}

// Routed experts are not nn.Linear modules (torchtitan's GroupedExperts), so float8 training
// leaves them bf16 and FSDP gathers them in 2 bytes, as doc/fidelity.md says.
TEST(DataParallelTest, TheFloat8AllGatherLeavesRoutedExpertsInBf16) {
  Config config = FullShardConfig(ReshardAfterForward::kDefault);
  config.parallel.fp8 = true;
  config.parallel.fp8_all_gather = true;
  StageCollectives c;
  // 1e6 parameters: 1e5 outside the decoders, 3e5 dense decoder weights, 6e5 routed experts.
  const double gathered =
      AddFullSharding(config.parallel, config.cluster, DataParallelGroupOf(config, false),
                      {0.4 * kParams, 0.6 * kParams, 0.9 * kParams}, false, 1, c);
  EXPECT_DOUBLE_EQ(gathered, 0.1 * kParams * 2 + 0.3 * kParams + 0.6 * kParams * 2);
}

TEST(DataParallelTest, FsdpKeepsGatheredParametersAndWholeGradientsUnderPipelining) {
  const auto schedule = GenerateOneFOneB({2, 1, 4, 0});
  ASSERT_TRUE(schedule.ok());
  ParallelSpec parallel;
  parallel.zero_stage = 2;
  EXPECT_EQ(FsdpResidency(parallel, schedule.value(), {1e6, 2e6}), StateResidency());
  parallel.zero_stage = 3;
  const StateResidency residency = FsdpResidency(parallel, schedule.value(), {1e6, 2e6});
  EXPECT_EQ(residency.gathered_parameter_bytes, (std::vector<double>{1e6, 2e6}));
  EXPECT_TRUE(residency.gradients_whole);
}

TEST(DataParallelTest, TheDistributedOptimizerIsZeroStageOne) {
  ParallelSpec parallel;
  EXPECT_EQ(EffectiveZeroStage(parallel), 0);
  parallel.distributed_optimizer = true;
  EXPECT_EQ(EffectiveZeroStage(parallel), 1);
  parallel.zero_stage = 3;
  EXPECT_EQ(EffectiveZeroStage(parallel), 3);
}

}  // namespace
}  // namespace stagecraft
