#include "lower/lower.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "schedule/generator.h"
#include "schedule/schedule_csv.h"

namespace stagecraft {
namespace {

constexpr int64_t kUs = 1'000;  // ns per microsecond

Schedule Generate(GenerateFn generate, int32_t pp, int32_t vpp, int32_t microbatches) {
  Result<Schedule> schedule = generate({pp, vpp, microbatches, 0});
  EXPECT_TRUE(schedule.ok()) << schedule.error().message;
  return schedule.ok() ? schedule.value() : Schedule();
}

std::vector<StageCost> Costs(const Schedule& schedule, int64_t p2p_bytes = 0) {
  ModelSpec model;
  model.p2p_bytes = p2p_bytes;
  return UniformStageCosts(model, schedule.num_stages, schedule.chunks_per_rank());
}

TaskGraph LowerOrDie(const Schedule& schedule, const std::vector<StageCost>& costs,
                     const LowerOptions& options) {
  Result<TaskGraph> graph = Lower(schedule, costs, options);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  return graph.ok() ? std::move(graph).value() : TaskGraph();
}

std::vector<uint32_t> Transfers(const TaskGraph& graph) {
  std::vector<uint32_t> ids;
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    if (graph.tasks[task].kind == TaskKind::kTransfer) ids.push_back(task);
  }
  return ids;
}

uint32_t ComputeTask(const TaskGraph& graph, const std::string& action) {
  const uint32_t task = FindComputeTask(graph, ParseAction(action).value());
  EXPECT_NE(task, UINT32_MAX) << "no compute task " << action;
  return task;
}

uint32_t TransferTask(const TaskGraph& graph, const std::string& from, const std::string& to) {
  const uint32_t task = FindTransfer(graph, ParseAction(from).value(), ParseAction(to).value());
  EXPECT_NE(task, UINT32_MAX) << "no transfer " << from << " -> " << to;
  return task;
}

bool HasEdge(const TaskGraph& graph, uint32_t from, uint32_t to) {
  const auto begin = graph.preds.begin() + graph.pred_begin[to];
  const auto end = graph.preds.begin() + graph.pred_begin[to + 1];
  const bool as_pred = std::find(begin, end, from) != end;
  const auto succ_begin = graph.succs.begin() + graph.succ_begin[from];
  const auto succ_end = graph.succs.begin() + graph.succ_begin[from + 1];
  const bool as_succ = std::find(succ_begin, succ_end, to) != succ_end;
  EXPECT_EQ(as_pred, as_succ) << "pred and succ lists disagree on " << from << " -> " << to;
  return as_pred;
}

// p = 2 ranks, 1F1B, m = 4: an activation transfer after each F on rank 0 (to rank 1) and a
// gradient transfer after each B on rank 1 (to rank 0); nothing else.
TEST(LowerTest, TwoRankOneFOneBTransfers) {
  const Schedule schedule = Generate(GenerateOneFOneB, 2, 1, 4);
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule), {});
  EXPECT_EQ(graph.num_ranks, 2);
  EXPECT_EQ(graph.mode, P2pMode::kAsync);
  ASSERT_EQ(graph.programs.size(), 2u);
  EXPECT_EQ(graph.programs[0].size(), 8u);
  EXPECT_EQ(graph.programs[1].size(), 8u);
  const auto transfers = Transfers(graph);
  ASSERT_EQ(transfers.size(), 8u);
  ASSERT_EQ(graph.links.size(), 2u);
  EXPECT_EQ(graph.links[0].from, 0);
  EXPECT_EQ(graph.links[0].to, 1);
  EXPECT_EQ(graph.links[1].from, 1);
  EXPECT_EQ(graph.links[1].to, 0);
  for (int32_t microbatch = 0; microbatch < 4; ++microbatch) {
    const std::string mb = std::to_string(microbatch);
    const uint32_t activation = TransferTask(graph, "0F" + mb, "1F" + mb);
    const Task& sent = graph.tasks[activation];
    EXPECT_EQ(sent.payload, PayloadKind::kActivation);
    EXPECT_EQ(sent.rank, 0);
    EXPECT_EQ(sent.peer, 1);
    EXPECT_EQ(sent.link, 0);
    EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "0F" + mb), activation));
    EXPECT_TRUE(HasEdge(graph, activation, ComputeTask(graph, "1F" + mb)));
    const uint32_t gradient = TransferTask(graph, "1B" + mb, "0B" + mb);
    const Task& returned = graph.tasks[gradient];
    EXPECT_EQ(returned.payload, PayloadKind::kGradient);
    EXPECT_EQ(returned.rank, 1);
    EXPECT_EQ(returned.peer, 0);
    EXPECT_EQ(returned.link, 1);
    EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "1B" + mb), gradient));
    EXPECT_TRUE(HasEdge(graph, gradient, ComputeTask(graph, "0B" + mb)));
    // B needs its own forward, on the same rank: a direct edge, no transfer.
    EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "0F" + mb), ComputeTask(graph, "0B" + mb)));
    EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "1F" + mb), ComputeTask(graph, "1B" + mb)));
  }
  // Async: exactly the data edges (2 per transfer + 1 per backward).
  EXPECT_EQ(graph.preds.size(), 8u * 2 + 8u);
}

TEST(LowerTest, ComputeTasksFollowProgramOrderAndCosts) {
  const Schedule schedule = Generate(GenerateOneFOneB, 3, 1, 3);
  ModelSpec model;
  model.forward = Time::Nanoseconds(7);
  model.input_grad = Time::Nanoseconds(11);
  model.weight_grad = Time::Nanoseconds(13);
  const TaskGraph graph =
      LowerOrDie(schedule, UniformStageCosts(model, schedule.num_stages, 1), {});
  for (size_t rank = 0; rank < graph.programs.size(); ++rank) {
    ASSERT_EQ(graph.programs[rank].size(), schedule.rank_actions[rank].size());
    for (size_t position = 0; position < graph.programs[rank].size(); ++position) {
      const Task& task = graph.tasks[graph.programs[rank][position]];
      EXPECT_EQ(task.kind, TaskKind::kCompute);
      EXPECT_EQ(task.rank, static_cast<int32_t>(rank));
      EXPECT_EQ(task.action, schedule.rank_actions[rank][position]);
      EXPECT_EQ(task.duration.ns(), task.action.kind == ActionKind::kForward ? 7 : 24);
    }
  }
}

// One rank, two chunks: stage 0 → stage 1 on the same rank moves nothing.
TEST(LowerTest, NoTransfersBetweenStagesOnOneRank) {
  const Schedule schedule = Generate(GenerateInterleavedOneFOneB, 1, 2, 3);
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule, 1 << 20), {});
  EXPECT_TRUE(Transfers(graph).empty());
  EXPECT_TRUE(graph.links.empty());
  for (int32_t microbatch = 0; microbatch < 3; ++microbatch) {
    const std::string mb = std::to_string(microbatch);
    EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "0F" + mb), ComputeTask(graph, "1F" + mb)));
    EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "1B" + mb), ComputeTask(graph, "0B" + mb)));
  }
}

// Interleaved, p = 2, v = 2 (loop placement: stages 0, 2 on rank 0; 1, 3 on rank 1): every
// chunk transition crosses ranks, so 3 activation and 3 gradient transfers per microbatch,
// each between consecutive stages on different ranks.
TEST(LowerTest, InterleavedTransfersOnlyAcrossRanks) {
  const Schedule schedule = Generate(GenerateInterleavedOneFOneB, 2, 2, 4);
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule), {});
  const auto transfers = Transfers(graph);
  EXPECT_EQ(transfers.size(), 2u * 3 * 4);
  int activations = 0;
  for (uint32_t id : transfers) {
    const Task& task = graph.tasks[id];
    EXPECT_NE(task.rank, task.peer);
    EXPECT_EQ(task.rank, task.action.stage.value() % 2);
    EXPECT_EQ(task.peer, task.consumer.stage.value() % 2);
    EXPECT_EQ(task.action.microbatch, task.consumer.microbatch);
    if (task.payload == PayloadKind::kActivation) {
      ++activations;
      EXPECT_EQ(task.action.kind, ActionKind::kForward);
      EXPECT_EQ(task.consumer.kind, ActionKind::kForward);
      EXPECT_EQ(task.consumer.stage.value(), task.action.stage.value() + 1);
    } else {
      EXPECT_EQ(task.payload, PayloadKind::kGradient);
      EXPECT_EQ(task.action.kind, ActionKind::kBackward);
      EXPECT_EQ(task.consumer.kind, ActionKind::kBackward);
      EXPECT_EQ(task.consumer.stage.value(), task.action.stage.value() - 1);
    }
  }
  EXPECT_EQ(activations, 3 * 4);
}

// V placement, p = 2: stages 0 (rank 0), 1 (rank 1), 2 (rank 1), 3 (rank 0). The turn 1 → 2
// stays on rank 1, so only 2 of the 3 transitions move data.
TEST(LowerTest, VPlacementTurnMovesNothing) {
  const Result<Schedule> schedule = ParseScheduleCsv("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n", "v.csv");
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
  ASSERT_EQ(schedule.value().placement, Placement::kV);
  const TaskGraph graph = LowerOrDie(schedule.value(), Costs(schedule.value()), {});
  const auto transfers = Transfers(graph);
  EXPECT_EQ(transfers.size(), 4u);
  TransferTask(graph, "0F0", "1F0");
  TransferTask(graph, "2F0", "3F0");
  TransferTask(graph, "3B0", "2B0");
  TransferTask(graph, "1B0", "0B0");
  EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "1F0"), ComputeTask(graph, "2F0")));
  EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "2B0"), ComputeTask(graph, "1B0")));
}

TEST(LowerTest, TransferCostsOnlyCostP2pWithoutCluster) {
  const Schedule schedule = Generate(GenerateOneFOneB, 4, 1, 2);
  LowerOptions options;
  options.cost_p2p = Time::Nanoseconds(601'000);
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule, 64 << 20), options);
  const auto transfers = Transfers(graph);
  ASSERT_EQ(transfers.size(), 2u * 3 * 2);
  for (uint32_t id : transfers) {
    EXPECT_EQ(graph.tasks[id].duration.ns(), 601'000);
    EXPECT_EQ(graph.tasks[id].bytes, 64 << 20);
  }
}

// Two nodes of two devices: 0-1 and 2-3 are intra-node, 1-2 inter-node.
// Each transfer: latency + bytes / bandwidth + cost_p2p (DESIGN.md §3).
TEST(LowerTest, TransferCostsWithCluster) {
  const Schedule schedule = Generate(GenerateOneFOneB, 4, 1, 2);
  LowerOptions options;
  options.cost_p2p = Time::Nanoseconds(500);
  options.cluster.given = true;
  options.cluster.devices_per_node = 2;
  options.cluster.nodes = 2;
  options.cluster.intra_node = {Time::Nanoseconds(2 * kUs), 100e9};
  options.cluster.inter_node = {Time::Nanoseconds(10 * kUs), 25e9};
  const int64_t bytes = 1'000'000;
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule, bytes), options);
  // intra: 2 us + 1e6 B / 100 GB/s (10 us) + 0.5 us; inter: 10 us + 40 us + 0.5 us.
  const int64_t intra = 2 * kUs + 10 * kUs + 500;
  const int64_t inter = 10 * kUs + 40 * kUs + 500;
  for (int32_t microbatch = 0; microbatch < 2; ++microbatch) {
    const std::string mb = std::to_string(microbatch);
    EXPECT_EQ(graph.tasks[TransferTask(graph, "0F" + mb, "1F" + mb)].duration.ns(), intra);
    EXPECT_EQ(graph.tasks[TransferTask(graph, "1F" + mb, "2F" + mb)].duration.ns(), inter);
    EXPECT_EQ(graph.tasks[TransferTask(graph, "2F" + mb, "3F" + mb)].duration.ns(), intra);
    EXPECT_EQ(graph.tasks[TransferTask(graph, "3B" + mb, "2B" + mb)].duration.ns(), intra);
    EXPECT_EQ(graph.tasks[TransferTask(graph, "2B" + mb, "1B" + mb)].duration.ns(), inter);
    EXPECT_EQ(graph.tasks[TransferTask(graph, "1B" + mb, "0B" + mb)].duration.ns(), intra);
  }
  // Links are directed and sorted by (from, to).
  ASSERT_EQ(graph.links.size(), 6u);
  for (size_t index = 1; index < graph.links.size(); ++index) {
    EXPECT_LT(std::pair(graph.links[index - 1].from, graph.links[index - 1].to),
              std::pair(graph.links[index].from, graph.links[index].to));
  }
  for (uint32_t id : Transfers(graph)) {
    const Task& task = graph.tasks[id];
    EXPECT_EQ(graph.links[task.link].from, task.rank);
    EXPECT_EQ(graph.links[task.link].to, task.peer);
  }
}

TEST(LowerTest, ZeroBandwidthMeansInfinite) {
  ClusterSpec cluster;
  cluster.given = true;
  cluster.intra_node = {Time::Nanoseconds(3 * kUs), 0.0};
  EXPECT_EQ(TransferTime(cluster, DeviceId(0), DeviceId(1), 1 << 30, Time::Nanoseconds(7)).ns(),
            3 * kUs + 7);
  cluster.given = false;
  EXPECT_EQ(TransferTime(cluster, DeviceId(0), DeviceId(1), 1 << 30, Time::Nanoseconds(7)).ns(), 7);
}

// Rendezvous (NCCL-like matching), 1F1B p = 2, m = 2 (rank 0: 0F0 0F1 0B0 0B1; rank 1: 1F0 1B0
// 1F1 1B1). Each transfer waits for the action before its consumer (the receive is posted when
// it ends), and on each directed link for the previous transfer in send order and in receive
// order.
TEST(LowerTest, RendezvousAddsPostingAndOrderEdges) {
  const Schedule schedule = Generate(GenerateOneFOneB, 2, 1, 2);
  LowerOptions options;
  options.mode = P2pMode::kRendezvous;
  const TaskGraph async_graph = LowerOrDie(schedule, Costs(schedule), {});
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule), options);
  EXPECT_EQ(graph.mode, P2pMode::kRendezvous);
  EXPECT_EQ(graph.num_tasks(), async_graph.num_tasks());
  EXPECT_EQ(async_graph.preds.size(), 12u);
  // 3 posting edges + on each of the 2 links one send-order and one receive-order edge.
  EXPECT_EQ(graph.preds.size(), 12u + 3u + 4u);
  auto task = [&](const std::string& action) { return ComputeTask(graph, action); };
  const uint32_t a0 = TransferTask(graph, "0F0", "1F0");
  const uint32_t a1 = TransferTask(graph, "0F1", "1F1");
  const uint32_t g0 = TransferTask(graph, "1B0", "0B0");
  const uint32_t g1 = TransferTask(graph, "1B1", "0B1");
  EXPECT_TRUE(HasEdge(graph, task("1B0"), a1));  // receive for 1F1 posted after 1B0
  EXPECT_TRUE(HasEdge(graph, task("0F1"), g0));  // receive for 0B0 posted after 0F1
  EXPECT_TRUE(HasEdge(graph, task("0B0"), g1));  // receive for 0B1 posted after 0B0
  EXPECT_TRUE(HasEdge(graph, a0, a1));           // link 0 -> 1 in order
  EXPECT_TRUE(HasEdge(graph, g0, g1));           // link 1 -> 0 in order
  EXPECT_FALSE(HasEdge(graph, a1, a0));
  EXPECT_FALSE(HasEdge(graph, g1, g0));
  // None of these exist under async.
  EXPECT_FALSE(HasEdge(async_graph, ComputeTask(async_graph, "1B0"),
                       TransferTask(async_graph, "0F1", "1F1")));
  EXPECT_FALSE(HasEdge(async_graph, TransferTask(async_graph, "0F0", "1F0"),
                       TransferTask(async_graph, "0F1", "1F1")));
}

// Rank 0 sends microbatch 0 first; rank 1 posts the receive for microbatch 1 first. The send
// order and the receive order on link 0 -> 1 disagree: edges both ways, a cycle.
TEST(LowerTest, RendezvousOrderMismatchMakesACycle) {
  const Result<Schedule> schedule =
      ParseScheduleCsv("0F0,0F1,0B0,0B1\n1F1,1F0,1B0,1B1\n", "swap.csv");
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
  LowerOptions options;
  options.mode = P2pMode::kRendezvous;
  const TaskGraph graph = LowerOrDie(schedule.value(), Costs(schedule.value()), options);
  const uint32_t a0 = TransferTask(graph, "0F0", "1F0");
  const uint32_t a1 = TransferTask(graph, "0F1", "1F1");
  EXPECT_TRUE(HasEdge(graph, a0, a1));                         // send order
  EXPECT_TRUE(HasEdge(graph, a1, a0));                         // receive order
  EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "1F1"), a0));  // 1F0's receive after 1F1
}

TEST(LowerTest, ComputePositions) {
  const Schedule schedule = Generate(GenerateOneFOneB, 2, 1, 3);
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule), {});
  for (const auto& program : graph.programs) {
    for (size_t position = 0; position < program.size(); ++position) {
      EXPECT_EQ(graph.tasks[program[position]].position, static_cast<int32_t>(position));
    }
  }
  for (uint32_t id : Transfers(graph)) {
    const Task& transfer = graph.tasks[id];
    EXPECT_EQ(graph.tasks[transfer.producer_task].action, transfer.action);
    EXPECT_EQ(graph.tasks[transfer.consumer_task].action, transfer.consumer);
  }
}

TEST(LowerTest, DescribeTask) {
  const Schedule schedule = Generate(GenerateOneFOneB, 2, 1, 4);
  const TaskGraph graph = LowerOrDie(schedule, Costs(schedule), {});
  EXPECT_EQ(DescribeTask(graph, ComputeTask(graph, "1B2")), "rank 1 1B2");
  EXPECT_EQ(DescribeTask(graph, TransferTask(graph, "0F3", "1F3")),
            "activation transfer 0F3 -> 1F3 (rank 0 -> 1)");
  EXPECT_EQ(DescribeTask(graph, TransferTask(graph, "1B0", "0B0")),
            "gradient transfer 1B0 -> 0B0 (rank 1 -> 0)");
  EXPECT_EQ(std::string(P2pModeName(P2pMode::kRendezvous)), "rendezvous");
}

TEST(LowerTest, SplitBackwardWaitsForInputGrad) {
  const Result<Schedule> schedule = ParseScheduleCsv("0F0,0I0,0W0\n1F0,1I0,1W0\n", "zb.csv");
  ASSERT_TRUE(schedule.ok());
  const TaskGraph graph = LowerOrDie(schedule.value(), Costs(schedule.value()), {});
  EXPECT_TRUE(HasEdge(graph, ComputeTask(graph, "0I0"), ComputeTask(graph, "0W0")));
  TransferTask(graph, "1I0", "0I0");  // the gradient leaves after I, not W
  EXPECT_EQ(Transfers(graph).size(), 2u);
}

TEST(LowerTest, Errors) {
  auto error_of = [](const std::string& csv, int32_t num_stages = -1) {
    Result<Schedule> schedule = ParseScheduleCsv(csv, "bad.csv");
    EXPECT_TRUE(schedule.ok());
    Schedule value = schedule.value();
    if (num_stages > 0) value.num_stages = num_stages;
    ModelSpec model;
    const auto costs = UniformStageCosts(model, value.num_stages, 1);
    const Result<TaskGraph> graph = Lower(value, costs, {});
    EXPECT_FALSE(graph.ok()) << csv;
    return graph.ok() ? std::string() : graph.error().message;
  };
  EXPECT_EQ(error_of("0F0,0F0,0B0\n1F0,1B0\n"), "rank 0: action 0F0 appears twice");
  const std::string no_forward = error_of("0F0,0B0\n1B0\n");
  EXPECT_NE(no_forward.find("rank 1 1B0 needs its own forward"), std::string::npos) << no_forward;
  const std::string no_gradient = error_of("0F0,0B0\n1F0\n");
  EXPECT_NE(no_gradient.find("needs the gradient of stage 1, microbatch 0"), std::string::npos)
      << no_gradient;
  const std::string no_input = error_of("0F0,0B0,0W0\n");
  EXPECT_NE(no_input.find("its input-gradient action (I)"), std::string::npos) << no_input;
  // Costs for the wrong number of stages.
  const Schedule schedule = Generate(GenerateOneFOneB, 2, 1, 2);
  ModelSpec model;
  const Result<TaskGraph> mismatch = Lower(schedule, UniformStageCosts(model, 3, 1), {});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message.find("3 stage costs for 2 stages"), std::string::npos);
}

// An F&B op (DualPipe): the pair runs as one task on the head, costing F + B less the forward
// stage's overlap saving; the tail takes no time; the tail's inputs (here the gradient from
// rank 1) feed the head, so the op starts only when both halves can.
TEST(LowerOverlapTest, FusedPairCostsAndInputs) {
  auto schedule = ParseScheduleCsv("0F0,(0F1;0B0)OVERLAP_F_B,0B1\n1F0,1B0,1F1,1B1\n", "fb.csv");
  ASSERT_TRUE(schedule.ok()) << schedule.error().message;
  ModelSpec model;  // F = I = W = 1 ms
  model.fb = Time::Nanoseconds(2'400'000);
  const std::vector<StageCost> costs = UniformStageCosts(model, 2, 1);
  EXPECT_EQ(costs[0].overlap_saving, Time::Nanoseconds(600'000));
  const TaskGraph graph = LowerOrDie(schedule.value(), costs, LowerOptions());
  const uint32_t head = ComputeTask(graph, "0F1");
  const uint32_t tail = ComputeTask(graph, "0B0");
  EXPECT_EQ(graph.tasks[head].duration, Time::Nanoseconds(2'400'000));  // 1 + 2 − 0.6 ms
  EXPECT_EQ(graph.tasks[tail].duration, Time());
  const uint32_t gradient =
      FindTransfer(graph, ParseAction("1B0").value(), ParseAction("0B0").value());
  ASSERT_NE(gradient, UINT32_MAX);
  EXPECT_EQ(graph.tasks[gradient].consumer_task, head);
  const auto succs = std::vector<uint32_t>(graph.succs.begin() + graph.succ_begin[gradient],
                                           graph.succs.begin() + graph.succ_begin[gradient + 1]);
  EXPECT_EQ(succs, std::vector<uint32_t>{head});
}

TEST(LowerOverlapTest, BadPairsAreErrors) {
  auto error = [](const std::string& csv) {
    auto schedule = ParseScheduleCsv(csv, "fb.csv");
    EXPECT_TRUE(schedule.ok()) << schedule.error().message;
    if (!schedule.ok()) return std::string();
    const auto costs = UniformStageCosts(ModelSpec(), schedule.value().num_stages, 1);
    const Result<TaskGraph> graph = Lower(schedule.value(), costs, LowerOptions());
    EXPECT_FALSE(graph.ok()) << csv;
    return graph.ok() ? std::string() : graph.error().message;
  };
  // Two forwards are not an F&B op.
  EXPECT_NE(error("(0F0;0F1)OVERLAP_F_B,0B0,0B1\n")
                .find("overlaps one forward (F) with one "
                      "backward"),
            std::string::npos);
  // A backward fused with its own forward would wait for itself.
  EXPECT_NE(error("(0F0;0B0)OVERLAP_F_B\n").find("one needs the other's output"),
            std::string::npos);
}

// Issue 13: task times whose sum would pass 2^62 ns are refused, so no start or end overflows.
TEST(LowerTest, RefusesTasksWhoseTimesAddUpPastTheClockLimit) {
  const Schedule schedule = Generate(GenerateOneFOneB, 2, 1, 2);
  std::vector<StageCost> costs = Costs(schedule);
  for (StageCost& cost : costs) cost.forward = Time::Nanoseconds(kMaxRunDuration.ns() / 3);
  const Result<TaskGraph> graph = Lower(schedule, costs, LowerOptions());
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.error().message.find("more than 2^62 ns"), std::string::npos)
      << graph.error().message;
  for (StageCost& cost : costs) cost.forward = Time::Nanoseconds(kMaxRunDuration.ns() / 8);
  EXPECT_TRUE(Lower(schedule, costs, LowerOptions()).ok());  // 4 forwards of 2^59 ns: 2^61
}

}  // namespace
}  // namespace stagecraft
