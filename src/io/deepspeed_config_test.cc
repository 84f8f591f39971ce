#include "io/deepspeed_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/megatron_args.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

// A Megatron-DeepSpeed run as the planner's DeepSpeed candidates set it (Candidate::ApplyTo):
// a GPT of 24 layers on `tp` x `pp` x `dp` GPUs, DeepSpeed's own split, no sequence parallelism.
Config DeepSpeedRun(int32_t tp, int32_t pp, int32_t dp, int32_t micro_batch_size,
                    int32_t microbatches, int32_t zero_stage) {
  Config config;
  TransformerSpec& t = config.model.transformer;
  t.layers = 24;
  t.hidden = 2048;
  t.heads = 16;
  t.vocab = 50257;
  config.model.seq_len = 2048;
  config.model.micro_batch_size = micro_batch_size;
  config.cluster.given = true;
  config.cluster.devices_per_node = 8;
  config.cluster.nodes = tp * pp * dp / 8;
  ParallelSpec& p = config.parallel;
  p = ParallelSpec();
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.microbatches = microbatches;
  p.zero_stage = zero_stage;
  p.partition = PartitionMethod::kCounts;
  p.layer_counts =
      pp > 1 ? DeepSpeedTransformerCounts(t.layers, pp) : EvenTransformerCounts(t.layers, 1);
  return config;
}

int64_t GlobalBatch(const Config& config) {
  return int64_t{config.parallel.microbatches} * config.parallel.dp * config.model.micro_batch_size;
}

std::string ArgsText(const Config& config) {
  std::string text;
  for (const auto& [flag, value] :
       WriteMegatronArgs(config, {GlobalBatch(config), MegatronDialect::kMegatronDeepSpeed})) {
    text += flag + (value.empty() ? "" : " " + value) + "\n";
  }
  return text;
}

TEST(DeepSpeedConfigTest, WritesTheBatchBf16AndZero) {
  EXPECT_EQ(WriteDeepSpeedJson(DeepSpeedRun(1, 1, 8, 2, 4, 3), 64),
            "{\n"
            "  \"train_batch_size\": 64,\n"
            "  \"train_micro_batch_size_per_gpu\": 2,\n"
            "  \"gradient_accumulation_steps\": 4,\n"
            "  \"bf16\": {\"enabled\": true},\n"
            "  \"zero_optimization\": {\"stage\": 3, \"overlap_comm\": true},\n"
            "  \"gradient_clipping\": 1.0,\n"
            "  \"steps_per_print\": 10\n"
            "}\n");
}

// ds_config.json and the arguments written, read back, and written again: the same batch and
// ZeRO stage, the same files. Every key written is one the reader takes (it refuses others).
TEST(DeepSpeedConfigTest, WrittenConfigReadsBackToTheSameRun) {
  const std::vector<Config> runs = {
      DeepSpeedRun(2, 4, 2, 1, 32, 1),  // DeepSpeed's pipe with ZeRO-1
      DeepSpeedRun(1, 1, 8, 2, 4, 3),   // no pipe, ZeRO-3 (overlap_comm)
      DeepSpeedRun(4, 2, 1, 4, 8, 0),   // no data parallelism, no ZeRO
      DeepSpeedRun(2, 1, 4, 1, 16, 2),  // ZeRO-2
  };
  for (const Config& run : runs) {
    const std::string json = WriteDeepSpeedJson(run, GlobalBatch(run));
    const std::string args = ArgsText(run);
    SCOPED_TRACE(json + args);
    Config base;
    base.cluster = run.cluster;
    auto read = ReadDeepSpeedConfig(json, "ds_config.json", args, "args.txt", base);
    ASSERT_TRUE(read.ok()) << read.error().message;
    const Config& got = read.value();
    EXPECT_EQ(got.model.micro_batch_size, run.model.micro_batch_size);
    EXPECT_EQ(got.parallel.microbatches, run.parallel.microbatches);
    EXPECT_EQ(got.parallel.dp, run.parallel.dp);
    EXPECT_EQ(got.parallel.tp, run.parallel.tp);
    EXPECT_EQ(got.parallel.pp, run.parallel.pp);
    EXPECT_EQ(got.parallel.zero_stage, run.parallel.zero_stage);
    EXPECT_EQ(got.parallel.layer_counts, run.parallel.layer_counts);
    EXPECT_EQ(got.parallel.engine, TrainingEngine::kMegatronDeepSpeed);
    EXPECT_EQ(WriteDeepSpeedJson(got, GlobalBatch(got)), json);
    EXPECT_EQ(ArgsText(got), args);
  }
}

}  // namespace
}  // namespace stagecraft
