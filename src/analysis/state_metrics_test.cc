// Shared-state lowering and metrics on generated schedules with hand-made flows: payload bytes
// ride the cuts, direct flows add transfers, the closed form of the state bytes matches the
// simulation exactly, zero-byte state changes nothing, and state shared by chunks of one rank
// moves no bytes but stays resident.
#include <gtest/gtest.h>

#include <random>

#include "analysis/memory.h"
#include "analysis/metrics.h"
#include "analysis/state_closed_form.h"
#include "lower/layer_pipeline.h"
#include "lower/lower.h"
#include "model/layer_costs.h"
#include "schedule/generator.h"
#include "schedule/schedule_csv.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

struct SimRun {
  TaskGraph graph;
  Trace trace;
  Metrics metrics;
};

SimRun Simulated(const Schedule& schedule, const std::vector<StageCost>& costs,
                 const LowerOptions& options) {
  SimRun run;
  auto graph = Lower(schedule, costs, options);
  EXPECT_TRUE(graph.ok()) << (graph.ok() ? "" : graph.error().message);
  run.graph = std::move(graph).value();
  run.trace = Simulate(run.graph);
  EXPECT_FALSE(run.trace.deadlock.has_value());
  run.metrics = ComputeMetrics(schedule, costs, run.graph, run.trace);
  return run;
}

std::vector<StageCost> Costs(int32_t stages, int64_t hidden_bytes) {
  StageCost cost;
  cost.forward = Time::Nanoseconds(1'000'000);
  cost.input_grad = Time::Nanoseconds(1'000'000);
  cost.weight_grad = Time::Nanoseconds(1'000'000);
  cost.activation_bytes = 1000;
  cost.p2p_bytes = hidden_bytes;
  return std::vector<StageCost>(static_cast<size_t>(stages), cost);
}

LowerOptions Cluster() {
  LowerOptions options;
  options.cluster.given = true;
  options.cluster.devices_per_node = 8;
  options.cluster.intra_node = {Time::Nanoseconds(1000), 100e9};
  options.cluster.inter_node = {Time::Nanoseconds(5000), 25e9};
  return options;
}

StateFlow Flow(int32_t producer_stage, std::vector<int32_t> consumer_stages, int64_t bytes,
               bool differentiable, StatePolicy policy) {
  StateFlow flow;
  flow.producer_layer = producer_stage;
  flow.producer_stage = producer_stage;
  flow.consumer_stages = std::move(consumer_stages);
  flow.consumer_layers = flow.consumer_stages;
  flow.bytes = bytes;
  flow.differentiable = differentiable;
  flow.policy = policy;
  return flow;
}

Schedule Generate(GenerateFn generate, int32_t pp, int32_t vpp, int32_t m) {
  auto schedule = generate(GeneratorParams{pp, vpp, m, 0});
  EXPECT_TRUE(schedule.ok());
  return std::move(schedule).value();
}

TEST(StateLoweringTest, PayloadRidesEveryCutBetweenProducerAndLastConsumer) {
  const Schedule schedule = Generate(GenerateOneFOneB, 4, 1, 3);
  LowerOptions options = Cluster();
  options.states = {Flow(0, {2}, 700, /*differentiable=*/true, StatePolicy::kPayload)};
  const SimRun run = Simulated(schedule, Costs(4, 5000), options);
  for (const Task& task : run.graph.tasks) {
    if (task.kind != TaskKind::kTransfer) continue;
    const int32_t cut = std::min(task.action.stage.value(), task.consumer.stage.value());
    const int64_t expected = cut < 2 ? 700 : 0;
    EXPECT_EQ(task.state_bytes, expected) << "cut " << cut;
    EXPECT_EQ(task.bytes, 5000 + expected);
  }
  // 2 cuts x 3 microbatches, forward and dState.
  EXPECT_EQ(run.metrics.state_bytes_forward, 2 * 3 * 700);
  EXPECT_EQ(run.metrics.state_bytes_backward, 2 * 3 * 700);
  ASSERT_EQ(run.metrics.flows.size(), 1u);
  EXPECT_EQ(run.metrics.flows[0].bytes_forward, 4200);
}

TEST(StateLoweringTest, DirectAddsOneTransferPerConsumingStageAndMicrobatch) {
  const Schedule schedule = Generate(GenerateOneFOneB, 4, 1, 5);
  LowerOptions options = Cluster();
  options.states = {Flow(0, {2, 3}, 900, /*differentiable=*/false, StatePolicy::kDirect)};
  const SimRun run = Simulated(schedule, Costs(4, 5000), options);
  int64_t state_transfers = 0;
  for (const Task& task : run.graph.tasks) {
    if (task.payload != PayloadKind::kState) continue;
    ++state_transfers;
    EXPECT_EQ(task.rank, 0);
    EXPECT_EQ(task.action.kind, ActionKind::kForward);
    EXPECT_EQ(task.consumer.kind, ActionKind::kForward);
    EXPECT_TRUE(task.peer == 2 || task.peer == 3);
  }
  EXPECT_EQ(state_transfers, 2 * 5);
  EXPECT_EQ(run.metrics.state_bytes_forward, 2 * 5 * 900);
  EXPECT_EQ(run.metrics.state_bytes_backward, 0);  // not differentiable
}

TEST(StateLoweringTest, DirectDStateMakesTheProducerBackwardWaitForEveryConsumer) {
  const Schedule schedule = Generate(GenerateOneFOneB, 4, 1, 2);
  LowerOptions options = Cluster();
  options.states = {Flow(0, {3}, 1'000'000'000, /*differentiable=*/true, StatePolicy::kDirect)};
  const SimRun run = Simulated(schedule, Costs(4, 5000), options);
  for (uint32_t task = 0; task < run.graph.num_tasks(); ++task) {
    const Task& info = run.graph.tasks[task];
    if (info.payload != PayloadKind::kStateGradient) continue;
    const uint32_t producer_backward = info.consumer_task;
    EXPECT_EQ(run.graph.tasks[producer_backward].action.stage.value(), 0);
    EXPECT_GE(run.trace.timings[producer_backward].start, run.trace.timings[task].end);
  }
  EXPECT_EQ(run.metrics.state_bytes_backward, 2 * 1'000'000'000LL);
  EXPECT_GT(run.metrics.state_exposed.ns(), 0);  // 1 GB over 25 GB/s cannot hide
}

// Property: zero-byte payload state adds no transfer and no dependency, so every timing equals
// the run without sharing.
TEST(StateLoweringTest, ZeroByteStateChangesNothing) {
  std::mt19937 random(20261130);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t pp = 2 + static_cast<int32_t>(random() % 6);
    const int32_t m = 1 + static_cast<int32_t>(random() % 9);
    const Schedule schedule = Generate(GenerateOneFOneB, pp, 1, m);
    LowerOptions options = Cluster();
    const SimRun plain = Simulated(schedule, Costs(pp, 4096), options);
    const int32_t producer = static_cast<int32_t>(random() % pp);
    const int32_t consumer = producer + static_cast<int32_t>(random() % (pp - producer));
    options.states = {Flow(producer, {consumer}, 0, trial % 2 == 0, StatePolicy::kPayload)};
    const SimRun shared = Simulated(schedule, Costs(pp, 4096), options);
    EXPECT_EQ(plain.trace.timings, shared.trace.timings) << "pp " << pp << " m " << m;
    EXPECT_EQ(plain.metrics.makespan, shared.metrics.makespan);
    EXPECT_EQ(shared.metrics.state_bytes(), 0);
  }
}

// Property: the closed form of the iteration's state bytes equals the simulated bytes, over
// random flows (payload, direct and shadow with its once-per-iteration parameter sync, any
// differentiability) on loop, interleaved, dual (DualPipe: two mirrored model copies, each
// syncing its own shadow replicas) and V (DualPipeV) placements.
TEST(StateLoweringTest, ClosedFormStateBytesMatchSimulation) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 80; ++trial) {
    const int kind = trial % 4;  // 0 interleaved, 1 1F1B, 2 DualPipe, 3 DualPipeV
    int32_t pp = 2 + static_cast<int32_t>(random() % 4);
    if (kind == 2) pp += pp % 2;  // DualPipe needs an even pipeline
    const int32_t vpp = kind == 0 || kind == 3 ? 2 : 1;
    int32_t m = vpp == 2 ? pp * (1 + static_cast<int32_t>(random() % 3))
                         : 1 + static_cast<int32_t>(random() % 6);
    if (kind >= 2) m = 2 * pp * (1 + static_cast<int32_t>(random() % 2));
    const GenerateFn generators[] = {GenerateInterleavedOneFOneB, GenerateOneFOneB,
                                     GenerateDualPipe, GenerateDualPipeV};
    const Schedule schedule = Generate(generators[kind], pp, vpp, m);
    const int32_t stages = pp * vpp;
    LowerOptions options = Cluster();
    for (int flow = 0; flow < 4; ++flow) {
      const int32_t producer = static_cast<int32_t>(random() % stages);
      std::vector<int32_t> consumers;
      for (int32_t stage = producer; stage < stages; ++stage) {
        if (random() % 2 == 0) consumers.push_back(stage);
      }
      if (consumers.empty()) consumers.push_back(producer);
      const StatePolicy policies[] = {StatePolicy::kPayload, StatePolicy::kDirect,
                                      StatePolicy::kShadow};
      StateFlow state =
          Flow(producer, consumers, 100 + (random() % 1000), random() % 2, policies[random() % 3]);
      if (state.policy == StatePolicy::kShadow) {
        state.shadow_bytes = static_cast<int64_t>(random() % 300);
        state.shadow_param_bytes = 1 + static_cast<int64_t>(random() % 5000);
        state.shadow_forward = Time::Nanoseconds(1000 + random() % 9000);
        state.shadow_backward = random() % 2 ? state.shadow_forward * 2 : Time();
      }
      options.states.push_back(state);
    }
    const SimRun run = Simulated(schedule, Costs(stages, 4096), options);
    const StateBytesClosedForm form =
        ClosedFormStateBytes(options.states, StageRanks(schedule), m, kind == 2 ? 2 : 1);
    EXPECT_EQ(form.forward, run.metrics.state_bytes_forward) << "trial " << trial;
    EXPECT_EQ(form.backward, run.metrics.state_bytes_backward) << "trial " << trial;
  }
}

// V placement: stages 0 and 3 on rank 0, 1 and 2 on rank 1. State made on stage 0 and read on
// stage 3 never leaves rank 0 under direct: zero bytes, reported resident, held in memory.
TEST(StateLoweringTest, VPlacementSameRankMovesNoBytesButStaysResident) {
  auto schedule = ParseScheduleCsv(
      "0F0,0F1,3F0,3B0,3F1,3B1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n", "v.csv");
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
  ASSERT_EQ(schedule.value().placement, Placement::kV);
  LowerOptions options = Cluster();
  options.states = {Flow(0, {3}, 5000, /*differentiable=*/true, StatePolicy::kDirect)};
  const SimRun run = Simulated(schedule.value(), Costs(4, 4096), options);
  EXPECT_EQ(run.metrics.state_bytes(), 0);
  ASSERT_EQ(run.metrics.flows.size(), 1u);
  EXPECT_EQ(run.metrics.flows[0].resident_stages, std::vector<int32_t>{3});
  // Rank 0 holds the state of both microbatches at once (0F1 runs before 0B0).
  EXPECT_EQ(run.metrics.ranks[0].peak_state_bytes, 2 * 5000);
  EXPECT_EQ(run.metrics.ranks[1].peak_state_bytes, 0);
}

TEST(StateLoweringTest, ShadowSyncsParametersOncePerReplicaAndAddsCompute) {
  const Schedule schedule = Generate(GenerateOneFOneB, 3, 1, 4);
  LowerOptions options = Cluster();
  StateFlow flow = Flow(0, {1, 2}, 4000, /*differentiable=*/true, StatePolicy::kShadow);
  flow.shadow_param_bytes = 777;
  flow.shadow_forward = Time::Nanoseconds(50'000);
  flow.shadow_backward = Time::Nanoseconds(100'000);
  options.states = {flow};
  const SimRun run = Simulated(schedule, Costs(3, 4096), options);
  int syncs = 0;
  int gradients = 0;
  for (uint32_t task = 0; task < run.graph.num_tasks(); ++task) {
    const Task& info = run.graph.tasks[task];
    if (info.payload == PayloadKind::kShadowSync) {
      ++syncs;
      EXPECT_EQ(info.producer_task, UINT32_MAX);  // the owner has the parameters at the start
      EXPECT_EQ(run.graph.tasks[info.consumer_task].action.kind, ActionKind::kForward);
      EXPECT_EQ(run.graph.tasks[info.consumer_task].action.microbatch.value(), 0);
    }
    if (info.payload == PayloadKind::kShadowGradient) ++gradients;
    if (info.kind == TaskKind::kCompute && info.action.stage.value() > 0 &&
        info.action.kind == ActionKind::kForward) {
      EXPECT_EQ(info.duration, Time::Nanoseconds(1'000'000 + 50'000));  // recompute on F
    }
  }
  EXPECT_EQ(syncs, 2);                            // replicas on ranks 1 and 2
  EXPECT_EQ(gradients, 2);                        // and their gradients back to rank 0
  EXPECT_EQ(run.metrics.state_bytes(), 4 * 777);  // no state bytes: recomputed, not shipped
}

TEST(StateLoweringTest, PayloadCarriersHoldTheStateUntilTheirBackward) {
  const Schedule schedule = Generate(GenerateGpipe, 3, 1, 2);
  LowerOptions options = Cluster();
  options.states = {Flow(0, {2}, 3000, /*differentiable=*/false, StatePolicy::kPayload)};
  const SimRun run = Simulated(schedule, Costs(3, 4096), options);
  // GPipe holds both microbatches on every rank: producer, carrier and consumer alike.
  for (const RankMetrics& rank : run.metrics.ranks) {
    EXPECT_EQ(rank.peak_state_bytes, 2 * 3000) << "rank " << rank.rank;
    EXPECT_EQ(rank.peak_memory_bytes, 2 * 3000 + 2 * 1000) << "rank " << rank.rank;
  }
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

// A CSA2 model in the V4.1-Flash pattern, small enough for many random partitions: embedding,
// 2 swa_only, (full m=2, reuse x3) x2, full m=1, reuse x2, (reindex, reuse x2) x2, head.
ModelSpec SmallCsa2Model() {
  ModelSpec model;
  model.seq_len = 512;
  model.dims.hidden = 256;
  model.dims.vocab = 1000;
  model.dims.routed_experts = 8;
  model.dims.expert_width = 128;
  auto add = [&](LayerKind kind, AttentionMode mode, int32_t ratio) {
    LayerSpec layer;
    layer.kind = kind;
    layer.attention = mode;
    layer.compress_ratio = ratio;
    model.layers.push_back(layer);
  };
  add(LayerKind::kEmbedding, AttentionMode::kFull, 1);
  for (int i = 0; i < 2; ++i) add(LayerKind::kDecoder, AttentionMode::kSwaOnly, 0);
  for (int group = 0; group < 2; ++group) {
    add(LayerKind::kDecoder, AttentionMode::kFull, 2);
    for (int i = 0; i < 3; ++i) add(LayerKind::kDecoder, AttentionMode::kReuse, 2);
  }
  add(LayerKind::kDecoder, AttentionMode::kFull, 1);
  for (int i = 0; i < 2; ++i) add(LayerKind::kDecoder, AttentionMode::kReuse, 1);
  for (int group = 0; group < 2; ++group) {
    add(LayerKind::kDecoder, AttentionMode::kReindex, 1);
    for (int i = 0; i < 2; ++i) add(LayerKind::kDecoder, AttentionMode::kReuse, 1);
  }
  add(LayerKind::kHead, AttentionMode::kFull, 1);
  EXPECT_TRUE(ResolveSources(model.layers).ok());
  EstimateLayerCosts(model, 1e14);
  return model;
}

// Random layer counts summing to `layers` over `stages` stages (each >= 1).
Partition RandomPartition(std::mt19937& random, int32_t layers, int32_t stages) {
  std::vector<int32_t> counts(static_cast<size_t>(stages), 1);
  for (int32_t extra = layers - stages; extra > 0; --extra) ++counts[random() % stages];
  auto partition = PartitionFromCounts(counts, layers);
  EXPECT_TRUE(partition.ok());
  return partition.value();
}

LayerPipelineOptions PipelineOptions(const Schedule& schedule, StatePolicy policy) {
  LayerPipelineOptions options;
  options.policy = policy;
  options.stage_ranks = StageRanks(schedule);
  options.cluster = Cluster().cluster;
  return options;
}

// Closed form and simulation agree exactly on the state bytes of a real CSA2 layer list, over
// random partitions, stage counts and policies.
TEST(LayerStateTest, ClosedFormMatchesSimulationOverRandomPartitions) {
  const ModelSpec model = SmallCsa2Model();
  const int32_t layers = static_cast<int32_t>(model.layers.size());
  std::mt19937 random(42);
  for (int trial = 0; trial < 50; ++trial) {
    const int32_t pp = 2 + static_cast<int32_t>(random() % 5);
    const int32_t m = 1 + static_cast<int32_t>(random() % 6);
    const Schedule schedule = Generate(GenerateOneFOneB, pp, 1, m);
    const Partition partition = RandomPartition(random, layers, pp);
    const StatePolicy policy = trial % 3 == 0   ? StatePolicy::kDirect
                               : trial % 3 == 1 ? StatePolicy::kPayload
                                                : StatePolicy::kAuto;
    const LayerPipeline pipeline =
        BuildLayerPipeline(model, partition, PipelineOptions(schedule, policy));
    LowerOptions options = Cluster();
    options.states = pipeline.flows;
    const SimRun run = Simulated(schedule, pipeline.stage_costs, options);
    const StateBytesClosedForm form = ClosedFormStateBytes(pipeline.flows, StageRanks(schedule), m);
    EXPECT_EQ(form.forward, run.metrics.state_bytes_forward) << "trial " << trial;
    EXPECT_EQ(form.backward, run.metrics.state_bytes_backward) << "trial " << trial;
  }
}

// With every state tensor zero bytes wide and the payload policy, the layer model simulates
// exactly like the same model with no sharing at all, over random partitions.
TEST(LayerStateTest, ZeroWidthStateEqualsNoSharing) {
  ModelSpec model = SmallCsa2Model();
  model.dims.kv_dim = 0;
  model.dims.indexer_key_dim = 0;
  model.dims.top_k = 0;
  model.dims.candidate_blocks = 0;
  const int32_t layers = static_cast<int32_t>(model.layers.size());
  std::mt19937 random(99);
  for (int trial = 0; trial < 30; ++trial) {
    const int32_t pp = 2 + static_cast<int32_t>(random() % 5);
    const int32_t m = 1 + static_cast<int32_t>(random() % 6);
    const Schedule schedule = Generate(GenerateOneFOneB, pp, 1, m);
    const Partition partition = RandomPartition(random, layers, pp);
    const LayerPipeline pipeline =
        BuildLayerPipeline(model, partition, PipelineOptions(schedule, StatePolicy::kPayload));
    LowerOptions shared = Cluster();
    shared.states = pipeline.flows;
    const SimRun with_state = Simulated(schedule, pipeline.stage_costs, shared);
    const SimRun without = Simulated(schedule, pipeline.stage_costs, Cluster());
    EXPECT_EQ(with_state.trace.timings, without.trace.timings) << "trial " << trial;
    EXPECT_EQ(with_state.metrics.makespan, without.metrics.makespan);
    EXPECT_EQ(with_state.metrics.state_bytes(), 0);
  }
}

// Recomputation's working set is held only while a backward runs: under 1F1B at p 2, m 4, rank 0
// holds two microbatches' M_B before its first backward and the working set on top of them
// while that backward runs; peak_activation_bytes (program order) counts M_B only.
TEST(MemoryTimelineTest, RecomputationWorkingSetLivesDuringTheBackward) {
  const Schedule schedule = Generate(GenerateOneFOneB, 2, 1, 4);
  std::vector<StageCost> costs = Costs(2, 4096);
  for (StageCost& cost : costs) cost.recompute_bytes = 500;
  const SimRun run = Simulated(schedule, costs, Cluster());
  EXPECT_EQ(run.metrics.ranks[0].peak_activation_bytes, 2 * 1000);
  EXPECT_EQ(run.metrics.ranks[0].peak_memory_bytes, 2 * 1000 + 500);
  EXPECT_EQ(run.metrics.ranks[1].peak_memory_bytes, 1000 + 500);
  // Split backward: the I holds it, the W does not.
  const Schedule split = Generate(GenerateZbH1, 2, 1, 4);
  const SimRun zb = Simulated(split, costs, Cluster());
  const MemoryTimeline timeline = ComputeMemoryTimeline(split, costs, zb.graph, zb.trace);
  for (size_t rank = 0; rank < timeline.ranks.size(); ++rank) {
    EXPECT_EQ(timeline.peak_memory_bytes[rank], zb.metrics.ranks[rank].peak_activation_bytes + 500)
        << "rank " << rank;
    EXPECT_EQ(timeline.ranks[rank].back().activation_bytes, 0) << "rank " << rank;
  }
}

}  // namespace
}  // namespace stagecraft
