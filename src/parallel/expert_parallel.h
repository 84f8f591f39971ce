// Expert parallelism's cost: a MoE layer's all-to-all dispatch of its tokens to the ranks
// holding their experts and the combine of the results, among the ep ranks, for transformer
// models and CSA2 layer lists. The routed experts' parameters and gradients are sharded over ep
// (data_parallel.h reduces them over the ranks / ep that hold the same experts).
#pragma once

#include <cstdint>

#include "core/time.h"
#include "io/config.h"
#include "model/transformer.h"

namespace stagecraft {

// A MoE layer's all-to-alls one way: the dispatch and the combine among the `ep` ranks,
// `per_node` of them in a node. Nothing for ep = 1.
Time ExpertAllToAlls(const ClusterSpec& cluster, int32_t ep, int32_t per_node,
                     double dispatch_bytes, double combine_bytes);

// A transformer's MoE layer, forward, per microbatch: the dispatch carries k_e·h per token
// (bf16; fp8 with precision fp8, as DeepSeek-V3) and the combine k_e·h bf16, for one CP and TP
// rank's s·b/(cp·t) tokens, among the ep ranks, which sit t·cp apart.
Time TransformerExpertAllToAlls(const Config& config, const TransformerRun& run);

// A CSA2 layer list's MoE layer, forward, per microbatch: the dispatch carries k_e·d bytes per
// token (FP8) and the combine k_e·d·2 (BF16) (csa2.md), for one CP and TP rank's s·b/(cp·t)
// tokens; the ep ranks sit t·cp apart.
Time LayerListExpertAllToAlls(const Config& config);

// A MoE layer's all-to-alls in its backward: the forward's again, and once more when the layer
// recomputes its forward.
inline Time ExpertBackward(Time forward, bool recomputes) { return forward * (recomputes ? 2 : 1); }

}  // namespace stagecraft
