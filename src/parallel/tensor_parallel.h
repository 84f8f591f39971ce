// Tensor parallelism's cost (Megatron-LM's TP with sequence parallelism, its tp_comm_overlap and
// torchtitan's async TP): the collectives a layer puts on its stage's compute stream, forward
// and backward, for transformer models and CSA2 layer lists.
#pragma once

#include <cstdint>

#include "core/time.h"
#include "io/config.h"
#include "model/kernel_sum.h"
#include "model/layer_costs.h"
#include "model/transformer.h"

namespace stagecraft {

// The ring times of one layer's TP collectives per microbatch on one CP rank of `tokens` tokens.
// Per decoder two collectives of b·s/cp·h bf16 each way (after the row-parallel output
// projection and the MLP: all-reduces, or with sequence parallelism a reduce-scatter and an
// all-gather, the same ring time); the embedding's output all-reduced once; the head's
// vocab-parallel cross entropy three all-reduces of b·s/cp fp32 scalars (Megatron-LM
// VocabParallelCrossEntropy: the max, the sum of exponentials and the target logit).
struct TpCollectives {
  Time activation;  // one all-reduce of the 2·tokens·hidden bytes of activations
  Time loss;        // one all-reduce of the 4·tokens bytes of loss scalars
  bool operator==(const TpCollectives&) const = default;
};
// The TP ranks of a group sit next to each other (tp innermost): beyond a node the ring runs
// over the network too (RingTime: min(NVLink, rails × NIC)). Nothing for tp = 1.
TpCollectives TpCollectivesOf(const ClusterSpec& cluster, int32_t tp, double tokens, double hidden);

// One decoder layer's tensor-parallel communication as the compute stream sees it.
struct TpExposure {
  Time forward;
  Time backward;
  bool operator==(const TpExposure&) const = default;
};

// What a layer's backward repeats of its forward: the share of its TP collectives and of its
// GEMMs. Full recomputation repeats both (for the layers it covers, `fraction`). torchtitan's
// per-op selective policy (selective-op) saves every compute op's output but every second
// matmul's, and of the collectives only the reduce-scatters (_op_sac_save_list,
// torchtitan/models/llama3/infra/parallelize.py at 018740b): the backward recomputes half the
// matmuls, and with them the two sequence-parallel all-gathers their inputs come from (q, k, v
// and the MLP's w1, w3 read them; k and w3 are recomputed). Megatron's selective recomputation
// repeats the attention core only, inside a TP rank.
struct TpRecompute {
  double collectives = 0.0;
  double gemm = 0.0;
  bool operator==(const TpRecompute&) const = default;
};
TpRecompute TpRecomputeOf(Recompute recompute, double fraction);

// The share of a GEMM's speed lost while a collective runs beside it: the communication
// kernels take about 16 of the device's SMs (NCCL's and Transformer Engine's userbuffers'
// channel counts; an assumption, doc/fidelity.md), 16/132 on an H100.
inline constexpr double kOverlapSlowdown = 16.0 / 132.0;

// Whether the TP collectives overlap the GEMMs (tp_comm_overlap, async_tp; kernel-costed runs).
bool TpOverlaps(const Config& config);

// A decoder's exposure of its two collectives (`collective` each) forward and backward (with
// recomputation the forward's again in the backward, as `recomputed` says). With
// tp_comm_overlap or async TP (TpOverlaps) each collective is split against the GEMM next to
// it: only what the layer's GEMMs (`kernels`) cannot cover is exposed, and the GEMMs that run
// beside a collective slow by kOverlapSlowdown; async TP leaves the backward's reduce-scatters
// exposed.
TpExposure ExposeTp(const Config& config, Time collective, TpRecompute recomputed,
                    const LayerKernelTimes& kernels);

// A transformer's TP costs per layer kind, per microbatch.
struct TransformerTp {
  Time embedding;    // the embedding's output all-reduce (forward)
  Time loss;         // one of the head's three cross-entropy all-reduces (forward)
  TpExposure dense;  // a decoder with a dense MLP
  TpExposure moe;    // a decoder with experts (dense's when the model has none)
  bool operator==(const TransformerTp&) const = default;
};
TransformerTp TransformerTensorParallel(const Config& config, const TransformerRun& run);

// A CSA2 layer list's decoder `layer` on `layer_run`'s ranks, its two collectives `collective`
// each, again in the backward when it `recomputes` (its kernels' GEMMs from
// Csa2LayerKernelTimes when TpOverlaps).
TpExposure Csa2DecoderTp(const Config& config, const LayerRun& layer_run, const LayerSpec& layer,
                         bool recomputes, Time collective);

}  // namespace stagecraft
