#include "serve/explorer_space.h"

#include <gtest/gtest.h>

namespace stagecraft {
namespace {

// Issue 15's acceptance figure: Vidur's shipped explorer config enumerates 4,374
// configurations. By hand: 3 traces x 6 schedulers x 3 batch sizes = 54 per (model, cluster,
// tp, pp); h100 and a100 (16 GPUs, 4 per node) admit tp 1, 2, 4 x pp 1, 2, 4 = 9 each, a40
// (32 GPUs, 8 per node) tp 1-8 x pp 1-4 = 12: 30 for Llama-2-7B and CodeLlama-34B, 21 for
// Qwen-72B (tp 1 excluded: 6 + 6 + 9). 54 x (30 + 30 + 21) = 4,374.
TEST(ExplorerSpaceTest, VidurShippedConfigHas4374Configurations) {
  const ExplorerSpace space = VidurShippedSpace();
  const std::vector<ExplorerCandidate> candidates = EnumerateExplorerSpace(space);
  EXPECT_EQ(candidates.size(), 4374u);
  for (const ExplorerCandidate& candidate : candidates) {
    const ExplorerSpace::Cluster& cluster = space.clusters[candidate.cluster];
    EXPECT_LE(candidate.tp, cluster.gpus_per_node);
    EXPECT_GE(candidate.replicas, 1);
    EXPECT_EQ(candidate.replicas, cluster.gpus / (candidate.tp * candidate.pp));
    if (space.models[candidate.model].name == "qwen-72b") {
      EXPECT_NE(candidate.tp, 1);
    }
  }
  // The last candidate: Qwen-72B, bwb, a40, sarathi 4096, tp 8 x pp 4 (one replica of all 32
  // GPUs), batch 128 x 4 stages.
  const ExplorerCandidate& last = candidates.back();
  EXPECT_EQ(last.tp, 8);
  EXPECT_EQ(last.pp, 4);
  EXPECT_EQ(last.replicas, 1);
  EXPECT_EQ(last.batch_cap, 512);
}

// Vidur's rules on a space of their own: a cluster of 8 GPUs, 8 per node, excludes tp 8 x pp 2
// (no replica) but keeps tp 8 x pp 1.
TEST(ExplorerSpaceTest, RulesDropLayoutsWithoutAReplica) {
  ExplorerSpace space;
  space.models = {{"m", {2}, {}}};
  space.traces = {{"t", 4096, 1}};
  space.clusters = {{"d", 8, 8}};
  space.schedulers = {{"vllm", 0}};
  space.tp = {1, 2, 8};
  space.pp = {1, 2};
  space.batch_sizes = {32};
  const std::vector<ExplorerCandidate> candidates = EnumerateExplorerSpace(space);
  ASSERT_EQ(candidates.size(), 3u);  // tp 1 x pp 1, 2; tp 8 x pp 1
  EXPECT_EQ(candidates[2].tp, 8);
  EXPECT_EQ(candidates[2].pp, 1);
}

}  // namespace
}  // namespace stagecraft
