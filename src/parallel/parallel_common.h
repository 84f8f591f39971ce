// What the parallel cost model's per-dimension files share (internal to src/parallel/): the
// ring helpers, the size of a reduced gradient, a transformer run's settings from the config,
// and which ranks hold each stage's parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/time.h"
#include "io/config.h"
#include "model/transformer.h"
#include "schedule/schedule.h"

namespace stagecraft {

// Gradients are reduced in fp32 (Megatron's default main_grads).
inline constexpr double kGradientBytes = 4.0;

// A ring all-reduce of `bytes` over `ranks`, `ranks_per_node` of them in a node (RingTime).
Time RingAllReduce(const ClusterSpec& cluster, int32_t ranks, int32_t ranks_per_node, double bytes);
// A ring all-gather (or reduce-scatter: the same time) of `bytes` in all over `ranks`.
Time RingGather(const ClusterSpec& cluster, int32_t ranks, int32_t ranks_per_node, double bytes);

// How a transformer model's layers run on one rank (model/transformer.h): the parallel
// degrees, recomputation (with Megatron's recompute_num_layers) and the kernels' options.
TransformerRun TransformerRunOf(const Config& config);
// The cluster's device rates with the host time per kernel of the engine that runs the step
// (parallel.engine; model/engine_host.h): what every training layer is costed with.
DeviceRates TrainingRates(const Config& config);

// The ranks holding a stage's parameters: its rank (`ranks` is StageRanks(schedule)), and with
// the dual placement (DualPipe's two model copies) the mirrored rank too. None for a stage no
// rank runs.
std::vector<int32_t> HoldingRanks(const Schedule& schedule, const std::vector<int32_t>& ranks,
                                  size_t stage);
// The parameters each rank holds: those of the stages it runs (HoldingRanks). [rank]
std::vector<double> RankParams(const Schedule& schedule, const std::vector<double>& stage_params);

}  // namespace stagecraft
