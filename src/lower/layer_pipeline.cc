#include "lower/layer_pipeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace stagecraft {
namespace {

// Tokens of one microbatch on one context-parallel rank.
int64_t RankTokens(const ModelSpec& model, int32_t context_parallel) {
  return model.tokens_per_microbatch() / std::max(1, context_parallel);
}

std::vector<StageCost> StageCosts(const ModelSpec& model, const Partition& partition,
                                  int32_t context_parallel, int32_t tensor_parallel) {
  const int64_t hidden = HiddenBytesPerToken(model.dims) * RankTokens(model, context_parallel) /
                         std::max(1, tensor_parallel);
  std::vector<StageCost> costs(static_cast<size_t>(partition.num_stages()));
  for (int32_t stage = 0; stage < partition.num_stages(); ++stage) {
    StageCost& cost = costs[stage];
    for (int32_t layer = partition.begin(stage); layer < partition.end(stage); ++layer) {
      const LayerSpec& spec = model.layers[layer];
      cost.forward += spec.forward;
      cost.input_grad += spec.input_grad;
      cost.weight_grad += spec.weight_grad;
      cost.activation_bytes += spec.activation_bytes;
      cost.weight_grad_bytes += spec.weight_grad_bytes;
      cost.recompute_bytes = std::max(cost.recompute_bytes, spec.recompute_bytes);
      // An F&B op overlaps this layer's forward all-to-all and its backward's (the same bytes)
      // with the other microbatch's computation: it saves min(computation, 2 · all-to-all).
      if (spec.all_to_all.ns() > 0) {
        const Time communication = spec.all_to_all * 2;
        const Time computation = spec.forward + spec.input_grad + spec.weight_grad - communication;
        cost.overlap_saving += std::max(Time(), std::min(computation, communication));
      }
    }
    cost.p2p_bytes = hidden;
  }
  return costs;
}

// One flow per (producer, kind), consumers gathered from the edges.
std::vector<StateFlow> GroupFlows(const ModelSpec& model, const Partition& partition,
                                  int32_t context_parallel) {
  std::map<std::pair<int32_t, StateKind>, StateFlow> flows;
  const int64_t tokens = RankTokens(model, context_parallel);
  for (const SharedStateEdge& edge : SharedStateEdges(model.layers, model.dims)) {
    StateFlow& flow = flows[{edge.producer, edge.kind}];
    flow.producer_layer = edge.producer;
    flow.kind = edge.kind;
    flow.producer_stage = partition.StageOf(edge.producer);
    flow.consumer_layers.push_back(edge.consumer);
    const int32_t stage = partition.StageOf(edge.consumer);
    flow.consumer_layer_stages.push_back(stage);
    if (flow.consumer_stages.empty() || flow.consumer_stages.back() != stage) {
      flow.consumer_stages.push_back(stage);
    }
    flow.bytes = edge.bytes_per_token * tokens;
    flow.differentiable = edge.differentiable;
  }
  std::vector<StateFlow> result;
  for (auto& [key, flow] : flows) result.push_back(std::move(flow));
  return result;
}

// Fills the shadow fields: reading A regenerates indexer keys from the shipped compressed KV
// (2·kv_dim·c_I FLOPs per compressed entry, c_I·kv_dim + c_I parameters); reading B recomputes
// the source's selection from its query latent (d_c·2 bytes per token shipped; indexer query
// 2·(d_c·n_I·c_I + d·n_I) FLOPs per token plus scoring 2·n_I·c_I per visible compressed entry,
// seq_len/(2m) on average for a causal query). csa2.md, "Shadow indexers" and "Per-layer cost
// formulas". One CP rank's share (its tokens) of a context-parallel run. Returns false when the
// reading cannot recompute this kind of state.
bool FillShadow(StateFlow& flow, const ModelSpec& model, ShadowReading reading, double flops,
                int32_t context_parallel, double* recompute_flops = nullptr) {
  const Csa2Dims& d = model.dims;
  const int64_t rank_tokens = RankTokens(model, context_parallel);
  const double tokens = static_cast<double>(rank_tokens);
  const int32_t ratio = std::max(1, model.layers[flow.producer_layer].compress_ratio);
  double forward_flops = 0;
  if (reading == ShadowReading::kKeySide) {
    if (flow.kind != StateKind::kIndexerKeys) return false;
    forward_flops = 2.0 * d.kv_dim * d.indexer_key_dim * (tokens / ratio);
    flow.shadow_bytes = 0;
    flow.shadow_param_bytes =
        (static_cast<int64_t>(d.kv_dim) * d.indexer_key_dim + d.indexer_key_dim) * 2;
  } else {
    if (flow.kind != StateKind::kTopK && flow.kind != StateKind::kCandidatePool) return false;
    const double query =
        2.0 * (static_cast<double>(d.query_latent) * d.indexer_heads * d.indexer_key_dim +
               static_cast<double>(d.hidden) * d.indexer_heads);
    const double visible = static_cast<double>(model.seq_len) / ratio / 2.0;
    forward_flops = tokens * (query + 2.0 * d.indexer_heads * d.indexer_key_dim * visible);
    flow.shadow_bytes = static_cast<int64_t>(d.query_latent) * 2 * rank_tokens;
    flow.shadow_param_bytes =
        (static_cast<int64_t>(d.query_latent) * d.indexer_heads * d.indexer_key_dim +
         static_cast<int64_t>(d.hidden) * d.indexer_heads) *
        2;
  }
  flow.shadow_forward = FromSeconds(forward_flops / flops);
  if (recompute_flops != nullptr) {
    *recompute_flops = forward_flops * (flow.differentiable ? 3.0 : 1.0);
  }
  // A replica's parameters get gradients only when its output does (csa2.md: "Backward ≈ 2 ×
  // forward for trainable matmuls").
  flow.shadow_backward = flow.differentiable ? flow.shadow_forward * 2 : Time();
  return true;
}

Time LinkTime(const LayerPipelineOptions& options, int32_t from_stage, int32_t to_stage,
              int64_t bytes) {
  const int32_t from = options.stage_ranks[from_stage];
  const int32_t to = options.stage_ranks[to_stage];
  if (from == to) return Time();
  return TransferTime(options.cluster, DeviceId(from), DeviceId(to), bytes, options.cost_p2p);
}

// The extra time `bytes` add to every rank-changing cut a flow rides (payload style).
Time PayloadTime(const StateFlow& flow, int64_t bytes, const LayerPipelineOptions& options) {
  Time total;
  for (int32_t cut = flow.producer_stage; cut < flow.last_consumer_stage(); ++cut) {
    total += LinkTime(options, cut, cut + 1, bytes) - LinkTime(options, cut, cut + 1, 0);
  }
  return total;
}

// The once-per-iteration parameter sync (and gradient aggregation) of a shadow flow, spread
// over the microbatches.
Time ShadowSyncTime(const StateFlow& flow, const LayerPipelineOptions& options) {
  Time total;
  const int64_t ways = flow.shadow_backward.ns() > 0 ? 2 : 1;
  for (int32_t stage : ReceivingStages(flow, options.stage_ranks)) {
    total += LinkTime(options, flow.producer_stage, stage, flow.shadow_param_bytes) * ways;
  }
  return Time::Nanoseconds(total.ns() / std::max(1, options.microbatches));
}

// Per-microbatch time each policy adds (forward + dState), for `auto`.
Time PolicyCost(const StateFlow& flow, StatePolicy policy, const LayerPipelineOptions& options) {
  const int64_t both_ways = flow.bytes * (flow.differentiable ? 2 : 1);
  if (policy == StatePolicy::kPayload) return PayloadTime(flow, both_ways, options);
  Time total;
  for (int32_t stage : ReceivingStages(flow, options.stage_ranks)) {
    total += policy == StatePolicy::kDirect
                 ? LinkTime(options, flow.producer_stage, stage, both_ways)
                 : flow.shadow_forward + flow.shadow_backward;
  }
  if (policy == StatePolicy::kShadow) {
    total += PayloadTime(flow, flow.shadow_bytes, options) + ShadowSyncTime(flow, options);
  }
  return total;
}

void ChoosePolicy(StateFlow& flow, const ModelSpec& model, const LayerPipelineOptions& options) {
  StateFlow shadowed = flow;
  const bool can_shadow =
      FillShadow(shadowed, model, options.reading, options.cluster.effective_flops_per_s(),
                 options.context_parallel);
  if (options.policy == StatePolicy::kShadow) {
    flow = can_shadow ? shadowed : flow;
    flow.policy = can_shadow ? StatePolicy::kShadow : StatePolicy::kPayload;
    return;
  }
  if (options.policy != StatePolicy::kAuto) {
    flow.policy = options.policy;
    return;
  }
  StatePolicy best = StatePolicy::kPayload;
  Time best_cost = PolicyCost(flow, StatePolicy::kPayload, options);
  const Time direct = PolicyCost(flow, StatePolicy::kDirect, options);
  if (direct < best_cost) {
    best = StatePolicy::kDirect;
    best_cost = direct;
  }
  if (can_shadow && PolicyCost(shadowed, StatePolicy::kShadow, options) < best_cost) {
    flow = shadowed;
    best = StatePolicy::kShadow;
  }
  flow.policy = best;
}

// Bytes moved between ranks per microbatch under payload or direct (forward + dState).
int64_t ShippedBytes(const StateFlow& flow, StatePolicy policy,
                     const LayerPipelineOptions& options) {
  const int64_t both_ways = flow.bytes * (flow.differentiable ? 2 : 1);
  if (policy == StatePolicy::kPayload) return both_ways * RankCrossings(flow, options.stage_ranks);
  return both_ways * static_cast<int64_t>(ReceivingStages(flow, options.stage_ranks).size());
}

}  // namespace

std::vector<PolicyEstimate> EstimatePolicies(const StateFlow& flow, const ModelSpec& model,
                                             const LayerPipelineOptions& options) {
  std::vector<PolicyEstimate> estimates;
  for (StatePolicy policy : {StatePolicy::kPayload, StatePolicy::kDirect}) {
    estimates.push_back({policy, true, ShippedBytes(flow, policy, options), 0.0,
                         PolicyCost(flow, policy, options)});
  }
  StateFlow shadowed = flow;
  double flops = 0;
  PolicyEstimate shadow{StatePolicy::kShadow, false, 0, 0.0, Time()};
  if (FillShadow(shadowed, model, options.reading, options.cluster.effective_flops_per_s(),
                 options.context_parallel, &flops)) {
    const int64_t replicas =
        static_cast<int64_t>(ReceivingStages(flow, options.stage_ranks).size());
    const int64_t hops = RankCrossings(flow, options.stage_ranks);
    const int64_t sync_ways = shadowed.shadow_backward.ns() > 0 ? 2 : 1;
    const int64_t sync_bytes =
        shadowed.shadow_param_bytes * replicas * sync_ways / std::max(1, options.microbatches);
    shadow = {StatePolicy::kShadow, true, shadowed.shadow_bytes * hops + sync_bytes,
              flops * static_cast<double>(replicas),
              PolicyCost(shadowed, StatePolicy::kShadow, options)};
  }
  estimates.push_back(shadow);
  return estimates;
}

LayerPipeline BuildLayerPipeline(const ModelSpec& model, const Partition& partition,
                                 const LayerPipelineOptions& options) {
  LayerPipeline pipeline;
  pipeline.stage_costs =
      StageCosts(model, partition, options.context_parallel, options.tensor_parallel);
  pipeline.flows = GroupFlows(model, partition, options.context_parallel);
  for (StateFlow& flow : pipeline.flows) ChoosePolicy(flow, model, options);
  return pipeline;
}

std::vector<CutPayload> CutPayloads(const ModelSpec& model) {
  const int32_t num_layers = static_cast<int32_t>(model.layers.size());
  std::vector<CutPayload> cuts;
  const auto edges = SharedStateEdges(model.layers, model.dims);
  for (int32_t cut = 1; cut < num_layers; ++cut) {
    CutPayload payload;
    payload.before_layer = cut;
    payload.hidden_bytes_per_token = HiddenBytesPerToken(model.dims);
    std::map<std::pair<int32_t, StateKind>, int64_t> crossing;  // counted once per state
    for (const SharedStateEdge& edge : edges) {
      if (edge.producer < cut && edge.consumer >= cut) {
        crossing[{edge.producer, edge.kind}] = edge.bytes_per_token;
      }
    }
    for (const auto& [key, bytes] : crossing) {
      payload.state_bytes_per_token += bytes;
      payload.by_kind[static_cast<int>(key.second)] += bytes;
    }
    cuts.push_back(payload);
  }
  return cuts;
}

}  // namespace stagecraft
