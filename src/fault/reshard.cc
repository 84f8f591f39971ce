#include "fault/reshard.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "memory/model_states.h"
#include "model/layer_costs.h"

namespace stagecraft {
namespace {

// A layer's parameters, whole (before tensor and expert parallelism), as
// parallel/parallel_plan.cc counts them: for a transformer the embedding, the decoders, the head
// (a tied head keeps its own copy of the embedding on the last stage, as Megatron does); for a
// CSA2 layer list each layer's (model/layer_costs.h), the part tensor parallelism replicates
// apart. A MoE layer's routed experts apart from the rest of it.
struct LayerParts {
  int64_t dense = 0;       // split into tp slices: all but the routed experts and replicated
  int64_t replicated = 0;  // whole on every tp rank (CSA2: query down-projection, router, ...)
  int64_t experts = 0;     // routed experts (0: a dense layer)
  int64_t per_expert = 0;  // parameters of one routed expert
  bool operator==(const LayerParts&) const = default;
};

std::vector<LayerParts> TransformerLayerParts(const ModelSpec& model) {
  const TransformerSpec& spec = model.transformer;
  std::vector<LayerParts> counts;
  int32_t decoder = 0;
  for (const LayerSpec& layer : model.layers) {
    LayerParts params;
    switch (layer.kind) {
      case LayerKind::kEmbedding:
        params.dense = std::llround(EmbeddingParams(spec, model.seq_len));
        break;
      case LayerKind::kDecoder: {
        const bool moe = spec.moe_layer(decoder++);
        const double routed = moe ? RoutedExpertParams(spec) : 0.0;
        params.dense = std::llround(DecoderLayerParams(spec, moe) - routed);
        if (moe) {
          params.experts = spec.experts;
          params.per_expert = std::llround(routed / static_cast<double>(spec.experts));
        }
        break;
      }
      case LayerKind::kHead:
        params.dense = std::llround(spec.tied_embeddings ? EmbeddingParams(spec, model.seq_len)
                                                         : static_cast<double>(spec.vocab) *
                                                               static_cast<double>(spec.hidden));
        break;
    }
    counts.push_back(params);
  }
  return counts;
}

std::vector<LayerParts> LayerListParts(const ModelSpec& model) {
  std::vector<LayerParts> counts;
  for (const LayerSpec& layer : model.layers) {
    LayerParts params;
    const double routed = LayerRoutedExpertParams(layer, model.dims);
    const double replicated = LayerReplicatedParams(layer, model.dims);
    params.dense = std::llround(LayerParams(layer, model.dims) - routed - replicated);
    params.replicated = std::llround(replicated);
    if (routed > 0) {
      params.experts = model.dims.routed_experts;
      params.per_expert = std::llround(routed / static_cast<double>(model.dims.routed_experts));
    }
    counts.push_back(params);
  }
  return counts;
}

std::vector<LayerParts> LayerParamCounts(const Config& config) {
  return config.model.is_transformer() ? TransformerLayerParts(config.model)
                                       : LayerListParts(config.model);
}

// The slice [begin, end) of `count` items rank `rank` of `ranks` holds.
std::pair<int64_t, int64_t> Slice(int64_t count, int32_t rank, int32_t ranks) {
  return {count * rank / ranks, count * (rank + 1) / ranks};
}

// The expert-parallel rank of `ranks` that holds expert `expert` of `experts`.
int32_t ExpertOwner(int64_t expert, int64_t experts, int32_t ranks) {
  for (int32_t rank = 0; rank < ranks; ++rank) {
    if (expert < Slice(experts, rank, ranks).second) return rank;
  }
  return ranks - 1;
}

// One new shard's reads, grouped by old shard (stage, tp, ep) and part.
using ReadKey = std::tuple<int32_t, int32_t, int32_t, ReadPart>;

class ShardReads {
 public:
  // Reads [begin, end) of a part of `count` parameters (expert -1 unless `part` is kExperts)
  // from the old shards' slices of it (old tp slices; a replicated part whole from old tp 0);
  // records each range in `covered`.
  void Add(int32_t old_stage, int32_t old_ep, int32_t layer, ReadPart part, int32_t expert,
           int64_t count, std::pair<int64_t, int64_t> wanted, int32_t old_tp_ranks,
           std::vector<std::pair<int64_t, int64_t>>& covered) {
    const int32_t sources = part == ReadPart::kReplicated ? 1 : old_tp_ranks;
    for (int32_t old_tp = 0; old_tp < sources; ++old_tp) {
      const auto [old_begin, old_end] = Slice(count, old_tp, sources);
      const int64_t low = std::max(wanted.first, old_begin);
      const int64_t high = std::min(wanted.second, old_end);
      if (low >= high) continue;
      covered.push_back({low, high});
      auto [entry, fresh] = reads_.try_emplace(ReadKey{old_stage, old_tp, old_ep, part});
      ShardRead& read = entry->second;
      if (fresh) {
        read = ShardRead{old_stage,
                         old_tp,
                         old_ep,
                         part,
                         layer,
                         layer,
                         expert,
                         expert,
                         static_cast<double>(low) / static_cast<double>(count),
                         static_cast<double>(high) / static_cast<double>(count),
                         0};
      }
      read.last_layer = layer;
      if (expert >= 0) {
        read.first_expert = std::min(read.first_expert, expert);
        read.last_expert = std::max(read.last_expert, expert);
      }
      read.params += static_cast<double>(high - low);
      params_ += static_cast<double>(high - low);
    }
  }
  std::vector<ShardRead> Take() const {
    std::vector<ShardRead> reads;
    for (const auto& [key, read] : reads_) reads.push_back(read);
    return reads;
  }
  double params() const { return params_; }

 private:
  std::map<ReadKey, ShardRead> reads_;
  double params_ = 0;
};

// Whether the sorted-by-start ranges tile [0, count) exactly once.
bool TilesOnce(std::vector<std::pair<int64_t, int64_t>>& ranges, int64_t count) {
  std::sort(ranges.begin(), ranges.end());
  int64_t next = 0;
  for (const auto& [low, high] : ranges) {
    if (low != next) return false;
    next = high;
  }
  return next == count;
}

}  // namespace

Result<ReshardPlan> PlanReshard(const PreparedRun& old_run, const PreparedRun& new_run) {
  const Config& before = old_run.config;
  const Config& after = new_run.config;
  if (!before.model.is_layer_list() || !after.model.is_layer_list()) {
    const std::string& label = before.model.is_layer_list() ? new_run.label : old_run.label;
    return Error{
        "--reshard-to: resharding is modelled for transformers and CSA2 layer lists "
        "(model.type transformer or layers), not for the uniform model; " +
        label + " has no layers"};
  }
  const std::vector<LayerParts> counts = LayerParamCounts(before);
  if (counts != LayerParamCounts(after)) {
    return Error{"--reshard-to: " + new_run.label + " holds another model than " + old_run.label +
                 " (the layers' parameters differ); expected the same model on another layout"};
  }
  ReshardPlan plan;
  for (const LayerParts& count : counts) {
    plan.moe |= count.experts > 0;
    plan.replicated |= count.replicated > 0;
  }
  plan.old_tp = before.parallel.tp;
  plan.old_pp = old_run.partition.num_stages();
  plan.old_dp = before.parallel.dp;
  plan.old_cp = before.parallel.cp;
  plan.old_ep = plan.moe ? before.parallel.ep : 1;
  plan.new_tp = after.parallel.tp;
  plan.new_pp = new_run.partition.num_stages();
  plan.new_dp = after.parallel.dp;
  plan.new_cp = after.parallel.cp;
  plan.new_ep = plan.moe ? after.parallel.ep : 1;
  plan.layers = static_cast<int32_t>(counts.size());
  const BytesPerParam per_param = ModelStateBytesPerParam(after.parallel.precision);
  plan.bytes_per_param = per_param.parameters + per_param.optimizer;
  // The ranges read, to check exactly-once coverage: [layer] of the dense parts, [layer][expert].
  std::vector<std::vector<std::pair<int64_t, int64_t>>> covered(counts.size());
  std::vector<std::vector<std::pair<int64_t, int64_t>>> covered_replicated(counts.size());
  std::vector<std::vector<std::vector<std::pair<int64_t, int64_t>>>> covered_experts(counts.size());
  for (size_t layer = 0; layer < counts.size(); ++layer) {
    covered_experts[layer].resize(static_cast<size_t>(counts[layer].experts));
  }
  for (int32_t stage = 0; stage < plan.new_pp; ++stage) {
    for (int32_t rank = 0; rank < plan.new_tp; ++rank) {
      for (int32_t expert_rank = 0; expert_rank < plan.new_ep; ++expert_rank) {
        ShardReads reads;
        for (int32_t layer = new_run.partition.begin(stage); layer < new_run.partition.end(stage);
             ++layer) {
          const LayerParts& count = counts[layer];
          const int32_t old_stage = old_run.partition.StageOf(layer);
          if (expert_rank == 0 && count.dense > 0) {
            reads.Add(old_stage, 0, layer, ReadPart::kDense, -1, count.dense,
                      Slice(count.dense, rank, plan.new_tp), plan.old_tp, covered[layer]);
          }
          if (expert_rank == 0 && rank == 0 && count.replicated > 0) {
            reads.Add(old_stage, 0, layer, ReadPart::kReplicated, -1, count.replicated,
                      {0, count.replicated}, plan.old_tp, covered_replicated[layer]);
          }
          const auto [first, end] = Slice(count.experts, expert_rank, plan.new_ep);
          for (int64_t expert = first; expert < end; ++expert) {
            reads.Add(old_stage, ExpertOwner(expert, count.experts, plan.old_ep), layer,
                      ReadPart::kExperts, static_cast<int32_t>(expert), count.per_expert,
                      Slice(count.per_expert, rank, plan.new_tp), plan.old_tp,
                      covered_experts[layer][static_cast<size_t>(expert)]);
          }
        }
        plan.shards.push_back(NewShard{stage, rank, expert_rank, reads.Take(), reads.params()});
      }
    }
  }
  plan.covers_exactly_once = true;
  for (size_t layer = 0; layer < counts.size(); ++layer) {
    plan.covers_exactly_once &= TilesOnce(covered[layer], counts[layer].dense);
    plan.covers_exactly_once &= TilesOnce(covered_replicated[layer], counts[layer].replicated);
    for (auto& ranges : covered_experts[layer]) {
      plan.covers_exactly_once &= TilesOnce(ranges, counts[layer].per_expert);
    }
    plan.params += static_cast<double>(counts[layer].dense + counts[layer].replicated) +
                   static_cast<double>(counts[layer].experts * counts[layer].per_expert);
  }
  return plan;
}

}  // namespace stagecraft
