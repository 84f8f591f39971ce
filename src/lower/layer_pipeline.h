// LayerPipeline: a layer-list model cut into stages — each stage's costs and the shared-state
// flows between stages, with every flow's movement policy decided (DESIGN.md §5).
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "lower/state_flow.h"
#include "model/model_spec.h"
#include "schedule/partition.h"

namespace stagecraft {

struct LayerPipelineOptions {
  StatePolicy policy = StatePolicy::kPayload;       // for every flow; kAuto picks per flow
  ShadowReading reading = ShadowReading::kKeySide;  // what the shadow policy recomputes
  std::vector<int32_t> stage_ranks;                 // [stage] → rank (for auto's estimates)
  ClusterSpec cluster;                              // links and FLOP/s
  Time cost_p2p;                                    // added to every transfer between ranks
  int32_t microbatches = 1;  // spreads shadow\'s once-per-iteration sync over the estimates
  // Context-parallel ranks: each ships its own shard of the hidden state and of every shared
  // state (to the same CP rank of the next stage), and recomputes shadow state for its tokens
  // only, so bytes and shadow work per transfer are 1/cp of the microbatch's. REQUIRES: divides
  // the microbatch's tokens.
  int32_t context_parallel = 1;
  // Tensor-parallel ranks: each sends 1/t of the hidden state across a cut (Megatron's
  // scatter / gather of the pipeline send; with sequence parallelism its s/t tokens), and each
  // ships the whole of every shared state, which is replicated over the TP ranks (doc/csa2.md,
  // "Tensor parallelism"). REQUIRES: divides the hidden bytes of a CP rank's tokens.
  int32_t tensor_parallel = 1;
};

struct LayerPipeline {
  std::vector<StageCost> stage_costs;  // [stage] sums of its layers; p2p = hidden state at cut
                                       // (one CP and TP rank's share)
  std::vector<StateFlow> flows;        // one per (producer layer, state kind), by producer;
                                       // bytes of one CP rank's shard
  bool operator==(const LayerPipeline&) const = default;
};

// REQUIRES: model.is_layer_list(), sources resolved, every layer cost filled in,
// partition.num_layers == model.layers.size().
LayerPipeline BuildLayerPipeline(const ModelSpec& model, const Partition& partition,
                                 const LayerPipelineOptions& options);

// What moving one flow costs per microbatch under each policy, as `auto` compares them:
// payload — the extra bytes on every rank-changing cut it rides (forward + dState); direct — one
// transfer per consuming rank other than the producer's (+ dState); shadow — the recompute on
// every such rank (FLOPs and time), its shadow payload, and its once-per-iteration parameter
// sync (and gradient aggregation) divided by the microbatches.
struct PolicyEstimate {
  StatePolicy policy = StatePolicy::kPayload;
  bool applicable = true;  // shadow: false when the reading cannot recompute this state
  int64_t bytes = 0;       // moved between ranks per microbatch
  double flops = 0;        // recomputed per microbatch (shadow)
  Time time;               // added per microbatch
};
std::vector<PolicyEstimate> EstimatePolicies(const StateFlow& flow, const ModelSpec& model,
                                             const LayerPipelineOptions& options);

// The shared state crossing the cut just before `layer` (a stage boundary there), bytes per
// token, by kind, under the payload policy: every state whose producer comes before the cut and
// some consumer at or after it, counted once per (producer, kind).
struct CutPayload {
  int32_t before_layer = 0;
  int64_t hidden_bytes_per_token = 0;
  int64_t state_bytes_per_token = 0;
  int64_t by_kind[4] = {0, 0, 0, 0};  // indexed by StateKind
};
std::vector<CutPayload> CutPayloads(const ModelSpec& model);  // one per cut, before layer 1..L−1

}  // namespace stagecraft
