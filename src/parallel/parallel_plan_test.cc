// The ParallelPlan (parallel_plan.h) puts each dimension's per-layer costs on the stages that
// hold the layers: checked by counting layers. Megatron-LM's tensor parallelism: the embedding
// all-reduces its output once, each decoder twice forward and twice backward, the head's
// vocab-parallel cross entropy three times (Shoeybi et al. 2019, §3); a MoE layer all-to-alls
// once each way per microbatch; a pipeline with no other dimension has no collectives.
#include "parallel/parallel_plan.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "parallel/expert_parallel.h"
#include "parallel/parallel_common.h"
#include "parallel/parallel_test_util.h"
#include "schedule/generator.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

Schedule OneFOneB(int32_t pp, int32_t microbatches) {
  auto schedule = GenerateOneFOneB({pp, 1, microbatches, 0});
  EXPECT_TRUE(schedule.ok());
  return schedule.ok() ? schedule.value() : Schedule();
}

// Llama 3 8B (32 layers, hidden 4096) at s = 1024, b = 1 on one pipeline rank.
Config Llama8bConfig(int32_t tp) {
  Config config = ParallelTestConfig();
  config.model.transformer = Llama3_8bSpec();
  config.model.seq_len = 1024;
  config.model.micro_batch_size = 1;
  config.parallel.tp = tp;
  EXPECT_TRUE(BuildTransformerModel(config).ok());
  return config;
}

ParallelPlan PlanOneStage(const Config& config) {
  const Partition one_stage{{0}, static_cast<int32_t>(config.model.layers.size())};
  return PlanParallel(config, one_stage, OneFOneB(1, 4));
}

TEST(ParallelPlanTest, ATransformerStageCountsItsLayersTensorParallelAllReduces) {
  const ParallelPlan plan = PlanOneStage(Llama8bConfig(2));
  ASSERT_EQ(plan.collectives.size(), 1u);
  const StageCollectives& c = plan.collectives[0];
  // tp 2: a ring all-reduce over 2 moves S, here S ns: b·s·h bf16 and b·s fp32.
  const Time activation = Ns(2.0 * 1024 * 4096);
  const Time loss = Ns(4.0 * 1024);
  EXPECT_EQ(c.tp_forward, activation * (1 + 2 * 32) + loss * 3);
  EXPECT_EQ(c.tp_backward, activation * (2 * 32));
  // cp 1, ep 1, dp 1: no other collective.
  EXPECT_EQ(c.cp_forward, Time());
  EXPECT_EQ(c.cp_backward, Time());
  EXPECT_EQ(c.ep_forward, Time());
  EXPECT_EQ(c.dp_reduce, Time());
  EXPECT_EQ(plan.optimizer_step.size(), 1u);
}

TEST(ParallelPlanTest, APipelineWithNoOtherDimensionHasNoCollectives) {
  const ParallelPlan plan = PlanOneStage(Llama8bConfig(1));
  EXPECT_TRUE(plan.collectives.empty());
  EXPECT_TRUE(plan.optimizer_step.empty());
  EXPECT_EQ(plan.world_size, 1);
  EXPECT_DOUBLE_EQ(plan.rank_params.at(0) + 4096, plan.params);  // all but the final norm
}

TEST(ParallelPlanTest, TheWorldAndTheTokensMultiplyTheDimensions) {
  Config config = Llama8bConfig(2);
  config.parallel.dp = 3;
  const Partition two_stages{{0, 17}, static_cast<int32_t>(config.model.layers.size())};
  const ParallelPlan plan = PlanParallel(config, two_stages, OneFOneB(2, 8));
  EXPECT_EQ(plan.world_size, 2 * 2 * 1 * 3);               // pp · tp · cp · dp
  EXPECT_EQ(plan.tokens_per_iteration, 8 * 1 * 1024 * 3);  // m · b · s · dp
  // A rank holds its stage's parameters on one of the 2 TP ranks; the two stages hold the model
  // but its final norm's h weights, which no stage counts.
  EXPECT_NEAR((plan.rank_params[0] + plan.rank_params[1]) * 2 + 4096, plan.params,
              1e-9 * plan.params);
}

TEST(ParallelPlanTest, EachMoeLayerAllToAllsOnceEachWay) {
  Config config = ParallelTestConfig();
  TransformerSpec& spec = config.model.transformer;
  spec.layers = 4;
  spec.dense_layers = 1;  // layers 1-3 have experts
  spec.hidden = 512;
  spec.heads = 8;
  spec.vocab = 1000;
  spec.experts = 8;
  spec.experts_per_token = 2;
  config.model.seq_len = 1024;
  config.parallel.dp = 2;
  config.parallel.ep = 2;
  ASSERT_TRUE(BuildTransformerModel(config).ok());
  const Time all_to_alls = TransformerExpertAllToAlls(config, TransformerRunOf(config));
  ASSERT_GT(all_to_alls, Time());
  const StageCollectives kept = PlanOneStage(config).collectives.at(0);
  EXPECT_EQ(kept.ep_forward, all_to_alls * 3);
  EXPECT_EQ(kept.ep_backward, all_to_alls * 3);
  config.parallel.recompute = Recompute::kFull;  // the forward's again in the backward
  EXPECT_EQ(PlanOneStage(config).collectives.at(0).ep_backward, all_to_alls * 6);
}

// DeepSeek-V4.1-Flash's layer list (40 MoE decoders) on two stages of 21 layers.
Config FlashConfig() {
  Config config = ParallelTestConfig();
  config.model.layers = V41FlashLayers();
  EXPECT_TRUE(ResolveSources(config.model.layers).ok());
  config.model.seq_len = 4096;
  config.model.micro_batch_size = 1;
  config.parallel.pp = 2;
  return config;
}

const Partition kFlashStages{{0, 21}, 42};

TEST(ParallelPlanTest, ALayerListsStagesCountTheirLayersCollectives) {
  Config config = FlashConfig();
  config.parallel.tp = 2;
  config.parallel.dp = 2;
  config.parallel.ep = 2;
  const ParallelPlan plan = PlanParallel(config, kFlashStages, OneFOneB(2, 4));
  ASSERT_EQ(plan.collectives.size(), 2u);
  // tp 2: a ring all-reduce over 2 moves S: b·s·d bf16 activations, b·s fp32 loss scalars.
  const Time activation = Ns(2.0 * 4096 * config.model.dims.hidden);
  const Time loss = Ns(4.0 * 4096);
  const Time all_to_alls = LayerListExpertAllToAlls(config);
  // Stage 0: the embedding and 20 decoders; stage 1: 20 decoders and the head.
  EXPECT_EQ(plan.collectives[0].tp_forward, activation * (1 + 2 * 20));
  EXPECT_EQ(plan.collectives[1].tp_forward, activation * (2 * 20) + loss * 3);
  EXPECT_EQ(plan.collectives[1].tp_backward, activation * (2 * 20));
  EXPECT_EQ(plan.collectives[0].ep_forward, all_to_alls * 20);
  EXPECT_EQ(plan.collectives[1].ep_backward, all_to_alls * 20);
  EXPECT_EQ(plan.collectives[0].cp_forward, Time());  // cp 1: no CP collective
  EXPECT_GT(plan.collectives[0].dp_reduce, Time());
  EXPECT_EQ(plan.world_size, 2 * 2 * 1 * 2);
  EXPECT_EQ(plan.tokens_per_iteration, 4096 * 4 * 2);
}

TEST(ParallelPlanTest, WithoutSplittingALayerListsRanksHoldTheWholeModel) {
  Config config = FlashConfig();
  config.parallel.dp = 2;  // data parallelism replicates: each pipeline holds every parameter
  const ParallelPlan plan = PlanParallel(config, kFlashStages, OneFOneB(2, 4));
  const double held = std::accumulate(plan.rank_params.begin(), plan.rank_params.end(), 0.0);
  EXPECT_NEAR(held, plan.params, 1e-9 * plan.params);
  EXPECT_EQ(plan.shard_ranks, 2);
  EXPECT_EQ(plan.collectives[0].tp_forward, Time());  // tp 1: no TP collective
  EXPECT_EQ(plan.collectives[0].ep_forward, Time());  // ep 1: no all-to-all
}

TEST(ParallelPlanTest, AUniformModelHasNoParallelPlan) {
  const Config config = ParallelTestConfig();
  EXPECT_EQ(PlanParallel(config, Partition{{0}, 1}, OneFOneB(1, 4)).world_size, 0);
}

}  // namespace
}  // namespace stagecraft
