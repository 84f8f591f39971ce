// Expert parallelism's all-to-alls (expert_parallel.h) against the all-to-all's closed form:
// each of n ranks keeps 1/n of its bytes and sends (g−1)/n of them over NVLink and (n−g)/n over
// the network, the slower of the two bounding the time (nccl-tests' alltoall, busbw factor
// (n−1)/n), with the dispatch's and the combine's sizes from the MoE layer's shape: k_e·h per
// token each way (DeepSeek-V3 technical report, §3.2: FP8 dispatch, BF16 combine).
#include "parallel/expert_parallel.h"

#include <gtest/gtest.h>

#include "parallel/parallel_common.h"
#include "parallel/parallel_test_util.h"

namespace stagecraft {
namespace {

TEST(ExpertParallelTest, InsideANodeAnAllToAllSendsAllButItsOwnShare) {
  const double dispatch = 1 << 20;
  const double combine = 2 << 20;
  EXPECT_EQ(ExpertAllToAlls(NanosecondPerByteCluster(), 8, 8, dispatch, combine),
            Ns(7.0 / 8 * dispatch) + Ns(7.0 / 8 * combine));
}

TEST(ExpertParallelTest, AcrossNodesTheNetworkShareBoundsTheAllToAll) {
  // 16 ranks, 8 to a node: 7/16 of the bytes over NVLink (1 ns a byte), 8/16 over the network
  // (10 ns a byte); the network's part is the longer.
  const double bytes = 1.6e6;
  EXPECT_EQ(ExpertAllToAlls(NanosecondPerByteCluster(), 16, 8, bytes, 0.0),
            Ns(8.0 / 16 * bytes * 10));
}

// A MoE transformer: tokens of s·b = 2048, k_e = 2 experts a token of hidden 512.
Config MoeConfig(int32_t ep, int32_t tp) {
  Config config = ParallelTestConfig();
  TransformerSpec& spec = config.model.transformer;
  spec.layers = 4;
  spec.hidden = 512;
  spec.heads = 8;
  spec.experts = 16;
  spec.experts_per_token = 2;
  config.model.seq_len = 1024;
  config.model.micro_batch_size = 2;
  config.parallel.ep = ep;
  config.parallel.dp = 8;
  config.parallel.tp = tp;
  return config;
}

TEST(ExpertParallelTest, ATransformersDispatchAndCombineCarryTheirTokensExpertsHiddenStates) {
  const Config config = MoeConfig(8, 1);
  const double bf16_bytes = 2048.0 * 2 * 512 * 2;  // tokens · k_e · h · 2 bytes
  EXPECT_EQ(TransformerExpertAllToAlls(config, TransformerRunOf(config)),
            Ns(7.0 / 8 * bf16_bytes) * 2);
  Config fp8 = config;
  fp8.parallel.precision = TrainingPrecision::kFp8;  // the dispatch in FP8, the combine in BF16
  EXPECT_EQ(TransformerExpertAllToAlls(fp8, TransformerRunOf(fp8)),
            Ns(7.0 / 8 * bf16_bytes / 2) + Ns(7.0 / 8 * bf16_bytes));
}

TEST(ExpertParallelTest, TensorParallelRanksEachSendTheirShareOfTheTokens) {
  // tp 2: each TP rank sends 1/2 of the tokens; the 4 ep ranks sit 2 apart, all in one node.
  const Config config = MoeConfig(4, 2);
  const double bytes = 2048.0 * 2 * 512 * 2 / 2;
  EXPECT_EQ(TransformerExpertAllToAlls(config, TransformerRunOf(config)), Ns(3.0 / 4 * bytes) * 2);
}

TEST(ExpertParallelTest, OneExpertParallelRankAddsNoAllToAll) {
  const Config config = MoeConfig(1, 1);
  EXPECT_EQ(TransformerExpertAllToAlls(config, TransformerRunOf(config)), Time());
  Config layers = ParallelTestConfig();
  EXPECT_EQ(LayerListExpertAllToAlls(layers), Time());
}

TEST(ExpertParallelTest, ACsa2LayerDispatchesInFp8AndCombinesInBf16) {
  Config config = ParallelTestConfig();
  config.model.dims.hidden = 512;
  config.model.dims.experts_per_token = 2;
  config.model.seq_len = 1024;
  config.model.micro_batch_size = 1;
  config.parallel.ep = 8;
  const double per_token = 2.0 * 512;  // k_e · d
  EXPECT_EQ(LayerListExpertAllToAlls(config),
            Ns(7.0 / 8 * 1024 * per_token) + Ns(7.0 / 8 * 1024 * per_token * 2));
}

TEST(ExpertParallelTest, ARecomputingLayerRepeatsItsAllToAllsInTheBackward) {
  const Time forward = Milliseconds(3);
  EXPECT_EQ(ExpertBackward(forward, false), forward);
  EXPECT_EQ(ExpertBackward(forward, true), forward * 2);
}

}  // namespace
}  // namespace stagecraft
