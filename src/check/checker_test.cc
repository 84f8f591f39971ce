#include "check/checker.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "schedule/generator.h"
#include "schedule/schedule_csv.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

Schedule FromCsv(const std::string& csv) {
  Result<Schedule> schedule = ParseScheduleCsv(csv, "check.csv");
  EXPECT_TRUE(schedule.ok()) << schedule.error().message;
  return schedule.ok() ? schedule.value() : Schedule();
}

std::vector<StageCost> CostsFor(const Schedule& schedule) {
  return UniformStageCosts(ModelSpec(), std::max(1, schedule.num_stages),
                           std::max(1, schedule.chunks_per_rank()));
}

std::vector<Violation> Check(const Schedule& schedule) {
  return CheckSchedule(schedule, CostsFor(schedule), CheckOptions());
}

std::vector<Violation> OfKind(const std::vector<Violation>& violations, ViolationKind kind) {
  std::vector<Violation> selected;
  for (const Violation& violation : violations) {
    if (violation.kind == kind) selected.push_back(violation);
  }
  return selected;
}

// Exactly one violation, of `kind`; returns it.
Violation Single(const std::string& csv, ViolationKind kind) {
  const std::vector<Violation> violations = Check(FromCsv(csv));
  EXPECT_EQ(violations.size(), 1u) << csv << FormatViolations(violations);
  EXPECT_FALSE(violations.empty());
  if (violations.empty()) return Violation();
  EXPECT_EQ(violations[0].kind, kind)
      << csv << "got " << ViolationKindName(violations[0].kind) << "\n"
      << FormatViolations(violations);
  return violations[0];
}

TEST(CheckerTest, BackwardBeforeForward) {
  const Violation violation = Single("0B0,0F0\n", ViolationKind::kBackwardBeforeForward);
  EXPECT_EQ(violation.rank, 0);
  EXPECT_EQ(violation.action, "0B0");
  EXPECT_TRUE(Contains(violation.message, "runs before 0F0")) << violation.message;
  EXPECT_TRUE(Contains(violation.hint, "move 0F0 before 0B0")) << violation.hint;
  // Split backward: I before F.
  EXPECT_EQ(Single("1F0,1I0,1W0\n0I0,0F0,0W0\n", ViolationKind::kBackwardBeforeForward).action,
            "0I0");
}

TEST(CheckerTest, WeightBeforeInput) {
  const Violation violation = Single("0F0,0W0,0I0\n", ViolationKind::kWeightBeforeInput);
  EXPECT_EQ(violation.action, "0W0");
  EXPECT_TRUE(Contains(violation.message, "runs before 0I0")) << violation.message;
}

TEST(CheckerTest, DuplicateAction) {
  const Violation violation = Single("0F0,0F0,0B0\n", ViolationKind::kDuplicateAction);
  EXPECT_EQ(violation.action, "0F0");
  EXPECT_EQ(violation.rank, 0);
  // A copy on another rank is reported there (and the stage sits on two ranks).
  const auto violations = Check(FromCsv("0F0,0B0\n0F0\n"));
  const auto duplicates = OfKind(violations, ViolationKind::kDuplicateAction);
  ASSERT_EQ(duplicates.size(), 1u) << FormatViolations(violations);
  EXPECT_EQ(duplicates[0].rank, 1);
}

TEST(CheckerTest, MissingForward) {
  const Violation violation = Single("0F0,0B0,0B1\n", ViolationKind::kMissingAction);
  EXPECT_EQ(violation.action, "0F1");
  EXPECT_TRUE(Contains(violation.message, "no forward")) << violation.message;
  EXPECT_TRUE(Contains(violation.hint, "add 0F1 to rank 0's row")) << violation.hint;
}

TEST(CheckerTest, MissingBackward) {
  const Violation violation = Single("0F0,0B0,0F1\n", ViolationKind::kMissingAction);
  EXPECT_EQ(violation.action, "0B1");
  EXPECT_TRUE(Contains(violation.message, "no backward")) << violation.message;
}

TEST(CheckerTest, MissingHalfOfSplitBackward) {
  EXPECT_EQ(Single("0F0,0I0\n", ViolationKind::kMissingAction).action, "0W0");
  EXPECT_EQ(Single("0F0,0W0\n", ViolationKind::kMissingAction).action, "0I0");
}

TEST(CheckerTest, MixedBackward) {
  const Violation violation = Single("0F0,0B0,0I0,0W0\n", ViolationKind::kMixedBackward);
  EXPECT_EQ(violation.action, "0B0");
  EXPECT_TRUE(Contains(violation.hint, "either B or the pair I + W")) << violation.hint;
}

TEST(CheckerTest, StageOnTwoRanks) {
  // Stage 1's microbatch 1 sits on rank 0; the rest of stage 1 on rank 1.
  const Violation violation =
      Single("0F0,0F1,1F1,1B1,0B0,0B1\n1F0,1B0\n", ViolationKind::kStageOnTwoRanks);
  EXPECT_EQ(violation.rank, 1);
  EXPECT_TRUE(Contains(violation.message, "stage 1 is placed on ranks 0, 1")) << violation.message;
}

TEST(CheckerTest, Shape) {
  // Three stages on two ranks.
  const Violation violation = Single("0F0,2F0,2B0,0B0\n1F0,1B0\n", ViolationKind::kShape);
  EXPECT_EQ(violation.rank, -1);
  EXPECT_TRUE(Contains(violation.message, "3 stages cannot be spread evenly over 2 ranks"))
      << violation.message;
}

// BUG (reported): an action whose stage or microbatch lies beyond the schedule's counts (a
// hand-built Schedule, or a CSV checked against a config's pp·vpp) should be a kShape violation
// ("out-of-range ids", checker.h). CheckSchedule instead indexes past its tables
// (CheckStagePlacement, checker.cc; ActionIndex::Slot) and crashes. Run in a child process so
// the crash fails only this test.
TEST(CheckerTest, OutOfRangeIdsAreShapeViolations) {
  auto has_shape_violation = [](const Schedule& schedule) {
    const auto violations =
        CheckSchedule(schedule, UniformStageCosts(ModelSpec(), 2, 1), CheckOptions());
    return !OfKind(violations, ViolationKind::kShape).empty();
  };
  Schedule bad_stage = FromCsv("0F0,0B0\n1F0,1B0\n");
  bad_stage.rank_actions[1].push_back(Action{StageId(5), ActionKind::kForward, MicrobatchId(0)});
  EXPECT_EXIT(std::exit(has_shape_violation(bad_stage) ? 0 : 1), ::testing::ExitedWithCode(0), "");
  Schedule bad_microbatch = FromCsv("0F0,0B0\n1F0,1B0\n");
  bad_microbatch.rank_actions[0].push_back(
      Action{StageId(0), ActionKind::kForward, MicrobatchId(7)});
  EXPECT_EXIT(std::exit(has_shape_violation(bad_microbatch) ? 0 : 1), ::testing::ExitedWithCode(0),
              "");
}

// Every violation, not the first: several problems in one schedule are all reported, ordered
// by check kind, and the deadlock analysis is skipped while the structure is broken.
TEST(CheckerTest, ReportsEveryViolation) {
  const auto violations = Check(FromCsv("0B0,0F0,0F1,0F1,0B1\n1F0,1B0,1F1\n"));
  EXPECT_EQ(OfKind(violations, ViolationKind::kBackwardBeforeForward).size(), 1u);
  EXPECT_EQ(OfKind(violations, ViolationKind::kDuplicateAction).size(), 1u);
  EXPECT_EQ(OfKind(violations, ViolationKind::kMissingAction).size(), 1u);
  EXPECT_TRUE(OfKind(violations, ViolationKind::kDeadlock).empty());
  for (size_t index = 1; index < violations.size(); ++index) {
    EXPECT_LE(static_cast<int>(violations[index - 1].kind),
              static_cast<int>(violations[index].kind));
  }
}

// Rank 0 waits for microbatch 0's gradient before sending microbatch 1's activation; rank 1
// waits for microbatch 1's activation before producing microbatch 0's gradient. A data cycle:
// it deadlocks in every mode.
TEST(CheckerTest, AsyncDeadlock) {
  const Schedule schedule = FromCsv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
  const auto violations = Check(schedule);
  ASSERT_FALSE(violations.empty());
  std::vector<P2pMode> modes;
  for (const Violation& violation : violations) {
    EXPECT_EQ(violation.kind, ViolationKind::kDeadlock);
    EXPECT_TRUE(Contains(violation.message, "wait-for cycle")) << violation.message;
    modes.insert(modes.end(), violation.modes.begin(), violation.modes.end());
  }
  EXPECT_EQ(modes.size(), 3u) << FormatViolations(violations);  // each mode once
  EXPECT_TRUE(Contains(violations[0].message, "deadlock with async")) << violations[0].message;
  EXPECT_EQ(violations[0].rank, 0);
  EXPECT_EQ(violations[0].action, "0B0");
  // Only async asked for: one violation.
  CheckOptions async_only;
  async_only.modes = {P2pMode::kAsync};
  EXPECT_EQ(CheckSchedule(schedule, CostsFor(schedule), async_only).size(), 1u);
}

void ExpectClosedCycle(const TaskGraph& graph, const Deadlock& deadlock) {
  ASSERT_FALSE(deadlock.cycle.empty()) << FormatDeadlock(graph, deadlock);
  EXPECT_EQ(deadlock.cycle.back().waited_for, deadlock.cycle.front().waiter)
      << FormatDeadlock(graph, deadlock);
  for (size_t index = 1; index < deadlock.cycle.size(); ++index) {
    EXPECT_EQ(deadlock.cycle[index - 1].waited_for, deadlock.cycle[index].waiter);
  }
}

// Rank 1 takes microbatch 1 first: fine with async sends, a deadlock with rendezvous (rank 0
// sends microbatch 0 first, rank 1 posts the receive for microbatch 1 first).
TEST(CheckerTest, RendezvousOnlyDeadlock) {
  const Schedule schedule = FromCsv("0F0,0F1,0B0,0B1\n1F1,1F0,1B0,1B1\n");
  const auto violations = Check(schedule);
  ASSERT_EQ(violations.size(), 1u) << FormatViolations(violations);
  EXPECT_EQ(violations[0].kind, ViolationKind::kDeadlock);
  EXPECT_EQ(violations[0].modes, std::vector<P2pMode>{P2pMode::kRendezvous});
  EXPECT_TRUE(Contains(violations[0].message, "rendezvous")) << violations[0].message;
  EXPECT_FALSE(violations[0].hint.empty());
  // The swap is on rank 1: the report names rank 1 (the receiver that has not posted).
  EXPECT_EQ(violations[0].rank, 1) << FormatViolations(violations);
  EXPECT_EQ(violations[0].action, "1F1");

  LowerOptions options;
  const Result<TaskGraph> async_graph = Lower(schedule, CostsFor(schedule), options);
  ASSERT_TRUE(async_graph.ok());
  EXPECT_FALSE(FindDeadlock(async_graph.value()).has_value());
  options.mode = P2pMode::kRendezvous;
  const Result<TaskGraph> graph = Lower(schedule, CostsFor(schedule), options);
  ASSERT_TRUE(graph.ok());
  const auto deadlock = FindDeadlock(graph.value());
  ASSERT_TRUE(deadlock.has_value());
  ExpectClosedCycle(graph.value(), *deadlock);
  // The cycle runs through both activation transfers on link 0 → 1, matched in opposite orders.
  int transfers = 0;
  bool order_edge = false;
  for (const WaitEdge& edge : deadlock->cycle) {
    transfers += graph.value().tasks[edge.waiter].kind == TaskKind::kTransfer;
    order_edge = order_edge || edge.reason == WaitReason::kSendOrder ||
                 edge.reason == WaitReason::kReceiveOrder;
  }
  EXPECT_EQ(transfers, 2) << FormatDeadlock(graph.value(), *deadlock);
  EXPECT_TRUE(order_edge) << FormatDeadlock(graph.value(), *deadlock);
}

TEST(CheckerTest, AsyncDeadlockCycleCloses) {
  const Schedule schedule = FromCsv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
  const Result<TaskGraph> graph = Lower(schedule, CostsFor(schedule), LowerOptions());
  ASSERT_TRUE(graph.ok());
  const auto deadlock = FindDeadlock(graph.value());
  ASSERT_TRUE(deadlock.has_value());
  ExpectClosedCycle(graph.value(), *deadlock);
  ASSERT_EQ(deadlock->blocked.size(), 2u);
  EXPECT_EQ(FormatAction(graph.value().tasks[deadlock->blocked[0].head].action), "0B0");
  EXPECT_EQ(FormatAction(graph.value().tasks[deadlock->blocked[1].head].action), "1F1");
}

// Every generator's schedule is deadlock-free in both modes and passes every check.
TEST(CheckerTest, GeneratedSchedulesAreClean) {
  int checked = 0;
  for (const ScheduleGenerator& generator : ScheduleGenerators()) {
    for (int32_t pp : {2, 3, 4, 8}) {
      for (int32_t vpp : {1, 2, 3, 4}) {
        for (int32_t microbatches : {1, 2, 5, 8}) {
          const Result<Schedule> schedule = generator.generate({pp, vpp, microbatches, 0});
          if (!schedule.ok()) continue;
          const std::string where = std::string(generator.name) + " pp=" + std::to_string(pp) +
                                    " vpp=" + std::to_string(vpp) +
                                    " m=" + std::to_string(microbatches);
          const auto costs = CostsFor(schedule.value());
          // The ZB-V hand order (the authors' repository) sends forwards and backwards on one
          // link in an order the receiver does not post: its runtime pre-posts receives, our
          // rendezvous model does not, so it deadlocks there once m > p (golden/vshape shows
          // it). Everything else is clean in both modes.
          // DualPipe(V) likewise: its runtime keeps a forward receive posted one step ahead.
          const std::string name = generator.name;
          const bool zbv_rendezvous_deadlock =
              (name == "zb-v" && microbatches > pp) || name == "dualpipe" || name == "dualpipev";
          for (P2pMode mode : {P2pMode::kAsync, P2pMode::kRendezvous, P2pMode::kTorchPipelining}) {
            if (mode == P2pMode::kRendezvous && zbv_rendezvous_deadlock) continue;
            LowerOptions options;
            options.mode = mode;
            const Result<TaskGraph> graph = Lower(schedule.value(), costs, options);
            ASSERT_TRUE(graph.ok()) << where << ": " << graph.error().message;
            const auto deadlock = FindDeadlock(graph.value());
            EXPECT_FALSE(deadlock.has_value()) << where << " " << P2pModeName(mode) << "\n"
                                               << FormatDeadlock(graph.value(), *deadlock);
          }
          CheckOptions check_options;
          if (zbv_rendezvous_deadlock) {
            check_options.modes = {P2pMode::kAsync, P2pMode::kTorchPipelining};
          }
          const auto violations = CheckSchedule(schedule.value(), costs, check_options);
          EXPECT_TRUE(violations.empty()) << where << "\n" << FormatViolations(violations);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 50);
}

// Issue 13 item 6, acceptance: the published ZB-V, DualPipe and DualPipeV orders pass under the
// runtime that runs them (torch.distributed.pipelining posts receives ahead), for
// p in {4, 8, 16} and m in {2p, 4p}, although the strict NCCL-order mode deadlocks on them.
TEST(CheckerTest, PublishedOrdersPassUnderTorchPipelining) {
  int strict_deadlocks = 0;
  for (const char* name : {"zb-v", "dualpipe", "dualpipev"}) {
    const auto generator = FindScheduleGenerator(name);
    ASSERT_TRUE(generator.ok()) << name;
    for (int32_t pp : {4, 8, 16}) {
      for (int32_t microbatches : {2 * pp, 4 * pp}) {
        const int32_t vpp = std::string(name) == "dualpipe" ? 1 : 2;
        const Result<Schedule> schedule = generator.value()->generate({pp, vpp, microbatches, 0});
        ASSERT_TRUE(schedule.ok()) << name << ": " << schedule.error().message;
        const std::string where =
            std::string(name) + " p=" + std::to_string(pp) + " m=" + std::to_string(microbatches);
        CheckOptions torch;
        torch.modes = {P2pMode::kTorchPipelining};
        const auto costs = CostsFor(schedule.value());
        const auto violations = CheckSchedule(schedule.value(), costs, torch);
        EXPECT_TRUE(violations.empty()) << where << "\n" << FormatViolations(violations);
        CheckOptions strict;
        strict.modes = {P2pMode::kRendezvous};
        strict_deadlocks += !CheckSchedule(schedule.value(), costs, strict).empty();
      }
    }
  }
  // The limitation the new mode lifts: all but DualPipe at p 4 (m 8, 16) deadlock there.
  EXPECT_GT(strict_deadlocks, 0);
}

// Issue 13 item 6, acceptance: a planted swap still deadlocks in both modes. On rank 1 of ZB-V
// (p 4, m 8) the first action 1F0 and the first forward of its second chunk, 6F0, trade places:
// 6F0 needs 1F0's output (through ranks 2 and 3), so it is a data cycle, and the report names
// rank 1 and the action run too early.
TEST(CheckerTest, PlantedSwapDeadlocksInBothModes) {
  Schedule schedule = GenerateZbV({4, 2, 8, 0}).value();
  auto& row = schedule.rank_actions[1];
  const auto first_six = std::find_if(row.begin(), row.end(), [](const Action& action) {
    return action.stage.value() == 6 && action.kind == ActionKind::kForward;
  });
  ASSERT_NE(first_six, row.end());
  ASSERT_EQ(FormatAction(row.front()), "1F0");
  std::iter_swap(row.begin(), first_six);
  for (P2pMode mode : {P2pMode::kRendezvous, P2pMode::kTorchPipelining}) {
    CheckOptions options;
    options.modes = {mode};
    const auto violations = CheckSchedule(schedule, CostsFor(schedule), options);
    ASSERT_EQ(violations.size(), 1u) << P2pModeName(mode) << "\n" << FormatViolations(violations);
    EXPECT_EQ(violations[0].kind, ViolationKind::kDeadlock);
    EXPECT_EQ(violations[0].rank, 1) << FormatViolations(violations);
    EXPECT_EQ(violations[0].action, "6F0") << FormatViolations(violations);
  }
}

// The rendezvous-only swap (rank 1 takes microbatch 1 first) runs under torch's runtime: its
// comm lowering posts rank 1's receives in the order rank 0 sends them, ahead of the compute.
TEST(CheckerTest, ForwardSwapRunsUnderTorchPipelining) {
  const Schedule schedule = FromCsv("0F0,0F1,0B0,0B1\n1F1,1F0,1B0,1B1\n");
  CheckOptions torch;
  torch.modes = {P2pMode::kTorchPipelining};
  EXPECT_TRUE(CheckSchedule(schedule, CostsFor(schedule), torch).empty());
}

// Issue 13 item 5: structural violations no longer hide the deadlock search.
TEST(CheckerTest, StructuralAndDeadlockBothReported) {
  // Stage 1 split over two ranks (1B1 on rank 0), and rank 1 runs its microbatch-1 forward
  // first: a deadlock under rendezvous only.
  const Schedule schedule = FromCsv("0F0,0F1,1B1,0B0,0B1\n1F1,1F0,1B0\n");
  const auto violations = Check(schedule);
  EXPECT_EQ(OfKind(violations, ViolationKind::kStageOnTwoRanks).size(), 1u)
      << FormatViolations(violations);
  const auto deadlocks = OfKind(violations, ViolationKind::kDeadlock);
  ASSERT_EQ(deadlocks.size(), 1u) << FormatViolations(violations);
  EXPECT_EQ(deadlocks[0].modes, std::vector<P2pMode>{P2pMode::kRendezvous});
  EXPECT_EQ(deadlocks[0].rank, 1);
}

// A compute_comms schedule is run as written: a link's RECVs posted in the other order than its
// SENDs deadlock under torch-pipelining; the same rows in matching order pass.
TEST(CheckerTest, ComputeCommsOrder) {
  CheckOptions torch;
  torch.modes = {P2pMode::kTorchPipelining};
  const Schedule good = FromCsv(
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0RECV_B1,0B0,0B1\n"
      "1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n");
  EXPECT_TRUE(CheckSchedule(good, CostsFor(good), torch).empty());
  const Schedule crossed = FromCsv(
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0RECV_B1,0B0,0B1\n"
      "1RECV_F1,1RECV_F0,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n");
  const auto violations = CheckSchedule(crossed, CostsFor(crossed), torch);
  ASSERT_EQ(violations.size(), 1u) << FormatViolations(violations);
  EXPECT_EQ(violations[0].kind, ViolationKind::kDeadlock);
  EXPECT_EQ(violations[0].rank, 1) << FormatViolations(violations);
  const Schedule late = FromCsv(
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0RECV_B1,0B0,0B1\n"
      "1F0,1RECV_F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n");
  const auto late_violations = CheckSchedule(late, CostsFor(late), torch);
  ASSERT_EQ(late_violations.size(), 1u) << FormatViolations(late_violations);
  EXPECT_EQ(late_violations[0].kind, ViolationKind::kCommOrder);
  EXPECT_TRUE(Contains(late_violations[0].message, "rank 1: 1RECV_F0 comes after 1F0"))
      << late_violations[0].message;
}

TEST(CheckerTest, FormatViolations) {
  const std::string text = FormatViolations(Check(FromCsv("0F0,0W0,0I0\n")));
  EXPECT_EQ(text.rfind("error[weight-before-input] rank 0 0W0: ", 0), 0u) << text;
  EXPECT_TRUE(Contains(text, "\n  hint: move 0I0 before 0W0")) << text;
  EXPECT_EQ(FormatViolations({}), "");
}

TEST(CheckerTest, KindNames) {
  EXPECT_STREQ(ViolationKindName(ViolationKind::kShape), "shape");
  EXPECT_STREQ(ViolationKindName(ViolationKind::kDeadlock), "deadlock");
  EXPECT_STREQ(ViolationKindName(ViolationKind::kStageOnTwoRanks), "stage-on-two-ranks");
  EXPECT_STREQ(ViolationKindName(ViolationKind::kMixedBackward), "mixed-backward");
}

}  // namespace
}  // namespace stagecraft
