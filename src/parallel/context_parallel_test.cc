// Context parallelism's costs (context_parallel.h) against closed forms: a ring all-gather moves
// (n−1)/n of the gathered bytes (nccl-tests' allgather busbw factor); ring attention exposes
// (cp−1)·max(0, transfer − compute) per pass, a K and V block of 4·b·c·(g·d) bytes against the
// 4·b·c²·(a·d) FLOPs computed on it (Liu et al. 2023, Ring Attention, §3; comm/collective.h);
// and a CSA2 stage gathers each compressed KV and indexer key it reads and passes each full
// layer's halo (doc/csa2.md, "Context parallelism (V4 / V4.1)").
#include "parallel/context_parallel.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "parallel/parallel_common.h"
#include "parallel/parallel_plan.h"
#include "parallel/parallel_test_util.h"

namespace stagecraft {
namespace {

// A transformer of 8 query heads and 2 KV heads of 64 over a sequence of 4096 in cp 4 blocks of
// c = 1024 tokens: a step's K and V block is 4·c·(2·64) bytes, its attention 4·c²·(8·64) FLOPs.
constexpr double kBlockBytes = 4.0 * 1024 * 128;
constexpr double kBlockFlops = 4.0 * 1024 * 1024 * 512;

Config TransformerCpConfig(int32_t cp) {
  Config config = ParallelTestConfig();
  TransformerSpec& spec = config.model.transformer;
  spec.layers = 2;
  spec.hidden = 512;
  spec.heads = 8;
  spec.kv_heads = 2;
  spec.vocab = 1000;
  config.model.seq_len = 4096;
  config.model.micro_batch_size = 1;
  config.parallel.cp = cp;
  return config;
}

CpExposure TransformerCp(const Config& config) {
  return TransformerContextParallel(config, TransformerRunOf(config));
}

TEST(ContextParallelTest, OneContextParallelRankAddsNoCollective) {
  const CpExposure exposure = TransformerCp(TransformerCpConfig(1));
  EXPECT_EQ(exposure.forward, Time());
  EXPECT_EQ(exposure.backward, Time());
}

TEST(ContextParallelTest, TheAllGatherModeGathersEveryBlocksKeysAndValues) {
  Config config = TransformerCpConfig(4);
  config.parallel.cp_all_gather = true;
  const Time gather = Ns(3.0 / 4 * (4 * kBlockBytes));
  EXPECT_EQ(TransformerCp(config).forward, gather);
  EXPECT_EQ(TransformerCp(config).backward, gather);  // the reduce-scatter of dK and dV
  config.parallel.recompute = Recompute::kFull;
  EXPECT_EQ(TransformerCp(config).backward, gather * 2);
}

TEST(ContextParallelTest, RingAttentionExposesTheTransferTheComputeDoesNotHide) {
  Config config = TransformerCpConfig(4);
  // Each step computes for 0.25 ms (kBlockFlops at kBlockFlops / 2.5e-4 FLOP/s) and transfers
  // for 0.52 ms.
  config.cluster.peak_flops_per_s = kBlockFlops / 2.5e-4;
  config.cluster.compute_efficiency = 1.0;
  const double transfer_ns = kBlockBytes;  // 1 byte a ns over NVLink
  const CpExposure exposure = TransformerCp(config);
  EXPECT_EQ(exposure.forward, Ns(3 * (transfer_ns - 2.5e5)));
  // The backward passes K, V and their gradients against twice the compute.
  EXPECT_EQ(exposure.backward, Ns(3 * (2 * transfer_ns - 2 * 2.5e5)));
}

TEST(ContextParallelTest, RingAttentionHidesBlocksAboveTheComputeToBandwidthRatio) {
  Config config = TransformerCpConfig(4);
  // A step now computes for 1 ms, longer than its 0.52 ms transfer.
  config.cluster.peak_flops_per_s = kBlockFlops / 1e-3;
  config.cluster.compute_efficiency = 1.0;
  const CpExposure exposure = TransformerCp(config);
  EXPECT_EQ(exposure.forward, Time());
  EXPECT_EQ(exposure.backward, Time());
}

// embedding, a full layer and a reuse layer reading its compressed KV, the head (m = 1), cut
// into two stages after the full layer.
Config Csa2CpConfig(int32_t cp) {
  Config config = ParallelTestConfig();
  LayerSpec embedding;
  embedding.kind = LayerKind::kEmbedding;
  LayerSpec full;
  LayerSpec reuse;
  reuse.attention = AttentionMode::kReuse;
  LayerSpec head;
  head.kind = LayerKind::kHead;
  config.model.layers = {embedding, full, reuse, head};
  EXPECT_TRUE(ResolveSources(config.model.layers).ok());
  config.model.seq_len = 1024;
  config.model.micro_batch_size = 1;
  config.parallel.cp = cp;
  config.parallel.cp_overlap = false;
  return config;
}

Partition TwoStages() { return Partition{{0, 2}, 4}; }

TEST(ContextParallelTest, AStageGathersWhatItsLayersReadAndItsFullLayersProduce) {
  const Config config = Csa2CpConfig(2);
  const std::vector<SharedStateEdge> edges =
      SharedStateEdges(config.model.layers, config.model.dims);
  const StageGathers first = GathersOfStage(config.model, TwoStages(), 0, edges);
  EXPECT_EQ(first.full_layers, std::vector<int32_t>{1});
  EXPECT_EQ(first.states, (std::set<std::pair<int32_t, StateKind>>{{1, StateKind::kCompressedKv},
                                                                   {1, StateKind::kIndexerKeys}}));
  // The reuse layer's stage receives only its CP rank's shard of layer 1's compressed KV and
  // gathers it again.
  const StageGathers second = GathersOfStage(config.model, TwoStages(), 1, edges);
  EXPECT_TRUE(second.full_layers.empty());
  EXPECT_EQ(second.states,
            (std::set<std::pair<int32_t, StateKind>>{{1, StateKind::kCompressedKv}}));
}

TEST(ContextParallelTest, AFullLayersStageGathersItsKvAndIndexerKeysAndPassesAHalo) {
  const Config config = Csa2CpConfig(2);
  const Csa2Dims& dims = config.model.dims;
  const std::vector<SharedStateEdge> edges =
      SharedStateEdges(config.model.layers, config.model.dims);
  const CpExposure exposure = LayerListStageContextParallel(config, TwoStages(), 0, edges);
  // Per token at m = 1: kv_dim bf16 of compressed KV and c_I bf16 of indexer keys, gathered
  // over 2 ranks (1/2 of the bytes move); the halo, m·kv_dim bf16, one point-to-point send.
  const Time kv = Ns(1.0 / 2 * 1024 * dims.kv_dim * 2);
  const Time keys = Ns(1.0 / 2 * 1024 * dims.indexer_key_dim * 2);
  const Time halo = Ns(dims.kv_dim * 2.0);
  EXPECT_EQ(exposure.forward, kv + keys + halo);
  // Backward: dKV reduce-scattered, no indexer-key gradient (the indexer is not trained).
  EXPECT_EQ(exposure.backward, kv + halo);
}

TEST(ContextParallelTest, OverlapChargesNoMoreThanTheCommunication) {
  Config config = Csa2CpConfig(2);
  const std::vector<SharedStateEdge> edges =
      SharedStateEdges(config.model.layers, config.model.dims);
  const CpExposure exposed = LayerListStageContextParallel(config, TwoStages(), 0, edges);
  config.parallel.cp_overlap = true;
  for (LayerSpec& layer : config.model.layers) layer.forward = layer.input_grad = Milliseconds(1);
  const CpExposure overlapped = LayerListStageContextParallel(config, TwoStages(), 0, edges);
  EXPECT_LT(overlapped.forward, exposed.forward);
  EXPECT_LE(overlapped.backward, exposed.backward);
}

TEST(ContextParallelTest, ShardsMustHoldWholeCompressionGroups) {
  Config config = Csa2CpConfig(4);
  for (LayerSpec& layer : config.model.layers) {
    if (layer.kind == LayerKind::kDecoder) layer.compress_ratio = 4;
  }
  // cp 4 zig-zag cuts 1000 tokens into 8 chunks of 125, not whole groups of m = 4: seq_len must
  // be a multiple of 8·4.
  config.model.seq_len = 1000;
  const Status status = CheckContextParallel(config, ConfigLocations());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("multiple of 32"), std::string::npos)
      << status.error().message;
  config.model.seq_len = 1024;
  EXPECT_TRUE(CheckContextParallel(config, ConfigLocations()).ok());
}

}  // namespace
}  // namespace stagecraft
