#include "io/torchtitan_config.h"

#include <gtest/gtest.h>

#include <string>

namespace stagecraft {
namespace {

Config Cluster(int32_t nodes) {
  Config config;
  config.cluster.given = true;
  config.cluster.nodes = nodes;
  config.cluster.devices_per_node = 8;
  return config;
}

// torchtitan's llama3 flavors (torchtitan/models/llama3/__init__.py) with FeedForward's width:
// the published Llama 3 MLP widths 14,336, 28,672 and 53,248.
TEST(TorchtitanConfigTest, FlavorsGiveLlama3Dimensions) {
  const std::string text =
      "[model]\nname = \"llama3\"\nflavor = \"70B\"\n[training]\nlocal_batch_size = 16\n"
      "global_batch_size = 32\nseq_len = 8192\n[parallelism]\npipeline_parallel_degree = 4\n"
      "tensor_parallel_degree = 8\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
      "[activation_checkpoint]\nmode = \"full\"\n";
  auto config = ReadTorchtitanConfig(text, "t.toml", Cluster(8), false);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const Config& c = config.value();
  EXPECT_EQ(c.model.transformer.layers, 80);
  EXPECT_EQ(c.model.transformer.ffn_hidden, 28672);
  EXPECT_EQ(Llama3FlavorOf(c.model.transformer), "70B");
  // 64 GPUs = dp_shard (the rest, 2) x tp 8 x pp 4; the global batch over 2 ranks is the local
  // batch of 16, split into microbatches of 1; no layers_per_stage: two stages per rank.
  EXPECT_EQ(c.parallel.dp, 2);
  EXPECT_EQ(c.parallel.vpp, 2);
  EXPECT_EQ(c.parallel.microbatches, 16);
  EXPECT_EQ(c.parallel.zero_stage, 3);
  EXPECT_TRUE(c.parallel.sequence_parallel);
  EXPECT_EQ(c.parallel.recompute, Recompute::kFull);
  EXPECT_FALSE(c.parallel.fused_kernels);  // compile is off by default
  EXPECT_EQ(c.schedule.name, "interleaved-1f1b");
  TransformerSpec eight;
  eight.layers = 32;
  eight.hidden = 4096;
  eight.heads = 32;
  eight.kv_heads = 8;
  eight.ffn_hidden = 14336;
  eight.vocab = 128256;
  EXPECT_EQ(Llama3FlavorOf(eight), "8B");
  eight.ffn_hidden = 14335;
  EXPECT_EQ(Llama3FlavorOf(eight), "");
}

TEST(TorchtitanConfigTest, LayersPerStageCountsTheEmbeddingAndHead) {
  // 32 layers + 1 + 1 over 4 layers per stage: ceil(34 / 4) = 9 stages, not a multiple of pp 4.
  const std::string text =
      "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 8\nseq_len = 2048\n"
      "[parallelism]\npipeline_parallel_degree = 4\n"
      "pipeline_parallel_schedule = \"Interleaved1F1B\"\npipeline_parallel_layers_per_stage = 4\n"
      "[activation_checkpoint]\nmode = \"none\"\n";
  auto config = ReadTorchtitanConfig(text, "t.toml", Cluster(1), false);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "t.toml:9: [parallelism] pipeline_parallel_layers_per_stage = 4 makes 9 stages of (32 "
            "layers + 1 + 1) (expected a multiple of pp 4, at least two per rank for "
            "Interleaved1F1B; torchtitan's pipeline_parallel.py)");
  auto even = ReadTorchtitanConfig(text + "[parallelism]\n", "t.toml", Cluster(1), false);
  EXPECT_FALSE(even.ok());  // a second [parallelism] table
}

// DDP (replicate only) keeps the parameters whole; HSDP (replicate and shard) is refused.
TEST(TorchtitanConfigTest, ReplicateIsDdpAndHsdpIsRefused) {
  const std::string head =
      "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 2\nseq_len = 4096\n"
      "[activation_checkpoint]\nmode = \"none\"\n[parallelism]\n"
      "data_parallel_replicate_degree = 8\n";
  auto ddp =
      ReadTorchtitanConfig(head + "data_parallel_shard_degree = 1\n", "t.toml", Cluster(1), false);
  ASSERT_TRUE(ddp.ok()) << ddp.error().message;
  EXPECT_EQ(ddp.value().parallel.dp, 8);
  EXPECT_EQ(ddp.value().parallel.zero_stage, 0);
  EXPECT_EQ(ddp.value().parallel.microbatches, 1);
  EXPECT_EQ(ddp.value().model.micro_batch_size, 2);
  auto hsdp =
      ReadTorchtitanConfig(head + "data_parallel_shard_degree = 2\n", "t.toml", Cluster(2), false);
  ASSERT_FALSE(hsdp.ok());
  EXPECT_EQ(hsdp.error().message,
            "t.toml:9: [parallelism] data_parallel_replicate_degree with "
            "data_parallel_shard_degree x context_parallel_degree > 1 is HSDP, which stagecraft "
            "does not read yet (expected replicate 1, or shard and cp 1: DDP)");
}

}  // namespace
}  // namespace stagecraft
