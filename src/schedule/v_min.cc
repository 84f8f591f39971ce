// V-Min (Pipeline Parallelism with Controllable Memory, Qi et al., NeurIPS 2024: the V-shape
// schedule with about a third of 1F1B's activation memory, peak (p+4)//3 microbatches, bubble
// ~2p/3m of the span when F = I = W). Built the paper's way, from one repeating building block:
//  * time runs in chunk-action units (every F, I, W costs 1, no communication); a rank repeats its
//    block every 6 units, one slot per action of a microbatch on its two stages (down r, up
//    2p − 1 − r), so each rank's six actions must sit in distinct slots modulo 6;
//  * the block places one microbatch's actions as early as their dependencies and the free slots
//    allow: the F chain down and back up the V (stage 0 .. 2p − 1), then the I chain back
//    (2p − 1 .. 0), then each W at the first free slot after its I, in the order of the I passes.
//    Short lifespans (F until W) keep the memory minimal: lifespan / 6 chunk activations;
//  * microbatch k runs the block shifted by 6k; each rank's program is its actions sorted by time
//    (distinct slots make the times distinct), and the simulator squeezes the idle warm-up and
//    cool-down out of it.
// Checked by tests for p <= 64: at most 2·((p+4)//3) chunk activations per rank, counted from F
// until W (the paper's accounting) and so also from F until I.
#include <algorithm>
#include <array>
#include <utility>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

constexpr int64_t kBlockPeriod = 6;  // F, I, W on two stages, 1 unit each

class MinimalVBlock {
 public:
  explicit MinimalVBlock(int32_t pp)
      : pp_(pp), slot_used_(static_cast<size_t>(pp)), offsets_(static_cast<size_t>(2 * pp)) {
    const int32_t stages = 2 * pp;
    int64_t earliest = 0;
    for (int32_t stage = 0; stage < stages; ++stage) {
      earliest = Place(stage, ActionKind::kForward, earliest) + 1;
    }
    for (int32_t stage = stages - 1; stage >= 0; --stage) {
      earliest = std::max(earliest, Offset(stage, ActionKind::kForward) + 1);
      earliest = Place(stage, ActionKind::kInputGrad, earliest) + 1;
    }
    std::vector<int32_t> by_input_grad(static_cast<size_t>(stages));
    for (int32_t stage = 0; stage < stages; ++stage) by_input_grad[stage] = stage;
    std::sort(by_input_grad.begin(), by_input_grad.end(), [&](int32_t left, int32_t right) {
      return Offset(left, ActionKind::kInputGrad) < Offset(right, ActionKind::kInputGrad);
    });
    for (int32_t stage : by_input_grad) {
      Place(stage, ActionKind::kWeightGrad, Offset(stage, ActionKind::kInputGrad) + 1);
    }
  }

  // When microbatch 0 runs `kind` on `stage`, in units from the block's start.
  int64_t Offset(int32_t stage, ActionKind kind) const {
    return offsets_[stage][static_cast<size_t>(kind)];
  }

 private:
  int32_t RankOf(int32_t stage) const {
    return StageToRank(StageId(stage), pp_, Placement::kV).value();
  }
  // Puts the action at the first time >= earliest whose slot is free on its rank.
  int64_t Place(int32_t stage, ActionKind kind, int64_t earliest) {
    auto& used = slot_used_[RankOf(stage)];
    int64_t time = earliest;
    while (used[time % kBlockPeriod]) ++time;
    used[time % kBlockPeriod] = true;
    offsets_[stage][static_cast<size_t>(kind)] = time;
    return time;
  }

  int32_t pp_;
  std::vector<std::array<bool, kBlockPeriod>> slot_used_;  // [rank][time mod 6]
  std::vector<std::array<int64_t, 4>> offsets_;            // [stage][kind]; B unused
};

void AppendRepeatedBlock(const MinimalVBlock& block, int32_t rank, int32_t pp, int32_t microbatches,
                         std::vector<Action>& actions) {
  const VStages stages = VStagesOfRank(rank, pp);
  std::vector<std::pair<int64_t, Action>> timed;
  timed.reserve(6 * static_cast<size_t>(microbatches));
  for (const StageId stage : {stages.down, stages.up}) {
    for (const ActionKind kind :
         {ActionKind::kForward, ActionKind::kInputGrad, ActionKind::kWeightGrad}) {
      for (int32_t microbatch = 0; microbatch < microbatches; ++microbatch) {
        const int64_t time = block.Offset(stage.value(), kind) + kBlockPeriod * microbatch;
        timed.push_back({time, {stage, kind, MicrobatchId(microbatch)}});
      }
    }
  }
  std::sort(timed.begin(), timed.end(),
            [](const auto& left, const auto& right) { return left.first < right.first; });
  for (const auto& [time, action] : timed) actions.push_back(action);
}

Schedule OurVMin(const GeneratorParams& params) {
  Schedule schedule = EmptyVSchedule(params, "v-min");
  const MinimalVBlock block(params.pp);
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    AppendRepeatedBlock(block, rank, params.pp, params.microbatches, schedule.rank_actions[rank]);
  }
  return schedule;
}

// The shorter of our block and the authors' (squeezed, links aligned) at no more activation
// memory. Only for p a multiple of 3 do they differ in more than the W slots: there their block
// leaves 2 slots between the F and I chains, ours none; otherwise both put rank r's F at r and
// 2p − 1 − r and its I at 2p + r and 4p − 1 − r, and the same span was measured.
Schedule ShorterVMin(const GeneratorParams& params, Schedule authors) {
  Schedule schedule = OurVMin(params);
  if (HoldsNoMoreActivations(authors, schedule) &&
      UnitCostMaxSpan(authors) < UnitCostMaxSpan(schedule)) {
    return authors;
  }
  return schedule;
}

}  // namespace

Result<Schedule> GenerateVMin(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "v-min"));
  if (params.pp % 3 != 0) return OurVMin(params);  // the authors' F and I slots are ours
  return ShorterVMin(params, SqueezedVBlock(params, "v-min", VPattern::kMin));
}

Result<Schedule> GenerateVMinAuto(const GeneratorParams& params, const PipelineCosts& costs) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "v-min"));
  // One squeeze for both of the authors' candidates: as listed, and with its links aligned.
  Schedule unaligned = SqueezedVBlock(params, "v-min", VPattern::kMin, /*align_links=*/false);
  Schedule plain =
      params.pp % 3 != 0 ? OurVMin(params) : ShorterVMin(params, AlignVSchedule(unaligned));
  return FasterVOrder(std::move(plain), std::move(unaligned), costs);
}

}  // namespace stagecraft
