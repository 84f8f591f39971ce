// Megatron-LM's Table 1 (Narayanan et al., SC'21, "Efficient Large-Scale Language Model Training
// on GPU Clusters Using Megatron-LM"): per-GPU throughput with recomputation counted, against the
// simulated one through the `stagecraft simulate` path with the defaults (the kernel model, no
// efficiency override; tests/golden/data/table1/, layouts from NVIDIA's reproduction script).
// The golden test tests/golden/parallel/megatron-table1.test pins the exact output; this one
// checks the acceptance tolerance, ±10% on every row.
#include <gtest/gtest.h>

#include <string>

#include "analysis/metrics.h"
#include "lower/lower.h"
#include "run/run_setup.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

// Hardware TFLOP/s per GPU of one simulated iteration of `config`, as the summary prints it.
double SimulatedTflopsPerGpu(const std::string& config) {
  RunSpec flags;
  flags.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/table1/" + config;
  auto run = PrepareRun(flags);
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  if (!run.ok()) return 0;
  EXPECT_FALSE(run.value().config.cluster.efficiency_given) << config;
  auto graph = Lower(run.value().schedule, run.value().stage_costs, run.value().lower);
  EXPECT_TRUE(graph.ok());
  if (!graph.ok()) return 0;
  const Trace trace = Simulate(graph.value());
  const Metrics metrics =
      ComputeMetrics(run.value().schedule, run.value().stage_costs, graph.value(), trace);
  const ParallelPlan& plan = run.value().parallel_plan;
  const double seconds = static_cast<double>(metrics.makespan.ns()) * 1e-9;
  return plan.hardware_flops_per_iteration / (seconds * plan.world_size) / 1e12;
}

struct Row {
  const char* config;
  double published_tflops;  // Table 1, TFLOP/s per GPU
};

TEST(MegatronTable1Test, EveryRowWithinTenPercentWithDefaults) {
  const Row rows[] = {{"gpt-1.7b.yaml", 137},   {"gpt-3.6b.yaml", 138},   {"gpt-7.5b.yaml", 142},
                      {"gpt-18.4b.yaml", 135},  {"gpt-39.1b.yaml", 138},  {"gpt-76.1b.yaml", 140},
                      {"gpt-145.6b.yaml", 148}, {"gpt-310.1b.yaml", 155}, {"gpt-529.6b.yaml", 163},
                      {"gpt-1008b.yaml", 163}};
  for (const Row& row : rows) {
    EXPECT_NEAR(SimulatedTflopsPerGpu(row.config), row.published_tflops,
                row.published_tflops * 0.10)
        << row.config;
  }
}

}  // namespace
}  // namespace stagecraft
