#include "model/layer_kernels.h"

#include <algorithm>

namespace stagecraft {
namespace {

constexpr double kBf16 = 2.0;

// Engram (csa2.md): 24 rows of 256 values looked up per token, projected into the hc + 1 streams.
constexpr double kEngramValuesPerToken = 24.0 * 256.0;

// The attention block's GEMMs on `tokens` tokens with `t`-way tensor parallelism (t = 1: the
// whole layer's).
void AddAttentionGemms(const LayerSpec& layer, const Csa2Dims& dims, double tokens, double t,
                       KernelSum& k) {
  const double d = dims.hidden;
  const double heads_width = static_cast<double>(dims.heads) * dims.head_dim;
  const double groups = dims.output_groups;
  k.Linear(tokens, dims.query_latent, d);                                     // query down
  k.Linear(tokens, heads_width / t, dims.query_latent);                       // query up
  k.Linear(tokens, dims.head_dim, d);                                         // shared KV head
  k.Linear(tokens, dims.output_group_dim, heads_width / groups, groups / t);  // grouped output
  k.Linear(tokens, d, groups * dims.output_group_dim / t);                    // output
  if (layer.attention == AttentionMode::kSwaOnly || layer.attention == AttentionMode::kReuse) {
    return;
  }
  const double indexer_width = static_cast<double>(dims.indexer_heads) * dims.indexer_key_dim;
  k.Linear(tokens, indexer_width, dims.query_latent);  // indexer query
  k.Linear(tokens, dims.indexer_heads, d);             // indexer head weights
  if (layer.attention != AttentionMode::kFull) return;
  const int32_t m = std::max(layer.compress_ratio, 1);
  k.Linear(tokens, static_cast<double>(dims.head_dim) * (m > 1 ? 2 : 1), d);  // compressor
  k.Linear(tokens / m, dims.indexer_key_dim, dims.head_dim);                  // indexer keys
}

void AddMlp(const LayerSpec& layer, const Csa2Dims& dims, double tokens, int32_t expert_parallel,
            double t, KernelSum& k) {
  const double d = dims.hidden;
  const double f = dims.expert_width;
  if (layer.mlp == MlpKind::kDense) {
    const double width = (dims.dense_width > 0 ? dims.dense_width : 4.0 * d) / t;
    k.Linear(tokens, 2 * width, d);
    k.Linear(tokens, d, width);
    k.Elementwise(tokens * width * kBf16 * 3);  // SwiGLU
    return;
  }
  k.MixtureOfExperts(tokens, d, dims.routed_experts, dims.experts_per_token, f, dims.shared_experts,
                     expert_parallel, t);
}

}  // namespace

LayerKernelTimes Csa2LayerKernelTimes(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                                      int32_t micro_batch_size, const LayerRun& run,
                                      const DeviceRates& device) {
  KernelSum k{device, false, {}};
  const ContextShards& context = run.context;
  const int32_t ranks = std::max(context.ranks, 1);
  const int32_t expert_parallel = std::max(1, run.expert_parallel);
  const double t = std::max(1, run.tensor_parallel);
  const double whole_tokens = static_cast<double>(seq_len) * micro_batch_size;
  const double tokens = whole_tokens / ranks;
  // The tokens the kernels outside the tensor-parallel regions see: s/t with sequence
  // parallelism, else all of the rank's.
  const double replicated_tokens = tokens / (run.sequence_parallel ? t : 1.0);
  const double d = dims.hidden;
  switch (layer.kind) {
    case LayerKind::kEmbedding:
      return EmbeddingKernels(device, tokens, d, dims.vocab / t);
    case LayerKind::kHead:
      k.Elementwise(replicated_tokens * d * kBf16 * 2);  // final norm
      k.OutputAndLoss(tokens, d, dims.vocab / t);
      return k.HostBound();
    case LayerKind::kDecoder:
      break;
  }
  // The GEMMs over the whole microbatch first, to split the layer's FLOPs: what is not a GEMM
  // nor the indexer scoring is the attention core (window and compressed entries).
  KernelSum whole{device, false, {}};
  AddAttentionGemms(layer, dims, whole_tokens, 1.0, whole);
  AddMlp(layer, dims, whole_tokens, expert_parallel, 1.0, whole);
  if (layer.engram) whole.Linear(whole_tokens, d * (dims.hc_streams + 1), kEngramValuesPerToken);
  const double all = LayerForwardFlops(layer, dims, seq_len, micro_batch_size);
  const double scoring = LayerScoringFlops(layer, dims, seq_len, micro_batch_size);
  const double core = std::max(0.0, all - whole.gemm_flops - scoring);
  AddAttentionGemms(layer, dims, tokens, t, k);
  AddMlp(layer, dims, tokens, expert_parallel, t, k);
  if (layer.engram) k.Linear(tokens, d * (dims.hc_streams + 1), kEngramValuesPerToken);
  k.FusedAttention(core / ranks / t);  // the heads split over the TP ranks
  // The indexer (scoring and top-k) whole on every TP rank: its top-k serves every head.
  k.FusedAttention(ranks > 1 ? LayerScoringFlops(layer, dims, seq_len, micro_batch_size, context)
                             : scoring);
  // Two RMSNorms (read and write d) and the mHC mixing of the hc residual streams around the
  // attention and the MLP (read and write hc·d, twice): our estimate of the layer's
  // memory-bound traffic (csa2.md leaves these out of the FLOPs).
  k.Elementwise(replicated_tokens * d * kBf16 * (2 * 2 + 2 * 2 * dims.hc_streams));
  return AddRecomputation(k.HostBound(), run.recompute);
}

}  // namespace stagecraft
