// Throughput of the simulator on large 1F1B pipelines: the whole job (generate, lower,
// simulate, metrics), the simulation alone at three sizes (to show linear growth), interleaved
// 1F1B, and the checker's timing-free deadlock search. items_per_second counts compute actions.
//   ./build-bench/bench/simulate_bench [--benchmark_filter=REGEX]
// Targets (issue): 1F1B p = 64, m = 4096 end to end under 1 s and 500 MB peak RSS on a 2-core
// machine; >= 5M simulated compute actions per second, single-threaded.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/metrics.h"
#include "check/checker.h"
#include "commands/commands.h"
#include "hardware/presets.h"
#include "heap_count.h"
#include "lower/lower.h"
#include "model/model_spec.h"
#include "model/transformer.h"
#include "plan/plan.h"
#include "run/run_setup.h"
#include "schedule/generator.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

// Every transfer between ranks costs this much (no cluster), so links carry real time.
constexpr int64_t kCostP2pNs = 10'000;

LowerOptions BenchLowerOptions() {
  LowerOptions options;
  options.cost_p2p = Time::Nanoseconds(kCostP2pNs);
  return options;
}

// The process's peak resident set so far, in KiB (Linux reports ru_maxrss in KiB). It only
// grows, so a benchmark's figure includes whatever ran before it in the same process.
int64_t PeakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A schedule, its stage costs and its lowered graph, built outside the timed loop.
struct Prepared {
  Schedule schedule;
  std::vector<StageCost> costs;
  TaskGraph graph;
};

// Returns nullopt (and marks the benchmark skipped) when a step fails.
std::optional<Prepared> Prepare(benchmark::State& state, GenerateFn generate,
                                const GeneratorParams& params) {
  auto schedule = generate(params);
  if (!schedule.ok()) {
    state.SkipWithError(schedule.error().message.c_str());
    return std::nullopt;
  }
  Prepared prepared;
  prepared.schedule = std::move(schedule).value();
  prepared.costs = UniformStageCosts(ModelSpec(), prepared.schedule.num_stages, params.vpp);
  auto graph = Lower(prepared.schedule, prepared.costs, BenchLowerOptions());
  if (!graph.ok()) {
    state.SkipWithError(graph.error().message.c_str());
    return std::nullopt;
  }
  prepared.graph = std::move(graph).value();
  return prepared;
}

// Counters shared by every benchmark: per-iteration sizes, throughput (items = compute actions),
// peak memory.
void ReportCounters(benchmark::State& state, int64_t actions, int64_t tasks, uint64_t events) {
  state.SetItemsProcessed(state.iterations() * actions);
  state.counters["actions"] = benchmark::Counter(static_cast<double>(actions));
  state.counters["tasks"] = benchmark::Counter(static_cast<double>(tasks));
  state.counters["events"] = benchmark::Counter(static_cast<double>(events));
  state.counters["peak_rss_KiB"] = benchmark::Counter(static_cast<double>(PeakRssKiB()));
}

void ReportSizes(benchmark::State& state, const Prepared& prepared, uint64_t events) {
  ReportCounters(state, static_cast<int64_t>(prepared.schedule.num_actions()),
                 static_cast<int64_t>(prepared.graph.num_tasks()), events);
}

// (a) The whole job for one 1F1B iteration: generate + stage costs + lower + simulate + metrics.
// Everything lives inside one iteration, so the peak RSS is that of one pipeline, as in a CLI
// run. Args: pp, microbatches.
void BM_EndToEndOneFOneB(benchmark::State& state) {
  const GeneratorParams params{static_cast<int32_t>(state.range(0)),
                               /*vpp=*/1, static_cast<int32_t>(state.range(1)), 0};
  int64_t actions = 0;
  int64_t tasks = 0;
  uint64_t events = 0;
  int64_t heap_peak = 0;
  for (auto _ : state) {
    const int64_t before = ResetHeapPeak();
    auto schedule = GenerateOneFOneB(params);
    if (!schedule.ok()) {
      state.SkipWithError(schedule.error().message.c_str());
      return;
    }
    const auto costs = UniformStageCosts(ModelSpec(), schedule.value().num_stages, 1);
    auto graph = Lower(schedule.value(), costs, BenchLowerOptions());
    if (!graph.ok()) {
      state.SkipWithError(graph.error().message.c_str());
      return;
    }
    const Trace trace = Simulate(graph.value());
    const Metrics metrics = ComputeMetrics(schedule.value(), costs, graph.value(), trace);
    benchmark::DoNotOptimize(metrics.makespan);
    heap_peak = std::max(heap_peak, HeapPeakBytes() - before);
    actions = metrics.num_compute_actions;
    tasks = static_cast<int64_t>(graph.value().num_tasks());
    events = trace.events;
  }
  ReportCounters(state, actions, tasks, events);
  state.counters["heap_B_per_action"] =
      benchmark::Counter(static_cast<double>(heap_peak) / static_cast<double>(actions));
}
// Registered first so that its peak RSS is not inflated by the benchmarks after it. The second
// is issue 36's acceptance case: 1F1B p 64, m 16,384, F = I = W = 1 ms (2.1M compute actions,
// 2.1M transfers); targets >= 10M compute actions/s on one core (items_per_second) and <= 64 B
// per compute action at peak. heap_B_per_action: the heap's peak during one iteration, above
// what was live when it began, per compute action (heap_count.h).
BENCHMARK(BM_EndToEndOneFOneB)->Args({64, 4096})->Args({64, 16384})->Unit(benchmark::kMillisecond);

// Issue 36's case (m 16,384) phase by phase, each on the previous phase's output: the lowering
// (schedule prebuilt; heap: the graph and the lowering's scratch) and the simulation (graph
// prebuilt; heap: the simulator's state and the trace).
void BM_AcceptanceLower(benchmark::State& state) {
  const GeneratorParams params{64, /*vpp=*/1, static_cast<int32_t>(state.range(0)), 0};
  const auto prepared = Prepare(state, GenerateOneFOneB, params);
  if (!prepared) return;
  int64_t heap_peak = 0;
  for (auto _ : state) {
    const int64_t before = ResetHeapPeak();
    auto graph = Lower(prepared->schedule, prepared->costs, BenchLowerOptions());
    benchmark::DoNotOptimize(graph.ok());
    heap_peak = std::max(heap_peak, HeapPeakBytes() - before);
  }
  ReportSizes(state, *prepared, 0);
  state.counters["heap_B_per_action"] = benchmark::Counter(
      static_cast<double>(heap_peak) / static_cast<double>(prepared->schedule.num_actions()));
}
BENCHMARK(BM_AcceptanceLower)->Arg(16384)->Unit(benchmark::kMillisecond);

void BM_AcceptanceSimulate(benchmark::State& state) {
  const GeneratorParams params{64, /*vpp=*/1, static_cast<int32_t>(state.range(0)), 0};
  const auto prepared = Prepare(state, GenerateOneFOneB, params);
  if (!prepared) return;
  uint64_t events = 0;
  int64_t heap_peak = 0;
  for (auto _ : state) {
    const int64_t before = ResetHeapPeak();
    const Trace trace = Simulate(prepared->graph);
    events = trace.events;
    benchmark::DoNotOptimize(trace.timings.data());
    heap_peak = std::max(heap_peak, HeapPeakBytes() - before);
  }
  ReportSizes(state, *prepared, events);
  state.counters["heap_B_per_action"] = benchmark::Counter(
      static_cast<double>(heap_peak) / static_cast<double>(prepared->schedule.num_actions()));
}
BENCHMARK(BM_AcceptanceSimulate)->Arg(16384)->Unit(benchmark::kMillisecond);

// (b) Simulation alone (graph prebuilt): m grows at p = 64, so the fitted complexity (N =
// compute actions) should come out as O(N). Args: pp, microbatches.
void BM_SimulateOneFOneB(benchmark::State& state) {
  const GeneratorParams params{static_cast<int32_t>(state.range(0)),
                               /*vpp=*/1, static_cast<int32_t>(state.range(1)), 0};
  const auto prepared = Prepare(state, GenerateOneFOneB, params);
  if (!prepared) return;
  uint64_t events = 0;
  for (auto _ : state) {
    const Trace trace = Simulate(prepared->graph);
    events = trace.events;
    benchmark::DoNotOptimize(trace.timings.data());
  }
  state.SetComplexityN(static_cast<int64_t>(prepared->schedule.num_actions()));
  ReportSizes(state, *prepared, events);
}
BENCHMARK(BM_SimulateOneFOneB)
    ->Args({64, 1024})
    ->Args({64, 2048})
    ->Args({64, 4096})
    ->Complexity(benchmark::oN)
    ->Unit(benchmark::kMillisecond);

// The same with p growing at m = 1024 (more ranks, more links; same actions per rank).
void BM_SimulateOneFOneBRanks(benchmark::State& state) { BM_SimulateOneFOneB(state); }
BENCHMARK(BM_SimulateOneFOneBRanks)
    ->Args({16, 1024})
    ->Args({64, 1024})
    ->Args({256, 1024})
    ->Complexity(benchmark::oN)
    ->Unit(benchmark::kMillisecond);

// Interleaved 1F1B, p = 64, v = 2, m = 2048 (group size p), simulation alone.
void BM_SimulateInterleaved(benchmark::State& state) {
  const GeneratorParams params{static_cast<int32_t>(state.range(0)),
                               static_cast<int32_t>(state.range(1)),
                               static_cast<int32_t>(state.range(2)), 0};
  const auto prepared = Prepare(state, GenerateInterleavedOneFOneB, params);
  if (!prepared) return;
  uint64_t events = 0;
  for (auto _ : state) {
    const Trace trace = Simulate(prepared->graph);
    events = trace.events;
    benchmark::DoNotOptimize(trace.timings.data());
  }
  ReportSizes(state, *prepared, events);
}
BENCHMARK(BM_SimulateInterleaved)->Args({64, 2, 2048})->Unit(benchmark::kMillisecond);

// Lowering alone (schedule prebuilt), to split the end-to-end time. Args: pp, microbatches.
void BM_LowerOneFOneB(benchmark::State& state) {
  const GeneratorParams params{static_cast<int32_t>(state.range(0)),
                               /*vpp=*/1, static_cast<int32_t>(state.range(1)), 0};
  const auto prepared = Prepare(state, GenerateOneFOneB, params);
  if (!prepared) return;
  for (auto _ : state) {
    auto graph = Lower(prepared->schedule, prepared->costs, BenchLowerOptions());
    benchmark::DoNotOptimize(graph.ok());
  }
  ReportSizes(state, *prepared, 0);
}
BENCHMARK(BM_LowerOneFOneB)->Args({64, 4096})->Unit(benchmark::kMillisecond);

// The checker's timing-free deadlock search on the p = 64, m = 4096 1F1B graph (none found).
void BM_FindDeadlockOneFOneB(benchmark::State& state) {
  const GeneratorParams params{static_cast<int32_t>(state.range(0)),
                               /*vpp=*/1, static_cast<int32_t>(state.range(1)), 0};
  const auto prepared = Prepare(state, GenerateOneFOneB, params);
  if (!prepared) return;
  for (auto _ : state) {
    const auto deadlock = FindDeadlock(prepared->graph);
    if (deadlock) {
      state.SkipWithError("unexpected deadlock in a generated 1F1B schedule");
      return;
    }
  }
  ReportSizes(state, *prepared, 0);
}
BENCHMARK(BM_FindDeadlockOneFOneB)->Args({64, 4096})->Unit(benchmark::kMillisecond);

// The path `stagecraft simulate` takes for one run of `flags`: config, partition, lowering with
// state and collectives, simulation and metrics, all inside the timed loop.
void RunLibraryPath(benchmark::State& state, const RunSpec& flags) {
  int64_t actions = 0;
  int64_t tasks = 0;
  uint64_t events = 0;
  for (auto _ : state) {
    auto run = PrepareRun(flags);
    if (!run.ok()) {
      state.SkipWithError(run.error().message.c_str());
      return;
    }
    auto graph = Lower(run.value().schedule, run.value().stage_costs, run.value().lower);
    if (!graph.ok()) {
      state.SkipWithError(graph.error().message.c_str());
      return;
    }
    const Trace trace = Simulate(graph.value());
    const Metrics metrics =
        ComputeMetrics(run.value().schedule, run.value().stage_costs, graph.value(), trace);
    benchmark::DoNotOptimize(metrics.makespan);
    actions = metrics.num_compute_actions;
    tasks = static_cast<int64_t>(graph.value().num_tasks());
    events = trace.events;
  }
  ReportCounters(state, actions, tasks, events);
}

// DeepSeek-V4.1-Flash (examples/deepseek-v4.1-flash.yaml, 42 layers, every shared-state edge)
// at pp = 16 (dp 8, ep 8), m = 512, through RunLibraryPath (the run library, as `simulate` calls
// it). Target (issue): under 1 s.
void BM_V41FlashPp16(benchmark::State& state) {
  RunSpec flags;
  flags.config_path = std::string(STAGECRAFT_EXAMPLES_DIR) + "/deepseek-v4.1-flash.yaml";
  flags.pp = "16";
  flags.dp = "8";  // the example's 16 nodes hold pp 16 x dp 8, experts sharded over ep 8
  flags.ep = "8";
  flags.microbatches = "512";
  RunLibraryPath(state, flags);
}
BENCHMARK(BM_V41FlashPp16)->Unit(benchmark::kMillisecond);

// A 1024-GPU layout: Megatron's 145.6B GPT (tests/golden/data/table1/gpt-145.6b.yaml, costed by
// the kernel model) at DP 16 x
// TP 8 x PP 8 (interleaved, v 2), m = 64, with the TP all-reduces, DP reductions and optimizer
// steps on the collective streams. The simulator runs one pipeline: the TP ranks of a stage and
// the DP replicas run the same program in step, so one representative of each is simulated and
// the collectives are timed for their whole groups (comm/collective.h). Target (fidelity issue):
// under 0.1 s.
void BM_Megatron1024Gpus(benchmark::State& state) {
  RunSpec flags;
  flags.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/table1/gpt-145.6b.yaml";
  flags.dp = "16";
  flags.microbatches = "64";
  RunLibraryPath(state, flags);
}
BENCHMARK(BM_Megatron1024Gpus)->Unit(benchmark::kMillisecond);

// The multimodal V4.1-Flash example (examples/v41-flash-multimodal.yaml: pp 8, m 32, 64 images,
// Engram all-to-alls) with every vision placement side by side, as `simulate --compare-vision`
// runs it: four placements (bubble-fill simulating its baseline first), each with the extra run
// that measures the Engram traffic's exposed time.
void BM_V41CompareVision(benchmark::State& state) {
  RunSpec flags;
  flags.config_path = std::string(STAGECRAFT_EXAMPLES_DIR) + "/v41-flash-multimodal.yaml";
  for (auto _ : state) {
    auto run = PrepareRun(flags);
    if (!run.ok()) {
      state.SkipWithError(run.error().message.c_str());
      return;
    }
    auto table = CompareVision(flags, run.value());
    if (!table.ok()) {
      state.SkipWithError(table.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(table.value().size());
  }
}
BENCHMARK(BM_V41CompareVision)->Unit(benchmark::kMillisecond);

// Bubble-fill at scale: the multimodal example (pp 8, dp 16) at m = 512, 1024 images placed into
// the pipeline's gaps (the search simulates the pipeline at least twice).
void BM_V41BubbleFillM512(benchmark::State& state) {
  RunSpec flags;
  flags.config_path = std::string(STAGECRAFT_EXAMPLES_DIR) + "/v41-flash-multimodal.yaml";
  flags.microbatches = "512";
  flags.vision_placement = "bubble-fill";
  for (auto _ : state) {
    auto run = PrepareRun(flags);
    if (!run.ok()) {
      state.SkipWithError(run.error().message.c_str());
      return;
    }
    auto simulated = SimulatePrepared(run.value());
    if (!simulated.ok()) {
      state.SkipWithError(FormatError(simulated.error()).c_str());
      return;
    }
    benchmark::DoNotOptimize(simulated.value().metrics.makespan);
  }
}
BENCHMARK(BM_V41BubbleFillM512)->Unit(benchmark::kMillisecond);

// Costing one layout's layers without a timeline, what a planner repeats per candidate: the
// kernel model's layer list (model/transformer.h) for Llama 3.1 405B (126 decoders, GQA, SwiGLU)
// at TP 8 with sequence parallelism, micro-batch 1, seq 8192. Target (fidelity issue): 50 us.
void BM_CostLayoutLayers(benchmark::State& state) {
  TransformerSpec spec;
  spec.layers = 126;
  spec.hidden = 16384;
  spec.heads = 128;
  spec.kv_heads = 8;
  spec.ffn_hidden = 53248;
  spec.vocab = 128256;
  spec.swiglu = true;
  spec.causal = true;
  spec.bias = false;
  spec.learned_positions = false;
  spec.tied_embeddings = false;
  TransformerRun run;
  run.seq_len = 8192;
  run.tensor_parallel = 8;
  run.sequence_parallel = true;
  auto cluster = ClusterFromPreset("h100x1024");
  if (!cluster.ok()) {
    state.SkipWithError(cluster.error().message.c_str());
    return;
  }
  const DeviceRates rates = cluster.value().rates();
  for (auto _ : state) {
    const std::vector<LayerSpec> layers = TransformerLayers(spec, run, rates);
    benchmark::DoNotOptimize(layers.back().forward);
  }
}
BENCHMARK(BM_CostLayoutLayers)->Unit(benchmark::kMicrosecond);

// The validation suite (bench/validation/runs): every measured run prepared and simulated, as
// `stagecraft validate` does.
void BM_ValidationSuite(benchmark::State& state) {
  ValidateSpec flags;
  flags.paths = {std::string(STAGECRAFT_SOURCE_DIR) + "/bench/validation/runs"};
  for (auto _ : state) {
    Transcript transcript;
    const Status status = RunValidate(flags, transcript);
    if (!status.ok()) {
      state.SkipWithError(FormatError(status.error()).c_str());
      return;
    }
    benchmark::DoNotOptimize(transcript.pieces().size());
  }
}
BENCHMARK(BM_ValidationSuite)->Unit(benchmark::kMillisecond);

// The planner (planner issue): Llama 3 70B (tests/golden/data/llama-3-70b.yaml) on 64 H100,
// global batch 512 sequences of 8192 tokens, every engine. Arg 1: the screen alone (one
// candidate simulated); arg 50: the screen and the exact simulation of the best 50. Targets:
// the screen under 1 s, the top 50 under 10 s.
void BM_PlanLlama70b64(benchmark::State& state) {
  PlanSpec spec;
  spec.run.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/llama-3-70b.yaml";
  spec.run.cluster = "h100x8";
  spec.gpus = 64;
  spec.global_batch = 512;
  spec.simulate = static_cast<int32_t>(state.range(0));
  spec.jobs = static_cast<int32_t>(state.range(1));  // threads (plan --jobs)
  int64_t candidates = 0;
  for (auto _ : state) {
    auto result = PlanLayouts(spec);
    if (!result.ok()) {
      state.SkipWithError(result.error().message.c_str());
      return;
    }
    candidates = result.value().candidates;
    benchmark::DoNotOptimize(result.value().plans.size());
  }
  state.counters["candidates"] = static_cast<double>(candidates);
}
// Args: the candidates simulated exactly, the threads.
BENCHMARK(BM_PlanLlama70b64)
    ->Args({1, 1})
    ->Args({50, 1})
    ->Args({50, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stagecraft

// `stagecraft kernel gemm ...` without the process: the preset looked up, the GEMM timed and the
// JSON written (the kernel issue's target: under 5 ms a call with the process, under 50 us from
// Python), and the kernel model's GEMM alone.
void BM_KernelCommandGemm(benchmark::State& state) {
  stagecraft::KernelSpec spec;
  spec.op = "gemm";
  spec.dims = {"4096", "8192", "2048"};
  spec.json = true;
  for (auto _ : state) {
    stagecraft::Transcript transcript;
    benchmark::DoNotOptimize(stagecraft::RunKernel(spec, transcript).ok());
  }
}
BENCHMARK(BM_KernelCommandGemm)->Unit(benchmark::kMicrosecond);

void BM_GemmTime(benchmark::State& state) {
  const stagecraft::DeviceRates h100 = stagecraft::ClusterFromPreset("h100").value().rates();
  double m = 4096;
  for (auto _ : state) {
    benchmark::DoNotOptimize(stagecraft::GemmTime(h100, {m, 8192, 2048}));
    m = m == 4096 ? 4097 : 4096;
  }
}
BENCHMARK(BM_GemmTime);
