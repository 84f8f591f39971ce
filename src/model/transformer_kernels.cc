#include "model/transformer_kernels.h"

#include <algorithm>

namespace stagecraft {
namespace {

// BF16 activations: 2 bytes an element.
constexpr double kBf16 = 2.0;
// FlashAttention's key block (and query tile) for head dim 128 on Ampere and Hopper.
constexpr double kAttentionBlock = 128;

// Tokens on this rank, and those the replicated (not tensor-split) kernels see: T/t with
// sequence parallelism, else T.
double Tokens(const TransformerRun& run) {
  return static_cast<double>(run.seq_len) * static_cast<double>(run.micro_batch) /
         std::max(1, run.context_parallel);
}
double ReplicatedTokens(const TransformerRun& run) {
  return Tokens(run) / (run.sequence_parallel ? std::max(1, run.tensor_parallel) : 1);
}

// A LayerNorm (GPT: one native kernel either way) or RMSNorm over `tokens` rows of h: read and
// write them; an eager RMSNorm (Llama's reference form) upcasts to fp32, squares, averages,
// scales and casts back: about 36 bytes an element in 6 kernels.
void AddNorm(const TransformerSpec& spec, const TransformerRun& run, double tokens,
             KernelSum& acc) {
  const double elements = tokens * static_cast<double>(spec.hidden);
  if (run.fused_kernels || spec.bias) {
    acc.Elementwise(elements * kBf16 * 2);
  } else {
    acc.Elementwise(elements * 36, 6);
  }
}

void AddAttentionLinears(const TransformerSpec& spec, double tokens, double t, KernelSum& acc) {
  const double h = static_cast<double>(spec.hidden);
  const double a = static_cast<double>(spec.heads);
  if (spec.mla()) {
    const double qk = static_cast<double>(spec.qk_nope_dim + spec.qk_rope_dim);
    const double v = static_cast<double>(spec.v_head_dim);
    const double ql = static_cast<double>(spec.q_lora_rank);
    const double kvl = static_cast<double>(spec.kv_lora_rank);
    if (ql > 0) {
      acc.Linear(tokens, ql, h);
      acc.Linear(tokens, a * qk / t, ql);
    } else {
      acc.Linear(tokens, a * qk / t, h);
    }
    acc.Linear(tokens, kvl + static_cast<double>(spec.qk_rope_dim), h);
    acc.Linear(tokens, a * (static_cast<double>(spec.qk_nope_dim) + v) / t, kvl);
    acc.Linear(tokens, h, a * v / t);
    return;
  }
  const double d = static_cast<double>(spec.head_dim_or_default());
  const double q = a * d;
  const double kv = static_cast<double>(spec.kv_heads_or_heads()) * d;
  acc.Linear(tokens, (q + 2 * kv) / t, h);
  acc.Linear(tokens, h, q / t);
}

// Causal attention under context parallelism as PyTorch's context_parallel runs it
// (torch/distributed/tensor/experimental/_attention.py, _templated_ring_attention and its
// backward, late 2024; doc/fidelity.md). With the head-tail (round-robin) load balance each rank
// holds Q = s/cp queries and launches one attention kernel per ring step: step 0 causal over its
// own Q x Q block, steps 1..cp-1 non-causal over Q x Q/2 (half the keys, or half the queries);
// the FLOPs add up to the balanced causal total. K and V reach it expanded to the query heads
// (torchtitan's Llama calls repeat_kv before SDPA), are made contiguous (a copy) and are
// concatenated into the buffer to rotate before every step but the last (4 bytes an element:
// read and write bf16). After every step the partial outputs are merged with their log-sum-exps
// in fp32 (_SDPAMerger, eager ops): per output element 6 bytes for the first block's cast, 38 a
// later step (the block's cast 6, out - block 12, the sigmoid's scaling 8, the update 12) and 6
// for the cast back. The backward accumulates in fp32: per dQ element 4 (zeros), 10 a step
// (+= a bf16 gradient) and 6 (cast back); per dK or dV element 4 + 10 at step 0, 5 (+= into
// half of the buffer) + 8 (concatenated back) at a later step, 8 a step (the fp32 buffer
// concatenated for the rotation) and 6 (cast back). The rank that merges every step over its
// whole output (rank cp - 1) sets the pace. The passes over the b x heads x Q log-sum-exps count
// as kernels only (their bytes are under 2% of the outputs').
void AddRingAttention(const TransformerRun& run, double heads, double queries, double qk_dim,
                      double v_dim, KernelSum& acc) {
  const double cp = std::max(1, run.context_parallel);
  const double b = static_cast<double>(run.micro_batch);
  const double steps = cp - 1;
  const double unit = 2 * b * heads * queries * queries * (qk_dim + v_dim) * 0.5;
  // Step 0 is causal over Q keys, the later steps attend Q/2 keys (or Q/2 queries to Q keys):
  // a query tile meets Q/256 key blocks either way on average.
  for (int step = 0; step < run.context_parallel; ++step) {
    acc.FusedAttention(unit, queries / (2 * kAttentionBlock));
  }
  const DeviceRates& device = acc.device;
  const auto pass = [&device](double bytes) { return MemoryBoundSeconds(device, bytes); };
  const double out = b * heads * queries * v_dim;
  const double kv = b * heads * queries * (qk_dim + v_dim);
  const double dq = b * heads * queries * qk_dim;
  const double copies = (1 + steps) * pass(kv * 4);
  const double merge = pass(out * 6) +
                       steps * (pass(out * 6) + pass(out * 12) + pass(out * 8) + pass(out * 12) +
                                4 * device.kernels.kernel_floor_s) +
                       pass(out * 6);
  acc.times.forward += copies + merge;
  acc.times.attention_core += copies + merge;
  acc.forward_kernels += 3 + 9 * steps;
  const double accumulate = pass(dq * 4) + cp * pass(dq * 10) + pass(dq * 6) + pass(kv * 4) +
                            pass(kv * 10) + steps * (pass(kv * 5) + pass(kv * 8)) +
                            cp * pass(kv * 8) + pass(kv * 6);
  acc.times.input_grad += copies + accumulate;
  acc.input_kernels += 7 + 2 * cp + 3 * steps;
}

// The attention core of one microbatch: fused (FlashAttention, KernelSum::FusedAttention) or,
// for a non-causal spec, Megatron's unfused
// path: QKᵀ and ·V as batched GEMMs over b·a/t heads, a fused scale-mask-softmax and a dropout
// over the b·(a/t)·s_q·s scores (2-byte scores: softmax reads and writes 4 bytes an element,
// dropout 5 with its 1-byte mask; their backward 6 and 5).
void AddAttentionCore(const TransformerSpec& spec, const TransformerRun& run, KernelSum& acc) {
  const double t = std::max(1, run.tensor_parallel);
  const double b = static_cast<double>(run.micro_batch);
  const double keys = static_cast<double>(run.seq_len);
  const double queries = keys / std::max(1, run.context_parallel);
  const double heads = static_cast<double>(spec.heads) / t;
  double qk_dim = static_cast<double>(spec.head_dim_or_default());
  double v_dim = qk_dim;
  if (spec.mla()) {
    qk_dim = static_cast<double>(spec.qk_nope_dim + spec.qk_rope_dim);
    v_dim = static_cast<double>(spec.v_head_dim);
  }
  const DeviceRates& device = acc.device;
  if (spec.causal) {
    const double cp = std::max(1, run.context_parallel);
    if (cp <= 1 || !run.ring_merge) {
      // Causal: a query tile meets keys/256 blocks of 128 keys on average.
      acc.FusedAttention(2 * b * heads * queries * keys * (qk_dim + v_dim) * 0.5,
                         keys / (2 * kAttentionBlock));
    } else {
      AddRingAttention(run, heads, queries, qk_dim, v_dim, acc);
    }
    return;
  }
  const double batch = b * heads;
  const double scores = batch * queries * keys;
  const double forward = GemmSeconds(device, {queries, keys, qk_dim, batch}) +
                         GemmSeconds(device, {queries, v_dim, keys, batch}) +
                         MemoryBoundSeconds(device, 4 * scores) +
                         MemoryBoundSeconds(device, 5 * scores);
  acc.times.forward += forward;
  acc.times.attention_core += forward;
  // Backward: dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q.
  acc.times.input_grad += GemmSeconds(device, {keys, v_dim, queries, batch}) +
                          GemmSeconds(device, {queries, keys, v_dim, batch}) +
                          GemmSeconds(device, {queries, qk_dim, keys, batch}) +
                          GemmSeconds(device, {keys, qk_dim, queries, batch}) +
                          MemoryBoundSeconds(device, 6 * scores) +
                          MemoryBoundSeconds(device, 5 * scores);
  acc.forward_kernels += 4;
  acc.input_kernels += 6;
}

void AddMlp(const TransformerSpec& spec, const TransformerRun& run, bool moe_layer,
            KernelSum& acc) {
  const double t = std::max(1, run.tensor_parallel);
  const double tokens = Tokens(run);
  const double h = static_cast<double>(spec.hidden);
  const double gate = spec.swiglu ? 2.0 : 1.0;
  if (!moe_layer) {
    const double f = static_cast<double>(spec.ffn_or_default());
    acc.Linear(tokens, gate * f / t, h);
    acc.Linear(tokens, h, f / t);
    // GeLU with its bias (read and write f/t), or SwiGLU (read 2f/t, write f/t); eager: the
    // bias add or SiLU apart from the rest, one more pass over f/t.
    const int kernels = run.fused_kernels ? 1 : 2;
    acc.Elementwise(tokens * f / t * kBf16 * ((spec.swiglu ? 3 : 2) + (kernels - 1) * 2), kernels);
    return;
  }
  acc.MixtureOfExperts(tokens, h, static_cast<double>(spec.experts),
                       static_cast<double>(spec.experts_per_token),
                       static_cast<double>(spec.expert_ffn),
                       static_cast<double>(spec.shared_experts), run.expert_parallel, t);
}

}  // namespace

LayerKernelTimes DecoderKernelTimes(const TransformerSpec& spec, const TransformerRun& run,
                                    const DeviceRates& device, bool moe_layer) {
  KernelSum acc{device, run.fp8, {}};
  acc.fp8_recipe = run.fp8_recipe;
  acc.fp8_weights_gathered = run.fp8_weights_gathered;
  acc.fp8_weight_casts = run.fp8_weight_casts;
  acc.attention = spec.attention_kernel;
  const double t = std::max(1, run.tensor_parallel);
  const double tokens = Tokens(run);
  const double replicated = ReplicatedTokens(run);
  const double h = static_cast<double>(spec.hidden);
  AddAttentionLinears(spec, tokens, t, acc);
  AddAttentionCore(spec, run, acc);
  AddMlp(spec, run, moe_layer, acc);
  // Two norms (read and write h), two residual adds (GPT: bias-dropout-add, reading two h and
  // writing h plus a 1-byte mask; Llama: read two, write one).
  for (int norm = 0; norm < 2; ++norm) AddNorm(spec, run, replicated, acc);
  const double add = spec.bias ? 3.5 : 3.0;
  for (int residual = 0; residual < 2; ++residual) acc.Elementwise(replicated * h * kBf16 * add);
  if (!spec.learned_positions && !spec.mla()) {
    // Rotary embedding on q and k: read and write them; eager (torchtitan's complex-number
    // form): an fp32 copy, the product and the cast back, 10 bytes an element in 4 kernels.
    const double d = static_cast<double>(spec.head_dim_or_default());
    const double qk = (static_cast<double>(spec.heads) + spec.kv_heads_or_heads()) * d / t;
    if (run.fused_kernels) {
      acc.Elementwise(tokens * qk * kBf16 * 2);
    } else {
      acc.Elementwise(tokens * qk * 10, 4);
    }
  }
  return AddRecomputation(acc.HostBound(), run.recompute, run.recompute_fraction);
}

LayerKernelTimes AddRecomputation(LayerKernelTimes times, Recompute recompute, double fraction) {
  if (recompute == Recompute::kFull) {
    times.input_grad += fraction * times.forward;
  } else if (recompute == Recompute::kSelective) {
    times.input_grad += times.attention_core;
  } else if (recompute == Recompute::kSelectiveOp) {
    // Every op but the matmuls and the attention kernel, and every second matmul.
    times.input_grad += 0.5 * times.forward_gemm +
                        std::max(0.0, times.forward - times.forward_gemm - times.attention_core);
  }
  return times;
}

LayerKernelTimes HeadKernelTimes(const TransformerSpec& spec, const TransformerRun& run,
                                 const DeviceRates& device) {
  KernelSum acc{device, false, {}};
  const double t = std::max(1, run.tensor_parallel);
  const double tokens = Tokens(run);
  const double h = static_cast<double>(spec.hidden);
  const double vocab = static_cast<double>(spec.vocab) / t;
  AddNorm(spec, run, ReplicatedTokens(run), acc);  // final norm
  acc.OutputAndLoss(tokens, h, vocab, run.cross_entropy);
  return acc.HostBound();
}

LayerKernelTimes EmbeddingKernelTimes(const TransformerSpec& spec, const TransformerRun& run,
                                      const DeviceRates& device) {
  return EmbeddingKernels(device, Tokens(run), static_cast<double>(spec.hidden),
                          static_cast<double>(spec.vocab) / std::max(1, run.tensor_parallel));
}

}  // namespace stagecraft
