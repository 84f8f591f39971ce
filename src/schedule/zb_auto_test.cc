// The automatic Zero-Bubble schedules (zb_auto.cc): every F, I, W exactly once per stage and
// microbatch, F before I before W on its rank, and the activation limit (F done minus W done,
// in M_B units; weighted by M_B and M_W where given) held at every point of every rank's
// program.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

std::vector<StageCost> Costs(int32_t pp, int64_t weight_grad_ns) {
  return std::vector<StageCost>(static_cast<size_t>(pp),
                                {Time::Nanoseconds(18'522'000), Time::Nanoseconds(18'086'000),
                                 Time::Nanoseconds(weight_grad_ns)});
}

TEST(ZbAutoTest, EveryActionOnceAndMemoryLimitHeld) {
  for (const auto& [generate, factor] :
       {std::pair<GenerateWithCostsFn, int32_t>{GenerateZb1p, 1},
        std::pair<GenerateWithCostsFn, int32_t>{GenerateZb2p, 2}}) {
    for (const auto& [pp, microbatches] :
         {std::pair{1, 1}, std::pair{4, 8}, std::pair{5, 3}, std::pair{8, 24}, std::pair{8, 64}}) {
      for (const auto& [weight_grad_ns, m_b, m_w] :
           {std::tuple<int64_t, int64_t, int64_t>{0, 0, 0},
            std::tuple<int64_t, int64_t, int64_t>{9'337'000, 0, 0},
            // Weighted (App. G): F adds M_B, I adds M_W − M_B, W frees M_W.
            std::tuple<int64_t, int64_t, int64_t>{9'337'000, 87, 32},
            // M_B without M_W (a layer list's): M_W = M_B, the bound.
            std::tuple<int64_t, int64_t, int64_t>{9'337'000, 87, 0}}) {
        const GeneratorParams params{pp, 1, microbatches, 0};
        std::vector<StageCost> costs = Costs(pp, weight_grad_ns);
        for (StageCost& cost : costs) {
          cost.activation_bytes = m_b;
          cost.weight_grad_bytes = m_w;
        }
        const auto schedule =
            generate(params, UniformPipelineCosts(costs, Time::Nanoseconds(601'000)));
        // Without M_B the unit is one activation from F until its W (M_W = M_B = 1): a deferred
        // W holds its activation (the papers' accounting), so ZB-1p holds at most p of them;
        // without M_W, M_W = M_B.
        const int64_t unit_b = m_b > 0 ? m_b : 1;
        const int64_t unit_w = m_w > 0 ? m_w : unit_b;
        ASSERT_TRUE(schedule.ok()) << schedule.error().message;
        SCOPED_TRACE(schedule.value().name + " pp=" + std::to_string(pp) +
                     " m=" + std::to_string(microbatches));
        for (int32_t rank = 0; rank < pp; ++rank) {
          const auto& actions = schedule.value().rank_actions[rank];
          EXPECT_EQ(actions.size(), 3u * static_cast<size_t>(microbatches));
          std::map<std::tuple<int32_t, ActionKind>, size_t> position;
          int64_t held = 0;
          for (size_t index = 0; index < actions.size(); ++index) {
            const Action& action = actions[index];
            EXPECT_EQ(action.stage, StageId(rank));
            EXPECT_TRUE(
                position.emplace(std::tuple{action.microbatch.value(), action.kind}, index).second)
                << "twice: " << FormatAction(action);
            if (action.kind == ActionKind::kForward) held += unit_b;
            if (action.kind == ActionKind::kInputGrad) held += unit_w - unit_b;
            if (action.kind == ActionKind::kWeightGrad) held -= unit_w;
            EXPECT_LE(held, factor * pp * unit_b) << FormatAction(action);
          }
          for (int32_t microbatch = 0; microbatch < microbatches; ++microbatch) {
            EXPECT_LT((position[{microbatch, ActionKind::kForward}]),
                      (position[{microbatch, ActionKind::kInputGrad}]));
            EXPECT_LT((position[{microbatch, ActionKind::kInputGrad}]),
                      (position[{microbatch, ActionKind::kWeightGrad}]));
          }
        }
      }
    }
  }
}

TEST(ZbAutoTest, RejectsSeveralChunksPerRank) {
  const auto schedule = GenerateZb2p({4, 2, 8, 0}, UniformPipelineCosts(Costs(8, 1), Time()));
  ASSERT_FALSE(schedule.ok());
  EXPECT_NE(schedule.error().message.find("one chunk per rank"), std::string::npos);
}

TEST(ZbAutoTest, CostAwareTableFindsBoth) {
  EXPECT_EQ(FindCostAwareScheduleGenerator("zb-1p")->generate, GenerateZb1p);
  EXPECT_EQ(FindCostAwareScheduleGenerator("zb-2p")->generate, GenerateZb2p);
  EXPECT_EQ(FindCostAwareScheduleGenerator("zb-h1"), nullptr);
  // zb-v is in both tables: the handcrafted order without costs, the cost-aware one in a run.
  EXPECT_EQ(FindCostAwareScheduleGenerator("zb-v")->generate, GenerateZbVAuto);
  EXPECT_EQ(FindScheduleGenerator("zb-v").value()->generate, GenerateZbV);
  const std::vector<std::string> names = AllScheduleNames();
  EXPECT_EQ(std::count(names.begin(), names.end(), "zb-v"), 1);
}

// The cost-aware ZB-V: every action once on its own rank's stages, F before I before W, the
// weighted limit 2p·M_B held on every rank, and never a longer largest span than the
// handcrafted order timed the same way.
TEST(ZbVAutoTest, EveryActionOnceWithinTheLimitAndNoSlowerThanHandcrafted) {
  for (const auto& [pp, microbatches] : {std::pair{1, 1}, std::pair{2, 2}, std::pair{3, 7},
                                         std::pair{4, 2}, std::pair{4, 8}, std::pair{8, 24}}) {
    for (const auto& [weight_grad_ns, m_b, m_w] :
         {std::tuple<int64_t, int64_t, int64_t>{4'668'000, 0, 0},
          std::tuple<int64_t, int64_t, int64_t>{9'000'000, 0, 0},
          std::tuple<int64_t, int64_t, int64_t>{4'668'000, 87, 32}}) {
      const GeneratorParams params{pp, 2, microbatches, 0};
      std::vector<StageCost> stages(static_cast<size_t>(2 * pp),
                                    {Time::Nanoseconds(9'261'000), Time::Nanoseconds(9'043'000),
                                     Time::Nanoseconds(weight_grad_ns)});
      for (StageCost& stage : stages) {
        stage.activation_bytes = m_b;
        stage.weight_grad_bytes = m_w;
      }
      const PipelineCosts costs = UniformPipelineCosts(stages, Time::Nanoseconds(601'000));
      const auto schedule = GenerateZbVAuto(params, costs);
      ASSERT_TRUE(schedule.ok()) << schedule.error().message;
      SCOPED_TRACE("pp=" + std::to_string(pp) + " m=" + std::to_string(microbatches) +
                   " m_b=" + std::to_string(m_b));
      const int64_t unit_b = m_b > 0 ? m_b : 1;
      const int64_t unit_w = m_w > 0 ? m_w : unit_b;  // without M_W, held from F until W
      for (int32_t rank = 0; rank < pp; ++rank) {
        const auto& actions = schedule.value().rank_actions[rank];
        EXPECT_EQ(actions.size(), 6u * static_cast<size_t>(microbatches));
        std::map<std::tuple<int32_t, int32_t, ActionKind>, size_t> position;
        int64_t held = 0;
        for (size_t index = 0; index < actions.size(); ++index) {
          const Action& action = actions[index];
          const int32_t stage = action.stage.value();
          EXPECT_TRUE(stage == rank || stage == 2 * pp - 1 - rank) << FormatAction(action);
          EXPECT_TRUE(
              position.emplace(std::tuple{stage, action.microbatch.value(), action.kind}, index)
                  .second)
              << "twice: " << FormatAction(action);
          if (action.kind == ActionKind::kForward) held += unit_b;
          if (action.kind == ActionKind::kInputGrad) held += unit_w - unit_b;
          if (action.kind == ActionKind::kWeightGrad) held -= unit_w;
          EXPECT_LE(held, 2 * pp * unit_b) << FormatAction(action);
        }
        for (const int32_t stage : {rank, 2 * pp - 1 - rank}) {
          for (int32_t microbatch = 0; microbatch < microbatches; ++microbatch) {
            EXPECT_LT((position[{stage, microbatch, ActionKind::kForward}]),
                      (position[{stage, microbatch, ActionKind::kInputGrad}]));
            EXPECT_LT((position[{stage, microbatch, ActionKind::kInputGrad}]),
                      (position[{stage, microbatch, ActionKind::kWeightGrad}]));
          }
        }
      }
      PipelineCosts rendezvous = costs;
      rendezvous.links_in_receiver_order = true;
      EXPECT_EQ(GenerateZbVAuto(params, rendezvous).value(), GenerateZbV(params).value());
      const auto ours = TimeOrder(schedule.value(), costs);
      const auto handcrafted = TimeOrder(GenerateZbV(params).value(), costs);
      ASSERT_TRUE(ours.has_value());
      ASSERT_TRUE(handcrafted.has_value());
      EXPECT_LE(ours->max_span_ns, handcrafted->max_span_ns);
    }
  }
}

}  // namespace
}  // namespace stagecraft
