#include "parallel/context_parallel.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "comm/collective.h"
#include "model/layer_costs.h"
#include "parallel/parallel_common.h"
#include "parallel/parallel_plan.h"

namespace stagecraft {

namespace {

// The error for a CSA2 layer list whose context shards cut a compression group (`unit`: what
// seq_len must be a multiple of; `bad_layer`: the first layer whose ratio does not fit, or -1).
Status ShardsCutGroups(const Config& config, const std::string& where, int64_t unit,
                       int64_t contiguous_unit, int32_t bad_layer) {
  const int32_t cp = config.parallel.cp;
  const int64_t seq_len = config.model.seq_len;
  const bool zigzag = config.parallel.cp_sharding == CpSharding::kZigzag;
  const int64_t chunks = zigzag ? 2 * int64_t{cp} : cp;
  const std::string pieces = std::to_string(chunks) + (zigzag ? " zig-zag chunks" : " shards");
  std::string need = "seq_len must be a multiple of " + std::to_string(unit);
  if (bad_layer >= 0) {
    const int32_t ratio = config.model.layers[bad_layer].compress_ratio;
    need = "each must hold whole compression groups of m = " + std::to_string(ratio) +
           " tokens (layers[" + std::to_string(bad_layer) + "]), so " + need;
  }
  const int64_t below = seq_len / unit * unit;
  std::string suggestion = "try --seq-len " +
                           (below > 0 ? std::to_string(below) + " or " : std::string()) +
                           std::to_string(below + unit);
  if (zigzag && seq_len % contiguous_unit == 0) suggestion += ", or --cp-sharding contiguous";
  return Error{where + std::to_string(cp) + " with cp_sharding " +
               (zigzag ? "zigzag" : "contiguous") + " cuts seq_len " + std::to_string(seq_len) +
               " into " + pieces + "; " + need + ": " + suggestion};
}

// PyTorch's context_parallel needs the transformer model and excludes the all-gather mode.
Status CheckRotateMethod(const Config& config, const ConfigLocations& locations) {
  if (config.parallel.cp_rotate == CpRotate::kNone) return Status::Ok();
  const std::string at = locations.Where("parallel.context_parallel_rotate_method");
  if (config.parallel.cp_all_gather) {
    return Error{at +
                 "PyTorch's context_parallel (a ring of attention kernels, K and V rotated "
                 "by its rotate method) and cp_mode all-gather (all K and V gathered before "
                 "one attention kernel, Llama 3's) are two algorithms; give one of them"};
  }
  if (!config.model.is_transformer()) {
    return Error{at +
                 "PyTorch's context_parallel is modelled for transformer models only; drop it "
                 "(a CSA2 layer list's context parallelism is cp_sharding and cp_overlap)"};
  }
  return Status::Ok();
}

}  // namespace

Status CheckContextParallel(const Config& config, const ConfigLocations& locations) {
  if (Status rotate = CheckRotateMethod(config, locations); !rotate.ok()) return rotate;
  const ModelSpec& model = config.model;
  const int32_t cp = config.parallel.cp;
  if (cp <= 1 || !model.is_layer_list() || model.is_transformer()) return Status::Ok();
  const std::string where = locations.Where("parallel.cp");
  if (!config.cluster.given) {
    return Error{where + std::to_string(cp) +
                 " context-parallel ranks: their all-gathers need a cluster to run on; add one "
                 "(cluster: {preset: h800x2}, stagecraft list presets)"};
  }
  const int64_t seq_len = model.seq_len;
  if (seq_len % cp != 0) {
    return Error{where + std::to_string(cp) + " does not divide seq_len " +
                 std::to_string(seq_len) +
                 " (each context-parallel rank holds s/cp tokens); pick a divisor"};
  }
  const bool zigzag = config.parallel.cp_sharding == CpSharding::kZigzag;
  // Whole compression groups per chunk: seq_len a multiple of chunks·m for every ratio m.
  const int64_t chunks = zigzag ? 2 * int64_t{cp} : cp;
  int64_t unit = chunks;
  int64_t contiguous_unit = cp;
  int32_t bad_layer = -1;
  for (size_t index = 0; index < model.layers.size(); ++index) {
    const LayerSpec& layer = model.layers[index];
    if (layer.kind != LayerKind::kDecoder || layer.attention == AttentionMode::kSwaOnly) continue;
    const int64_t ratio = std::max(1, layer.compress_ratio);
    if (bad_layer < 0 && seq_len % (chunks * ratio) != 0) bad_layer = static_cast<int32_t>(index);
    unit = std::lcm(unit, chunks * ratio);
    contiguous_unit = std::lcm(contiguous_unit, cp * ratio);
  }
  if (seq_len % unit == 0) return Status::Ok();
  return ShardsCutGroups(config, where, unit, contiguous_unit, bad_layer);
}

namespace {

// One step of a transformer decoder's ring attention on one rank: the attention against one
// K and V block of c = s/cp tokens, and the rates its kernels run at.
struct RingStep {
  double flops = 0;           // forward: 4·b·c²·(a·d)/t, half of it when causal
  double backward_flops = 0;  // 2.5x the forward's with the kernel model's rates, else 2x
  double bytes = 0;           // the K and V block, bf16: 4·b·c·(kv width)/t
  double rate = 0;            // the one efficiency's FLOP/s (the ring and all-gather modes)
  double forward_rate = 0;    // PyTorch's ring: its attention kernels' FLOP/s
  double backward_rate = 0;
  bool in_node = false;  // the t·cp ranks of a CP group share a node
  LinkSpec link;         // the link a step's block crosses
};

RingStep RingStepOf(const Config& config, const TransformerRun& run) {
  const TransformerSpec& spec = config.model.transformer;
  const ParallelSpec& parallel = config.parallel;
  const ClusterSpec& cluster = config.cluster;
  const int32_t t = parallel.tp;
  const int32_t cp = parallel.cp;
  RingStep step;
  const double q_width = static_cast<double>(spec.heads * spec.head_dim_or_default());
  const double kv_width =
      parallel.cp_rotate != CpRotate::kNone
          ? q_width
          : static_cast<double>(spec.kv_heads_or_heads() * spec.head_dim_or_default());
  const double block = static_cast<double>(run.seq_len) / cp;
  const double b = static_cast<double>(run.micro_batch);
  step.flops = 4 * b * block * block * q_width / t * (spec.causal ? 0.5 : 1.0);
  step.bytes = 4 * b * block * kv_width / t;
  step.in_node = t * cp <= cluster.devices_per_node;
  step.link = step.in_node ? cluster.intra_node : cluster.inter_node;
  step.rate = cluster.effective_flops_per_s();
  // A step of PyTorch's ring is one attention kernel: forward at the kernel model's attention
  // rate, backward 2.5x the FLOPs at its backward rate (transformer_kernels.cc).
  const KernelModel& kernels = cluster.kernels;
  const bool kernel_rates = cluster.kernel_costed() && kernels.attention_forward_efficiency > 0 &&
                            kernels.attention_backward_efficiency > 0;
  step.forward_rate =
      kernel_rates ? cluster.peak_flops_per_s * kernels.attention_forward_efficiency : step.rate;
  step.backward_rate =
      kernel_rates ? cluster.peak_flops_per_s * kernels.attention_backward_efficiency : step.rate;
  step.backward_flops = (kernel_rates ? 2.5 : 2.0) * step.flops;
  return step;
}

// PyTorch's context_parallel with rotate method allgather: the gathered K and V waited for
// behind step 0's kernel, forward and backward; the backward's fp32 dK and dV passed on each
// step behind that step's kernel.
CpExposure RotateAllGather(const Config& config, const RingStep& step) {
  const int32_t cp = config.parallel.cp;
  const double gather =
      static_cast<double>(
          RingGather(config.cluster, cp, step.in_node ? cp : 1, step.bytes * cp).ns()) *
      1e-9;
  const double forward_step = step.forward_rate > 0 ? step.flops / step.forward_rate : 0.0;
  const double backward_step =
      step.backward_rate > 0 ? step.backward_flops / step.backward_rate : 0.0;
  return {FromSeconds(std::max(0.0, gather - forward_step)),
          FromSeconds(std::max(0.0, gather - backward_step)) +
              RingAttentionExposed(cp, step.backward_flops, step.backward_rate, 2 * step.bytes,
                                   step.link)};
}

}  // namespace

CpExposure TransformerContextParallel(const Config& config, const TransformerRun& run) {
  const ParallelSpec& parallel = config.parallel;
  const int32_t cp = parallel.cp;
  CpExposure exposure;
  if (cp <= 1) return exposure;
  const RingStep step = RingStepOf(config, run);
  if (parallel.cp_rotate == CpRotate::kAllGather) {
    exposure = RotateAllGather(config, step);
  } else if (parallel.cp_rotate == CpRotate::kAllToAll) {
    exposure.forward =
        RingAttentionExposed(cp, step.flops, step.forward_rate, step.bytes, step.link);
    exposure.backward = RingAttentionExposed(cp, step.backward_flops, step.backward_rate,
                                             3 * step.bytes, step.link);
  } else if (parallel.cp_all_gather) {
    exposure.forward = RingGather(config.cluster, cp, step.in_node ? cp : 1, step.bytes * cp);
    exposure.backward = exposure.forward;
  } else {
    exposure.forward = RingAttentionExposed(cp, step.flops, step.rate, step.bytes, step.link);
    exposure.backward =
        RingAttentionExposed(cp, 2 * step.flops, step.rate, 2 * step.bytes, step.link);
  }
  if (parallel.recompute == Recompute::kFull) exposure.backward += exposure.forward;
  return exposure;
}

StageGathers GathersOfStage(const ModelSpec& model, const Partition& partition, int32_t stage,
                            const std::vector<SharedStateEdge>& edges) {
  StageGathers gathers;
  for (int32_t index = partition.begin(stage); index < partition.end(stage); ++index) {
    const LayerSpec& layer = model.layers[index];
    if (layer.kind != LayerKind::kDecoder || layer.attention != AttentionMode::kFull) continue;
    gathers.full_layers.push_back(index);
    gathers.states.insert({index, StateKind::kCompressedKv});
    gathers.states.insert({index, StateKind::kIndexerKeys});
  }
  for (const SharedStateEdge& edge : edges) {
    const bool gathered =
        edge.kind == StateKind::kCompressedKv || edge.kind == StateKind::kIndexerKeys;
    if (gathered && partition.StageOf(edge.consumer) == stage) {
      gathers.states.insert({edge.producer, edge.kind});
    }
  }
  return gathers;
}

namespace {

// A stage's local compute (what needs no gathered entry), forward and backward, that its CP
// communication can hide behind (cp_overlap).
CpExposure LocalCompute(const Config& config, const Partition& partition, int32_t stage) {
  const ModelSpec& model = config.model;
  const double rate = config.cluster.effective_flops_per_s();
  CpExposure hide;
  for (int32_t index = partition.begin(stage); index < partition.end(stage); ++index) {
    const LayerSpec& layer = model.layers[index];
    const Time local =
        FromSeconds(LayerLocalFlops(layer, model.dims, model.seq_len, model.micro_batch_size) /
                    config.parallel.cp / rate);
    hide.forward += std::min(local, layer.forward);
    hide.backward += std::min(local, layer.input_grad);
  }
  return hide;
}

}  // namespace

CpExposure LayerListStageContextParallel(const Config& config, const Partition& partition,
                                         int32_t stage, const std::vector<SharedStateEdge>& edges) {
  const ModelSpec& model = config.model;
  const ClusterSpec& cluster = config.cluster;
  const Csa2Dims& dims = model.dims;
  const int32_t cp = config.parallel.cp;
  // The CP peers of a rank sit tp apart (tp innermost).
  const int32_t per_node =
      std::min(cp, std::max(1, cluster.devices_per_node / std::max(1, config.parallel.tp)));
  const double tokens = static_cast<double>(model.tokens_per_microbatch());
  const StageGathers gathers = GathersOfStage(model, partition, stage, edges);
  CpExposure exposure;
  for (const auto& [producer, kind] : gathers.states) {
    const int32_t ratio = std::max(1, model.layers[producer].compress_ratio);
    const Time gather =
        RingGather(cluster, cp, per_node, tokens * StateBytesPerToken(kind, ratio, dims));
    exposure.forward += gather;
    if (kind == StateKind::kCompressedKv || dims.indexer_trained) exposure.backward += gather;
  }
  for (int32_t full : gathers.full_layers) {
    const double halo_bytes = static_cast<double>(std::max(1, model.layers[full].compress_ratio)) *
                              dims.kv_dim * 2.0 * model.micro_batch_size;
    const Time halo =
        RingTime(cluster, Collective::kSendRecv, 2, cp <= per_node ? 2 : 1, halo_bytes);
    exposure.forward += halo;
    exposure.backward += halo;
  }
  if (!config.parallel.cp_overlap) return exposure;
  const CpExposure hide = LocalCompute(config, partition, stage);
  return {std::max(Time(), exposure.forward - hide.forward),
          std::max(Time(), exposure.backward - hide.backward)};
}

}  // namespace stagecraft
