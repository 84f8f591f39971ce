// Layer-list models in a run: costs from dimensions, the partition into stages, the shared-state
// flows and their movement policy.
#include <algorithm>

#include "lower/layer_pipeline.h"
#include "model/layer_costs.h"
#include "parallel/parallel_common.h"
#include "run/run_setup.h"

namespace stagecraft {
namespace {

std::string LayerLetters(const ModelSpec& model) {
  std::string letters;
  for (const LayerSpec& layer : model.layers) {
    letters += layer.kind == LayerKind::kEmbedding ? 'E'
               : layer.kind == LayerKind::kHead    ? 'L'
                                                   : 't';
  }
  return letters;
}

std::vector<Time> LayerCosts(const ModelSpec& model) {
  std::vector<Time> costs;
  for (const LayerSpec& layer : model.layers) {
    costs.push_back(layer.forward + layer.input_grad + layer.weight_grad);
  }
  return costs;
}

// The time a cut placed before each layer puts on the critical path per microbatch: the hidden
// state and the payload-policy shared state forward, the gradient and dState backward, over the
// slowest link the pipeline uses (inter-node when the ranks span nodes). With context
// parallelism each CP rank sends its own shard: s·b/cp tokens; with tensor parallelism each TP rank
// 1/t of the hidden state and the whole shared state (a transformer's hidden width is already its
// share).
std::vector<Time> CutCosts(const PreparedRun& run) {
  const ModelSpec& model = run.config.model;
  const ClusterSpec& cluster = run.config.cluster;
  const int32_t cp = model.is_transformer() ? 1 : std::max(1, run.config.parallel.cp);
  const int32_t tp = model.is_transformer() ? 1 : std::max(1, run.config.parallel.tp);
  const int64_t tokens = model.tokens_per_microbatch() / cp;
  const bool spans_nodes = cluster.given && run.schedule.num_ranks > cluster.devices_per_node;
  const DeviceId from(0);
  const DeviceId to(spans_nodes ? cluster.devices_per_node : 1);
  std::vector<Time> costs(model.layers.size(), Time());
  for (const CutPayload& cut : CutPayloads(model)) {
    const int64_t hidden = cut.hidden_bytes_per_token * tokens / tp;  // a TP rank's share
    const int64_t state = cut.state_bytes_per_token * tokens;
    const int64_t dstate =
        (cut.by_kind[static_cast<int>(StateKind::kCompressedKv)] +
         (model.dims.indexer_trained ? cut.by_kind[static_cast<int>(StateKind::kIndexerKeys)]
                                     : 0)) *
        tokens;
    costs[cut.before_layer] = TransferTime(cluster, from, to, hidden + state, run.lower.cost_p2p) +
                              TransferTime(cluster, from, to, hidden + dstate, run.lower.cost_p2p);
  }
  return costs;
}

}  // namespace

Result<Partition> PartitionLayers(const PreparedRun& run, PartitionMethod method) {
  const ModelSpec& model = run.config.model;
  const int32_t stages = run.schedule.num_stages;
  const std::string where_counts = run.locations.Where("parallel.layer_counts");
  const std::string where_layout = run.locations.Where("parallel.layout");
  switch (method) {
    case PartitionMethod::kCost:
      return PartitionByCost(LayerCosts(model), stages);
    case PartitionMethod::kStateAware:
      return PartitionStateAware(LayerCosts(model), CutCosts(run), stages);
    case PartitionMethod::kCounts: {
      if (static_cast<int32_t>(run.config.parallel.layer_counts.size()) != stages) {
        return Error{where_counts + std::to_string(run.config.parallel.layer_counts.size()) +
                     " counts for " + std::to_string(stages) +
                     " stages (expected one count per stage: pp x vpp)"};
      }
      auto partition = PartitionFromCounts(run.config.parallel.layer_counts,
                                           static_cast<int32_t>(model.layers.size()));
      if (!partition.ok()) return Error{where_counts + partition.error().message};
      return partition;
    }
    case PartitionMethod::kLayout: {
      auto partition = PartitionFromLayout(run.config.parallel.layout, LayerLetters(model));
      if (!partition.ok()) return Error{where_layout + partition.error().message};
      if (partition.value().num_stages() != stages) {
        return Error{where_layout + "the layout has " +
                     std::to_string(partition.value().num_stages()) +
                     " stages but the schedule has " + std::to_string(stages) + " (pp x vpp)"};
      }
      return partition;
    }
  }
  return Error{"internal: unknown partition method"};
}

LayerPipelineOptions PipelineOptionsOf(const PreparedRun& run) {
  LayerPipelineOptions options;
  options.policy = run.config.schedule.state_policy;
  options.reading = run.config.schedule.shadow_reading;
  options.stage_ranks = StageRanks(run.schedule);
  for (int32_t& rank : options.stage_ranks) rank = std::max(rank, 0);  // unplaced: checker's job
  options.cluster = run.config.cluster;
  options.cost_p2p = run.lower.cost_p2p;
  options.microbatches = run.schedule.num_microbatches;
  if (!run.config.model.is_transformer()) {
    options.context_parallel = run.config.parallel.cp;
    options.tensor_parallel = run.config.parallel.tp;
  }
  return options;
}

Status PrepareLayerModel(PreparedRun& run) {
  ModelSpec& model = run.config.model;
  const ParallelSpec& parallel = run.config.parallel;
  const ClusterSpec& cluster = run.config.cluster;
  const DeviceRates rates = TrainingRates(run.config);
  LayerRun layer_run = LayerRunOf(run.config);
  const ModelSpec given = model;  // the layers as written, before their costs are derived
  const auto estimate = [&] {
    EstimateLayerCosts(model, cluster.effective_flops_per_s(),
                       cluster.hbm_bytes_per_s * cluster.memory_efficiency, layer_run,
                       cluster.kernel_costed() ? &rates : nullptr);
  };
  if (!model.is_transformer() && parallel.recompute == Recompute::kFull &&
      parallel.recompute_method == RecomputeMethod::kUniform && parallel.recompute_num_layers > 1) {
    return Error{run.locations.Where("parallel.recompute_method") + "uniform groups of " +
                 std::to_string(parallel.recompute_num_layers) +
                 " layers are modelled for transformer models; a layer list recomputes layer by "
                 "layer: use recompute_method: block (the first N decoders of each chunk), or "
                 "recompute_num_layers: 1"};
  }
  // With recompute_num_layers the layers that recompute depend on the partition: partition on
  // the costs without recomputation (each chunk then adds the same N layers' recompute), then
  // cost the chosen layers.
  const bool per_chunk = !model.is_transformer() && parallel.recompute == Recompute::kFull &&
                         parallel.recompute_method == RecomputeMethod::kBlock &&
                         parallel.recompute_num_layers > 0;
  if (per_chunk) layer_run.recompute = Recompute::kNone;
  if (!model.is_transformer()) estimate();
  auto partition = PartitionLayers(run, run.config.parallel.partition);
  if (!partition.ok()) return partition.error();
  run.partition = std::move(partition).value();
  if (per_chunk) {
    layer_run = LayerRunOf(run.config, &run.partition);
    model.layers = given.layers;
    estimate();
  }
  LayerPipeline pipeline = BuildLayerPipeline(model, run.partition, PipelineOptionsOf(run));
  run.stage_costs = std::move(pipeline.stage_costs);
  run.lower.states = std::move(pipeline.flows);
  return Status::Ok();
}

}  // namespace stagecraft
