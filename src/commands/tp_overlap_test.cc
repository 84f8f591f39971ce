// The TP overlap options on one layout (tests/golden/data/overlap-gpt.yaml: 39B GPT, pp 2 x tp 8
// x dp 4 on H100, sequence parallel): Megatron's tp_comm_overlap hides the TP collectives of
// both passes behind the GEMMs; torchtitan's async TP (PyTorch's micro-pipeline TP pass) cannot
// fuse the backward's reduce-scatters, whose inputs are sums of matmuls, so it sits between no
// overlap and tp_comm_overlap, and by about one exposed all-reduce a layer and microbatch in the
// backward (doc/fidelity.md, "Async TP leaves the backward's reduce-scatters exposed").
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <sstream>
#include <string>

#include "commands/commands.h"
#include "run/run_setup.h"

namespace stagecraft {
namespace {

Metrics Simulated(const std::function<void(ParallelSpec&)>& option) {
  RunSpec spec;
  spec.config_path =
      (std::filesystem::path(STAGECRAFT_TESTS_DIR) / "golden" / "data" / "overlap-gpt.yaml")
          .string();
  spec.edit = [option](Config& config) {
    option(config.parallel);
    return Status::Ok();
  };
  auto run = PrepareRun(spec);
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  if (!run.ok()) return Metrics();
  RunOutcome outcome;
  std::ostringstream err;
  EXPECT_TRUE(SimulateRun(run.value(), outcome, err).ok());
  return outcome.metrics;
}

TEST(TpOverlapTest, AsyncTpHidesLessThanTpCommOverlap) {
  const Metrics none = Simulated([](ParallelSpec&) {});
  const Metrics async_tp = Simulated([](ParallelSpec& p) { p.async_tp = true; });
  const Metrics tp_comm = Simulated([](ParallelSpec& p) { p.tp_comm_overlap = true; });
  EXPECT_LT(async_tp.makespan, none.makespan);
  EXPECT_LT(tp_comm.makespan, async_tp.makespan);
  EXPECT_LT(tp_comm.bubble.exposed_collectives, async_tp.bubble.exposed_collectives);
  EXPECT_LT(async_tp.bubble.exposed_collectives, none.bubble.exposed_collectives);
}

// torchtitan's per-op selective recomputation saves the reduce-scatters' outputs but not the
// sequence-parallel all-gathers', whose outputs feed the matmuls it recomputes (every second
// one), so its backward repeats the forward's TP collectives as full recomputation does;
// Megatron's selective recomputation (the attention core) repeats none.
TEST(TpOverlapTest, PerOpSelectiveRecomputationRepeatsTheAllGathers) {
  const auto collectives = [](Recompute recompute) {
    RunSpec spec;
    spec.config_path =
        (std::filesystem::path(STAGECRAFT_TESTS_DIR) / "golden" / "data" / "overlap-gpt.yaml")
            .string();
    spec.edit = [recompute](Config& config) {
      config.parallel.recompute = recompute;
      return Status::Ok();
    };
    auto run = PrepareRun(spec);
    EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
    return run.ok() ? run.value().parallel_plan.collectives.at(0) : StageCollectives();
  };
  const StageCollectives none = collectives(Recompute::kNone);
  const StageCollectives selective = collectives(Recompute::kSelective);
  const StageCollectives per_op = collectives(Recompute::kSelectiveOp);
  const StageCollectives full = collectives(Recompute::kFull);
  EXPECT_GT(none.tp_backward, Time());
  EXPECT_EQ(selective.tp_backward, none.tp_backward);
  EXPECT_EQ(per_op.tp_forward, none.tp_forward);
  EXPECT_GT(per_op.tp_backward, none.tp_backward);
  EXPECT_EQ(per_op.tp_backward, full.tp_backward);
}

}  // namespace
}  // namespace stagecraft
