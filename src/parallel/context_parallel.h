// Context parallelism's cost: for transformer models ring attention (K and V blocks passed
// around the cp ranks behind the attention compute), Llama 3's all-gather of K and V, or PyTorch's
// context_parallel with its rotate method; for CSA2 layer lists the all-gathers of the
// compressed KV and indexer keys, with each full layer's halo (csa2.md, "Context parallelism
// (V4 / V4.1)"). CheckContextParallel (parallel_plan.h) checks the configs these cost.
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "core/time.h"
#include "io/config.h"
#include "model/layer_spec.h"
#include "model/transformer.h"
#include "schedule/partition.h"

namespace stagecraft {

// What context parallelism charges the compute stream, per microbatch.
struct CpExposure {
  Time forward;
  Time backward;
  bool operator==(const CpExposure&) const = default;
};

// One transformer decoder's CP communication, per microbatch (nothing for cp = 1). The CP peers
// of a rank sit t apart. Ring attention passes a K and V block of s/cp tokens (bf16, this TP
// rank's heads) per step while computing against the block in hand; only what the compute does
// not hide is charged (RingAttentionExposed). The backward passes K, V and their gradients
// against twice the compute. The all-gather mode gathers all K and V before the attention (and
// reduce-scatters dK, dV after), exposed. PyTorch's context_parallel
// (context_parallel_rotate_method; _attention.py) rotates K and V expanded to the query heads
// (torchtitan's Llama repeats them before SDPA): 'allgather' gathers them once, asynchronously,
// waited for before step 1 (hidden behind step 0's kernel), and again for the backward;
// 'alltoall' passes one block a step like the ring. Its backward also passes the fp32 dK and dV
// (twice the bf16 bytes) to the next rank every step, behind that step's kernel. Full
// recomputation repeats the forward's in the backward.
CpExposure TransformerContextParallel(const Config& config, const TransformerRun& run);

// The gathers one CP rank joins for a stage of a CSA2 layer list, per microbatch: the compressed
// KV of every producer it reads (its own full layers', and each received from an earlier stage:
// a CP rank receives only its shard of the payload and re-gathers it) and the indexer keys its
// full and reindex layers score, as (producer layer, kind); and its full layers, each with a halo.
struct StageGathers {
  std::set<std::pair<int32_t, StateKind>> states;
  std::vector<int32_t> full_layers;
  bool operator==(const StageGathers&) const = default;
};
StageGathers GathersOfStage(const ModelSpec& model, const Partition& partition, int32_t stage,
                            const std::vector<SharedStateEdge>& edges);

// Context parallelism of one stage of a CSA2 layer list (csa2.md, "Context parallelism (V4 /
// V4.1)"), for cp > 1 (`edges`: SharedStateEdges of the model). Rank order: the cp ranks of a
// stage sit next to each other but tp apart (tp innermost, then cp, then dp with its ep groups,
// pp outermost), so a CP group shares a node while tp·cp <= devices per node. Forward, per
// microbatch: a ring all-gather over the cp ranks of each gathered state (GathersOfStage;
// [S/m, kv_dim] or [S/m, c_I] bf16 per sequence), and per full layer the halo of its last m
// uncompressed entries (kv_dim bf16 each) to the next CP rank, a point-to-point α + bytes/β
// added to the collective (zig-zag's second halo runs at the same time on the reverse link).
// Backward: a reduce-scatter of each gathered dKV (and of the indexer keys' gradient when the
// indexer is trained) and each halo's gradient back, the same times. With cp_overlap only
// max(0, communication − overlappable) is charged, overlappable being the stage's compute that
// needs no gathered entry (LayerLocalFlops / cp at the device's rate, at most each layer's F,
// or I backward). An approximation: it lets every gather of the stage hide behind all of the
// stage's local work, where a real layer hides its gathers only behind the local work that
// comes before its attention.
CpExposure LayerListStageContextParallel(const Config& config, const Partition& partition,
                                         int32_t stage, const std::vector<SharedStateEdge>& edges);

}  // namespace stagecraft
