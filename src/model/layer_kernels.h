// A CSA2 layer-list layer (DeepSeek-V4.1-Flash: doc/csa2.md) as kernels, costed by
// hardware/kernel_model.h: the attention projections, compressor, indexer projections and the
// MLP (routed experts as a grouped GEMM, balanced routing) as GEMMs; the sparse attention core
// and the indexer scoring at the device's fused-attention rate; the norms and the residual
// streams' mixing as memory-bound kernels. The FLOPs are the ones model/layer_costs.h counts,
// split by kernel. One microbatch on one context-parallel rank (the busiest rank's scoring).
#pragma once

#include "hardware/kernel_model.h"
#include "model/layer_costs.h"
#include "model/transformer_kernels.h"

namespace stagecraft {

// With tensor parallelism (run.tensor_parallel = t) the times of one TP rank: the query
// up-projection and the grouped output projection (column-parallel, by head and output group),
// the output projection (row-parallel), the experts' and the dense MLP's width, the attention
// core (its heads) and the head's vocabulary / t; the query down-projection, the shared KV head,
// the compressor, the indexer (its projections, scoring and top-k) and the router whole on
// every rank; the norms and residual mixing on the rank's s/t tokens with sequence parallelism.
// run.recompute is this layer's (AddRecomputation; selective repeats the attention core and
// the indexer scoring, both fused attention-rate kernels).
// REQUIRES: seq_len splits into the context shards (LayerScoringFlops), run.expert_parallel >= 1,
// t divides what it splits (CheckLayerTensorParallel).
LayerKernelTimes Csa2LayerKernelTimes(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                                      int32_t micro_batch_size, const LayerRun& run,
                                      const DeviceRates& device);

}  // namespace stagecraft
