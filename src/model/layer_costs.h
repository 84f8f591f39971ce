// Per-layer costs derived from dimensions with a simple FLOPs / peak model (a later issue
// refines it): time = FLOPs / (peak × efficiency). Formulas: the project's doc/csa2.md,
// "Per-layer cost formulas" (DeepSeek-V4.1-Flash report §2.3–2.4).
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "hardware/kernel_model.h"
#include "model/model_spec.h"

namespace stagecraft {

// Forward FLOPs of one layer for one microbatch of `seq_len` × `micro_batch_size` tokens:
// attention projections 2·P per token, attention core 4·n_h·c·(min(t, n_win) + min(k, t/m))
// summed over positions t, the compressor / indexer terms of full and reindex layers (scoring
// 2·n_I·c_I per visible compressed entry, or per candidate-pool entry for reindex), MoE
// 2·3·d·f·(k_e + E_s) + 2·d·E per token (dense MLP 2·3·d·f), embedding 0, head 2·V·d per token.
double LayerForwardFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                         int32_t micro_batch_size);

// How a sequence is split over context-parallel ranks (csa2.md, "Context parallelism (V4 /
// V4.1)"): `ranks` shards holding whole compression groups, either contiguous (s/cp tokens each)
// or 2·ranks zig-zag chunks of s/(2·cp) tokens, rank k holding chunks k and 2·ranks − 1 − k.
struct ContextShards {
  int32_t ranks = 1;   // cp; 1 = the whole sequence on one rank
  bool zigzag = true;  // false: contiguous shards
};

// The indexer scoring inside LayerForwardFlops — full: 2·n_I·c_I per (query, visible compressed
// entry), a query at position t seeing ⌊t/m⌋ entries; reindex: the same capped at the candidate
// pool; 0 for other layers — on the busiest rank of `shards`: the largest sum over one rank's
// positions, times micro_batch_size. With one rank, the whole layer's scoring.
// REQUIRES: seq_len splits into whole chunks (seq_len % (ranks or 2·ranks) == 0).
double LayerScoringFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                         int32_t micro_batch_size, const ContextShards& shards = {});

// The part of LayerForwardFlops that needs no compressed entry gathered from other
// context-parallel ranks: the attention projections, the sliding-window attention, the MLP and
// the Engram projection (what a CP all-gather of compressed KV and indexer keys can hide
// behind). For the whole microbatch; one CP rank does 1/cp of it.
double LayerLocalFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                       int32_t micro_batch_size);

// How a layer list runs on one rank: the parallel splits of its layers and the recomputation.
struct LayerRun {
  int32_t expert_parallel = 1;  // a rank holds 1/ep of the routed experts
  ContextShards context;        // cp ranks, each holding its shard of the sequence
  // Tensor parallelism (Megatron's column / row split, doc/csa2.md "Tensor parallelism"): the
  // query up-projection, the attention core and the output projections by head (output
  // group), the experts' and the dense MLP's width, the head's vocabulary; the query
  // down-projection, the shared KV head, the compressor and the indexer replicated.
  int32_t tensor_parallel = 1;
  bool sequence_parallel = false;  // norms and residual mixing on s/t tokens; activations / t
  Recompute recompute = Recompute::kNone;
  // With kFull: which layers recompute ([layer index]; Megatron's block method gives the first
  // recompute_num_layers decoders of each pipeline chunk); empty = every decoder.
  std::vector<bool> recomputed;

  // The recomputation of layers[index]: `recompute`, or kNone for a layer `recomputed` leaves
  // out (and for the embedding and the head, which Megatron never recomputes).
  Recompute RecomputeOf(const LayerSpec& layer, size_t index) const;
};

// Fills every zero cost of model.layers: forward = FLOPs / flops_per_second; backward 2× forward
// split evenly into input_grad and weight_grad (csa2.md: "Backward ≈ 2 × forward for trainable
// matmuls (split I ≈ W)"), so each zero half becomes the layer's forward time (given or derived);
// activation_bytes from LayerActivationBytes. Given costs are kept as they are (they include
// whatever recomputation and splitting the measured run had). With bytes_per_second > 0 (HBM
// bandwidth × efficiency) a derived forward is max(FLOPs / flops_per_second, bytes /
// bytes_per_second), the bytes being the weights the microbatch reads (bf16, this rank's
// share; a MoE layer reads the min(E, tokens·k_e) experts its tokens reach, of which a device
// holds 1/expert_parallel) plus its activations written. REQUIRES: flops_per_second > 0 (peak ×
// efficiency), run.expert_parallel >= 1, run.tensor_parallel >= 1 (CheckLayerTensorParallel).
// With context parallelism (context.ranks = cp > 1) the derived costs are one CP rank's: the CP
// ranks run in step, so a layer takes its busiest rank's time — everything but the indexer
// scoring / cp, plus the scoring of the busiest rank (LayerScoringFlops); the bytes bound, the
// activations and the expert reach count the rank's s·b/cp tokens (each rank still reads every
// weight). Given costs are taken as one CP rank's. REQUIRES: seq_len splits into the shards.
// With tensor parallelism the split FLOPs are / t, the replicated ones (LayerReplicatedFlops)
// whole. Recomputation adds to a derived input_grad the layer's forward (full) or its attention
// core with the indexer scoring (selective; selective-op as transformer_kernels.h).
// With `device` (the kernel model, hardware/kernel_model.h) a layer with no forward given gets
// all three times from its kernels (model/layer_kernels.h) instead of the FLOPs rule above.
void EstimateLayerCosts(ModelSpec& model, double flops_per_second, double bytes_per_second = 0,
                        const LayerRun& run = {}, const DeviceRates* device = nullptr);

// Bytes one layer stores from F until its backward for one microbatch on one rank (s·b/cp
// tokens): a decoder per Korthikanti et al. 2023 Table 2 with the hidden d and no attention-score
// term (CSA2's attention and indexer kernels are fused: KorthikantiLayerBytes with score 0) —
// 34·d per token, sbd·(10 + 24/t) with tensor parallelism, 34·sbd/t with sequence parallelism;
// selective recomputation keeps the same (the term it frees is the score term); full keeps the
// layer's input, the hc residual streams (2·hc·d per token, / t with sequence parallelism).
// Embedding 0; head 4·d (/ t with sequence parallelism) + 4·V/t (fp32 logits of this rank's
// vocabulary share; ibid. §4.3).
int64_t LayerActivationBytes(const LayerSpec& layer, const Csa2Dims& dims, int64_t tokens,
                             const LayerRun& run, Recompute recompute);

// The forward FLOPs of LayerForwardFlops that tensor parallelism does not split (every TP rank
// does them whole): the query down-projection, the shared KV head, a full layer's compressor
// and indexer keys, the indexer query and head weights with the scoring (full, reindex), the
// router and the Engram projection. Whole microbatch.
double LayerReplicatedFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                            int32_t micro_batch_size);
// The attention core of LayerForwardFlops without the indexer: 4·n_h·c per (query, key) over the
// window and the top-k compressed entries. Whole microbatch, all heads.
double LayerAttentionCoreFlops(const LayerSpec& layer, const Csa2Dims& dims, int32_t seq_len,
                               int32_t micro_batch_size);

// The attention work of one decoder for the query positions begin+1 .. end (1-based) of one
// sequence: a serving iteration's prefill chunk (end - begin tokens) or decode step (one token).
// Pair counts sum over the span's queries (LayerForwardFlops's terms); the *_entries read at the
// span's last position are what its kernels read from the cache.
struct AttentionSpan {
  double window_pairs = 0;      // Σ min(t, n_win): (query, window key) pairs
  double compressed_pairs = 0;  // Σ min(k, ⌊t/m⌋): (query, top-k compressed entry) pairs
  double scored_pairs = 0;  // Σ the entries the indexer scores (full ⌊t/m⌋; reindex ≤ pool)
  double window_entries = 0;    // min(end, n_win): the window's cached tokens
  double visible_entries = 0;   // ⌊end/m⌋: compressed entries visible (0 for swa_only)
  double scorable_entries = 0;  // of those, what the indexer may score (full all, reindex ≤ pool)
};
// REQUIRES: 0 <= begin <= end; layer is a decoder.
AttentionSpan LayerAttentionSpan(const LayerSpec& layer, const Csa2Dims& dims, int64_t begin,
                                 int64_t end);

// Tensor parallelism of a layer list: `tp` must divide the query heads and the output groups of
// every decoder, the expert width of every MoE decoder and the dense width of every dense one.
// The error starts with "layers[N]: " naming the first layer that cannot be split.
Status CheckLayerTensorParallel(const std::vector<LayerSpec>& layers, const Csa2Dims& dims,
                                int32_t tp);

// Of LayerParams, those tensor parallelism replicates on every TP rank (the query
// down-projection, the shared KV head, the compressor, the indexer, the router, the Engram
// projection): a rank holds these plus (LayerParams − these) / t.
double LayerReplicatedParams(const LayerSpec& layer, const Csa2Dims& dims);

// Parameters of one layer (csa2.md "Per-layer cost formulas"): decoder attention projections P
// (≈126.6M), plus for a full layer the compressor d·c·(1 + [m>1]), the indexer-key projection
// c·c_I + c_I and the indexer query d_c·n_I·c_I + d·n_I, for a reindex layer the indexer query;
// MoE (E + E_s)·3·d·f + d·E (dense 3·d·f); embedding and (untied) head V·d each.
double LayerParams(const LayerSpec& layer, const Csa2Dims& dims);
// Of those, the routed experts' E·3·d·f (MoE decoders; 0 otherwise).
double LayerRoutedExpertParams(const LayerSpec& layer, const Csa2Dims& dims);
// Of those, the MLP's: MoE (E + E_s)·3·d·f + d·E, dense 3·d·f (decoders; 0 otherwise).
double LayerMlpParams(const LayerSpec& layer, const Csa2Dims& dims);

// The Engram module's projection (csa2.md): 24 lookups × 256 values per token projected into the
// hc + 1 streams: 24·256·d·(hc + 1) parameters (≈157M for V4.1), twice that in FLOPs per token.
// (The hashed tables themselves are looked up, not multiplied: see the Engram issue.)
double EngramProjectionParams(const Csa2Dims& dims);
// The vision encoder on one image of `patches` patches (csa2.md): L_v layers of width d_v and MLP
// f_v, 2·L_v·(4·d_v² + 3·d_v·f_v)·N_p + 4·L_v·d_v·N_p² forward FLOPs; it emits N_p/9 tokens.
double VisionEncoderFlops(int32_t layers, int64_t width, int64_t mlp_width, int64_t patches);

}  // namespace stagecraft
