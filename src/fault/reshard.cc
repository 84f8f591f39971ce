#include "fault/reshard.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "memory/model_states.h"

namespace stagecraft {
namespace {

// A layer's parameters, whole (before tensor parallelism), as parallel/parallel_plan.cc counts
// them for a dense transformer: the embedding, the decoders, the head (a tied head keeps its
// own copy of the embedding on the last stage, as Megatron does).
std::vector<int64_t> LayerParamCounts(const Config& config) {
  const ModelSpec& model = config.model;
  const TransformerSpec& spec = model.transformer;
  std::vector<int64_t> counts;
  for (const LayerSpec& layer : model.layers) {
    double params = 0;
    switch (layer.kind) {
      case LayerKind::kEmbedding:
        params = EmbeddingParams(spec, model.seq_len);
        break;
      case LayerKind::kDecoder:
        params = DecoderLayerParams(spec);
        break;
      case LayerKind::kHead:
        params = spec.tied_embeddings ? EmbeddingParams(spec, model.seq_len)
                                      : static_cast<double>(spec.vocab * spec.hidden);
        break;
    }
    counts.push_back(std::llround(params));
  }
  return counts;
}

bool IsDenseTransformer(const Config& config) {
  const int32_t decoders = config.model.transformer.layers;
  for (int32_t decoder = 0; decoder < decoders; ++decoder) {
    if (config.model.transformer.moe_layer(decoder)) return false;
  }
  return config.model.is_transformer() && config.parallel.cp == 1;
}

// The slice [begin, end) of `count` parameters tensor-parallel rank `rank` of `tp` holds.
std::pair<int64_t, int64_t> Slice(int64_t count, int32_t rank, int32_t tp) {
  return {count * rank / tp, count * (rank + 1) / tp};
}

}  // namespace

Result<ReshardPlan> PlanReshard(const PreparedRun& old_run, const PreparedRun& new_run) {
  const Config& before = old_run.config;
  const Config& after = new_run.config;
  if (!IsDenseTransformer(before) || !IsDenseTransformer(after)) {
    return Error{
        "--reshard-to: resharding is modelled for dense transformers without context "
        "parallelism (model.type: transformer, no experts, cp 1); " +
        old_run.label + " or " + new_run.label + " is not one"};
  }
  const std::vector<int64_t> counts = LayerParamCounts(before);
  if (counts != LayerParamCounts(after)) {
    return Error{"--reshard-to: " + new_run.label + " holds another model than " + old_run.label +
                 " (the layers' parameters differ); expected the same model on another layout"};
  }
  ReshardPlan plan;
  plan.old_tp = before.parallel.tp;
  plan.old_pp = old_run.partition.num_stages();
  plan.old_dp = before.parallel.dp;
  plan.new_tp = after.parallel.tp;
  plan.new_pp = new_run.partition.num_stages();
  plan.new_dp = after.parallel.dp;
  plan.layers = static_cast<int32_t>(counts.size());
  const BytesPerParam per_param = ModelStateBytesPerParam(after.parallel.precision);
  plan.bytes_per_param = per_param.parameters + per_param.optimizer;
  // covered[layer]: the ranges read, to check exactly-once coverage.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> covered(counts.size());
  for (int32_t stage = 0; stage < plan.new_pp; ++stage) {
    for (int32_t rank = 0; rank < plan.new_tp; ++rank) {
      NewShard shard{stage, rank, {}, 0};
      // Reads grouped by old shard (stage, tp): consecutive layers with the same share.
      std::map<std::pair<int32_t, int32_t>, ShardRead> reads;
      for (int32_t layer = new_run.partition.begin(stage); layer < new_run.partition.end(stage);
           ++layer) {
        const int64_t count = counts[layer];
        const auto [begin, end] = Slice(count, rank, plan.new_tp);
        const int32_t old_stage = old_run.partition.StageOf(layer);
        for (int32_t old_rank = 0; old_rank < plan.old_tp; ++old_rank) {
          const auto [old_begin, old_end] = Slice(count, old_rank, plan.old_tp);
          const int64_t low = std::max(begin, old_begin);
          const int64_t high = std::min(end, old_end);
          if (low >= high) continue;
          covered[layer].push_back({low, high});
          auto [entry, fresh] = reads.try_emplace({old_stage, old_rank});
          ShardRead& read = entry->second;
          if (fresh) {
            read = ShardRead{old_stage,
                             old_rank,
                             layer,
                             layer,
                             static_cast<double>(low) / static_cast<double>(count),
                             static_cast<double>(high) / static_cast<double>(count),
                             0};
          }
          read.last_layer = layer;
          read.params += static_cast<double>(high - low);
          shard.params += static_cast<double>(high - low);
        }
      }
      for (auto& [key, read] : reads) shard.reads.push_back(read);
      plan.shards.push_back(std::move(shard));
    }
  }
  plan.covers_exactly_once = true;
  for (size_t layer = 0; layer < counts.size(); ++layer) {
    std::vector<std::pair<int64_t, int64_t>>& ranges = covered[layer];
    std::sort(ranges.begin(), ranges.end());
    int64_t next = 0;
    for (const auto& [low, high] : ranges) {
      if (low != next) plan.covers_exactly_once = false;
      next = high;
    }
    if (next != counts[layer]) plan.covers_exactly_once = false;
    plan.params += static_cast<double>(counts[layer]);
  }
  return plan;
}

}  // namespace stagecraft
