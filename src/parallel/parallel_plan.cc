// The parallel dimensions around the pipeline for transformer models: the layer list with times
// on the configured device, the tensor-parallel collectives after each action, the
// data-parallel gradient reduction per stage, the optimizer step per rank, and the FLOP counts
// behind MFU and per-GPU throughput.
#include "parallel/parallel_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include "comm/collective.h"
#include "core/units.h"
#include "model/layer_costs.h"
#include "model/layer_kernels.h"
#include "model/transformer_kernels.h"

namespace stagecraft {
namespace {

// Bytes of HBM traffic per parameter in a mixed-precision Adam step: read the fp32 master
// weight, gradient, m and v (16), write weight, m and v (12) and the bf16 copy (2).
constexpr double kOptimizerBytesPerParam = 30.0;
// Gradients are reduced in fp32 (Megatron's default main_grads).
constexpr double kGradientBytes = 4.0;

TransformerRun RunOf(const Config& config) {
  TransformerRun run;
  run.seq_len = config.model.seq_len;
  run.micro_batch = config.model.micro_batch_size;
  run.tensor_parallel = config.parallel.tp;
  run.context_parallel = config.parallel.cp;
  run.expert_parallel = config.parallel.ep;
  run.sequence_parallel = config.parallel.sequence_parallel;
  run.recompute = config.parallel.recompute;
  run.fp8 = config.parallel.fp8;
  run.fused_kernels = config.parallel.fused_kernels;
  run.cross_entropy = config.parallel.cross_entropy_fusion;
  run.ring_merge = config.parallel.cp_rotate != CpRotate::kNone;
  if (config.parallel.recompute_num_layers > 0 &&
      config.parallel.recompute_method == RecomputeMethod::kUniform) {
    // Megatron's --recompute-method uniform --recompute-num-layers N: every layer, N a checkpoint
    // (a chunk of fewer layers is one group).
    const int32_t per_chunk = std::max(
        1, config.model.transformer.layers / std::max(1, config.parallel.pp * config.parallel.vpp));
    run.recompute_group = std::min(config.parallel.recompute_num_layers, per_chunk);
  } else if (config.parallel.recompute_num_layers > 0) {
    // Megatron's --recompute-method block --recompute-num-layers N: N layers per pipeline chunk.
    const double per_chunk = static_cast<double>(config.model.transformer.layers) /
                             std::max(1, config.parallel.pp * config.parallel.vpp);
    run.recompute_fraction =
        std::min(1.0, static_cast<double>(config.parallel.recompute_num_layers) / per_chunk);
  }
  return run;
}

}  // namespace

LayerRun LayerRunOf(const Config& config, const Partition* partition) {
  const ParallelSpec& parallel = config.parallel;
  LayerRun run;
  run.expert_parallel = parallel.ep;
  run.context = ContextShards{parallel.cp, parallel.cp_sharding == CpSharding::kZigzag};
  run.tensor_parallel = parallel.tp;
  run.sequence_parallel = parallel.sequence_parallel;
  run.recompute = parallel.recompute;
  if (partition != nullptr && parallel.recompute == Recompute::kFull &&
      parallel.recompute_method == RecomputeMethod::kBlock && parallel.recompute_num_layers > 0) {
    // Megatron's block method: the first N decoders of each pipeline chunk recompute.
    const std::vector<LayerSpec>& layers = config.model.layers;
    run.recomputed.assign(layers.size(), false);
    for (int32_t stage = 0; stage < partition->num_stages(); ++stage) {
      int32_t decoders = 0;
      for (int32_t index = partition->begin(stage); index < partition->end(stage); ++index) {
        if (layers[index].kind != LayerKind::kDecoder) continue;
        run.recomputed[index] = decoders < parallel.recompute_num_layers;
        ++decoders;
      }
    }
  }
  return run;
}

namespace {

Time AllReduce(const ClusterSpec& cluster, int32_t ranks, int32_t ranks_per_node, double bytes) {
  return RingTime(cluster, Collective::kAllReduce, ranks, ranks_per_node, bytes);
}

// A ring all-gather (or reduce-scatter: the same time) of `bytes` in all over `ranks`.
Time Gather(const ClusterSpec& cluster, int32_t ranks, int32_t ranks_per_node, double bytes) {
  return RingTime(cluster, Collective::kAllGather, ranks, ranks_per_node, bytes);
}

// `kind` over a stage's dense bytes among `ranks` (`per_node` of them in a node) plus over its
// routed-expert bytes among the ranks / ep that hold the same experts.
Time DenseAndExperts(const ClusterSpec& cluster, Collective kind, int32_t ranks, int32_t per_node,
                     int32_t ep, double dense_bytes, double expert_bytes) {
  return RingTime(cluster, kind, ranks, per_node, dense_bytes) +
         RingTime(cluster, kind, ranks / ep, std::max(1, per_node / ep), expert_bytes);
}

// The bucketing of the data-parallel reduction: grad_buckets, or Megatron's buckets when
// overlap_grad_reduce asks for the overlap without naming buckets.
GradBuckets BucketsOf(const ParallelSpec& parallel) {
  if (parallel.grad_buckets == GradBuckets::kNone && parallel.overlap_grad_reduce) {
    return GradBuckets::kMegatron;
  }
  return parallel.grad_buckets;
}

// The data-parallel reduction of `grad_bytes` (fp32 gradients, produced evenly through the
// stage's last backward) in `mode`'s buckets (Megatron's sized for `dp` replicas): each bucket's
// `kind` (all-reduce, or reduce-scatter with the distributed optimizer or FSDP) over `ranks`,
// ready once the backward has produced it (its cumulative share of the bytes). Empty without
// buckets.
std::vector<std::pair<double, Time>> Buckets(GradBuckets mode, int32_t dp,
                                             const ClusterSpec& cluster, Collective kind,
                                             int32_t ranks, int32_t per_node, double grad_bytes) {
  std::vector<std::pair<double, Time>> buckets;
  if (mode == GradBuckets::kNone || ranks <= 1 || grad_bytes <= 0) return buckets;
  const double mib = 1024.0 * 1024.0;
  const double regular =
      mode == GradBuckets::kPytorch ? 25 * mib : std::max(4e7, 1e6 * dp) * kGradientBytes;
  double done = 0;
  // The buckets but the first (PyTorch's) and the last are one size: each size is costed once
  // (a 70B model's unsharded gradients make thousands of buckets per layout).
  double costed_size = -1;
  Time costed_time;
  buckets.reserve(static_cast<size_t>(std::ceil(grad_bytes / regular)) + 2);
  while (done < grad_bytes) {
    const double size =
        std::min(grad_bytes - done, mode == GradBuckets::kPytorch && done == 0 ? mib : regular);
    done += size;
    if (size != costed_size) {
      costed_size = size;
      costed_time = RingTime(cluster, kind, ranks, per_node, size);
    }
    buckets.emplace_back(done / grad_bytes, costed_time);
  }
  return buckets;
}

// Buckets of the dense gradients over `ranks`, then of the routed experts' over ranks / ep.
std::vector<std::pair<double, Time>> DenseAndExpertBuckets(
    GradBuckets mode, int32_t dp, const ClusterSpec& cluster, Collective kind, int32_t ranks,
    int32_t per_node, int32_t ep, double dense_bytes, double expert_bytes) {
  std::vector<std::pair<double, Time>> buckets =
      Buckets(mode, dp, cluster, kind, ranks, per_node, dense_bytes);
  for (const auto& bucket :
       Buckets(mode, dp, cluster, kind, ranks / ep, std::max(1, per_node / ep), expert_bytes)) {
    buckets.push_back(bucket);
  }
  return buckets;
}

// An expert-parallel MoE layer's all-to-alls one way: the dispatch and the combine among the ep
// ranks, `per_node` of them in a node.
Time ExpertAllToAlls(const ClusterSpec& cluster, int32_t ep, int32_t per_node, double dispatch,
                     double combine) {
  return RingTime(cluster, Collective::kAllToAll, ep, per_node, dispatch) +
         RingTime(cluster, Collective::kAllToAll, ep, per_node, combine);
}

}  // namespace

Status BuildTransformerModel(Config& config) {
  ModelSpec& model = config.model;
  if (!model.is_transformer() || !model.layers.empty()) return Status::Ok();
  const TransformerSpec& spec = model.transformer;
  const int32_t t = config.parallel.tp;
  if (spec.heads % t != 0 || spec.ffn_or_default() % t != 0) {
    return Error{"parallel.tp: " + std::to_string(t) + " does not divide the " +
                 std::to_string(spec.heads) + " heads and the MLP width " +
                 std::to_string(spec.ffn_or_default()) +
                 " (tensor parallelism splits both); pick a divisor of both"};
  }
  const int32_t cp = config.parallel.cp;
  const int32_t ep = config.parallel.ep;
  if (ep > 1 && !spec.moe()) {
    return Error{"parallel.ep: " + std::to_string(ep) +
                 " expert-parallel ranks, but the model has no experts (a dense MLP); drop ep"};
  }
  if (ep > 1 && (config.parallel.dp % ep != 0 || spec.experts % ep != 0)) {
    return Error{"parallel.ep: " + std::to_string(ep) + " must divide dp (" +
                 std::to_string(config.parallel.dp) +
                 "; expert parallelism shards the experts "
                 "over data-parallel ranks) and the " +
                 std::to_string(spec.experts) + " routed experts"};
  }
  if (model.seq_len % cp != 0) {
    return Error{"parallel.cp: " + std::to_string(cp) + " does not divide seq_len " +
                 std::to_string(model.seq_len) +
                 " (each context-parallel rank holds s/cp tokens); pick a divisor"};
  }
  if (config.cluster.kernel_costed()) {
    model.layers = TransformerLayers(spec, RunOf(config), config.cluster.rates());
  } else {
    ComputeRate rate;
    rate.flops_per_s = config.cluster.effective_flops_per_s();
    rate.bytes_per_s = config.cluster.hbm_bytes_per_s * config.cluster.memory_efficiency;
    model.layers = TransformerLayers(spec, RunOf(config), rate);
  }
  // The stage-to-stage send: b·s·h bf16 per microbatch, split over the TP ranks (Megatron's
  // scatter/gather of the pipeline send).
  model.dims.hc_streams = 1;
  model.dims.hidden = static_cast<int32_t>(spec.hidden / (t * cp));  // and over the CP ranks
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> CostAssumptions(const Config& config) {
  std::vector<std::pair<std::string, std::string>> out;
  const ModelSpec& model = config.model;
  const ClusterSpec& cluster = config.cluster;
  if (!model.is_layer_list()) return out;
  const auto percent = [](double fraction) { return FormatFixed(100 * fraction, 1) + "%"; };
  const auto on = [](bool flag) { return std::string(flag ? "on" : "off"); };
  const std::string peak = FormatFixed(cluster.peak_flops_per_s / 1e12, 1) + " TFLOP/s";
  if (cluster.kernel_costed()) {
    const KernelModel& k = cluster.kernels;
    out.emplace_back("cost_model", "kernel (doc/fidelity.md) on " + cluster.device + ", " + peak);
    out.emplace_back("gemm", percent(k.gemm_efficiency) + " of peak (MAMF) x " +
                                 FormatFixed(k.gemm_sustained, 2) + " sustained");
    const AttentionKernel asked = model.transformer.attention_kernel;
    const AttentionKernel runs = ResolveAttentionKernel(k, asked);
    const auto share = [&](bool backward) {
      return AttentionTime(cluster.rates(), 1e12, backward, 0, runs).efficiency;
    };
    const std::string kernel_name =
        std::string(AttentionKernelName(runs)) +
        (asked == AttentionKernel::kTe ? " (Transformer Engine's choice)"
         : asked != runs ? std::string(" (") + AttentionKernelName(asked) + " does not run on " +
                               cluster.device + ")"
                         : "");
    out.emplace_back("attention", kernel_name + ", " + percent(share(false)) + " / " +
                                      percent(share(true)) + " of peak (forward / backward)" +
                                      (runs == AttentionKernel::kTriton
                                           ? "; FlashAttention in Triton (attn_impl: triton), "
                                             "forward " +
                                                 FormatFixed(kTritonAttentionForwardSlowdown, 1) +
                                                 "x and backward " +
                                                 FormatFixed(kTritonAttentionBackwardSlowdown, 1) +
                                                 "x slower (Dao 2023, §4.1)"
                                           : std::string()));
    out.emplace_back("memory_bound", percent(cluster.memory_efficiency) + " of HBM");
    out.emplace_back("host", FormatFixed(k.host_seconds_per_kernel * 1e6, 1) + " us per kernel");
  } else {
    out.emplace_back(
        "cost_model",
        "one efficiency, " + FormatFixed(cluster.compute_efficiency, 2) + " of " + peak +
            (cluster.efficiency_given ? " (cluster.device.efficiency)" : " (default)"));
  }
  if (!model.is_transformer()) return out;
  const ParallelSpec& parallel = config.parallel;
  out.emplace_back("overlap", "grad_reduce " + on(parallel.overlap_grad_reduce) +
                                  ", param_gather " + on(parallel.overlap_param_gather) +
                                  ", tp_comm " + on(parallel.tp_comm_overlap) + ", async_tp " +
                                  on(parallel.async_tp));
  out.emplace_back("fp8",
                   on(parallel.fp8) + (parallel.fp8_all_gather ? ", FSDP all-gather in FP8 "
                                                                 "(enable_fsdp_float8_all_gather)"
                                                               : ""));
  out.emplace_back("fused_kernels", on(parallel.fused_kernels));
  if (parallel.cross_entropy_fusion != CrossEntropyFusion::kNone) {
    out.emplace_back("cross_entropy",
                     parallel.cross_entropy_fusion == CrossEntropyFusion::kTe
                         ? "fused, Transformer Engine's kernels (cross_entropy_fusion: te)"
                     : parallel.cross_entropy_fusion == CrossEntropyFusion::kTorch
                         ? "PyTorch's F.cross_entropy on fp32 logits (cross_entropy_fusion: torch)"
                     : parallel.cross_entropy_fusion == CrossEntropyFusion::kTorchCompiled
                         ? "PyTorch's F.cross_entropy under torch.compile (cross_entropy_fusion: "
                           "torch-compiled)"
                         : "fused, Megatron's native passes (cross_entropy_fusion: native)");
  }
  if (parallel.cp > 1) {
    const char* mode =
        parallel.cp_rotate == CpRotate::kAllGather
            ? "PyTorch context_parallel, rotate allgather (a kernel a step, fp32 merges)"
        : parallel.cp_rotate == CpRotate::kAllToAll
            ? "PyTorch context_parallel, rotate alltoall (a kernel a step, fp32 merges)"
        : parallel.cp_all_gather ? "all-gather of K and V, one kernel"
                                 : "ring, one kernel";
    out.emplace_back("cp_attention", mode);
  }
  return out;
}

Status CheckFloat8AllGather(const Config& config, const ConfigLocations& locations) {
  const ParallelSpec& parallel = config.parallel;
  if (!parallel.fp8_all_gather) return Status::Ok();
  const std::string where = locations.Where("parallel.enable_fsdp_float8_all_gather");
  if (!config.model.is_transformer()) {
    return Error{where +
                 "FSDP's float8 all-gather is modelled for transformer models only; drop it"};
  }
  if (!parallel.fp8) {
    return Error{where +
                 "gathers the float8 linears' weights in FP8, and this run has none; add fp8: "
                 "true or drop it"};
  }
  if (parallel.zero_stage < 3) {
    return Error{where +
                 "changes FSDP's parameter all-gathers, and this run does not shard its "
                 "parameters; add fsdp: full-shard (or zero_stage: 3) or drop it"};
  }
  return Status::Ok();
}

Status CheckContextParallel(const Config& config, const ConfigLocations& locations) {
  const ModelSpec& model = config.model;
  const int32_t cp = config.parallel.cp;
  if (config.parallel.cp_rotate != CpRotate::kNone) {
    const std::string at = locations.Where("parallel.context_parallel_rotate_method");
    if (config.parallel.cp_all_gather) {
      return Error{at +
                   "PyTorch's context_parallel (a ring of attention kernels, K and V rotated "
                   "by its rotate method) and cp_mode all-gather (all K and V gathered before "
                   "one attention kernel, Llama 3's) are two algorithms; give one of them"};
    }
    if (!model.is_transformer()) {
      return Error{at +
                   "PyTorch's context_parallel is modelled for transformer models only; drop it "
                   "(a CSA2 layer list's context parallelism is cp_sharding and cp_overlap)"};
    }
  }
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
  const std::string pieces = std::to_string(chunks) + (zigzag ? " zig-zag chunks" : " shards");
  std::string need = "seq_len must be a multiple of " + std::to_string(unit);
  if (bad_layer >= 0) {
    const int32_t ratio = model.layers[bad_layer].compress_ratio;
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

namespace {

// The ranks holding a stage's parameters: its rank, and with the dual placement (DualPipe's two
// model copies) the mirrored rank too.
std::vector<int32_t> HoldingRanks(const Schedule& schedule, const std::vector<int32_t>& ranks,
                                  size_t stage) {
  if (ranks[stage] < 0) return {};
  if (schedule.placement != Placement::kDual) return {ranks[stage]};
  return {ranks[stage], schedule.num_ranks - 1 - ranks[stage]};
}

// The optimizer step of each rank's parameters, bound by HBM traffic.
std::vector<Time> OptimizerSteps(const Config& config, const Schedule& schedule,
                                 const std::vector<double>& stage_params, int32_t shards) {
  const ClusterSpec& cluster = config.cluster;
  const double bandwidth = cluster.hbm_bytes_per_s * cluster.memory_efficiency;
  std::vector<Time> steps(static_cast<size_t>(schedule.num_ranks), Time());
  const std::vector<int32_t> ranks = StageRanks(schedule);
  for (size_t stage = 0; stage < stage_params.size(); ++stage) {
    if (bandwidth <= 0) continue;
    const double params = stage_params[stage] / std::max(1, shards);
    for (int32_t rank : HoldingRanks(schedule, ranks, stage)) {
      steps[rank] += FromSeconds(params * kOptimizerBytesPerParam / bandwidth);
    }
  }
  return steps;
}

// The parameters each rank holds: those of the stages it runs (HoldingRanks).
std::vector<double> RankParams(const Schedule& schedule, const std::vector<double>& stage_params) {
  std::vector<double> params(static_cast<size_t>(schedule.num_ranks), 0.0);
  const std::vector<int32_t> ranks = StageRanks(schedule);
  for (size_t stage = 0; stage < stage_params.size(); ++stage) {
    for (int32_t rank : HoldingRanks(schedule, ranks, stage)) params[rank] += stage_params[stage];
  }
  return params;
}

// What FSDP (zero_stage 3) keeps whole on each rank at its peak, beyond what ZeRO's sharding
// says (memory/model_states.h, StateResidency):
//   - Under pipeline parallelism, torch.distributed.pipelining runs every backward but a
//     stage's last with set_reshard_after_backward(False) and set_requires_gradient_sync(False)
//     (pytorch torch/distributed/pipelining/stage.py, _PipelineStageBase
//     .backward_maybe_with_nosync, at 1963fc8 and since), and torchtitan wraps every block with
//     reshard_after_forward=False under PP (torchtitan parallelize_llama apply_fsdp at 9dec370,
//     reshard "default"). A stage's gathered parameters stay until its last backward, and its
//     gradients accumulate unsharded in the reduce dtype, fp32 with torchtitan's
//     mixed_precision_reduce = "float32" (FSDP2 FSDPParam.to_accumulated_grad_if_needed), until
//     that backward reduce-scatters them.
//   - Without it, reshard_after_forward=False (fsdp_reshard_after_forward: false) keeps each
//     block's parameters from its forward to its backward: all of them at the end of the
//     forward; gradients are reduce-scattered every backward.
StateResidency FsdpResidency(const ParallelSpec& parallel, const Schedule& schedule,
                             const std::vector<double>& stage_gathered_bytes) {
  StateResidency residency;
  if (parallel.zero_stage < 3) return residency;
  const bool pipelined = schedule.num_ranks > 1;
  if (!pipelined && parallel.reshard_after_forward != ReshardAfterForward::kNo) return residency;
  residency.gathered_parameter_bytes = RankParams(schedule, stage_gathered_bytes);
  residency.gradients_whole = pipelined;
  return residency;
}

// The gathers one CP rank joins for a stage of a CSA2 layer list, per microbatch: the compressed
// KV of every producer it reads (its own full layers', and each received from an earlier stage:
// a CP rank receives only its shard of the payload and re-gathers it) and the indexer keys its
// full and reindex layers score, as (producer layer, kind); and its full layers, each with a halo.
struct StageGathers {
  std::set<std::pair<int32_t, StateKind>> states;
  std::vector<int32_t> full_layers;
};

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

// Context parallelism of one stage of a CSA2 layer list (csa2.md, "Context parallelism (V4 /
// V4.1)"), into c.cp_forward and c.cp_backward. Rank order: the cp ranks of a stage sit next to
// each other (cp innermost, then dp with its ep groups, pp outermost), so a CP group shares a
// node while cp <= devices per node. Forward, per microbatch: a ring all-gather over the cp ranks
// of each gathered state (GathersOfStage; [S/m, kv_dim] or [S/m, c_I] bf16 per sequence), and
// per full layer the halo of its last m uncompressed entries (kv_dim bf16 each) to the next CP
// rank, a point-to-point α + bytes/β added to the collective (zig-zag's second halo runs at the
// same time on the reverse link). Backward: a reduce-scatter of each gathered dKV (and of the
// indexer keys' gradient when the indexer is trained) and each halo's gradient back, the same
// times. With cp_overlap only max(0, communication − overlappable) is charged, overlappable being
// the stage's compute that needs no gathered entry (LayerLocalFlops / cp at the device's rate,
// at most each layer's F, or I backward). An approximation: it lets every gather of the stage
// hide behind all of the stage's local work, where a real layer hides its gathers only behind
// the local work that comes before its attention.
void AddContextParallel(const Config& config, const Partition& partition, int32_t stage,
                        const std::vector<SharedStateEdge>& edges, StageCollectives& c) {
  const ModelSpec& model = config.model;
  const ClusterSpec& cluster = config.cluster;
  const Csa2Dims& dims = model.dims;
  const int32_t cp = config.parallel.cp;
  // The CP peers of a rank sit tp apart (tp innermost).
  const int32_t per_node =
      std::min(cp, std::max(1, cluster.devices_per_node / std::max(1, config.parallel.tp)));
  const double tokens = static_cast<double>(model.tokens_per_microbatch());
  const StageGathers gathers = GathersOfStage(model, partition, stage, edges);
  Time forward;
  Time backward;
  for (const auto& [producer, kind] : gathers.states) {
    const int32_t ratio = std::max(1, model.layers[producer].compress_ratio);
    const Time gather =
        Gather(cluster, cp, per_node, tokens * StateBytesPerToken(kind, ratio, dims));
    forward += gather;
    if (kind == StateKind::kCompressedKv || dims.indexer_trained) backward += gather;
  }
  for (int32_t full : gathers.full_layers) {
    const double halo_bytes = static_cast<double>(std::max(1, model.layers[full].compress_ratio)) *
                              dims.kv_dim * 2.0 * model.micro_batch_size;
    const Time halo =
        RingTime(cluster, Collective::kSendRecv, 2, cp <= per_node ? 2 : 1, halo_bytes);
    forward += halo;
    backward += halo;
  }
  if (config.parallel.cp_overlap) {
    const double rate = cluster.effective_flops_per_s();
    Time hide_forward;
    Time hide_backward;
    for (int32_t index = partition.begin(stage); index < partition.end(stage); ++index) {
      const LayerSpec& layer = model.layers[index];
      const Time local = FromSeconds(
          LayerLocalFlops(layer, dims, model.seq_len, model.micro_batch_size) / cp / rate);
      hide_forward += std::min(local, layer.forward);
      hide_backward += std::min(local, layer.input_grad);
    }
    forward = std::max(Time(), forward - hide_forward);
    backward = std::max(Time(), backward - hide_backward);
  }
  c.cp_forward += forward;
  c.cp_backward += backward;
}

// One decoder layer's tensor-parallel communication as the compute stream sees it, forward and
// backward: two collectives of b·s·h each way (with recomputation the forward's again in the
// backward, as TpRecompute says, beside the GEMMs it recomputes). With Megatron's tp_comm_overlap
// or torchtitan's async TP each collective is split against the GEMM next to it: only what the
// layer's GEMMs cannot cover is exposed, and the GEMMs that run beside a collective slow by
// kOverlapSlowdown; async TP leaves the backward's reduce-scatters exposed (ExposeTp).
struct TpExposure {
  Time forward;
  Time backward;
};

// What a layer's backward repeats of its forward: the share of its TP collectives and of its
// GEMMs. Full recomputation repeats both (for the layers it covers). torchtitan's per-op
// selective policy (selective-op) saves every compute op's output but every second matmul's,
// and of the collectives only the reduce-scatters (_op_sac_save_list, torchtitan/models/llama3/
// infra/parallelize.py at 018740b): the backward recomputes half the matmuls, and with them the two
// sequence-parallel all-gathers their inputs come from (q, k, v and the MLP's w1, w3 read them;
// k and w3 are recomputed). Megatron's selective recomputation repeats the attention core only,
// inside a TP rank.
struct TpRecompute {
  double collectives = 0.0;
  double gemm = 0.0;
};
TpRecompute TpRecomputeOf(Recompute recompute, double fraction) {
  if (recompute == Recompute::kFull) return {fraction, fraction};
  if (recompute == Recompute::kSelectiveOp) return {1.0, 0.5};
  return {};
}

// The share of a GEMM's speed lost while a collective runs beside it: the communication
// kernels take about 16 of the device's SMs (NCCL's and Transformer Engine's userbuffers'
// channel counts; an assumption, doc/fidelity.md), 16/132 on an H100.
constexpr double kOverlapSlowdown = 16.0 / 132.0;

// Whether the TP collectives overlap the GEMMs (tp_comm_overlap, async_tp; kernel-costed runs).
bool TpOverlaps(const Config& config) {
  const ParallelSpec& parallel = config.parallel;
  return (parallel.tp_comm_overlap || parallel.async_tp) && parallel.tp > 1 &&
         config.cluster.kernel_costed();
}

// A decoder's exposure given its kernels' GEMM time (`kernels`, used when TpOverlaps).
TpExposure ExposeTp(const Config& config, Time collective, TpRecompute recomputed,
                    const LayerKernelTimes& kernels) {
  TpExposure exposure{collective * 2, collective * 2};
  exposure.backward += FromSeconds(collective.ms() * 1e-3 * 2 * recomputed.collectives);
  if (!TpOverlaps(config)) return exposure;
  const auto hidden = [](Time communication, double gemm_seconds) {
    const double comm = communication.ms() * 1e-3;
    return FromSeconds(std::max(0.0, comm - gemm_seconds) +
                       kOverlapSlowdown * std::min(comm, gemm_seconds));
  };
  exposure.forward = hidden(exposure.forward, kernels.forward_gemm);
  const double backward_gemm = kernels.backward_gemm + recomputed.gemm * kernels.forward_gemm;
  if (config.parallel.tp_comm_overlap) {
    exposure.backward = hidden(exposure.backward, backward_gemm);
  } else {
    // torchtitan's async TP is PyTorch's micro-pipeline TP pass (torch/_inductor/fx_passes/
    // micro_pipeline_tp.py), which fuses an all-gather with the matmuls that take its output as
    // their left operand, and a reduce-scatter with the one matmul whose sole user it is. In the
    // backward the two reduce-scatters (of the layer inputs' gradients) take a sum of matmuls
    // (wq + wk + wv, w1 + w3: separate linears in torchtitan's Llama), so they stay exposed:
    // half the backward's TP time, one all-reduce's worth; the all-gathers fuse with the
    // output projections' input-gradient GEMMs.
    exposure.backward = collective + hidden(exposure.backward - collective, backward_gemm);
  }
  return exposure;
}

TpExposure DecoderTpExposure(const Config& config, const TransformerRun& run, Time collective,
                             TpRecompute recomputed, bool moe_layer) {
  return ExposeTp(config, collective, recomputed,
                  TpOverlaps(config) ? DecoderKernelTimes(config.model.transformer, run,
                                                          config.cluster.rates(), moe_layer)
                                     : LayerKernelTimes());
}

// CSA2 layer lists (csa2.md formulas): tensor, expert and data parallelism around the pipeline.
// Rank order: tp innermost (a TP group shares a node while tp <= devices per node), then cp, then
// dp with its ep groups, pp outermost. Tensor parallelism (doc/csa2.md, "Tensor parallelism"):
// per decoder two collectives of a CP rank's b·s/cp·d bf16 forward (after the row-parallel
// output projection and the MLP: all-reduces, or with sequence parallelism a reduce-scatter and
// an all-gather, the same ring time) and two backward, again in the backward for a layer that
// recomputes its forward; the embedding's output all-reduced once, the head's vocab-parallel
// cross entropy 3 all-reduces of b·s fp32 scalars; with tp_comm_overlap / async_tp only what the
// layer's GEMMs cannot cover (ExposeTp). A MoE layer's all-to-all dispatch carries k_e·d bytes
// per token (FP8) and its combine k_e·d·2 (BF16), each way (csa2.md), one TP rank's 1/t of the
// tokens, again in the backward when the layer recomputes; routed experts are sharded over ep
// (and their width over tp) and their gradients reduced over dp·cp/ep. Parameters per rank:
// the split ones / t, the replicated ones whole (LayerReplicatedParams).
ParallelPlan PlanLayerListParallel(const Config& config, const Partition& partition,
                                   const Schedule& schedule) {
  ParallelPlan plan;
  const ModelSpec& model = config.model;
  const ParallelSpec& parallel = config.parallel;
  const ClusterSpec& cluster = config.cluster;
  const Csa2Dims& dims = model.dims;
  const LayerRun layer_run = LayerRunOf(config, &partition);
  const int32_t t = std::max(1, parallel.tp);
  const int32_t d = parallel.dp;
  const int32_t ep = parallel.ep;
  const int32_t cp = parallel.cp;
  const int32_t m = schedule.num_microbatches;
  const double tokens = static_cast<double>(model.tokens_per_microbatch());
  double flops_per_microbatch = 0;
  double recomputed_flops = 0;
  for (size_t index = 0; index < model.layers.size(); ++index) {
    const LayerSpec& layer = model.layers[index];
    const double forward = LayerForwardFlops(layer, dims, model.seq_len, model.micro_batch_size);
    flops_per_microbatch += 3 * forward;
    const Recompute recompute = layer_run.RecomputeOf(layer, index);
    if (recompute == Recompute::kFull) recomputed_flops += forward;
    if (recompute == Recompute::kSelective || recompute == Recompute::kSelectiveOp) {
      recomputed_flops +=
          LayerAttentionCoreFlops(layer, dims, model.seq_len, model.micro_batch_size) +
          LayerScoringFlops(layer, dims, model.seq_len, model.micro_batch_size);
    }
  }
  plan.world_size = schedule.num_ranks * parallel.tp * parallel.cp * parallel.dp;
  plan.tokens_per_iteration = static_cast<int64_t>(tokens) * m * d;
  plan.model_flops_per_iteration = flops_per_microbatch * m * d;
  plan.hardware_flops_per_iteration = (flops_per_microbatch + recomputed_flops) * m * d;
  plan.peak_flops_per_device = cluster.peak_flops_per_s;
  // The CP ranks hold the same weights as the DP ranks: gradients are reduced, and ZeRO shards,
  // over dp·cp ranks (t apart: a node holds devices / t of them); the ep ranks sit t·cp apart
  // and each all-to-all carries one CP and TP rank's s·b/(cp·t) tokens.
  const int32_t reducers = d * cp;
  plan.shard_ranks = reducers;
  const double per_token = static_cast<double>(dims.experts_per_token) * dims.hidden;
  const double rank_tokens = tokens / cp;
  const Time ep_layer =
      ExpertAllToAlls(cluster, ep, std::max(1, cluster.devices_per_node / (cp * t)),
                      rank_tokens * per_token / t, rank_tokens * per_token * 2 / t);
  const int32_t tp_per_node = std::min(t, std::max(1, cluster.devices_per_node));
  const Time tp_layer =
      t > 1 ? AllReduce(cluster, t, tp_per_node, 2.0 * rank_tokens * dims.hidden) : Time();
  const Time tp_loss = t > 1 ? AllReduce(cluster, t, tp_per_node, 4.0 * rank_tokens) : Time();
  const DeviceRates rates = cluster.rates();
  const int32_t stages = partition.num_stages();
  plan.collectives.resize(static_cast<size_t>(stages));
  std::vector<double> stage_params(static_cast<size_t>(stages), 0.0);
  const int32_t dp_per_node = std::max(1, cluster.devices_per_node / t);
  const std::vector<SharedStateEdge> edges =
      cp > 1 ? SharedStateEdges(model.layers, dims) : std::vector<SharedStateEdge>();
  for (int32_t stage = 0; stage < stages; ++stage) {
    StageCollectives& c = plan.collectives[stage];
    if (cp > 1) AddContextParallel(config, partition, stage, edges, c);
    double dense = 0;
    double experts = 0;
    for (int32_t index = partition.begin(stage); index < partition.end(stage); ++index) {
      const LayerSpec& layer = model.layers[index];
      const double routed = LayerRoutedExpertParams(layer, dims);
      const double params = LayerParams(layer, dims);
      plan.params += params;
      if (t > 1) {
        const double replicated = LayerReplicatedParams(layer, dims);
        dense += (params - routed - replicated) / t + replicated;
        experts += routed / ep / t;
      } else {
        dense += params - routed;
        experts += routed / ep;
      }
      const bool recomputes =
          layer_run.RecomputeOf(layer, static_cast<size_t>(index)) == Recompute::kFull;
      if (routed > 0) {
        c.ep_forward += ep_layer;
        c.ep_backward += ep_layer * (recomputes ? 2 : 1);
      }
      if (t == 1) continue;
      switch (layer.kind) {
        case LayerKind::kEmbedding:
          c.tp_forward += tp_layer;
          break;
        case LayerKind::kHead:
          c.tp_forward += tp_loss * 3;
          break;
        case LayerKind::kDecoder: {
          LayerKernelTimes kernels;
          if (TpOverlaps(config)) {
            LayerRun one = layer_run;
            one.recompute = Recompute::kNone;  // ExposeTp adds the recomputed forward's GEMMs
            kernels = Csa2LayerKernelTimes(layer, dims, model.seq_len, model.micro_batch_size, one,
                                           rates);
          }
          const TpExposure exposure = ExposeTp(
              config, tp_layer,
              TpRecomputeOf(recomputes ? Recompute::kFull : Recompute::kNone, 1.0), kernels);
          c.tp_forward += exposure.forward;
          c.tp_backward += exposure.backward;
          break;
        }
      }
    }
    stage_params[stage] = dense + experts;
    c.dp_reduce = DenseAndExperts(cluster, Collective::kAllReduce, reducers, dp_per_node, ep,
                                  dense * kGradientBytes, experts * kGradientBytes);
    c.dp_buckets =
        DenseAndExpertBuckets(BucketsOf(parallel), d, cluster, Collective::kAllReduce, reducers,
                              dp_per_node, ep, dense * kGradientBytes, experts * kGradientBytes);
  }
  plan.rank_params = RankParams(schedule, stage_params);
  if (d == 1 && ep == 1 && cp == 1 && t == 1) {
    plan.collectives.clear();
    return plan;
  }
  plan.optimizer_step =
      OptimizerSteps(config, schedule, stage_params,
                     (parallel.distributed_optimizer || parallel.zero_stage >= 1) ? reducers : 1);
  return plan;
}

}  // namespace

int32_t EffectiveZeroStage(const ParallelSpec& parallel) {
  return std::max(parallel.zero_stage, parallel.distributed_optimizer ? 1 : 0);
}

ModelStateBytes RankModelStates(const ParallelPlan& plan, const ParallelSpec& parallel,
                                size_t rank) {
  if (rank >= plan.rank_params.size()) return {};
  return ResidentModelStates(plan.rank_params[rank], parallel.precision,
                             EffectiveZeroStage(parallel),
                             std::max(1, plan.shard_ranks), plan.residency, rank);
}

ParallelPlan PlanParallel(const Config& config, const Partition& partition,
                          const Schedule& schedule) {
  ParallelPlan plan;
  const ModelSpec& model = config.model;
  if (!model.is_transformer()) {
    return model.is_layer_list() ? PlanLayerListParallel(config, partition, schedule) : plan;
  }
  const TransformerSpec& spec = model.transformer;
  const TransformerRun run = RunOf(config);
  const ParallelSpec& parallel = config.parallel;
  const ClusterSpec& cluster = config.cluster;
  const int32_t t = parallel.tp;
  const int32_t d = parallel.dp;
  const int32_t cp = parallel.cp;
  const int32_t ep = parallel.ep;
  const int32_t m = schedule.num_microbatches;
  // FLOPs of one microbatch through the whole model (all TP ranks).
  const LayerFlops decoder = DecoderLayerFlops(spec, run);
  const LayerFlops head = HeadFlops(spec, run);
  const LayerFlops moe = DecoderLayerFlops(spec, run, /*moe_layer=*/true);
  const int32_t moe_layers = spec.moe() ? spec.layers - spec.dense_layers : 0;
  const int32_t dense_layers = spec.layers - moe_layers;
  const auto all = [](const LayerFlops& f) { return f.forward + f.input_grad + f.weight_grad; };
  const double hardware_per_microbatch = t * cp *
                                         (dense_layers * all(decoder) + moe_layers * all(moe) +
                                          head.forward + head.input_grad + head.weight_grad);
  const double model_per_microbatch =
      t * cp * (dense_layers * decoder.model + moe_layers * moe.model + head.model);
  plan.world_size = schedule.num_ranks * parallel.tp * parallel.cp * parallel.dp;
  plan.tokens_per_iteration = static_cast<int64_t>(m) * run.micro_batch * run.seq_len * d;
  plan.hardware_flops_per_iteration = hardware_per_microbatch * m * d;
  plan.model_flops_per_iteration = model_per_microbatch * m * d;
  plan.peak_flops_per_device = cluster.peak_flops_per_s;
  plan.params = TransformerParams(spec, run.seq_len);

  // Tensor parallelism: per decoder 2 all-reduces of b·s·h bf16 forward and 2 backward (SP: an
  // all-gather and a reduce-scatter each, the same time on a ring); full recomputation repeats
  // the forward's in the backward. The embedding reduces its output once; the head's
  // vocab-parallel cross entropy 3 all-reduces of b·s fp32 scalars.
  const double tokens = static_cast<double>(run.seq_len * run.micro_batch) / cp;  // per CP rank
  const double activation = 2.0 * tokens * static_cast<double>(spec.hidden);
  // TP beyond a node rings over the network too (RingTime: min(NVLink, rails × NIC)).
  const int32_t tp_per_node = std::min(t, std::max(1, cluster.devices_per_node));
  const Time tp_layer = AllReduce(cluster, t, tp_per_node, activation);
  const Time tp_loss = AllReduce(cluster, t, tp_per_node, 4.0 * tokens);
  const TpRecompute recomputed = TpRecomputeOf(parallel.recompute, run.recompute_fraction);
  const TpExposure tp_dense = DecoderTpExposure(config, run, tp_layer, recomputed, false);
  const TpExposure tp_moe =
      spec.moe() ? DecoderTpExposure(config, run, tp_layer, recomputed, true) : tp_dense;
  // Expert parallelism: per MoE layer an all-to-all dispatch (k_e·h per token, bf16; fp8 with
  // precision fp8, as DeepSeek-V3) and combine (k_e·h bf16) forward, and both again backward,
  // among the ep ranks, which sit t·cp apart.
  const double per_token = static_cast<double>(spec.experts_per_token * spec.hidden);
  const double dispatch =
      tokens * per_token * (parallel.precision == TrainingPrecision::kFp8 ? 1.0 : 2.0) / t;
  const Time ep_layer = ExpertAllToAlls(cluster, ep, cluster.devices_per_node / std::max(1, t * cp),
                                        dispatch, tokens * per_token * 2.0 / t);
  // Context parallelism: the CP peers of a rank sit t apart. Ring attention passes a K and V
  // block of s/cp tokens (bf16, this TP rank's heads) per step while computing against the block
  // in hand; only what the compute does not hide is charged (RingAttentionExposed). The
  // backward passes K, V and their gradients against twice the compute. The all-gather mode
  // gathers all K and V before the attention (and reduce-scatters dK, dV after), exposed.
  // PyTorch's context_parallel (context_parallel_rotate_method; _attention.py) rotates K and V
  // expanded to the query heads (torchtitan's Llama repeats them before SDPA): 'allgather'
  // gathers them once, asynchronously, waited for before step 1 (hidden behind step 0's
  // kernel), and again for the backward; 'alltoall' passes one block a step like the ring. Its
  // backward also passes the fp32 dK and dV (twice the bf16 bytes) to the next rank every step,
  // behind that step's kernel.
  Time cp_forward;
  Time cp_backward;
  if (cp > 1) {
    const double q_width = static_cast<double>(spec.heads * spec.head_dim_or_default());
    const double kv_width =
        parallel.cp_rotate != CpRotate::kNone
            ? q_width
            : static_cast<double>(spec.kv_heads_or_heads() * spec.head_dim_or_default());
    const double block = static_cast<double>(run.seq_len) / cp;
    const double b = static_cast<double>(run.micro_batch);
    const double step_flops = 4 * b * block * block * q_width / t * (spec.causal ? 0.5 : 1.0);
    const double step_bytes = 4 * b * block * kv_width / t;
    const bool in_node = t * cp <= cluster.devices_per_node;
    const LinkSpec& link = in_node ? cluster.intra_node : cluster.inter_node;
    const double rate = cluster.effective_flops_per_s();
    // A step of PyTorch's ring is one attention kernel: forward at the kernel model's attention
    // rate, backward 2.5x the FLOPs at its backward rate (transformer_kernels.cc).
    const KernelModel& kernels = cluster.kernels;
    const bool kernel_rates = cluster.kernel_costed() && kernels.attention_forward_efficiency > 0 &&
                              kernels.attention_backward_efficiency > 0;
    const double forward_rate =
        kernel_rates ? cluster.peak_flops_per_s * kernels.attention_forward_efficiency : rate;
    const double backward_rate =
        kernel_rates ? cluster.peak_flops_per_s * kernels.attention_backward_efficiency : rate;
    const double backward_flops = (kernel_rates ? 2.5 : 2.0) * step_flops;
    if (parallel.cp_rotate == CpRotate::kAllGather) {
      const double gather =
          static_cast<double>(Gather(cluster, cp, in_node ? cp : 1, step_bytes * cp).ns()) * 1e-9;
      const double forward_step = forward_rate > 0 ? step_flops / forward_rate : 0.0;
      const double backward_step = backward_rate > 0 ? backward_flops / backward_rate : 0.0;
      cp_forward = FromSeconds(std::max(0.0, gather - forward_step));
      cp_backward = FromSeconds(std::max(0.0, gather - backward_step)) +
                    RingAttentionExposed(cp, backward_flops, backward_rate, 2 * step_bytes, link);
    } else if (parallel.cp_rotate == CpRotate::kAllToAll) {
      cp_forward = RingAttentionExposed(cp, step_flops, forward_rate, step_bytes, link);
      cp_backward = RingAttentionExposed(cp, backward_flops, backward_rate, 3 * step_bytes, link);
    } else if (parallel.cp_all_gather) {
      cp_forward = Gather(cluster, cp, in_node ? cp : 1, step_bytes * cp);
      cp_backward = cp_forward;
    } else {
      cp_forward = RingAttentionExposed(cp, step_flops, rate, step_bytes, link);
      cp_backward = RingAttentionExposed(cp, 2 * step_flops, rate, 2 * step_bytes, link);
    }
    if (parallel.recompute == Recompute::kFull) cp_backward += cp_forward;
  }
  // Data parallelism: the DP peers of a rank sit t apart, so a node holds devices_per_node / t
  // of them; each stage's fp32 gradients (per TP rank) are all-reduced after its last action
  // (with the distributed optimizer: reduce-scatter then all-gather, the same ring time).
  // Gradients are reduced over the data- and context-parallel ranks (they hold the same
  // weights), t apart.
  const int32_t reducers = d * cp;
  // ZeRO / FSDP shard over all of them, or (hybrid) over the ones in one node.
  const int32_t shards =
      parallel.hybrid_shard
          ? std::max(1, std::min(reducers, cluster.devices_per_node / std::max(1, t)))
          : reducers;
  plan.shard_ranks = shards;
  const int32_t dp_per_node = std::max(1, cluster.devices_per_node / std::max(1, t));
  const double decoder_params = DecoderLayerParams(spec) / t;
  // A MoE layer: the routed experts sharded over ep (reduced over dp·cp/ep), the rest not.
  const double routed_params = RoutedExpertParams(spec) / ep / t;
  const double moe_dense_params = (DecoderLayerParams(spec, true) - RoutedExpertParams(spec)) / t;
  const double embedding_params = EmbeddingParams(spec, run.seq_len) / t;
  const double head_params =
      spec.tied_embeddings ? embedding_params : static_cast<double>(spec.vocab * spec.hidden) / t;
  plan.collectives.resize(static_cast<size_t>(partition.num_stages()));
  std::vector<double> stage_params(static_cast<size_t>(partition.num_stages()), 0.0);
  std::vector<double> stage_expert_params(static_cast<size_t>(partition.num_stages()), 0.0);
  std::vector<double> stage_decoder_params(static_cast<size_t>(partition.num_stages()), 0.0);
  // FSDP's gathered working parameters per stage, in bytes (bf16, or FP8 for the float8
  // linears with the float8 all-gather): what the all-gather moves and what a rank holds while
  // they stay gathered.
  std::vector<double> stage_gathered_bytes(static_cast<size_t>(partition.num_stages()), 0.0);
  const bool pipelined = schedule.num_ranks > 1;
  for (int32_t stage = 0; stage < partition.num_stages(); ++stage) {
    StageCollectives& c = plan.collectives[stage];
    for (int32_t index = partition.begin(stage); index < partition.end(stage); ++index) {
      switch (model.layers[index].kind) {
        case LayerKind::kEmbedding:
          c.tp_forward += tp_layer;
          stage_params[stage] += embedding_params;
          break;
        case LayerKind::kDecoder: {
          const int32_t decoder_index = index - 1;  // layers[0] is the embedding
          const TpExposure& exposure = spec.moe_layer(decoder_index) ? tp_moe : tp_dense;
          c.tp_forward += exposure.forward;
          c.tp_backward += exposure.backward;
          c.cp_forward += cp_forward;
          c.cp_backward += cp_backward;
          if (spec.moe_layer(decoder_index)) {
            c.ep_forward += ep_layer;
            c.ep_backward += ep_layer * (parallel.recompute == Recompute::kFull ? 2 : 1);
            stage_params[stage] += moe_dense_params + routed_params;
            stage_expert_params[stage] += routed_params;
            stage_decoder_params[stage] += moe_dense_params + routed_params;
          } else {
            stage_params[stage] += decoder_params;
            stage_decoder_params[stage] += decoder_params;
          }
          break;
        }
        case LayerKind::kHead:
          c.tp_forward += tp_loss * 3;
          stage_params[stage] += head_params;
          break;
      }
    }
    const double dense = stage_params[stage] - stage_expert_params[stage];
    const double experts = stage_expert_params[stage];
    if (parallel.zero_stage >= 3) {
      // ZeRO-3 / FSDP full sharding over `shards` ranks: bf16 parameters gathered before every
      // F and B/I (prefetched), fp32 gradients reduce-scattered after every B or W. Hybrid
      // sharding shards within a node and all-reduces the shards across the nodes at the end.
      // With reshard_after_forward off the backward reuses the forward's gather; under pipeline
      // parallelism (torchtitan's default there) the stage gathers once before its first
      // microbatch and reduce-scatters once, in buckets, during its last backward.
      const int32_t per_node = parallel.hybrid_shard ? shards : dp_per_node;
      // With FSDP's float8 all-gather (torchao Float8Linear, torchtitan's
      // enable_fsdp_float8_all_gather) the decoders' weights travel as FP8, 1 byte each (their
      // norm weights, under 0.01% of a layer, with them); the embedding and the head stay bf16.
      const double linear_dense =
          parallel.fp8_all_gather ? stage_decoder_params[stage] - experts : 0.0;
      const double gather_bytes = parallel.fp8_all_gather ? 1.0 : 2.0;
      const double dense_gathered = (dense - linear_dense) * 2 + linear_dense;
      const double experts_gathered = experts * gather_bytes;
      stage_gathered_bytes[stage] = dense_gathered + experts_gathered;
      const Time gather = DenseAndExperts(cluster, Collective::kAllGather, shards, per_node, ep,
                                          dense_gathered, experts_gathered);
      const Time scatter = DenseAndExperts(cluster, Collective::kReduceScatter, shards, per_node,
                                           ep, dense * kGradientBytes, experts * kGradientBytes);
      const ReshardAfterForward reshard = parallel.reshard_after_forward;
      const bool keep = reshard == ReshardAfterForward::kNo ||
                        (reshard == ReshardAfterForward::kDefault && pipelined);
      if (keep && pipelined) {
        c.first_gather = gather;
        // FSDP reduces during the backward always: Megatron-sized buckets unless named.
        const GradBuckets mode = parallel.grad_buckets == GradBuckets::kNone
                                     ? GradBuckets::kMegatron
                                     : parallel.grad_buckets;
        c.dp_buckets =
            DenseAndExpertBuckets(mode, d, cluster, Collective::kReduceScatter, shards, per_node,
                                  ep, dense * kGradientBytes, experts * kGradientBytes);
      } else {
        c.shard_gather = gather;
        c.shard_gather_backward = !keep;
        c.shard_units = std::max(1, partition.end(stage) - partition.begin(stage));
        c.shard_reduce = scatter;
      }
      if (parallel.hybrid_shard) {
        c.dp_reduce =
            AllReduce(cluster, reducers / shards, 1, (dense + experts) / shards * kGradientBytes);
      }
      continue;
    }
    // Megatron's distributed optimizer reduce-scatters the fp32 gradients and all-gathers the
    // updated bf16 parameters (hidden behind the next forward with overlap_param_gather); DDP
    // all-reduces the fp32 gradients.
    const Collective reduce =
        parallel.distributed_optimizer ? Collective::kReduceScatter : Collective::kAllReduce;
    c.dp_reduce = DenseAndExperts(cluster, reduce, reducers, dp_per_node, ep,
                                  dense * kGradientBytes, experts * kGradientBytes);
    c.dp_buckets =
        DenseAndExpertBuckets(BucketsOf(parallel), d, cluster, reduce, reducers, dp_per_node, ep,
                              dense * kGradientBytes, experts * kGradientBytes);
    if (parallel.distributed_optimizer && !parallel.overlap_param_gather) {
      const Time gather = DenseAndExperts(cluster, Collective::kAllGather, reducers, dp_per_node,
                                          ep, dense * 2, experts * 2);
      c.dp_reduce += gather;
      if (!c.dp_buckets.empty()) c.dp_buckets.back().second += gather;
    }
  }
  plan.rank_params = RankParams(schedule, stage_params);
  plan.residency = FsdpResidency(parallel, schedule, stage_gathered_bytes);
  if (t == 1 && d == 1 && cp == 1 && ep == 1) {  // no collectives: a single pipeline
    plan.collectives.clear();
    return plan;
  }
  // The optimizer step of each rank's parameters (sharded with the distributed optimizer).
  plan.optimizer_step =
      OptimizerSteps(config, schedule, stage_params,
                     parallel.distributed_optimizer || parallel.zero_stage >= 1 ? shards : 1);
  return plan;
}

}  // namespace stagecraft
