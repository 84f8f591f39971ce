// V-Half (Pipeline Parallelism with Controllable Memory, Qi et al., NeurIPS 2024, §4: the V-shape
// schedule with about half of 1F1B's activation memory, peak (p+2)//2 microbatches). Built as the
// paper builds it, from a repeating building block: every microbatch k takes on rank r the unit
// slots (each F, I, W of a chunk costs 1)
//   down F 6k + 2r,  up F 6k + 3p − r − 2,  up I 6k + 3p + d + 2r − 1,  down I 6k + 6p + d − r − 2
// with d = 3 for even p and 0 for odd p (the block's offsets as in the authors' generator,
// sail-sg/zero-bubble-pipeline-parallelism zbv_greedy.py, commit 39f2c186). W passes take the
// free slots, oldest pending first. The repeated block leaves gaps only in the warm-up and the
// cool-down; those are "squeezed" (the paper's term): in time order every pass outside the steady
// state moves to the earliest free slot after its dependencies where no rank's peak (chunk
// activations from F until W) grows. Two rounds: warm-up and cool-down with the W passes placed,
// then the cool-down again with W passes re-filled; each round is followed by compaction (every
// pass as early as its inputs and its rank allow, order kept). The program of each rank is its
// passes in slot order.
//
// That order (like the reference generator's own) deadlocks under rendezvous p2p for most m > 2
// (46 of the 96 cases p <= 16 that LinkOrdersAgreeForVHalfAndVMin runs): the squeezed warm-up
// lets rank 0 send more down-F activations before its first up-I gradient than rank 1 takes
// before it. So the programs are listed again with one send/receive order per link
// class (AlignedLinks below, AlignVLinkOrders in v_link_order.cc): every link then carries its
// messages in the order the receiver takes them, no pass is listed before its unit-cost start in
// the block's order, and no rank holds more chunk activations than there.
//
// A run that is not bound to rendezvous gets GenerateVHalfAuto instead (the cost-aware table):
// the aligned order or the authors' unaligned one, the faster for its costs (on unequal costs the
// alignment can cost time: 1.5B Table 9 costs, p 4, m 16, bubble 0.121433 against 0.100651).
//
// With F = I = W the bubble rate (span) equals the reference generator's on every case measured,
// after the alignment as before it (v_shape_test.cc, 19 cases p 2-24, m 2p-8p: p 4 m 16 0.049505,
// p 8 m 32 0.081340; the older greedy list scheduler gave 0.067961 and 0.102804). For some m
// near p the alignment costs up to 0.025 of bubble. Peak: at most 2·((p+2)//2) chunk activations,
// from F until W and so from F until I.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

// The passes of one rank, in the authors' order: down F, up F, up I, down I, then W.
enum Kind : int { kDownForward, kUpForward, kUpInputGrad, kDownInputGrad, kWeight, kKinds };
using Slots = std::array<std::vector<int64_t>, kKinds>;  // [kind][microbatch, or k-th W] → slot
constexpr int64_t kFree = -1;

int64_t LastSlot(const Slots& slots) {
  int64_t last = 0;
  for (const auto& kind : slots) {
    for (const int64_t slot : kind) last = std::max(last, slot);
  }
  return last;
}

// What each slot of a rank holds (a Kind, or kFree), up to its last pass.
std::vector<int> Timeline(const Slots& slots) {
  std::vector<int> timeline(static_cast<size_t>(LastSlot(slots)) + 1, kFree);
  for (int kind = 0; kind < kKinds; ++kind) {
    for (const int64_t slot : slots[kind]) timeline[static_cast<size_t>(slot)] = kind;
  }
  return timeline;
}

// The block's first slots of rank `rank`: down F, up F, up I, down I of microbatch 0 (the
// authors' stable patterns, zbv_greedy.py at 39f2c186).
std::array<int64_t, 4> FirstSlots(VPattern pattern, int32_t rank, int32_t pp) {
  if (pattern == VPattern::kMin) {
    const int64_t offset = pp % 3 == 0 ? 2 : 0;
    return {rank, 2 * pp - rank - 1, 2 * pp + offset + rank, 4 * pp + offset - rank - 1};
  }
  const int64_t offset = pp % 2 == 0 ? 3 : 0;
  return {2 * rank, 3 * pp - rank - 2, 3 * pp + offset + 2 * rank - 1, 6 * pp + offset - rank - 2};
}

Slots BuildingBlock(VPattern pattern, int32_t rank, int32_t pp, int32_t microbatches) {
  const std::array<int64_t, 4> first = FirstSlots(pattern, rank, pp);
  Slots slots;
  for (int kind = 0; kind < 4; ++kind) {
    for (int32_t microbatch = 0; microbatch < microbatches; ++microbatch) {
      slots[kind].push_back(first[kind] + 6 * static_cast<int64_t>(microbatch));
    }
  }
  return slots;
}

// Places the W passes: each free slot takes one if an I has left one pending; the rest follow.
void FillWeightGrads(Slots& slots) {
  slots[kWeight].clear();
  const std::vector<int> timeline = Timeline(slots);
  int64_t pending = 0;
  for (size_t slot = 0; slot < timeline.size(); ++slot) {
    if (timeline[slot] == kUpInputGrad || timeline[slot] == kDownInputGrad) ++pending;
    if (timeline[slot] == kFree && pending > 0) {
      slots[kWeight].push_back(static_cast<int64_t>(slot));
      --pending;
    }
  }
  for (int64_t slot = static_cast<int64_t>(timeline.size()); pending > 0; --pending) {
    slots[kWeight].push_back(slot++);
  }
}

// Most chunk activations held (F until W). Without placed W passes, a pending W takes the first
// free slot, as FillWeightGrads would place it.
int64_t PeakActivations(const Slots& slots, bool weights_placed) {
  int64_t held = 0;
  int64_t peak = 0;
  int64_t pending = 0;
  for (const int kind : Timeline(slots)) {
    if (kind == kDownForward || kind == kUpForward) ++held;
    if (kind == kUpInputGrad || kind == kDownInputGrad) ++pending;
    if (kind == kWeight || (kind == kFree && !weights_placed && pending > 0)) {
      --held;
      --pending;
    }
    peak = std::max(peak, held);
  }
  return peak;
}

struct Pass {
  int64_t slot;
  int32_t rank;
  int kind;
  int32_t index;  // microbatch, or k-th W
  bool operator<(const Pass& other) const {
    return std::tie(slot, rank, kind, index) <
           std::tie(other.slot, other.rank, other.kind, other.index);
  }
};

std::vector<Pass> PassesInTimeOrder(const std::vector<Slots>& ranks) {
  std::vector<Pass> passes;
  for (int32_t rank = 0; rank < static_cast<int32_t>(ranks.size()); ++rank) {
    for (int kind = 0; kind < kKinds; ++kind) {
      for (size_t index = 0; index < ranks[rank][kind].size(); ++index) {
        passes.push_back({ranks[rank][kind][index], rank, kind, static_cast<int32_t>(index)});
      }
    }
  }
  std::sort(passes.begin(), passes.end());
  return passes;
}

// The slot of rank `rank`'s index-th input-gradient pass in time, read through `slot_of`: the
// index-th smallest of its I slots (up and down chunks together).
template <typename SlotOf>
int64_t NthInputGrad(const std::vector<Slots>& ranks, int32_t rank, int32_t index, SlotOf slot_of) {
  std::vector<int64_t> input_grads;
  for (const int kind : {kUpInputGrad, kDownInputGrad}) {
    for (size_t i = 0; i < ranks[rank][kind].size(); ++i) {
      input_grads.push_back(slot_of(rank, kind, static_cast<int32_t>(i)));
    }
  }
  std::nth_element(input_grads.begin(), input_grads.begin() + index, input_grads.end());
  return input_grads[static_cast<size_t>(index)];
}

// The passes that `pass` waits for on its own or a neighbouring rank, read through `slot_of`; a
// W pass waits for the index-th I of its rank in time, `nth_input_grad(rank, index)`.
template <typename SlotOf, typename NthInput>
int64_t LatestDependency(const std::vector<Slots>& ranks, const Pass& pass, SlotOf slot_of,
                         NthInput nth_input_grad) {
  const int32_t last_rank = static_cast<int32_t>(ranks.size()) - 1;
  int64_t latest = kFree;
  const auto after = [&](int32_t rank, int kind, int32_t index) {
    latest = std::max(latest, slot_of(rank, kind, index));
  };
  const bool from_below = pass.kind == kDownForward || pass.kind == kUpInputGrad;
  const bool from_above = pass.kind == kUpForward || pass.kind == kDownInputGrad;
  if (from_below && pass.rank > 0) after(pass.rank - 1, pass.kind, pass.index);
  if (from_above && pass.rank < last_rank) after(pass.rank + 1, pass.kind, pass.index);
  if (pass.kind > kDownForward && pass.kind < kWeight) after(pass.rank, pass.kind - 1, pass.index);
  if (pass.kind == kWeight) latest = std::max(latest, nth_input_grad(pass.rank, pass.index));
  if (pass.index > 0) after(pass.rank, pass.kind, pass.index - 1);
  return latest;
}

// One squeeze round (see the header): the warm-up (until rank 0's first down I) only when the W
// passes are placed, and the cool-down (after the first last-microbatch down F that follows).
void Squeeze(std::vector<Slots>& ranks, bool weights_placed) {
  int64_t limit = 0;
  for (const Slots& slots : ranks) limit = std::max(limit, PeakActivations(slots, weights_placed));
  std::vector<std::vector<bool>> taken(ranks.size());
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    taken[rank].assign(static_cast<size_t>(LastSlot(ranks[rank])) + 1, false);
  }
  const int32_t last_microbatch = static_cast<int32_t>(ranks[0][kDownForward].size()) - 1;
  int phase = 0;  // 0 warm-up, 1 steady state, 2 cool-down
  for (const Pass& pass : PassesInTimeOrder(ranks)) {
    if (pass.kind == kWeight && !weights_placed) continue;
    if (phase == 0 && pass.kind == kDownInputGrad && pass.rank == 0) phase = 1;
    const bool keep = phase == 1 || (phase == 0 && !weights_placed);
    if (phase == 1 && pass.kind == kDownForward && pass.index == last_microbatch) phase = 2;
    int64_t& slot = ranks[pass.rank][pass.kind][static_cast<size_t>(pass.index)];
    if (!keep) {
      const auto slot_of = [&](int32_t rank, int kind, int32_t index) {
        return ranks[rank][kind][static_cast<size_t>(index)];
      };
      const int64_t earliest =
          1 + LatestDependency(ranks, pass, slot_of, [&](int32_t rank, int32_t index) {
            return NthInputGrad(ranks, rank, index, slot_of);
          });
      for (int64_t candidate = earliest; candidate < pass.slot; ++candidate) {
        if (taken[pass.rank][static_cast<size_t>(candidate)]) continue;
        slot = candidate;
        if (PeakActivations(ranks[pass.rank], weights_placed) <= limit) break;
        slot = pass.slot;
      }
    }
    taken[pass.rank][static_cast<size_t>(slot)] = true;
  }
}

// Every pass as early as its dependencies and its rank's order allow, with unit costs.
void Compact(std::vector<Slots>& ranks) {
  std::vector<Slots> start(ranks.size());
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    for (int kind = 0; kind < kKinds; ++kind) start[rank][kind].assign(ranks[rank][kind].size(), 0);
  }
  std::vector<int64_t> rank_free(ranks.size(), 0);
  // A rank's passes get increasing starts in the order they are placed, so its I starts so far
  // are a sorted list, and the passes not placed yet still read 0: the index-th smallest of all
  // its I starts is 0 while index < the I passes not placed, else the (index - those)-th placed
  // (NthInputGrad's answer in O(1), where it costs O(m) per W pass).
  std::vector<std::vector<int64_t>> placed_inputs(ranks.size());
  std::vector<size_t> input_passes(ranks.size());
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    input_passes[rank] = ranks[rank][kUpInputGrad].size() + ranks[rank][kDownInputGrad].size();
  }
  const auto nth_input_grad = [&](int32_t rank, int32_t index) -> int64_t {
    const std::vector<int64_t>& placed = placed_inputs[static_cast<size_t>(rank)];
    const size_t unplaced = input_passes[static_cast<size_t>(rank)] - placed.size();
    return static_cast<size_t>(index) < unplaced ? 0
                                                 : placed[static_cast<size_t>(index) - unplaced];
  };
  for (const Pass& pass : PassesInTimeOrder(ranks)) {
    const int64_t ready = 1 + LatestDependency(
                                  ranks, pass,
                                  [&](int32_t rank, int kind, int32_t index) {
                                    return start[rank][kind][static_cast<size_t>(index)];
                                  },
                                  nth_input_grad);
    int64_t& at = start[pass.rank][pass.kind][static_cast<size_t>(pass.index)];
    at = std::max(ready, rank_free[pass.rank]);
    rank_free[pass.rank] = at + 1;
    if (pass.kind == kUpInputGrad || pass.kind == kDownInputGrad) {
      placed_inputs[static_cast<size_t>(pass.rank)].push_back(at);
    }
  }
  ranks = std::move(start);
}

// Rank `rank`'s program: its passes in slot order, each W given to the oldest pending up I, else
// the oldest pending down I (the authors' split of W by chunk).
std::vector<Action> Program(const Slots& slots, int32_t rank, int32_t pp) {
  const VStages stages = VStagesOfRank(rank, pp);
  const std::vector<int> timeline = Timeline(slots);
  std::vector<Action> program;
  std::array<int32_t, kKinds> next = {};
  std::array<int32_t, 2> next_weight = {0, 0};  // [up, down]
  const auto weight = [&](bool up) {
    program.push_back({up ? stages.up : stages.down, ActionKind::kWeightGrad,
                       MicrobatchId(next_weight[up ? 0 : 1]++)});
  };
  for (const int kind : timeline) {
    if (kind == kFree) continue;
    if (kind == kWeight) {
      weight(next_weight[0] < next[kUpInputGrad]);
      continue;
    }
    const bool up = kind == kUpForward || kind == kUpInputGrad;
    const ActionKind action =
        kind == kDownForward || kind == kUpForward ? ActionKind::kForward : ActionKind::kInputGrad;
    program.push_back({up ? stages.up : stages.down, action, MicrobatchId(next[kind]++)});
  }
  return program;
}

// Longest span (last end − first start) of any rank in a unit-cost run; INT64_MAX on deadlock.
int64_t MaxUnitSpan(const Schedule& schedule) {
  const std::vector<int64_t> starts = UnitCostStarts(schedule);
  if (starts.empty()) return std::numeric_limits<int64_t>::max();
  int64_t longest = 0;
  for (const std::vector<Action>& program : schedule.rank_actions) {
    int64_t first = std::numeric_limits<int64_t>::max();
    int64_t last = 0;
    for (const Action& action : program) {
      first = std::min(first, starts[ActionSlot(schedule, action)]);
      last = std::max(last, starts[ActionSlot(schedule, action)] + 1);
    }
    longest = std::max(longest, last - first);
  }
  return longest;
}

// The building block's links disagree in the squeezed warm-up (rank 0 sends more down-F
// activations before its first up-I gradient than rank p − 1 can hold), so the programs are
// listed again with one order per link class (AlignVLinkOrders): the down class as rank p − 2 or
// p − 1 runs it (the ranks that fill their activation cap first), the up class as rank 0 or 1;
// the pair with the shortest longest span wins, the first in that order on a tie. Measured for p
// 2-24 and m from 1 to 8p: the span of the building block whenever m >= 2p; up to 0.025 more
// bubble (span) for some m near p. Unaligned only if no pair can be listed (never measured).
Schedule AlignedLinks(const Schedule& schedule) {
  const int32_t pp = schedule.num_ranks;
  std::optional<Schedule> best;
  int64_t best_span = std::numeric_limits<int64_t>::max();
  for (const int32_t down_class_rank : {pp - 2, pp - 1}) {
    for (const int32_t up_class_rank : {0, 1}) {
      std::optional<Schedule> aligned = AlignVLinkOrders(schedule, down_class_rank, up_class_rank);
      if (!aligned) continue;
      const int64_t span = MaxUnitSpan(*aligned);
      if (span < best_span) {
        best_span = span;
        best = std::move(aligned);
      }
    }
  }
  return best ? *best : schedule;
}

}  // namespace

Result<Schedule> GenerateVHalf(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "v-half"));
  return SqueezedVBlock(params, "v-half", VPattern::kHalf);
}

int64_t UnitCostMaxSpan(const Schedule& schedule) { return MaxUnitSpan(schedule); }

Schedule AlignVSchedule(const Schedule& schedule) {
  return schedule.num_ranks < 2 ? schedule : AlignedLinks(schedule);
}

Schedule SqueezedVBlock(const GeneratorParams& params, std::string_view name, VPattern pattern,
                        bool align_links) {
  Schedule schedule = EmptyVSchedule(params, name);
  std::vector<Slots> ranks;
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    ranks.push_back(BuildingBlock(pattern, rank, params.pp, params.microbatches));
    FillWeightGrads(ranks.back());
  }
  Squeeze(ranks, /*weights_placed=*/true);
  Compact(ranks);
  for (Slots& slots : ranks) slots[kWeight].clear();
  Squeeze(ranks, /*weights_placed=*/false);
  for (Slots& slots : ranks) FillWeightGrads(slots);
  Compact(ranks);
  for (int32_t rank = 0; rank < params.pp; ++rank) {
    FillWeightGrads(ranks[rank]);
    schedule.rank_actions[rank] = Program(ranks[rank], rank, params.pp);
  }
  return params.pp < 2 || !align_links ? schedule : AlignedLinks(schedule);
}

Result<Schedule> GenerateVHalfAuto(const GeneratorParams& params, const PipelineCosts& costs) {
  STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, "v-half"));
  // One squeeze for both candidates: the authors' order as listed, and with its links aligned.
  Schedule unaligned = SqueezedVBlock(params, "v-half", VPattern::kHalf, /*align_links=*/false);
  Schedule aligned = AlignVSchedule(unaligned);
  return FasterVOrder(std::move(aligned), std::move(unaligned), costs);
}

}  // namespace stagecraft
