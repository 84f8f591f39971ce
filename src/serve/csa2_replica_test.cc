// Serving a CSA2 layer list (DeepSeek-V4.1-Flash), against hand calculations from doc/csa2.md's
// dimensions and storage formats.
#include "serve/csa2_replica.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hardware/presets.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

ModelSpec V41Flash() {
  ModelSpec model;
  model.name = "v41-flash";
  model.layers = V41FlashLayers();
  model.seq_len = 4096;
  return model;
}

ReplicaModel Replica(ServeShape shape, double weight_bytes = 1, const char* preset = "h200") {
  auto cluster = ClusterFromPreset(preset);
  EXPECT_TRUE(cluster.ok());
  EngineOptions engine;
  engine.weight_bytes = weight_bytes;
  auto replica = BuildCsa2ReplicaModel(V41Flash(), cluster.value(), shape, engine);
  EXPECT_TRUE(replica.ok()) << replica.error().message;
  return replica.value();
}

// One decode token at position 4096 (context 4095) of V4.1-Flash, per TP rank (the cache is
// replicated), by hand from doc/csa2.md:
//   window: 40 layers x min(4096, 128) tokens x 512 B (FP8)                   = 2,621,440 B
//   top-k:  18 layers at m = 2 (2048 visible) and 20 at m = 1 (4096 visible) each read
//           min(visible, 512) = 512 entries x 288 B                     38 x 147,456 = 5,603,328 B
//   indexer keys (68 B), scored at the last position: full m = 2 (L2, 8, 14) 3 x 2048, full
//           m = 1 (L20) 4096, reindex (L24-36, pool 16,384 >= 4096) 4 x 4096 = 26,624 x 68
//                                                                              = 1,810,432 B
//   reads 10,035,200 B;
//   attention core 4 x 64 x 512 = 131,072 FLOPs per pair over 40 x 128 window pairs and
//           38 x 512 top-k pairs (24,576)                                 = 3,221,225,472 FLOPs;
//   scoring 2 x 32 x 128 = 8192 FLOPs per scored entry x 26,624              = 218,103,808 FLOPs.
TEST(Csa2ServeTest, V41DecodeTokenReadsAndFlopsMatchTheHandCalculation) {
  const ReplicaModel replica = Replica({.tp = 8, .pp = 1, .replicas = 1});
  IterationWork work;
  AddSequence(replica, 1, 4095, /*finishes=*/true, work);
  EXPECT_EQ(work.new_tokens, 1.0);
  EXPECT_EQ(work.sequences, 1.0);
  EXPECT_EQ(work.csa2_read_bytes, 10'035'200.0);
  EXPECT_EQ(work.csa2_core_flops, 3'221'225'472.0);
  EXPECT_EQ(work.csa2_scoring_flops, 218'103'808.0);
  // Past the top-k's reach the reads stop growing but for the scored indexer keys: at context
  // 8191 the indexer scores 3 x 4096 + 8192 + 4 x 8192 = 53,248 keys, the top-k reads are the
  // same 512 per layer.
  IterationWork longer;
  AddSequence(replica, 1, 8191, true, longer);
  EXPECT_EQ(longer.csa2_read_bytes, 2'621'440.0 + 5'603'328.0 + 53'248.0 * 68);
  EXPECT_EQ(longer.csa2_core_flops, work.csa2_core_flops);
}

// A 512-token prefill chunk from position 1: per layer the window pairs are
// 128 x 129 / 2 + 384 x 128 = 57,408; it reads the window once and min(visible, 512 x 512)
// entries: 256 at m = 2, 512 at m = 1, and the indexer keys visible at its last position.
TEST(Csa2ServeTest, PrefillChunkReadsEachVisibleEntryOnce) {
  const ReplicaModel replica = Replica({.tp = 8, .pp = 1, .replicas = 1});
  IterationWork work;
  AddSequence(replica, 512, 0, /*finishes=*/false, work);
  EXPECT_EQ(work.sequences, 0.0);
  const double window = 40.0 * 128 * 512;
  const double topk = (18.0 * 256 + 20.0 * 512) * 288;
  const double keys = (3.0 * 256 + 512 + 4.0 * 512) * 68;
  EXPECT_EQ(work.csa2_read_bytes, window + topk + keys);
  // Pairs: window 40 x 57,408 = 2,296,320; top-k Σ_{t=1..512} min(512, ⌊t/m⌋), at m = 2
  // 2 x (1 + ... + 255) + 256 = 65,536 on 18 layers, at m = 1 512 x 513 / 2 = 131,328 on 20:
  // 3,806,208. 6,102,528 pairs of 131,072 FLOPs.
  EXPECT_EQ(work.csa2_core_flops, 131'072.0 * 6'102'528);
}

// Weights per GPU at TP 8, one byte per parameter (doc/csa2.md's parameter formulas):
//   replicated per decoder: query down 5120 x 1280 = 6,553,600, shared KV head 5120 x 512 =
//     2,621,440, router 5120 x 384 = 1,966,080: 11,141,120 x 40 = 445,644,800; full m = 2:
//     compressor 2 x 5120 x 512 = 5,242,880, indexer keys 512 x 128 + 128 = 65,664, indexer query
//     1280 x 32 x 128 + 5120 x 32 = 5,406,720: x 3 = 32,145,792; full m = 1 (compressor
//     2,621,440): 8,093,824; reindex 4 x 5,406,720 = 21,626,880. In all 507,511,296.
//   split / 8: attention projections 126,615,552 less the query down and KV head, plus the
//     shared expert 3 x 5120 x 2304 = 35,389,440: 152,829,952 x 40 / 8 = 764,149,760.
//   routed / 8: 384 x 35,389,440 x 40 / 8 = 67,947,724,800.
//   embedding and head: 2 x 129,280 x 5120 / 8 = 165,478,400.
//   69,384,864,256 B in all.
// Activations at the 8192-token budget: 8192 x (5 x 5120 + 2 x 2304 x 7 / 8) x 2 B + 256 x
// 129,280 / 8 x 4 B = 485,490,688 + 16,547,840 = 502,038,528 B. H200: 143,771 MiB (nvidia-smi's
// total) x 0.9 less those and the 2 GiB reserve = 63,644,951,654.4 B of KV = 4,469,448 blocks of 16
// tokens x 890 B.
TEST(Csa2ServeTest, V41Tp8Fp8WeightsAndKvCapacityMatchTheHandCalculation) {
  const ReplicaModel replica = Replica({.tp = 8, .pp = 1, .replicas = 1});
  EXPECT_EQ(replica.weight_bytes_per_gpu, 69'384'864'256.0);
  EXPECT_EQ(replica.activation_bytes_per_gpu, 502'038'528.0);
  EXPECT_EQ(replica.kv_bytes_per_token_per_gpu, 890.0);
  EXPECT_TRUE(replica.kv_replicated);
  EXPECT_EQ(replica.kv_capacity_tokens, int64_t{4'469'448} * 16);
  // A request of 4096 tokens keeps its 4096 tokens' compressed KV and indexer keys plus 40 x 128
  // window tokens of 512 B: 4096 + 2,621,440 / 890 tokens' worth; 10,155 of them fit.
  const double held = KvTokensHeld(replica, 4096);
  EXPECT_DOUBLE_EQ(held, 4096 + 2'621'440.0 / 890);
  EXPECT_EQ(
      static_cast<int64_t>(std::floor(static_cast<double>(replica.kv_capacity_tokens) / held)),
      10155);
  // A 1-token request still holds its one window token per layer.
  EXPECT_DOUBLE_EQ(KvTokensHeld(replica, 1), 1 + 40.0 * 512 / 890);
}

// Under TP the attention core splits over the ranks and the indexer scoring does not: past the
// top-k's reach a longer context adds scoring only. Per decoder (the classes' totals spread
// evenly) the core kernel is its window and top-k reads against its FLOPs over the TP ranks, the
// scoring kernel its indexer-key reads against its FLOPs, whole on every rank.
TEST(Csa2ServeTest, TensorParallelismSplitsTheCoreNotTheScoring) {
  const ReplicaModel one = Replica({.tp = 2, .pp = 4, .replicas = 1}, 0.5, "h200x4");
  const ReplicaModel eight = Replica({.tp = 8, .pp = 4, .replicas = 1}, 0.5, "h200x4");
  // A decode batch of 64 sequences (one sequence's kernels would sit at their floors).
  IterationWork work;
  IterationWork shorter;
  for (int sequence = 0; sequence < 64; ++sequence) {
    AddSequence(one, 1, 65'535, true, work);
    AddSequence(one, 1, 4095, true, shorter);
  }
  const double grown_core = work.csa2_core_flops - shorter.csa2_core_flops;
  const double grown_scoring = work.csa2_scoring_flops - shorter.csa2_scoring_flops;
  EXPECT_EQ(grown_core, 0.0);  // the window and the top-k saturate by 4096
  EXPECT_GT(grown_scoring, 0.0);
  EXPECT_GT(work.csa2_index_read_bytes, shorter.csa2_index_read_bytes);
  const DeviceRates rates = one.cluster.rates();
  const auto attention = [&rates](const ReplicaModel& replica, const IterationWork& sequence) {
    const double decoders = replica.model.layers;
    const double tp = replica.shape.tp;
    const double index = sequence.csa2_index_read_bytes / decoders;
    const double core =
        std::max(MemoryBoundSeconds(rates, sequence.csa2_read_bytes / decoders - index),
                 AttentionSeconds(rates, sequence.csa2_core_flops / tp / decoders, false));
    const double scoring =
        std::max(MemoryBoundSeconds(rates, index),
                 AttentionSeconds(rates, sequence.csa2_scoring_flops / decoders, false));
    return decoders * (core + scoring);
  };
  for (const IterationWork* sequence : {&work, &shorter}) {
    EXPECT_NEAR(IterationSeconds(one, *sequence).attention_s, attention(one, *sequence), 1e-12);
    EXPECT_NEAR(IterationSeconds(eight, *sequence).attention_s, attention(eight, *sequence), 1e-12);
    EXPECT_LE(IterationSeconds(eight, *sequence).attention_s,
              IterationSeconds(one, *sequence).attention_s);
  }
  EXPECT_GT(IterationSeconds(one, work).attention_s, IterationSeconds(one, shorter).attention_s);
}

// Pipeline stages split the decoders 10 per stage at pp 4: the stages' compressed KV per token
// (full layers L2, L8 | L14 | L20 | none) is 356, 178, 356, 0 B; the bounding stage is the one
// holding the fewest 4096-token requests.
TEST(Csa2ServeTest, PipelineStagesBoundTheCapacityByTheirOwnLayers) {
  const ReplicaModel replica = Replica({.tp = 8, .pp = 4, .replicas = 1}, 1, "h200x4");
  EXPECT_EQ(replica.kv_bytes_per_token_per_gpu, 356.0);
  EXPECT_EQ(replica.stage_cut_width, 4 * 5120);
  ASSERT_TRUE(replica.csa2.has_value());
  EXPECT_EQ(replica.csa2->stage_window_bytes, 10.0 * 512);
}

TEST(Csa2ServeTest, BadLayoutsAreErrors) {
  auto cluster = ClusterFromPreset("h200");
  ASSERT_TRUE(cluster.ok());
  // tp 16 crosses the node; tp 3 divides neither the heads nor the output groups; pp 3 does not
  // divide the 40 decoders; ep 5 does not divide the 384 experts.
  for (const ServeShape& shape : {ServeShape{.tp = 16}, ServeShape{.tp = 3},
                                  ServeShape{.tp = 1, .pp = 3}, ServeShape{.tp = 1, .ep = 5}}) {
    auto replica = BuildCsa2ReplicaModel(V41Flash(), cluster.value(), shape, EngineOptions{});
    EXPECT_FALSE(replica.ok());
  }
  // bf16 on one H200: 1.1 TB of weights, no KV block.
  auto alone = BuildCsa2ReplicaModel(V41Flash(), cluster.value(), {.tp = 1}, EngineOptions{});
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.error().kind, ErrorKind::kInfeasible);
}

}  // namespace
}  // namespace stagecraft
