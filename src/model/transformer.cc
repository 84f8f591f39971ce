#include "model/transformer.h"

#include <algorithm>
#include <cmath>

#include "model/transformer_kernels.h"

namespace stagecraft {

const char* RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kSelectiveOp:
      return "selective-op";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

namespace {

struct Parts {
  double linear = 0;  // forward FLOPs of the weight matmuls
  double core = 0;    // forward FLOPs of the attention core (no weights)
};

// Forward FLOPs per token of the attention projections (q, k, v, output) and per (query, key)
// pair of the attention core, and parameters of the attention block.
struct AttentionShape {
  double projection_flops_per_token = 0;
  double core_flops_per_pair = 0;
  double params = 0;
};

AttentionShape Attention(const TransformerSpec& spec) {
  const double h = static_cast<double>(spec.hidden);
  const double a = static_cast<double>(spec.heads);
  AttentionShape shape;
  if (spec.mla()) {
    // MLA: q = W_qb·norm(W_qa·x) (or W_q·x), [c_kv, k_rope] = W_kva·x, [k_nope, v] = W_kvb·c_kv,
    // output W_o over a·v_head_dim.
    const double qk = static_cast<double>(spec.qk_nope_dim + spec.qk_rope_dim);
    const double v = static_cast<double>(spec.v_head_dim);
    const double ql = static_cast<double>(spec.q_lora_rank);
    const double kvl = static_cast<double>(spec.kv_lora_rank);
    const double rope = static_cast<double>(spec.qk_rope_dim);
    const double q_params = ql > 0 ? h * ql + ql + ql * a * qk : h * a * qk;
    const double kv_params =
        h * (kvl + rope) + kvl + kvl * a * (static_cast<double>(spec.qk_nope_dim) + v);
    shape.params = q_params + kv_params + a * v * h;
    shape.projection_flops_per_token = 2 * (shape.params - (ql > 0 ? ql : 0) - kvl);
    shape.core_flops_per_pair = 2 * a * qk + 2 * a * v;
    return shape;
  }
  const double kv = static_cast<double>(spec.kv_heads_or_heads() * spec.head_dim_or_default());
  const double q = static_cast<double>(spec.heads * spec.head_dim_or_default());
  const double bias = spec.bias ? 1.0 : 0.0;
  shape.params = h * (q + 2 * kv) + q * h + bias * ((q + 2 * kv) + h);
  shape.projection_flops_per_token = 2 * (h * (q + 2 * kv) + q * h);
  shape.core_flops_per_pair = 4 * q;
  return shape;
}

// Forward FLOPs per token of the MLP: dense, or the k_e routed and E_s shared experts plus the
// router.
double MlpFlopsPerToken(const TransformerSpec& spec, bool moe_layer) {
  const double h = static_cast<double>(spec.hidden);
  if (moe_layer) {
    const double active = static_cast<double>(spec.experts_per_token + spec.shared_experts);
    return 2 * 3 * h * static_cast<double>(spec.expert_ffn) * active +
           2 * h * static_cast<double>(spec.experts);
  }
  return 2 * h * static_cast<double>(spec.ffn_or_default()) * (spec.swiglu ? 3 : 2);
}

Parts DecoderParts(const TransformerSpec& spec, const TransformerRun& run, bool moe_layer) {
  const double b = static_cast<double>(run.micro_batch);
  const double s = static_cast<double>(run.seq_len);
  const double t = std::max(1, run.tensor_parallel);
  const double cp = std::max(1, run.context_parallel);
  const AttentionShape attention = Attention(spec);
  Parts parts;
  parts.linear =
      b * s * (attention.projection_flops_per_token + MlpFlopsPerToken(spec, moe_layer)) / (t * cp);
  // With context parallelism each rank's s/cp queries meet all s keys.
  parts.core = b * s * s * attention.core_flops_per_pair / (t * cp) * (spec.causal ? 0.5 : 1.0);
  return parts;
}

Time Roofline(double flops, double bytes, const ComputeRate& rate) {
  double seconds = rate.flops_per_s > 0 ? flops / rate.flops_per_s : 0.0;
  if (rate.bytes_per_s > 0) seconds = std::max(seconds, bytes / rate.bytes_per_s);
  return FromSeconds(seconds);
}

}  // namespace

LayerFlops DecoderLayerFlops(const TransformerSpec& spec, const TransformerRun& run,
                             bool moe_layer) {
  const Parts parts = DecoderParts(spec, run, moe_layer);
  LayerFlops flops;
  flops.forward = parts.linear + parts.core;
  flops.input_grad = parts.linear + 2 * parts.core;
  flops.weight_grad = parts.linear;
  flops.model = 3 * parts.linear + 3 * parts.core;
  if (run.recompute == Recompute::kFull) flops.input_grad += flops.forward;
  if (run.recompute == Recompute::kSelective) flops.input_grad += parts.core;
  if (run.recompute == Recompute::kSelectiveOp) flops.input_grad += 0.5 * parts.linear;
  return flops;
}

LayerFlops HeadFlops(const TransformerSpec& spec, const TransformerRun& run) {
  const double logits = 2.0 * static_cast<double>(run.micro_batch) *
                        static_cast<double>(run.seq_len) * static_cast<double>(spec.hidden) *
                        static_cast<double>(spec.vocab) /
                        (std::max(1, run.tensor_parallel) * std::max(1, run.context_parallel));
  return LayerFlops{logits, logits, logits, 3 * logits};
}

double RoutedExpertParams(const TransformerSpec& spec) {
  return static_cast<double>(spec.experts) * 3 * static_cast<double>(spec.hidden) *
         static_cast<double>(spec.expert_ffn);
}

double DecoderAttentionParams(const TransformerSpec& spec) { return Attention(spec).params; }

double DecoderMlpParams(const TransformerSpec& spec, bool moe_layer) {
  const double h = static_cast<double>(spec.hidden);
  if (moe_layer) {
    return RoutedExpertParams(spec) +
           static_cast<double>(spec.shared_experts) * 3 * h * static_cast<double>(spec.expert_ffn) +
           h * static_cast<double>(spec.experts);  // router
  }
  const double f = static_cast<double>(spec.ffn_or_default());
  const double bias = spec.bias ? 1.0 : 0.0;
  return spec.swiglu ? 3 * h * f + bias * (2 * f + h) : 2 * h * f + bias * (f + h);
}

double DecoderLayerParams(const TransformerSpec& spec, bool moe_layer) {
  const double h = static_cast<double>(spec.hidden);
  const double norms = spec.bias ? 4 * h : 2 * h;  // two LayerNorms (scale, bias) or RMSNorms
  return DecoderAttentionParams(spec) + DecoderMlpParams(spec, moe_layer) + norms;
}

double ActiveParams(const TransformerSpec& spec, int64_t seq_len) {
  double inactive = 0;
  if (spec.moe()) {
    const double unused =
        1.0 - static_cast<double>(spec.experts_per_token) / static_cast<double>(spec.experts);
    inactive = (spec.layers - spec.dense_layers) * RoutedExpertParams(spec) * unused;
  }
  return TransformerParams(spec, seq_len) - inactive;
}

double EmbeddingParams(const TransformerSpec& spec, int64_t seq_len) {
  return static_cast<double>(spec.vocab + (spec.learned_positions ? seq_len : 0)) *
         static_cast<double>(spec.hidden);
}

double TransformerParams(const TransformerSpec& spec, int64_t seq_len) {
  const double head = spec.tied_embeddings
                          ? 0.0
                          : static_cast<double>(spec.vocab) * static_cast<double>(spec.hidden);
  double decoders = 0;
  for (int32_t index = 0; index < spec.layers; ++index) {
    decoders += DecoderLayerParams(spec, spec.moe_layer(index));
  }
  return decoders + EmbeddingParams(spec, seq_len) + head +
         (spec.bias ? 2.0 : 1.0) * static_cast<double>(spec.hidden);  // final norm
}

double KorthikantiLayerBytes(double sbh, double t, double score_term, bool sequence_parallel,
                             Recompute recompute) {
  switch (recompute) {
    case Recompute::kFull:
      // Each layer keeps its input, 2sbh (Korthikanti et al. 2022, Table 2). With sequence
      // parallelism that input lies in the sequence-parallel region, split over the t ranks
      // (Megatron checkpoints the layer's sharded input; torchtitan's TP plan likewise).
      return sequence_parallel ? 2 * sbh / t : 2 * sbh;
    case Recompute::kSelective:
      return sequence_parallel ? 34 * sbh / t : sbh * (10 + 24 / t);
    case Recompute::kSelectiveOp:
      // Not in Korthikanti's table: it keeps the attention output and half the matmuls'
      // outputs; our estimate is midway between none and selective.
      return 0.5 *
             (KorthikantiLayerBytes(sbh, t, score_term, sequence_parallel, Recompute::kNone) +
              KorthikantiLayerBytes(sbh, t, score_term, sequence_parallel, Recompute::kSelective));
    case Recompute::kNone:
      break;
  }
  // 10 + 24/t is 34 at t = 1: one form serves both.
  return sequence_parallel ? sbh * (34 / t + score_term) : sbh * (10 + 24 / t + score_term);
}

namespace {

// One decoder layer's bytes stored per microbatch under `recompute` (Korthikanti et al. Table 2).
double LayerBytesUnder(const TransformerSpec& spec, const TransformerRun& run,
                       Recompute recompute) {
  // Context parallelism keeps s/cp tokens per rank (the attention matrix of s/cp queries by s
  // keys: the 5as/h term keeps the full s on the key side).
  const double s = static_cast<double>(run.seq_len) / std::max(1, run.context_parallel);
  const double b = static_cast<double>(run.micro_batch);
  const double h = static_cast<double>(spec.hidden);
  const double a = static_cast<double>(spec.heads);
  const double t = std::max(1, run.tensor_parallel);
  const double keys = static_cast<double>(run.seq_len);
  // FlashAttention-style kernels (causal: true) never store the s x s scores, Korthikanti's
  // 5as/h term, just as selective recomputation drops it.
  const double core = spec.causal ? 0.0 : 5 * a * keys / (h * t);
  return KorthikantiLayerBytes(s * b * h, t, core, run.sequence_parallel, recompute);
}

}  // namespace

double DecoderActivationBytes(const TransformerSpec& spec, const TransformerRun& run) {
  const double bytes = LayerBytesUnder(spec, run, run.recompute);
  // Groups of N layers keep one input each: N layers share one checkpoint (exact where N
  // divides a chunk's layers; Megatron's last, shorter group keeps one too).
  if (run.recompute == Recompute::kFull && run.recompute_group > 1) {
    return bytes / run.recompute_group;
  }
  if (run.recompute != Recompute::kFull || run.recompute_fraction >= 1.0) return bytes;
  // Some layers recompute (2sbh kept), the others keep everything.
  const double kept = LayerBytesUnder(spec, run, Recompute::kNone);
  return run.recompute_fraction * bytes + (1.0 - run.recompute_fraction) * kept;
}

double DecoderRecomputeBytes(const TransformerSpec& spec, const TransformerRun& run) {
  if (run.recompute == Recompute::kNone || run.recompute_fraction <= 0.0) return 0.0;
  // A group's backward rematerialises its N layers at once, beside the one input it kept.
  const double group = run.recompute == Recompute::kFull ? std::max(1, run.recompute_group) : 1;
  return std::max(0.0, group * LayerBytesUnder(spec, run, Recompute::kNone) -
                           LayerBytesUnder(spec, run, run.recompute));
}

namespace {

// The layer list without times: the embedding, the decoders (full attention, dense or MoE MLP,
// activation bytes from DecoderActivationBytes and M_W) and the head.
std::vector<LayerSpec> LayerShapes(const TransformerSpec& spec, const TransformerRun& run) {
  const double t = std::max(1, run.tensor_parallel);
  const double activations = DecoderActivationBytes(spec, run);
  const double recomputed = DecoderRecomputeBytes(spec, run);
  const double tokens_hidden =
      2.0 * static_cast<double>(run.seq_len * run.micro_batch * spec.hidden);
  std::vector<LayerSpec> layers;
  LayerSpec embedding;
  embedding.kind = LayerKind::kEmbedding;
  layers.push_back(embedding);
  for (int32_t index = 0; index < spec.layers; ++index) {
    LayerSpec layer;
    layer.kind = LayerKind::kDecoder;
    layer.attention = AttentionMode::kFull;
    layer.compress_ratio = 1;
    layer.mlp = spec.moe_layer(index) ? MlpKind::kMoe : MlpKind::kDense;
    layer.activation_bytes = std::llround(activations);
    layer.recompute_bytes = std::llround(recomputed);
    // M_W = 32sbh per layer (Qi et al., ICLR 2024, App. G): the linear layers' inputs that W
    // still needs after I, per TP rank.
    layer.weight_grad_bytes = std::llround(16 * tokens_hidden / t);
    layers.push_back(layer);
  }
  LayerSpec head;
  head.kind = LayerKind::kHead;
  layers.push_back(head);
  return layers;
}

void SetTimes(LayerSpec& layer, const LayerKernelTimes& times) {
  layer.forward = FromSeconds(times.forward);
  layer.input_grad = FromSeconds(times.input_grad);
  layer.weight_grad = FromSeconds(times.weight_grad);
}

}  // namespace

std::vector<LayerSpec> TransformerLayers(const TransformerSpec& spec, const TransformerRun& run,
                                         const DeviceRates& device) {
  std::vector<LayerSpec> layers = LayerShapes(spec, run);
  // Every dense decoder costs the same, and so does every MoE one: cost each kind once.
  const LayerKernelTimes dense = DecoderKernelTimes(spec, run, device, false);
  const LayerKernelTimes moe =
      spec.moe() ? DecoderKernelTimes(spec, run, device, true) : LayerKernelTimes();
  for (LayerSpec& layer : layers) {
    switch (layer.kind) {
      case LayerKind::kEmbedding:
        SetTimes(layer, EmbeddingKernelTimes(spec, run, device));
        break;
      case LayerKind::kHead:
        SetTimes(layer, HeadKernelTimes(spec, run, device));
        break;
      case LayerKind::kDecoder:
        SetTimes(layer, layer.mlp == MlpKind::kMoe ? moe : dense);
        break;
    }
  }
  return layers;
}

std::vector<LayerSpec> TransformerLayers(const TransformerSpec& spec, const TransformerRun& run,
                                         const ComputeRate& rate) {
  const double t = std::max(1, run.tensor_parallel);
  const double activations = DecoderActivationBytes(spec, run);
  const double tokens_hidden =
      2.0 * static_cast<double>(run.seq_len * run.micro_batch * spec.hidden);
  std::vector<LayerSpec> layers = LayerShapes(spec, run);
  for (LayerSpec& layer : layers) {
    switch (layer.kind) {
      case LayerKind::kEmbedding:
        // A gather: reads b·s rows of h and writes them; no FLOPs worth counting.
        layer.forward = Roofline(0, 2 * tokens_hidden, rate);
        layer.weight_grad = Roofline(0, 2 * tokens_hidden, rate);
        break;
      case LayerKind::kDecoder: {
        const bool moe = layer.mlp == MlpKind::kMoe;
        const LayerFlops decoder = DecoderLayerFlops(spec, run, moe);
        // Weights read per pass: a MoE layer reads the experts its tokens reach, at most all.
        const double routed = moe ? RoutedExpertParams(spec) : 0.0;
        const double bytes = 2.0 *
                                 (DecoderLayerParams(spec, moe) - routed +
                                  routed / std::max(1, run.expert_parallel)) /
                                 t +
                             activations;
        layer.forward = Roofline(decoder.forward, bytes, rate);
        layer.input_grad = Roofline(decoder.input_grad, bytes, rate);
        layer.weight_grad = Roofline(decoder.weight_grad, bytes, rate);
        break;
      }
      case LayerKind::kHead: {
        const LayerFlops logits = HeadFlops(spec, run);
        const double head_bytes = 2.0 * static_cast<double>(spec.vocab * spec.hidden) / t;
        layer.forward = Roofline(logits.forward, head_bytes, rate);
        layer.input_grad = Roofline(logits.input_grad, head_bytes, rate);
        layer.weight_grad = Roofline(logits.weight_grad, head_bytes, rate);
        break;
      }
    }
  }
  return layers;
}

}  // namespace stagecraft
