// Tensor parallelism's collectives (tensor_parallel.h) against the ring all-reduce's closed form,
// 2(n−1)/n of the bytes over the bottleneck bandwidth (Patarasuk & Yuan 2009; nccl-tests' busbw
// factor), and Megatron-LM's count of them: two all-reduces per decoder forward (the g operators
// after the attention and the MLP) and two backward (the f operators; Shoeybi et al. 2019, §3,
// Figure 4), the forward's again in the backward under full recomputation (Korthikanti et al.
// 2022, §5).
#include "parallel/tensor_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "parallel/parallel_common.h"
#include "parallel/parallel_test_util.h"

namespace stagecraft {
namespace {

constexpr double kTokens = 1024;  // b·s/cp on one CP rank
constexpr double kHidden = 512;

// A ring all-reduce of `bytes` over `n` ranks of one node of NanosecondPerByteCluster.
Time InNodeAllReduce(int n, double bytes) { return Ns(2.0 * (n - 1) / n * bytes); }

TEST(TensorParallelTest, LayerCollectivesAreRingAllReducesOfTheActivationsAndLossScalars) {
  const TpCollectives tp = TpCollectivesOf(NanosecondPerByteCluster(), 4, kTokens, kHidden);
  // b·s·h bf16 activations: 2 bytes each; the cross entropy's b·s fp32 scalars: 4 bytes each.
  EXPECT_EQ(tp.activation, InNodeAllReduce(4, 2 * kTokens * kHidden));
  EXPECT_EQ(tp.loss, InNodeAllReduce(4, 4 * kTokens));
}

TEST(TensorParallelTest, OneTensorParallelRankMovesNothing) {
  const TpCollectives tp = TpCollectivesOf(NanosecondPerByteCluster(), 1, kTokens, kHidden);
  EXPECT_EQ(tp.activation, Time());
  EXPECT_EQ(tp.loss, Time());
}

TEST(TensorParallelTest, DoublingTheTokensDoublesTheAllReduce) {
  const ClusterSpec cluster = NanosecondPerByteCluster();
  const TpCollectives once = TpCollectivesOf(cluster, 8, kTokens, kHidden);
  const TpCollectives twice = TpCollectivesOf(cluster, 8, 2 * kTokens, kHidden);
  EXPECT_EQ(twice.activation, once.activation * 2);
  EXPECT_EQ(twice.loss, once.loss * 2);
}

TEST(TensorParallelTest, BeyondANodeTheRingRunsAtTheRailsBandwidth) {
  // 16 ranks, 8 to a node: 8 parallel rings, one per NIC rail, β = min(1e9, 8 × 1e8) = 8e8 B/s.
  const TpCollectives tp = TpCollectivesOf(NanosecondPerByteCluster(), 16, kTokens, kHidden);
  EXPECT_EQ(tp.activation, Ns(2.0 * 15 / 16 * (2 * kTokens * kHidden) * 1e9 / 8e8));
}

// A transformer of hidden kHidden on one CP rank of kTokens tokens, tp 4.
Config TransformerConfig(Recompute recompute) {
  Config config = ParallelTestConfig();
  config.model.transformer.layers = 4;
  config.model.transformer.hidden = static_cast<int64_t>(kHidden);
  config.model.transformer.heads = 8;
  config.model.transformer.vocab = 1000;
  config.model.seq_len = static_cast<int32_t>(kTokens);
  config.model.micro_batch_size = 1;
  config.parallel.tp = 4;
  config.parallel.recompute = recompute;
  return config;
}

TEST(TensorParallelTest, ADecoderHasTwoAllReducesEachWay) {
  const Config config = TransformerConfig(Recompute::kNone);
  const TransformerTp tp = TransformerTensorParallel(config, TransformerRunOf(config));
  const Time all_reduce = InNodeAllReduce(4, 2 * kTokens * kHidden);
  EXPECT_EQ(tp.dense.forward, all_reduce * 2);
  EXPECT_EQ(tp.dense.backward, all_reduce * 2);
  EXPECT_EQ(tp.moe, tp.dense);  // no experts: every decoder is dense
  EXPECT_EQ(tp.embedding, all_reduce);
  EXPECT_EQ(tp.loss, InNodeAllReduce(4, 4 * kTokens));
}

TEST(TensorParallelTest, FullRecomputationRepeatsTheForwardsAllReducesInTheBackward) {
  const Time all_reduce = InNodeAllReduce(4, 2 * kTokens * kHidden);
  const auto backward = [](Recompute recompute) {
    const Config config = TransformerConfig(recompute);
    return TransformerTensorParallel(config, TransformerRunOf(config)).dense.backward;
  };
  EXPECT_EQ(backward(Recompute::kFull), all_reduce * 4);
  // Megatron's selective recomputation repeats the attention core only, inside a TP rank.
  EXPECT_EQ(backward(Recompute::kSelective), all_reduce * 2);
  // torchtitan's per-op policy recomputes the matmuls fed by the two sequence-parallel
  // all-gathers, so the backward repeats them as full recomputation does.
  EXPECT_EQ(backward(Recompute::kSelectiveOp), all_reduce * 4);
}

TEST(TensorParallelTest, BlockRecomputationOfHalfTheLayersRepeatsHalfTheAllReduces) {
  Config config = TransformerConfig(Recompute::kFull);
  config.parallel.recompute_num_layers = 2;  // of the 4 layers of the one pipeline chunk
  const TransformerTp tp = TransformerTensorParallel(config, TransformerRunOf(config));
  const Time all_reduce = InNodeAllReduce(4, 2 * kTokens * kHidden);
  EXPECT_EQ(tp.dense.backward, all_reduce * 3);
}

TEST(TensorParallelTest, RecomputeSharesFollowTheRecomputationPolicy) {
  const TpRecompute full = TpRecomputeOf(Recompute::kFull, 0.25);
  EXPECT_DOUBLE_EQ(full.collectives, 0.25);
  EXPECT_DOUBLE_EQ(full.gemm, 0.25);
  // torchtitan's selective-op saves every second matmul's output: half the GEMMs again.
  const TpRecompute per_op = TpRecomputeOf(Recompute::kSelectiveOp, 1.0);
  EXPECT_DOUBLE_EQ(per_op.collectives, 1.0);
  EXPECT_DOUBLE_EQ(per_op.gemm, 0.5);
  const TpRecompute none = TpRecomputeOf(Recompute::kSelective, 1.0);
  EXPECT_DOUBLE_EQ(none.collectives, 0.0);
  EXPECT_DOUBLE_EQ(none.gemm, 0.0);
}

// A kernel-costed run (the overlap needs the kernel model's GEMM times) with tp 2.
Config OverlapConfig(bool tp_comm_overlap, bool async_tp) {
  Config config = ParallelTestConfig();
  config.cluster.efficiency_given = false;
  config.parallel.tp = 2;
  config.parallel.tp_comm_overlap = tp_comm_overlap;
  config.parallel.async_tp = async_tp;
  return config;
}

TEST(TensorParallelTest, OverlapExposesWhatTheGemmsCannotCoverAndSlowsTheCoveringGemms) {
  const Time collective = Milliseconds(1);
  LayerKernelTimes kernels;
  kernels.forward_gemm = 1.5e-3;
  kernels.backward_gemm = 3e-3;
  // Split against a GEMM of g seconds, c seconds of communication expose max(0, c − g) and slow
  // the GEMM by kOverlapSlowdown of the time they overlap, min(c, g).
  const auto exposed = [](double comm, double gemm) {
    return FromSeconds(std::max(0.0, comm - gemm) + kOverlapSlowdown * std::min(comm, gemm));
  };
  const TpExposure megatron =
      ExposeTp(OverlapConfig(true, false), collective, TpRecompute(), kernels);
  EXPECT_EQ(megatron.forward, exposed(2e-3, 1.5e-3));
  EXPECT_EQ(megatron.backward, exposed(2e-3, 3e-3));
  // Async TP leaves the backward's two reduce-scatters, one all-reduce's worth, exposed.
  const TpExposure async_tp =
      ExposeTp(OverlapConfig(false, true), collective, TpRecompute(), kernels);
  EXPECT_EQ(async_tp.forward, megatron.forward);
  EXPECT_EQ(async_tp.backward, collective + exposed(1e-3, 3e-3));
  const TpExposure none = ExposeTp(OverlapConfig(false, false), collective, TpRecompute(), kernels);
  EXPECT_EQ(none.forward, collective * 2);
  EXPECT_LT(megatron.backward, async_tp.backward);
  EXPECT_LT(async_tp.backward, none.backward);
}

TEST(TensorParallelTest, OverlapNeedsTheKernelModelAndMoreThanOneRank) {
  EXPECT_TRUE(TpOverlaps(OverlapConfig(true, false)));
  Config one_efficiency = OverlapConfig(true, false);
  one_efficiency.cluster.efficiency_given = true;
  EXPECT_FALSE(TpOverlaps(one_efficiency));
  Config one_rank = OverlapConfig(true, false);
  one_rank.parallel.tp = 1;
  EXPECT_FALSE(TpOverlaps(one_rank));
}

TEST(TensorParallelTest, ARecomputingCsa2DecoderRepeatsItsForwardCollectives) {
  const Config config = ParallelTestConfig();
  const Time collective = Milliseconds(2);
  LayerSpec decoder;
  const TpExposure kept = Csa2DecoderTp(config, LayerRun(), decoder, false, collective);
  const TpExposure recomputed = Csa2DecoderTp(config, LayerRun(), decoder, true, collective);
  EXPECT_EQ(kept.forward, collective * 2);
  EXPECT_EQ(kept.backward, collective * 2);
  EXPECT_EQ(recomputed.forward, collective * 2);
  EXPECT_EQ(recomputed.backward, collective * 4);
}

}  // namespace
}  // namespace stagecraft
