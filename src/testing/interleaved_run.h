// One real simulated run for the report tests (header-only; the test target links lower,
// schedule and analysis): interleaved 1F1B, p = 4, v = 2, m = 4, F = 2 ms, I = 3 ms, W = 1 ms
// per rank, 50 us per transfer, activations of 1 MiB, and the RunInfo a report prints for it.
#pragma once

#include <vector>

#include "analysis/metrics.h"
#include "lower/lower.h"
#include "report/run_info.h"
#include "schedule/generator.h"

namespace stagecraft {

struct InterleavedRun {
  Schedule schedule;
  std::vector<StageCost> costs;
  TaskGraph graph;
  Trace trace;
  Metrics metrics;
  RunInfo info;
};

inline InterleavedRun SimulateInterleavedRun() {
  InterleavedRun run;
  run.schedule = GenerateInterleavedOneFOneB({4, 2, 4, 0}).value();
  ModelSpec model;
  model.forward = Time::Nanoseconds(2'000'000);
  model.input_grad = Time::Nanoseconds(3'000'000);
  model.weight_grad = Time::Nanoseconds(1'000'000);
  model.activation_bytes = 1 << 20;
  model.p2p_bytes = 4096;
  run.costs = UniformStageCosts(model, 8, 2);
  LowerOptions options;
  options.cost_p2p = Time::Nanoseconds(50'000);
  run.graph = Lower(run.schedule, run.costs, options).value();
  run.trace = Simulate(run.graph);
  run.metrics = ComputeMetrics(run.schedule, run.costs, run.graph, run.trace);
  run.info.config = "runs/\"pp4\".yaml";
  run.info.model = "uniform";
  run.info.schedule = "interleaved-1f1b";
  run.info.pp = 4;
  run.info.vpp = 2;
  run.info.microbatches = 4;
  run.info.cost_p2p = options.cost_p2p;
  run.info.forward = model.forward;
  run.info.input_grad = model.input_grad;
  run.info.weight_grad = model.weight_grad;
  return run;
}

}  // namespace stagecraft
