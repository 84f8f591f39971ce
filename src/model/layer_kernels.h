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

// REQUIRES: seq_len splits into the context shards (LayerScoringFlops), expert_parallel >= 1.
LayerKernelTimes Csa2LayerKernelTimes(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                                      int32_t micro_batch_size, int32_t expert_parallel,
                                      const ContextShards& context, const DeviceRates& device);

}  // namespace stagecraft
