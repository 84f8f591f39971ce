// Serving a CSA2 layer list (DeepSeek-V4.1-Flash; doc/serving.md "CSA2 layer lists"): the
// replica's weights, KV cache and kernels from the layer list's own per-layer formulas
// (model/layer_costs.h) and storage formats (model/kv_cache.h), in the ReplicaModel that the
// request simulator and serve-plan use for transformers.
#pragma once

#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "model/model_spec.h"
#include "serve/step_cost.h"

namespace stagecraft {

// One replica of a layer list, tp x pp (x ep):
// - stages: pp splits the decoders evenly, the embedding on the first stage, the head on the
//   last; the KV capacity is the stage that holds the fewest requests of the config's sequence
//   length (its weights and bytes per token are the ones reported);
// - tensor parallelism: a rank holds LayerReplicatedParams whole and the rest / tp (the routed
//   experts / ep under EP); the query heads split, the shared KV head (K = V), the compressed KV,
//   the indexer keys and the windows replicated on every rank, as MLA's latent is;
// - KV per GPU: compressed KV + indexer keys of the stage's full layers per token of context
//   (Csa2KvCachePerToken's formats), plus every decoder's FP8 window of n_win tokens per request;
// - kernels (iteration_kernels.h): per class of identical decoders (attention mode, ratio, MLP,
//   Engram) the training side's GEMM shapes (model/layer_kernels.cc) on one TP rank, split or
//   replicated as above, the routed experts as a grouped GEMM, the norms, mHC mixing and cache
//   writes as memory-bound kernels; the attention core / tp and the indexer scoring whole per
//   rank are costed per iteration from AddSequence's sums (IterationSeconds);
// - a stage cut carries the hc residual streams (hc·d per token).
// REQUIRES: model.layers is non-empty with its sources resolved (the config reader's).
Result<ReplicaModel> BuildCsa2ReplicaModel(const ModelSpec& model, const ClusterSpec& cluster,
                                           const ServeShape& shape, const EngineOptions& engine);

// Whether a config's model has routed experts (a transformer's, or any MoE decoder of a layer
// list): serve-plan adds the EP axis for these.
bool ServedModelHasExperts(const ModelSpec& model);

}  // namespace stagecraft
