#include "multimodal/vision.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/memory.h"
#include "comm/collective.h"
#include "lower/graph_edit.h"
#include "lower/lower.h"
#include "model/layer_costs.h"
#include "multimodal/engram.h"
#include "schedule/generator.h"
#include "sim/simulator.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

Time Ms(double ms) { return FromSeconds(ms * 1e-3); }

VisionSpec FixedImages(int32_t tokens) {
  VisionSpec spec;
  spec.given = true;
  spec.image_tokens.min = spec.image_tokens.max = tokens;
  return spec;
}

// ---- the encoder's work ----------------------------------------------------------------------

// csa2.md's vision-encoder formula per image of N_p = 9·T patches, plus the projector's
// 2·9·d_v·d per output token; backward 2× the matmuls and 2.5× the N_p² core; activations 34 ·
// N_p · d_v bytes per layer (2 · N_p · d_v with recomputation, whose backward adds a forward).
TEST(VisionWorkTest, FollowsTheFormulas) {
  const VisionSpec spec = FixedImages(100);
  const double rate = 400e12;
  const VisionWork work = ComputeVisionWork(spec, 3, 2, 5120, rate);
  ASSERT_EQ(work.forward.size(), 3u);
  const double n = 900;  // patches of a 100-token image
  const double attention = 4.0 * 32 * 1024 * n * n;
  const double matmuls =
      VisionEncoderFlops(32, 1024, 2816, 900) - attention + 2.0 * 9 * 1024 * 5120 * 100;
  EXPECT_DOUBLE_EQ(work.forward_flops, 6 * (matmuls + attention));
  EXPECT_DOUBLE_EQ(work.backward_flops, 6 * (2 * matmuls + 2.5 * attention));
  EXPECT_EQ(work.forward[1], FromSeconds(2 * (matmuls + attention) / rate));
  EXPECT_EQ(work.activation_bytes[2], std::llround(2 * 34.0 * n * 1024 * 32));
  EXPECT_EQ(work.embedding_bytes[0], 2 * 100 * 5120 * 2);
  EXPECT_EQ(work.image_count, 6);
  // 32 · (4·1024² + 3·1024·2816) + 9·1024·5120 + 14·14·3·1024: 458.8M (csa2.md's dims).
  EXPECT_DOUBLE_EQ(work.params, 32.0 * (4.0 * 1024 * 1024 + 3.0 * 1024 * 2816) + 9.0 * 1024 * 5120 +
                                    14.0 * 14 * 3 * 1024);

  VisionSpec recompute = spec;
  recompute.recompute = true;
  const VisionWork again = ComputeVisionWork(recompute, 3, 2, 5120, rate);
  EXPECT_EQ(again.activation_bytes[2], std::llround(2 * 2.0 * n * 1024 * 32));
  EXPECT_DOUBLE_EQ(again.backward_flops, work.backward_flops + work.forward_flops);
  EXPECT_EQ(again.forward, work.forward);
}

// With context parallelism a sample's images are spread over its cp ranks, each encoded once:
// two equal images per sample over cp 2 halve the simulated rank's work; one image per sample
// cannot be split, so the busiest rank does it all (imbalance 2: the other rank idles).
TEST(VisionWorkTest, ContextParallelSpreadsEachSamplesImages) {
  VisionSpec spec = FixedImages(256);
  const VisionWork alone = ComputeVisionWork(spec, 2, 1, 5120, 400e12, 8192, 1);
  spec.images_per_sample = 2;
  const VisionWork two = ComputeVisionWork(spec, 2, 1, 5120, 400e12, 8192, 1);
  const VisionWork spread = ComputeVisionWork(spec, 2, 1, 5120, 400e12, 8192, 2);
  EXPECT_EQ(spread.forward[0], alone.forward[0]);  // half of two images' work
  EXPECT_EQ(spread.embedding_bytes[0], two.embedding_bytes[0] / 2);
  EXPECT_DOUBLE_EQ(spread.cp_imbalance, 1.0);
  spec.images_per_sample = 1;
  const VisionWork single = ComputeVisionWork(spec, 2, 1, 5120, 400e12, 8192, 2);
  EXPECT_EQ(single.forward[1], alone.forward[1]);
  EXPECT_DOUBLE_EQ(single.cp_imbalance, 2.0);
}

// ---- placements on a uniform pipeline (no cluster: transfers cost nothing) -------------------

struct Pipeline {
  Schedule schedule;
  std::vector<StageCost> costs;
  TaskGraph graph;
};

Pipeline Build(const std::string& name, int32_t pp, int32_t vpp, int32_t m) {
  Pipeline pipeline;
  auto generator = FindScheduleGenerator(name);
  EXPECT_TRUE(generator.ok()) << name;
  auto schedule = generator.value()->generate(GeneratorParams{pp, vpp, m, 0});
  EXPECT_TRUE(schedule.ok()) << name;
  pipeline.schedule = std::move(schedule).value();
  StageCost cost;
  cost.forward = cost.input_grad = cost.weight_grad = Ms(1);
  cost.activation_bytes = 1000;
  pipeline.costs.assign(static_cast<size_t>(pipeline.schedule.num_stages), cost);
  auto graph = Lower(pipeline.schedule, pipeline.costs, LowerOptions{});
  EXPECT_TRUE(graph.ok()) << name;
  pipeline.graph = std::move(graph).value();
  return pipeline;
}

// Work per microbatch: forward 0.5 ms, backward 1 ms, 100 bytes of activations.
VisionWork SmallWork(int32_t microbatches, double forward_ms = 0.5) {
  VisionWork work;
  for (int32_t mb = 0; mb < microbatches; ++mb) {
    work.image_tokens.push_back({64, 64});
    work.forward.push_back(Ms(forward_ms));
    work.backward.push_back(Ms(2 * forward_ms));
    work.activation_bytes.push_back(100);
    work.embedding_bytes.push_back(64);
  }
  return work;
}

Time Makespan(const Trace& trace) {
  Time end;
  for (const TaskTiming& timing : trace.timings) end = std::max(end, timing.end);
  return end;
}

Time WorkOn(const TaskGraph& graph, PayloadKind payload, int32_t rank = -1) {
  Time total;
  for (const Task& task : graph.tasks) {
    if (task.kind == TaskKind::kWork && task.payload == payload &&
        (rank < 0 || task.rank == rank)) {
      total += task.duration;
    }
  }
  return total;
}

uint32_t FirstStageTask(const TaskGraph& graph, ActionKind kind, int32_t mb) {
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind == TaskKind::kCompute && info.action.stage.value() == 0 &&
        info.action.kind == kind && info.action.microbatch.value() == mb) {
      return task;
    }
  }
  return UINT32_MAX;
}

// Dependencies hold in the simulated trace: a microbatch's forward work ends before the first
// stage's F of it starts, its backward work starts after the first stage's backward of it ends.
void ExpectOrdered(const TaskGraph& graph, const Trace& trace) {
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind != TaskKind::kWork) continue;
    const int32_t mb = info.action.microbatch.value();
    if (info.payload == PayloadKind::kVisionForward) {
      const uint32_t forward = FirstStageTask(graph, ActionKind::kForward, mb);
      EXPECT_LE(trace.timings[task].end, trace.timings[forward].start) << DescribeTask(graph, task);
    } else {
      uint32_t backward = FirstStageTask(graph, ActionKind::kInputGrad, mb);
      if (backward == UINT32_MAX) backward = FirstStageTask(graph, ActionKind::kBackward, mb);
      EXPECT_GE(trace.timings[task].start, trace.timings[backward].end)
          << DescribeTask(graph, task);
    }
  }
}

TEST(VisionPlacementTest, EveryPlacementKeepsTheWorkAndItsDependencies) {
  const struct {
    const char* schedule;
    int32_t vpp;
  } cases[] = {{"1f1b", 1}, {"gpipe", 1},    {"interleaved-1f1b", 2}, {"zb-h1", 1},
               {"zb-v", 2}, {"dualpipe", 1}, {"dualpipev", 2}};
  for (const auto& c : cases) {
    for (const auto& [name, placement] : kVisionPlacementNames) {
      Pipeline pipeline = Build(c.schedule, 4, c.vpp, 8);
      VisionSpec spec = FixedImages(64);
      spec.placement = placement;
      spec.devices = 2;
      const VisionWork work = SmallWork(8);
      auto stats = PlaceVision(spec, work, pipeline.graph);
      ASSERT_TRUE(stats.ok()) << c.schedule << " " << name << ": " << stats.error().message;
      const Trace trace = Simulate(pipeline.graph);
      ASSERT_FALSE(trace.deadlock.has_value()) << c.schedule << " " << name;
      EXPECT_EQ(WorkOn(pipeline.graph, PayloadKind::kVisionForward), Ms(4)) << c.schedule << name;
      EXPECT_EQ(WorkOn(pipeline.graph, PayloadKind::kVisionBackward), Ms(8)) << c.schedule << name;
      EXPECT_EQ(stats.value().work_total, Ms(12));
      ExpectOrdered(pipeline.graph, trace);
      // Every embedding sent to the first stage comes back once as its gradient.
      int64_t sent = 0;
      int64_t returned = 0;
      for (const Task& task : pipeline.graph.tasks) {
        if (task.payload == PayloadKind::kVisionEmbedding) sent += task.bytes;
        if (task.payload == PayloadKind::kVisionGradient) returned += task.bytes;
      }
      EXPECT_EQ(sent, returned) << c.schedule << " " << name;
      // Program positions stay consistent after the edit.
      for (const auto& program : pipeline.graph.programs) {
        for (size_t position = 0; position < program.size(); ++position) {
          EXPECT_EQ(pipeline.graph.tasks[program[position]].position,
                    static_cast<int32_t>(position));
        }
      }
    }
  }
}

TEST(VisionPlacementTest, ColocatedPutsEverythingOnTheFirstStagesRank) {
  Pipeline pipeline = Build("1f1b", 4, 1, 8);
  const Time alone = Makespan(Simulate(pipeline.graph));
  VisionSpec spec = FixedImages(64);
  spec.placement = VisionPlacement::kColocated;
  ASSERT_TRUE(PlaceVision(spec, SmallWork(8), pipeline.graph).ok());
  EXPECT_EQ(WorkOn(pipeline.graph, PayloadKind::kVisionForward, 0), Ms(4));
  EXPECT_EQ(WorkOn(pipeline.graph, PayloadKind::kVisionBackward, 0), Ms(8));
  const Trace trace = Simulate(pipeline.graph);
  // Rank 0 runs F, B and the encoder for every microbatch: its busy time alone is 8·(1 + 2 +
  // 0.5 + 1) ms, so the step grows at least to that.
  EXPECT_GE(Makespan(trace), Ms(36));
  EXPECT_GT(Makespan(trace), alone);
  // The encoder's activations count in rank 0's memory: 100 bytes per microbatch in flight.
  const MemoryTimeline memory =
      ComputeMemoryTimeline(pipeline.schedule, pipeline.costs, pipeline.graph, trace);
  int64_t vision_peak = 0;
  for (const MemorySample& sample : memory.ranks[0]) {
    vision_peak = std::max(vision_peak, sample.activation_bytes % 1000);
  }
  EXPECT_GE(vision_peak, 100);
  EXPECT_EQ(memory.ranks[0].back().activation_bytes, 0);
}

TEST(VisionPlacementTest, DisaggregatedAddsTheEncodersDevices) {
  Pipeline pipeline = Build("1f1b", 4, 1, 16);
  VisionSpec spec = FixedImages(64);
  spec.placement = VisionPlacement::kDisaggregated;
  spec.devices = 4;
  spec.pp = 2;  // dp 2 replicas of a 2-stage encoder
  auto stats = PlaceVision(spec, SmallWork(16), pipeline.graph);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats.value().encoder_ranks, 4);
  EXPECT_EQ(pipeline.graph.num_ranks, 8);
  for (int32_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(WorkOn(pipeline.graph, PayloadKind::kVisionForward, rank), Time());
  }
  // Replica 0 (ranks 4, 5) takes the even microbatches, each stage half of the work.
  EXPECT_EQ(WorkOn(pipeline.graph, PayloadKind::kVisionForward, 4), Ms(2));
  EXPECT_EQ(WorkOn(pipeline.graph, PayloadKind::kVisionBackward, 7), Ms(4));
  // 1F1B's first stage holds 4 microbatches; a replica runs 4 / 2 = 2 ahead of need: it starts
  // with more forwards than that, then alternates, and never holds more than 2 · 2 + 2 of its
  // microbatches' activations (not GPipe's 8).
  const auto& program = pipeline.graph.programs[4];
  ASSERT_EQ(program.size(), 16u);
  int32_t held = 0;
  int32_t most = 0;
  bool alternates = false;
  for (size_t position = 0; position < program.size(); ++position) {
    const bool forward =
        pipeline.graph.tasks[program[position]].payload == PayloadKind::kVisionForward;
    held += forward ? 1 : -1;
    most = std::max(most, held);
    alternates = alternates || (forward && position > 0 &&
                                pipeline.graph.tasks[program[position - 1]].payload ==
                                    PayloadKind::kVisionBackward);
  }
  EXPECT_TRUE(alternates);
  EXPECT_LE(most, 6);
  EXPECT_GT(most, 2);
  EXPECT_FALSE(Simulate(pipeline.graph).deadlock.has_value());
}

// With a cluster the encoder's fp32 gradients are all-reduced over its copies after each
// holder's last encoder backward: decoupled, 4 ranks x 2 replicas hold one each.
TEST(VisionPlacementTest, EncoderGradientsAreReducedOverItsCopies) {
  Pipeline pipeline = Build("1f1b", 4, 1, 8);
  pipeline.graph.cluster.given = true;
  pipeline.graph.cluster.devices_per_node = 8;
  pipeline.graph.cluster.nodes = 1;
  pipeline.graph.cluster.intra_node.bandwidth_bytes_per_s = 100e9;
  VisionSpec spec = FixedImages(64);
  VisionWork work = SmallWork(8);
  work.params = 1e9;
  auto stats = PlaceVision(spec, work, pipeline.graph, 2);
  ASSERT_TRUE(stats.ok());
  CollectiveGroup ring = GroupOnCluster(pipeline.graph.cluster, 8);
  const Time expected =
      EstimateCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, 4'000'000'000, ring)
          .value()
          .time;
  EXPECT_EQ(stats.value().encoder_reduce, expected);
  int32_t reductions = 0;
  for (uint32_t task = 0; task < pipeline.graph.num_tasks(); ++task) {
    const Task& info = pipeline.graph.tasks[task];
    if (info.kind != TaskKind::kCollective) continue;
    ++reductions;
    EXPECT_EQ(info.duration, expected);
    EXPECT_EQ(pipeline.graph.tasks[pipeline.graph.preds[pipeline.graph.pred_begin[task]]].payload,
              PayloadKind::kVisionBackward);
  }
  EXPECT_EQ(reductions, 4);
  EXPECT_FALSE(Simulate(pipeline.graph).deadlock.has_value());
}

// Bubble-fill hides what fits. 1F1B (p 4, m 8, F 1 ms, B 2 ms) idles only in its warm-up and
// cool-down, and rank 0 runs the last backward, so the last microbatch's encoder backward can
// start only when the pipeline has ended: the best is to spread it over the 4 ranks (0.4 / 4 ms).
// With microbatch 0's forward split over the ranks before the pipeline (0.2 / 4 ms) the step is
// the pipeline's + 0.05 + 0.1 ms, every other forward and backward sits in a gap, and no other
// placement is shorter.
TEST(VisionPlacementTest, BubbleFillHidesWhatFitsInTheGaps) {
  Pipeline base = Build("1f1b", 4, 1, 8);
  const Time alone = Makespan(Simulate(base.graph));
  std::vector<Time> steps;
  for (const auto& [name, placement] : kVisionPlacementNames) {
    Pipeline pipeline = Build("1f1b", 4, 1, 8);
    VisionSpec spec = FixedImages(64);
    spec.placement = placement;
    spec.devices = 1;
    auto stats = PlaceVision(spec, SmallWork(8, 0.2), pipeline.graph);
    ASSERT_TRUE(stats.ok());
    steps.push_back(Makespan(Simulate(pipeline.graph)));
    if (placement != VisionPlacement::kBubbleFill) continue;
    EXPECT_EQ(stats.value().prologue, std::vector<int32_t>{0});
    EXPECT_EQ(stats.value().forward_in_bubbles, Ms(0.2 * 7));
    EXPECT_EQ(stats.value().backward_in_bubbles, Ms(0.4 * 7));
    EXPECT_EQ(steps.back(), alone + Ms(0.05) + Ms(0.1));
  }
  for (Time step : steps) EXPECT_GE(step, steps[3]);
}

// ---- Engram ----------------------------------------------------------------------------------

// Per rank and Engram layer: 24 lookups per token, 8-byte ids, 264-byte rows, 512-byte bf16
// gradients; the host-memory option adds the rows and gradients over PCIe.
TEST(EngramTrafficTest, BytesAndHostMemory) {
  ClusterSpec cluster;
  cluster.given = true;
  cluster.devices_per_node = 8;
  cluster.nodes = 4;
  cluster.inter_node.bandwidth_bytes_per_s = 50e9;
  cluster.intra_node.bandwidth_bytes_per_s = 160e9;
  EngramSharding sharding;
  sharding.owners = 16;
  const EngramTraffic device = EngramIterationTraffic(EngramSpec{}, sharding, 131072, cluster, 1);
  EXPECT_EQ(device.id_bytes, 131072 * 24 * 8);
  EXPECT_EQ(device.row_bytes, 131072 * 24 * 264);
  EXPECT_EQ(device.gradient_bytes, int64_t{131072} * 24 * 512);
  // All-to-all over 16 ranks one per node: (n − 1)/n of the bytes over the network.
  EXPECT_NEAR(device.fetch.ms() * 1e-3, 15.0 / 16 * (device.id_bytes + device.row_bytes) / 50e9,
              2e-9);
  sharding.host_memory = true;
  const EngramTraffic host = EngramIterationTraffic(EngramSpec{}, sharding, 131072, cluster, 1);
  EXPECT_EQ(host.fetch - device.fetch, FromSeconds(device.row_bytes / 50e9));
  EXPECT_EQ(host.gradient - device.gradient, FromSeconds(device.gradient_bytes / 50e9));
}

TEST(EngramTrafficTest, OwnerGroupChecks) {
  EngramSharding sharding;
  sharding.owners = 32;
  EXPECT_TRUE(Contains(CheckEngramSharding(sharding, 16, 2).error().message, "larger than"));
  sharding.owners = 6;
  EXPECT_TRUE(Contains(CheckEngramSharding(sharding, 16, 2).error().message, "does not divide"));
  sharding.owners = 8;
  EXPECT_TRUE(CheckEngramSharding(sharding, 16, 2).ok());
  EXPECT_TRUE(Contains(CheckEngramSharding(sharding, 16, 0).error().message, "no Engram layer"));
  // Tables: V4.1's two by default; a given row count for each Engram layer.
  EXPECT_EQ(EngramTables(sharding, 2).table_rows, (std::vector<int64_t>{384006168, 384016682}));
  sharding.table_rows = 1000;
  EXPECT_EQ(EngramTables(sharding, 3).table_rows, (std::vector<int64_t>{1000, 1000, 1000}));
}

// The fetch runs from the start on the stage rank's collective stream and the stage's first
// forward waits for it; the gradients follow the stage's last backward.
TEST(EngramTrafficTest, ExchangesWrapTheStage) {
  Pipeline pipeline = Build("1f1b", 4, 1, 4);
  EngramTraffic traffic;
  traffic.fetch = Ms(3);
  traffic.gradient = Ms(2);
  AddEngramExchanges({0, 1, 0, 0}, traffic, pipeline.graph);
  const Trace trace = Simulate(pipeline.graph);
  ASSERT_FALSE(trace.deadlock.has_value());
  const EngramExposure exposure = MeasureEngramExposure(pipeline.graph, trace);
  EXPECT_EQ(exposure.fetch, Ms(3));
  EXPECT_EQ(exposure.gradient, Ms(2));
  // Stage 1's F0 would start at 1 ms (after stage 0's); the fetch holds it to 3 ms.
  EXPECT_EQ(exposure.fetch_delay, Ms(2));
  for (uint32_t task = 0; task < pipeline.graph.num_tasks(); ++task) {
    const Task& info = pipeline.graph.tasks[task];
    if (info.payload == PayloadKind::kEngramGradient) {
      EXPECT_EQ(info.rank, 1);
      EXPECT_EQ(trace.timings[task].start,
                trace.timings[FindComputeTask(pipeline.graph, info.action)].end);
    }
  }
}

// ---- the editor ------------------------------------------------------------------------------

TEST(GraphEditorTest, InsertsWorkAndKeepsTheGraph) {
  Pipeline pipeline = Build("1f1b", 2, 1, 2);
  const size_t edges = pipeline.graph.preds.size();
  const size_t tasks = pipeline.graph.num_tasks();
  GraphEditor editor(pipeline.graph);
  const int32_t extra = editor.AddRank();
  EXPECT_EQ(extra, 2);
  const uint32_t work = editor.AddWork(1, 0, PayloadKind::kVisionForward, ActionKind::kForward,
                                       MicrobatchId(1), Ms(1), 5);
  const uint32_t later = editor.AddWork(1, 0, PayloadKind::kVisionForward, ActionKind::kForward,
                                        MicrobatchId(2), Ms(1), 5);
  const uint32_t send =
      editor.AddTransfer(PayloadKind::kVisionEmbedding, extra, 0, 10, MicrobatchId(0));
  editor.AddEdge(work, send);
  editor.AddEdge(send, editor.ProgramTask(0, 0));
  editor.Finish();
  EXPECT_EQ(pipeline.graph.num_tasks(), tasks + 3);
  EXPECT_EQ(pipeline.graph.preds.size(), edges + 2);
  EXPECT_EQ(pipeline.graph.programs[1][0], work);  // in the order added
  EXPECT_EQ(pipeline.graph.programs[1][1], later);
  EXPECT_EQ(pipeline.graph.tasks[later].position, 1);
  EXPECT_TRUE(std::is_sorted(pipeline.graph.links.begin(), pipeline.graph.links.end(),
                             [](const Link& a, const Link& b) {
                               return std::pair(a.from, a.to) < std::pair(b.from, b.to);
                             }));
  const Link& link = pipeline.graph.links[pipeline.graph.tasks[send].link];
  EXPECT_EQ(link.from, 2);
  EXPECT_EQ(link.to, 0);
  EXPECT_FALSE(Simulate(pipeline.graph).deadlock.has_value());
}

}  // namespace
}  // namespace stagecraft
