// The schedule-study targets of the zero-bubble issue:
//   - zb-2p (the automatic Zero Bubble schedule under 2p·M_B) for p = 32, m = 256 with the
//     Zero Bubble paper's 1.5B per-stage costs (Table 9) and c = 0.6 ms: under 2 s;
//   - `stagecraft bench-schedules` over every schedule for p = 8, m = 8, 16, ..., 256 on the
//     uniform model, through the CLI entry point (table only, no files): under 10 s.
//   ./build-bench/bench/schedules_bench [--benchmark_filter=REGEX]
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>

#include "commands/commands.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace {

void BM_ZbAuto2p(benchmark::State& state) {
  const int32_t pp = static_cast<int32_t>(state.range(0));
  const int32_t microbatches = static_cast<int32_t>(state.range(1));
  StageCost cost;
  cost.forward = Time::Nanoseconds(18'522'000);
  cost.input_grad = Time::Nanoseconds(18'086'000);
  cost.weight_grad = Time::Nanoseconds(9'337'000);
  const PipelineCosts costs = UniformPipelineCosts(
      std::vector<StageCost>(static_cast<size_t>(pp), cost), Time::Nanoseconds(601'000));
  size_t actions = 0;
  for (auto _ : state) {
    auto schedule = GenerateZb2p({pp, 1, microbatches, 0}, costs);
    if (!schedule.ok()) {
      state.SkipWithError(schedule.error().message.c_str());
      return;
    }
    actions = schedule.value().num_actions();
    benchmark::DoNotOptimize(actions);
  }
  state.counters["actions"] = static_cast<double>(actions);
}
BENCHMARK(BM_ZbAuto2p)->Args({32, 256})->Args({8, 64})->Unit(benchmark::kMillisecond);

void BM_BenchSchedulesP8(benchmark::State& state) {
  std::string list;
  for (int m = 8; m <= 256; m += 8) list += (list.empty() ? "" : ",") + std::to_string(m);
  const std::string config = std::string(STAGECRAFT_EXAMPLES_DIR) + "/uniform-study.yaml";
  RunSpec spec;
  spec.config_path = config;
  spec.pp = "8";
  BenchSpec bench;
  bench.microbatches_list = list;
  for (auto _ : state) {
    Transcript transcript;
    const Status status = RunBenchSchedules(spec, bench, transcript);
    if (!status.ok()) {
      state.SkipWithError(FormatError(status.error()).c_str());
      return;
    }
    benchmark::DoNotOptimize(transcript.pieces().size());
  }
}
BENCHMARK(BM_BenchSchedulesP8)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace stagecraft
