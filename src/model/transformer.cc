#include "model/transformer.h"

#include <algorithm>
#include <cmath>

#include "model/transformer_kernels.h"

namespace stagecraft {

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
  const int64_t positions = !spec.learned_positions  ? 0
                            : spec.position_rows > 0 ? spec.position_rows
                                                     : seq_len;
  return static_cast<double>(spec.vocab + positions) * static_cast<double>(spec.hidden);
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

// Bytes a decoder layer keeps per token, by how tensor parallelism splits them: `replicated`
// (every TP rank holds the token's whole tensor, split over the ranks only with sequence
// parallelism: the norms' inputs and outputs, dropout masks, the block's input), `sharded` (split
// over the ranks: heads, the MLP's width, experts' tokens), `partial` (each rank holds it whole:
// a row-parallel matmul's output before its reduction).
struct KeptPerToken {
  double replicated = 0;
  double sharded = 0;
  double partial = 0;
};

// A matmul's output per token, in the forward's order, for torchtitan's per-op policy.
struct MatmulOutput {
  double width = 0;  // elements per token
  enum Split : uint8_t { kColumn, kRow, kReplicated } split = kColumn;
};

// The layer's matmuls in forward order (torchtitan's llama and deepseek_v3 models: wq, wk, wv,
// wo; w1, w3, w2; MLA's wq_a, wq_b, wkv_a, wkv_b; the router's gate, then the experts').
std::vector<MatmulOutput> MatmulOutputs(const TransformerSpec& spec, bool moe_layer) {
  const double h = static_cast<double>(spec.hidden);
  const double a = static_cast<double>(spec.heads);
  std::vector<MatmulOutput> out;
  if (spec.mla()) {
    const double qk = static_cast<double>(spec.qk_nope_dim + spec.qk_rope_dim);
    if (spec.q_lora_rank > 0) {
      out.push_back({static_cast<double>(spec.q_lora_rank), MatmulOutput::kReplicated});
    }
    out.push_back({a * qk, MatmulOutput::kColumn});
    out.push_back(
        {static_cast<double>(spec.kv_lora_rank + spec.qk_rope_dim), MatmulOutput::kReplicated});
    out.push_back(
        {a * static_cast<double>(spec.qk_nope_dim + spec.v_head_dim), MatmulOutput::kColumn});
  } else {
    const double d = static_cast<double>(spec.head_dim_or_default());
    out.push_back({a * d, MatmulOutput::kColumn});
    out.push_back({static_cast<double>(spec.kv_heads_or_heads()) * d, MatmulOutput::kColumn});
    out.push_back({static_cast<double>(spec.kv_heads_or_heads()) * d, MatmulOutput::kColumn});
  }
  out.push_back({h, MatmulOutput::kRow});
  // A gated MLP's w1, w3 and w2; the routed experts' w2 output goes to the combine (an
  // all-to-all), not a reduce-scatter, so it splits like the experts' tokens. The experts' grouped
  // matmuls take their turns in the policy's count as plain matmuls do (an assumption: which
  // grouped-matmul op the engine's policy lists varies by version).
  const auto gated = [&out, h](double copies, double width, MatmulOutput::Split down) {
    out.push_back({copies * width, MatmulOutput::kColumn});
    out.push_back({copies * width, MatmulOutput::kColumn});
    out.push_back({copies * h, down});
  };
  if (moe_layer) {
    out.push_back({static_cast<double>(spec.experts), MatmulOutput::kReplicated});
    gated(static_cast<double>(spec.experts_per_token), static_cast<double>(spec.expert_ffn),
          MatmulOutput::kColumn);
    if (spec.shared_experts > 0) {
      gated(1.0, static_cast<double>(spec.shared_experts * spec.expert_ffn), MatmulOutput::kRow);
    }
  } else if (spec.swiglu) {
    gated(1.0, static_cast<double>(spec.ffn_or_default()), MatmulOutput::kRow);
  } else {
    out.push_back({static_cast<double>(spec.ffn_or_default()), MatmulOutput::kColumn});
    out.push_back({h, MatmulOutput::kRow});
  }
  return out;
}

// The width of the attention kernel's output (the output projection's input) per token.
double AttentionOutputWidth(const TransformerSpec& spec) {
  return static_cast<double>(spec.heads) *
         static_cast<double>(spec.mla() ? spec.v_head_dim : spec.head_dim_or_default());
}

// Without recomputation: every tensor the layer's backward reads, counted once (bf16 unless
// said). GPT's layer (bias: LayerNorm, biases and dropout) gives Korthikanti's 10 replicated +
// 24 sharded bytes a hidden element: 4 + 4 for the two norms' inputs and outputs, 1 + 1 for the
// dropout masks, 6 for q, k and v, 2 for the attention output, 8 + 8 for GeLU's input and the
// second matmul's input.
KeptPerToken KeptWithoutRecompute(const TransformerSpec& spec, bool moe_layer, bool fused) {
  const double h = static_cast<double>(spec.hidden);
  const double a = static_cast<double>(spec.heads);
  KeptPerToken kept;
  // Each norm keeps its input and its output is the next matmul's input. Eager (torchtitan's
  // RMSNorm without compile: x.float() squared, averaged and multiplied) keeps the fp32 input
  // and the bf16 normalised value before the weight instead of the bf16 input.
  const double norm = fused ? 2 * h + 2 * h : 4 * h + 2 * h + 2 * h;
  kept.replicated += 2 * norm;
  if (spec.bias) kept.replicated += 2 * h;  // the two dropout masks, a byte an element
  if (spec.mla()) {
    // The latents (replicated under torchtitan's and Megatron's TP plans) and their norms'
    // outputs; q and k at a·(nope + rope), v at a·v_head_dim.
    const double ql = static_cast<double>(spec.q_lora_rank);
    const double kvl = static_cast<double>(spec.kv_lora_rank);
    kept.replicated += 2 * (ql > 0 ? 2 * ql : 0.0) + 2 * (kvl + spec.qk_rope_dim) + 2 * kvl;
    kept.sharded += 2 * 2 * a * static_cast<double>(spec.qk_nope_dim + spec.qk_rope_dim) +
                    2 * AttentionOutputWidth(spec);  // q, k; v
  } else {
    const double d = static_cast<double>(spec.head_dim_or_default());
    kept.sharded += 2 * a * d + 2 * 2 * static_cast<double>(spec.kv_heads_or_heads()) * d;
  }
  kept.sharded += 2 * AttentionOutputWidth(spec);  // the kernel's output
  // A gated MLP keeps the gate and up projections' outputs (SwiGLU's input) and the product
  // (the down projection's input); eager PyTorch also keeps silu's output for the product's
  // backward. GeLU keeps its input and output.
  const double gated = fused ? 6.0 : 8.0;
  if (moe_layer) {
    // The router's probabilities (fp32), and per routed copy of a token its permuted input,
    // the SwiGLU tensors and the expert's output (the combine's weighting reads it); the
    // shared experts as one gated MLP of their joint width.
    const double k = static_cast<double>(spec.experts_per_token);
    const double fe = static_cast<double>(spec.expert_ffn);
    kept.replicated += 4 * static_cast<double>(spec.experts);
    kept.sharded += k * (2 * h + gated * fe + 2 * h);
    kept.sharded += gated * static_cast<double>(spec.shared_experts) * fe;
  } else if (spec.swiglu) {
    kept.sharded += gated * static_cast<double>(spec.ffn_or_default());
  } else {
    kept.sharded += 4 * static_cast<double>(spec.ffn_or_default());
  }
  return kept;
}

// torchtitan's per-op policy (`_save_list`: aten.mm except every second one counted within the
// block, the SDPA kernels, the functional reduce-scatter) plus the checkpoint's input.
KeptPerToken KeptBySelectiveOp(const TransformerSpec& spec, bool moe_layer, double t) {
  const double h = static_cast<double>(spec.hidden);
  KeptPerToken kept;
  kept.replicated += 2 * h;  // the block's input
  int32_t count = 0;
  for (const MatmulOutput& mm : MatmulOutputs(spec, moe_layer)) {
    ++count;
    // Under TP a row-parallel matmul's output is reduce-scattered; the scattered output is
    // saved whatever the matmul's count.
    if (mm.split == MatmulOutput::kRow && t > 1) kept.replicated += 2 * h;
    if (count % 2 == 0) continue;
    switch (mm.split) {
      case MatmulOutput::kColumn:
        kept.sharded += 2 * mm.width;
        break;
      case MatmulOutput::kRow:
        kept.partial += 2 * mm.width;
        break;
      case MatmulOutput::kReplicated:
        kept.replicated += 2 * mm.width;
        break;
    }
  }
  kept.sharded += 2 * AttentionOutputWidth(spec);  // SDPA's output
  return kept;
}

// One decoder layer's bytes stored per microbatch under `recompute`.
double LayerBytesUnder(const TransformerSpec& spec, const TransformerRun& run, Recompute recompute,
                       bool moe_layer) {
  // Context parallelism keeps s/cp tokens per rank (the attention matrix of s/cp queries by s
  // keys: the score term keeps the full s on the key side).
  const double tokens = static_cast<double>(run.seq_len) / std::max(1, run.context_parallel) *
                        static_cast<double>(run.micro_batch);
  const double h = static_cast<double>(spec.hidden);
  const double t = std::max(1, run.tensor_parallel);
  const double replicated_share = run.sequence_parallel ? 1.0 / t : 1.0;
  KeptPerToken kept;
  switch (recompute) {
    case Recompute::kFull:
      // Each layer keeps its input, 2sbh (Korthikanti et al. 2022, Table 2). With sequence
      // parallelism that input lies in the sequence-parallel region, split over the t ranks
      // (Megatron checkpoints the layer's sharded input; torchtitan's TP plan likewise).
      kept.replicated = 2 * h;
      break;
    case Recompute::kSelectiveOp:
      kept = KeptBySelectiveOp(spec, moe_layer, t);
      break;
    case Recompute::kSelective:
    case Recompute::kNone:
      kept = KeptWithoutRecompute(spec, moe_layer, run.fused_kernels);
      // An unfused core (causal: false, 2021-era Megatron) also keeps the s x s scores:
      // softmax output and dropout output (2 bytes each) and the dropout mask, 5 bytes a score
      // and head, a·s keys a token; selective recomputation drops them. FlashAttention-style
      // kernels keep none.
      if (!spec.causal && recompute == Recompute::kNone) {
        kept.sharded += 5 * static_cast<double>(spec.heads) * static_cast<double>(run.seq_len);
      }
      break;
  }
  return tokens * (kept.replicated * replicated_share + kept.sharded / t + kept.partial);
}

}  // namespace

HeadLoss HeadLossBytes(const TransformerSpec& spec, const TransformerRun& run) {
  const double logits = static_cast<double>(run.seq_len) / std::max(1, run.context_parallel) *
                        static_cast<double>(run.micro_batch) * static_cast<double>(spec.vocab) /
                        std::max(1, run.tensor_parallel);
  switch (run.cross_entropy) {
    case CrossEntropyFusion::kTe:
      return HeadLoss{2 * logits, 0.0};
    case CrossEntropyFusion::kTorchCompiled:
      return HeadLoss{2 * logits, 2 * logits};
    case CrossEntropyFusion::kTorch:
      // Under TP torchtitan's loss_parallel runs DTensor's handlers
      // (torch/distributed/tensor/parallel/loss.py): the backward makes the zeros, exp(x), their
      // sum and its product with the gradient in eager ops, 12 bytes besides the 4 held.
      return HeadLoss{4 * logits, (run.tensor_parallel > 1 ? 12 : 8) * logits};
    case CrossEntropyFusion::kNone:
    case CrossEntropyFusion::kNative:
      break;
  }
  return HeadLoss{4 * logits, 2 * logits};
}

double DecoderActivationBytes(const TransformerSpec& spec, const TransformerRun& run,
                              bool moe_layer) {
  const double bytes = LayerBytesUnder(spec, run, run.recompute, moe_layer);
  // Groups of N layers keep one input each: N layers share one checkpoint (exact where N
  // divides a chunk's layers; Megatron's last, shorter group keeps one too).
  if (run.recompute == Recompute::kFull && run.recompute_group > 1) {
    return bytes / run.recompute_group;
  }
  if (run.recompute != Recompute::kFull || run.recompute_fraction >= 1.0) return bytes;
  // Some layers recompute (2sbh kept), the others keep everything.
  const double kept = LayerBytesUnder(spec, run, Recompute::kNone, moe_layer);
  return run.recompute_fraction * bytes + (1.0 - run.recompute_fraction) * kept;
}

double DecoderRecomputeBytes(const TransformerSpec& spec, const TransformerRun& run,
                             bool moe_layer) {
  if (run.recompute == Recompute::kNone || run.recompute_fraction <= 0.0) return 0.0;
  // A group's backward rematerialises its N layers at once, beside the one input it kept.
  const double group = run.recompute == Recompute::kFull ? std::max(1, run.recompute_group) : 1;
  return std::max(0.0, group * LayerBytesUnder(spec, run, Recompute::kNone, moe_layer) -
                           LayerBytesUnder(spec, run, run.recompute, moe_layer));
}

namespace {

// The layer list without times: the embedding, the decoders (full attention, dense or MoE MLP,
// activation bytes from DecoderActivationBytes and M_W) and the head.
std::vector<LayerSpec> LayerShapes(const TransformerSpec& spec, const TransformerRun& run) {
  const double t = std::max(1, run.tensor_parallel);
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
    const bool moe = spec.moe_layer(index);
    layer.mlp = moe ? MlpKind::kMoe : MlpKind::kDense;
    layer.activation_bytes = std::llround(DecoderActivationBytes(spec, run, moe));
    layer.recompute_bytes = std::llround(DecoderRecomputeBytes(spec, run, moe));
    // M_W = 32sbh per layer (Qi et al., ICLR 2024, App. G): the linear layers' inputs that W
    // still needs after I, per TP rank.
    layer.weight_grad_bytes = std::llround(16 * tokens_hidden / t);
    layers.push_back(layer);
  }
  LayerSpec head;
  head.kind = LayerKind::kHead;
  // The loss's fp32 (or bf16) copy of the logits from the forward to the head's backward, and
  // the gradients its backward allocates besides (HeadLossBytes).
  const HeadLoss loss = HeadLossBytes(spec, run);
  head.activation_bytes = std::llround(loss.held);
  head.recompute_bytes = std::llround(loss.working);
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
