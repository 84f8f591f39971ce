// ZB-V, the zero-bubble V schedule (Pipeline Parallelism with Controllable Memory, Qi et al.,
// NeurIPS 2024, "V-ZB"; the order is the authors' handcrafted ZB-V,
// sail-sg/zero-bubble-pipeline-parallelism). Rank r holds the down stage r and the up stage
// 2p − 1 − r. With the microbatches padded to n = max(m, 2p − 1) (actions of padding microbatches
// are dropped), rank r runs:
//   warm-up    2(p − r) − 1 down F; r pairs (up F, down F); p − r triples (up F, up I, up W);
//   steady     (down F while any is left, down I, down W, up F, up I, up W) until every F ran;
//   cool-down  r pairs (down I, up I); p − r pairs (down I, down W); the deferred up W passes,
//              then the deferred down W passes, oldest first.
// Every rank holds at most 2p chunk activations (p microbatches, from F until W) and, when
// F = I = W and m >= 2p − 1, no rank idles between its first and last action
// (pipeline_cases.json zb-v p=4 m=8: makespan 25.5 ms, span 24 ms, bubble_rate_span 0).
// Known limitation: rank r runs min(m, 2p − r − 1) down F before its first up I, so once m > p a
// link carries F and I messages in an order its receiver does not take them, and the schedule
// deadlocks under rendezvous point-to-point (it runs under async, as the reference assumes). With
// F = I = W no order avoids that at 2p activations without a bubble on rank 0.
#include <algorithm>
#include <initializer_list>
#include <utility>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

// One rank's program with a counter per (stage, kind): Add(stage, kind) appends the next
// microbatch of that pair, or nothing for a padding microbatch.
class ZbVRank {
 public:
  ZbVRank(VStages stages, int32_t microbatches, std::vector<Action>& actions)
      : stages_(stages), microbatches_(microbatches), actions_(actions) {}

  void Add(StageId stage, ActionKind kind) {
    int32_t& next = next_[stage == stages_.up][static_cast<size_t>(kind)];
    if (next < microbatches_) actions_.push_back({stage, kind, MicrobatchId(next)});
    ++next;
  }
  void Add(std::initializer_list<std::pair<StageId, ActionKind>> steps) {
    for (const auto& [stage, kind] : steps) Add(stage, kind);
  }
  int32_t Count(StageId stage, ActionKind kind) const {
    return next_[stage == stages_.up][static_cast<size_t>(kind)];
  }

 private:
  VStages stages_;
  int32_t microbatches_;
  std::vector<Action>& actions_;
  int32_t next_[2][4] = {};  // [down, up][kind]: next microbatch, padding included
};

void AppendZbVRank(int32_t rank, int32_t pp, int32_t microbatches, std::vector<Action>& actions) {
  const VStages stages = VStagesOfRank(rank, pp);
  const StageId down = stages.down;
  const StageId up = stages.up;
  const int32_t padded = std::max(microbatches, 2 * pp - 1);
  constexpr ActionKind F = ActionKind::kForward;
  constexpr ActionKind I = ActionKind::kInputGrad;
  constexpr ActionKind W = ActionKind::kWeightGrad;
  ZbVRank program(stages, microbatches, actions);
  for (int32_t step = 0; step < 2 * (pp - rank) - 1; ++step) program.Add(down, F);
  for (int32_t step = 0; step < rank; ++step) program.Add({{up, F}, {down, F}});
  for (int32_t step = 0; step < pp - rank; ++step) program.Add({{up, F}, {up, I}, {up, W}});
  while (program.Count(up, F) < program.Count(down, F) || program.Count(down, F) < padded) {
    if (program.Count(down, F) < padded) program.Add(down, F);
    program.Add({{down, I}, {down, W}, {up, F}, {up, I}, {up, W}});
  }
  for (int32_t step = 0; step < rank; ++step) program.Add({{down, I}, {up, I}});
  for (int32_t step = 0; step < pp - rank; ++step) program.Add({{down, I}, {down, W}});
  while (program.Count(up, W) < program.Count(up, I)) program.Add(up, W);
  while (program.Count(down, W) < program.Count(down, I)) program.Add(down, W);
}

}  // namespace

Result<Schedule> GenerateZbV(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "zb-v"));
  Schedule schedule = EmptyVSchedule(params, "zb-v");
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    AppendZbVRank(rank, params.pp, params.microbatches, schedule.rank_actions[rank]);
  }
  return schedule;
}

}  // namespace stagecraft
