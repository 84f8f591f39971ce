// The model states of the memory verdict as the engines hold them (parallel/data_parallel.cc,
// FsdpResidency): FSDP under pipeline parallelism keeps a stage's gathered parameters and its
// unsharded fp32 gradients until the stage's last backward (torch.distributed.pipelining's
// backward_maybe_with_nosync; torchtitan's reshard_after_forward=False under PP), so a rank holds
// them whole; only the optimizer state with its fp32 master parameters stays sharded.
// The layout is torchtitan's Llama 3.1 405B benchmark (benchmarks/llama3_h100_202412_torchtitan.md,
// Table 5: 512 H100, FSDP 8 x TP 8 x PP 8, local batch 32, full AC, 1F1B), copied here.
#include "run/memory_verdict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>

#include "run/run_setup.h"

namespace stagecraft {
namespace {

constexpr char kLlama405b[] = R"(model:
  name: llama3.1-405b
  type: transformer
  seq_len: 8192
  micro_batch_size: 4
  transformer: {layers: 126, hidden: 16384, heads: 128, vocab: 128256, kv_heads: 8,
                ffn_hidden: 53248, swiglu: true, causal: true, tied_embeddings: false,
                bias: false, learned_positions: false}
cluster: {preset: h100-96gbx64}
parallel: {pp: 8, tp: 8, dp: 8, microbatches: 8, recompute: full, sequence_parallel: true,
           fsdp: full-shard}
schedule: {name: 1f1b}
)";

struct Prepared {
  PreparedRun run;
  MemoryReport memory;
};

// The 405B layout with `edit` applied, prepared, simulated and its memory computed.
Prepared Memory(const std::function<void(Config&)>& edit) {
  RunSpec spec;
  spec.config_path = "llama-405b.yaml";
  spec.config_text = kLlama405b;
  spec.edit = [edit](Config& config) {
    edit(config);
    return Status::Ok();
  };
  Prepared prepared;
  auto run = PrepareRun(spec);
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  if (!run.ok()) return prepared;
  prepared.run = std::move(run).value();
  auto outcome = SimulatePrepared(prepared.run);
  EXPECT_TRUE(outcome.ok()) << (outcome.ok() ? "" : outcome.error().message);
  if (!outcome.ok()) return prepared;
  prepared.memory = ComputeMemory(prepared.run, outcome.value());
  return prepared;
}

// 16 of the layers on one stage, the 512 GPUs as 64 FSDP ranks of TP 8.
void WithoutPipeline(Config& config) {
  config.model.transformer.layers = 16;
  config.parallel.pp = 1;
  config.parallel.dp = 64;
  config.parallel.microbatches = 1;
}

// Rank 1 holds decoders only: 16 of the 126 layers, per TP rank.
constexpr size_t kMiddleRank = 1;

TEST(EngineMemoryTest, FsdpUnderPipelineHoldsParametersAndGradientsWhole) {
  const Prepared p = Memory([](Config&) {});
  ASSERT_GT(p.memory.ranks.size(), kMiddleRank);
  const RankMemory& row = p.memory.ranks[kMiddleRank];
  ASSERT_GT(row.params, 0);
  EXPECT_EQ(p.memory.shard_ranks, 8);
  // bf16 parameters gathered (2 B), fp32 gradients accumulated unsharded (4 B), fp32 master,
  // m and v sharded over the 8 FSDP ranks (12 B / 8).
  EXPECT_DOUBLE_EQ(row.states.parameters, 2 * row.params);
  EXPECT_DOUBLE_EQ(row.states.gradients, 4 * row.params);
  EXPECT_DOUBLE_EQ(row.states.optimizer, 12 * row.params / 8);
}

TEST(EngineMemoryTest, Float8AllGatherHoldsTheLinearsInFp8) {
  const Prepared p = Memory([](Config& config) {
    config.parallel.fp8 = true;
    config.parallel.fp8_all_gather = true;
  });
  ASSERT_GT(p.memory.ranks.size(), kMiddleRank);
  const RankMemory& middle = p.memory.ranks[kMiddleRank];
  // The decoders' weights (their norms with them) are gathered as FP8, one byte each.
  EXPECT_DOUBLE_EQ(middle.states.parameters, middle.params);
  // The first rank's embedding stays bf16: more than one byte a parameter on average.
  const RankMemory& first = p.memory.ranks[0];
  EXPECT_GT(first.states.parameters, first.params);
  EXPECT_LT(first.states.parameters, 2 * first.params);
}

TEST(EngineMemoryTest, FsdpWithoutPipelineShardsEverything) {
  const Prepared p = Memory(WithoutPipeline);
  ASSERT_FALSE(p.memory.ranks.empty());
  const RankMemory& row = p.memory.ranks[0];
  EXPECT_EQ(p.memory.shard_ranks, 64);
  EXPECT_DOUBLE_EQ(row.states.parameters, 2 * row.params / 64);
  EXPECT_DOUBLE_EQ(row.states.gradients, 4 * row.params / 64);
  EXPECT_DOUBLE_EQ(row.states.optimizer, 12 * row.params / 64);
}

// reshard_after_forward=False without pipeline parallelism keeps every block gathered from its
// forward to its backward; its gradients are still reduce-scattered every backward.
TEST(EngineMemoryTest, NoReshardAfterForwardHoldsParametersWhole) {
  const Prepared p = Memory([](Config& config) {
    WithoutPipeline(config);
    config.parallel.reshard_after_forward = ReshardAfterForward::kNo;
  });
  ASSERT_FALSE(p.memory.ranks.empty());
  const RankMemory& row = p.memory.ranks[0];
  EXPECT_DOUBLE_EQ(row.states.parameters, 2 * row.params);
  EXPECT_DOUBLE_EQ(row.states.gradients, 4 * row.params / 64);
}

// The distributed optimizer under pipeline parallelism (Megatron) is unchanged: bf16
// parameters and fp32 main gradients whole, 12 bytes sharded (6 + 12/d).
TEST(EngineMemoryTest, DistributedOptimizerUnderPipelineShardsTheOptimizerOnly) {
  const Prepared p = Memory([](Config& config) {
    config.parallel.zero_stage = 0;
    config.parallel.distributed_optimizer = true;
  });
  ASSERT_GT(p.memory.ranks.size(), kMiddleRank);
  const RankMemory& row = p.memory.ranks[kMiddleRank];
  EXPECT_DOUBLE_EQ(row.states.total(), (6 + 12.0 / 8) * row.params);
}

// The planner's screen reads the same states as the verdict (RankModelStates).
TEST(EngineMemoryTest, TheVerdictCountsTheWholeStates) {
  const Prepared p = Memory([](Config&) {});
  ASSERT_FALSE(p.memory.ranks.empty());
  double largest = 0;
  for (size_t rank = 0; rank < p.memory.ranks.size(); ++rank) {
    const double states = RankModelStates(p.run.parallel_plan, p.run.config.parallel, rank).total();
    EXPECT_DOUBLE_EQ(p.memory.ranks[rank].states.total(), states);
    largest = std::max(largest, p.memory.ranks[rank].total);
  }
  EXPECT_DOUBLE_EQ(p.memory.verdict.peak_bytes, largest);
}

}  // namespace
}  // namespace stagecraft
