// The optimizer step's cost: a mixed-precision Adam update of the parameters each rank holds,
// bound by HBM traffic, after the rank's gradient reductions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.h"
#include "io/config.h"
#include "schedule/schedule.h"

namespace stagecraft {

// Bytes of HBM traffic per parameter in a mixed-precision Adam step: read the fp32 master
// weight, gradient, m and v (16), write weight, m and v (12) and the bf16 copy (2).
inline constexpr double kOptimizerBytesPerParam = 30.0;

// The ranks one rank's optimizer state is sharded over: `shards` with Megatron's distributed
// optimizer or ZeRO stage 1 and up, else 1 (each rank updates all of its parameters).
int32_t OptimizerShards(const ParallelSpec& parallel, int32_t shards);

// Each rank's step over its 1/shards of the parameters of the stages it holds (`stage_params`
// per TP rank; the dual placement's mirrored rank holds a stage too): params ·
// kOptimizerBytesPerParam / (HBM bandwidth × memory efficiency). [rank]; zero steps when the
// device's bandwidth is unknown.
std::vector<Time> OptimizerSteps(const ClusterSpec& cluster, const Schedule& schedule,
                                 const std::vector<double>& stage_params, int32_t shards);

}  // namespace stagecraft
