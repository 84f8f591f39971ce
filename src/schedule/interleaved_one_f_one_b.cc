// Interleaved 1F1B in Megatron's order (Narayanan et al., SC'21 §2.2; Megatron-LM
// forward_backward_pipelining_with_interleaving with microbatch_group_size_per_vp_stage).
// Rank r holds chunks c = 0..v−1 as stages c·p + r (loop placement). Virtual microbatches are
// visited group by group: for each group of `g` microbatches, chunk 0 of all of them, then chunk
// 1, ...; backwards walk the same table with chunks reversed. Rank r runs
// w = min(m·v, 2(p−r−1) + (v−1)·g) warm-up forwards, then (forward, backward) pairs, then
// cool-down backwards. Bubble (p−1)(F+B)/v; peak chunk activations min(m·v, w + 1).
#include <algorithm>
#include <utility>

#include "schedule/generator.h"

namespace stagecraft {
namespace {

// Megatron's constraints, as clear errors.
Status CheckInterleavedParams(const GeneratorParams& params, int32_t group) {
  const std::string m = std::to_string(params.microbatches);
  const std::string p = std::to_string(params.pp);
  const std::string g = std::to_string(group);
  if (params.vpp < 2) {
    return Error{"interleaved-1f1b: needs at least 2 chunks per rank, got vpp = " +
                 std::to_string(params.vpp) + " (use '1f1b' for one chunk per rank)"};
  }
  if (group < params.pp) {
    return Error{"interleaved-1f1b: microbatch group size " + g + " is smaller than pp = " + p +
                 " (Megatron requires pp <= group size; use --group-size " + p + " or more)"};
  }
  if (group > params.microbatches) {
    return Error{"interleaved-1f1b: microbatch group size " + g + " exceeds microbatches m = " + m +
                 " (Megatron requires group size <= m; use --microbatches " + g +
                 " or more, or a smaller group size)"};
  }
  const int32_t remainder = params.microbatches % group;
  if (remainder != 0 && remainder < params.pp) {
    return Error{
        "interleaved-1f1b: microbatches m = " + m + " leave a last group of " +
        std::to_string(remainder) + " (m mod group size " + g + "), fewer than pp = " + p +
        " (Megatron requires m mod group size to be 0 or at least pp; try --microbatches " +
        std::to_string(params.microbatches - remainder) + " or " +
        std::to_string(params.microbatches - remainder + group) + ")"};
  }
  return Status::Ok();
}

// Megatron's schedule table: virtual microbatch k → (microbatch, chunk).
std::vector<std::pair<int32_t, int32_t>> ScheduleTable(int32_t microbatches, int32_t chunks,
                                                       int32_t group) {
  std::vector<std::pair<int32_t, int32_t>> table;
  table.reserve(static_cast<size_t>(microbatches) * chunks);
  for (int32_t group_begin = 0; group_begin < microbatches; group_begin += group) {
    const int32_t group_end = std::min(group_begin + group, microbatches);
    for (int32_t chunk = 0; chunk < chunks; ++chunk) {
      for (int32_t microbatch = group_begin; microbatch < group_end; ++microbatch) {
        table.emplace_back(microbatch, chunk);
      }
    }
  }
  return table;
}

}  // namespace

Result<Schedule> GenerateInterleavedOneFOneB(const GeneratorParams& params) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, "interleaved-1f1b"));
  const int32_t group = params.group_size > 0 ? params.group_size : params.pp;
  STAGECRAFT_RETURN_IF_ERROR(CheckInterleavedParams(params, group));
  Schedule schedule = EmptyLoopSchedule(params, "interleaved-1f1b");
  const int32_t p = params.pp;
  const int32_t v = params.vpp;
  const int32_t total = params.microbatches * v;
  const auto table = ScheduleTable(params.microbatches, v, group);
  for (int32_t rank = 0; rank < p; ++rank) {
    auto forward = [&](int32_t k) {
      const auto [microbatch, chunk] = table[k];
      return Action{StageId(chunk * p + rank), ActionKind::kForward, MicrobatchId(microbatch)};
    };
    auto backward = [&](int32_t k) {
      const auto [microbatch, chunk] = table[k];
      return Action{StageId((v - 1 - chunk) * p + rank), ActionKind::kBackward,
                    MicrobatchId(microbatch)};
    };
    const int32_t warmup = std::min(total, 2 * (p - rank - 1) + (v - 1) * group);
    auto& actions = schedule.rank_actions[rank];
    actions.reserve(2 * static_cast<size_t>(total));
    for (int32_t k = 0; k < warmup; ++k) actions.push_back(forward(k));
    for (int32_t k = 0; k < total - warmup; ++k) {
      actions.push_back(forward(warmup + k));
      actions.push_back(backward(k));
    }
    for (int32_t k = total - warmup; k < total; ++k) actions.push_back(backward(k));
  }
  return schedule;
}

}  // namespace stagecraft
