// The parallel cost model's entry points: a transformer's layer list on the device, what a
// run's costs rest on, and the ParallelPlan, which puts each layer's per-dimension costs
// (tensor_parallel.h, context_parallel.h, expert_parallel.h, data_parallel.h,
// optimizer_step.h) on its stage, for transformer models and CSA2 layer lists, with the FLOP
// counts behind MFU and per-GPU throughput.
#include "parallel/parallel_plan.h"

#include <algorithm>
#include <string>
#include <utility>

#include "comm/collective.h"
#include "core/units.h"
#include "model/layer_costs.h"
#include "model/transformer_kernels.h"
#include "parallel/context_parallel.h"
#include "parallel/data_parallel.h"
#include "parallel/expert_parallel.h"
#include "parallel/optimizer_step.h"
#include "parallel/parallel_common.h"
#include "parallel/tensor_parallel.h"

namespace stagecraft {

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
    model.layers = TransformerLayers(spec, TransformerRunOf(config), TrainingRates(config));
  } else {
    ComputeRate rate;
    rate.flops_per_s = config.cluster.effective_flops_per_s();
    rate.bytes_per_s = config.cluster.hbm_bytes_per_s * config.cluster.memory_efficiency;
    model.layers = TransformerLayers(spec, TransformerRunOf(config), rate);
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
    out.emplace_back("host", FormatFixed(HostSecondsPerKernel(config.parallel.engine, k) * 1e6, 1) +
                                 " us per kernel (" + HostSecondsSource(config.parallel.engine) +
                                 ")");
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
                   on(parallel.fp8) +
                       (parallel.fp8 ? std::string(", recipe ") + Fp8RecipeName(parallel.fp8_recipe)
                                     : std::string()) +
                       (parallel.fp8_all_gather ? ", FSDP all-gather in FP8 "
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

namespace {

// A transformer's parameters on one TP rank, per layer kind.
struct TransformerLayerParams {
  double decoder = 0;    // a decoder with a dense MLP
  double routed = 0;     // a MoE decoder's routed experts (this rank's 1/ep of them)
  double moe_dense = 0;  // the rest of a MoE decoder
  double embedding = 0;
  double head = 0;  // the embedding's when tied
};

TransformerLayerParams TransformerLayerParamsOf(const Config& config, const TransformerRun& run) {
  const TransformerSpec& spec = config.model.transformer;
  const int32_t t = config.parallel.tp;
  TransformerLayerParams params;
  params.decoder = DecoderLayerParams(spec) / t;
  params.routed = RoutedExpertParams(spec) / config.parallel.ep / t;
  params.moe_dense = (DecoderLayerParams(spec, true) - RoutedExpertParams(spec)) / t;
  params.embedding = EmbeddingParams(spec, run.seq_len) / t;
  params.head =
      spec.tied_embeddings ? params.embedding : static_cast<double>(spec.vocab * spec.hidden) / t;
  return params;
}

// The world, tokens, FLOPs and parameters of one iteration of a transformer model: one
// microbatch's FLOPs through the whole model (all TP and CP ranks), m microbatches on each of
// the dp replicas; the hardware FLOPs with recomputation, the model FLOPs without.
void SetTransformerTotals(const Config& config, const TransformerRun& run, const Schedule& schedule,
                          ParallelPlan& plan) {
  const TransformerSpec& spec = config.model.transformer;
  const ParallelSpec& parallel = config.parallel;
  const int32_t t = parallel.tp;
  const int32_t d = parallel.dp;
  const int32_t cp = parallel.cp;
  const int32_t m = schedule.num_microbatches;
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
  plan.peak_flops_per_device = config.cluster.peak_flops_per_s;
  plan.params = TransformerParams(spec, run.seq_len);
}

// What each layer of a transformer adds to its stage's collectives, per microbatch.
struct TransformerLayerCosts {
  TransformerTp tp;
  CpExposure cp;  // per decoder
  Time ep;        // per MoE decoder, forward
  TransformerLayerParams params;
};

// A stage's parameters on one TP rank: all of them, and of those the routed experts' and the
// decoders'.
struct StageSums {
  double total = 0;
  double experts = 0;
  double decoders = 0;
};

// The TP, CP and EP collectives of a transformer stage's layers, into `c`.
StageSums AddTransformerStage(const Config& config, const Partition& partition, int32_t stage,
                              const TransformerLayerCosts& costs, StageCollectives& c) {
  const TransformerSpec& spec = config.model.transformer;
  const bool recomputes = config.parallel.recompute == Recompute::kFull;
  StageSums sums;
  for (int32_t index = partition.begin(stage); index < partition.end(stage); ++index) {
    switch (config.model.layers[index].kind) {
      case LayerKind::kEmbedding:
        c.tp_forward += costs.tp.embedding;
        sums.total += costs.params.embedding;
        break;
      case LayerKind::kDecoder: {
        const bool moe_layer = spec.moe_layer(index - 1);  // layers[0] is the embedding
        const TpExposure& exposure = moe_layer ? costs.tp.moe : costs.tp.dense;
        c.tp_forward += exposure.forward;
        c.tp_backward += exposure.backward;
        c.cp_forward += costs.cp.forward;
        c.cp_backward += costs.cp.backward;
        if (moe_layer) {
          c.ep_forward += costs.ep;
          c.ep_backward += ExpertBackward(costs.ep, recomputes);
          sums.total += costs.params.moe_dense + costs.params.routed;
          sums.experts += costs.params.routed;
          sums.decoders += costs.params.moe_dense + costs.params.routed;
        } else {
          sums.total += costs.params.decoder;
          sums.decoders += costs.params.decoder;
        }
        break;
      }
      case LayerKind::kHead:
        c.tp_forward += costs.tp.loss * 3;
        sums.total += costs.params.head;
        break;
    }
  }
  return sums;
}

// Transformer models: each stage's layers' TP, CP and EP collectives, its data-parallel
// reduction or ZeRO-3 / FSDP sharding, the optimizer step per rank.
ParallelPlan PlanTransformerParallel(const Config& config, const Partition& partition,
                                     const Schedule& schedule) {
  ParallelPlan plan;
  const ParallelSpec& parallel = config.parallel;
  const TransformerRun run = TransformerRunOf(config);
  SetTransformerTotals(config, run, schedule, plan);
  const TransformerLayerCosts costs{
      TransformerTensorParallel(config, run), TransformerContextParallel(config, run),
      TransformerExpertAllToAlls(config, run), TransformerLayerParamsOf(config, run)};
  const DataParallelGroup group = DataParallelGroupOf(config, parallel.hybrid_shard);
  plan.shard_ranks = group.shards;
  const auto stages = static_cast<size_t>(partition.num_stages());
  plan.collectives.resize(stages);
  std::vector<double> stage_params(stages, 0.0);
  // FSDP's gathered working parameters per stage, in bytes: what the all-gather moves and what
  // a rank holds while they stay gathered.
  std::vector<double> stage_gathered_bytes(stages, 0.0);
  const bool pipelined = schedule.num_ranks > 1;
  for (int32_t stage = 0; stage < partition.num_stages(); ++stage) {
    StageCollectives& c = plan.collectives[stage];
    const StageSums sums = AddTransformerStage(config, partition, stage, costs, c);
    stage_params[stage] = sums.total;
    const StageParams params{sums.total - sums.experts, sums.experts, sums.decoders};
    const int32_t units = std::max(1, partition.end(stage) - partition.begin(stage));
    stage_gathered_bytes[stage] =
        AddStageDataParallel(parallel, config.cluster, group, params, pipelined, units, c);
  }
  plan.rank_params = RankParams(schedule, stage_params);
  plan.residency = FsdpResidency(parallel, schedule, stage_gathered_bytes);
  if (parallel.tp == 1 && parallel.dp == 1 && parallel.cp == 1 && parallel.ep == 1) {
    plan.collectives.clear();  // no collectives: a single pipeline
    return plan;
  }
  plan.optimizer_step = OptimizerSteps(config.cluster, schedule, stage_params,
                                       OptimizerShards(parallel, group.shards));
  return plan;
}

// The world, tokens, FLOPs of one iteration of a CSA2 layer list (csa2.md formulas,
// model/layer_costs.h): 3× each layer's forward FLOPs per microbatch, m microbatches on each of
// the dp replicas; the hardware FLOPs add what each layer recomputes (its forward under full
// recomputation, its attention core and scoring under the selective ones).
void SetLayerListTotals(const Config& config, const LayerRun& layer_run, const Schedule& schedule,
                        ParallelPlan& plan) {
  const ModelSpec& model = config.model;
  const ParallelSpec& parallel = config.parallel;
  const Csa2Dims& dims = model.dims;
  const int32_t d = parallel.dp;
  const int32_t m = schedule.num_microbatches;
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
  plan.tokens_per_iteration = model.tokens_per_microbatch() * m * d;
  plan.model_flops_per_iteration = flops_per_microbatch * m * d;
  plan.hardware_flops_per_iteration = (flops_per_microbatch + recomputed_flops) * m * d;
  plan.peak_flops_per_device = config.cluster.peak_flops_per_s;
}

// What each layer of a CSA2 layer list adds to its stage's collectives, per microbatch.
struct LayerListCosts {
  LayerRun layer_run;
  TpCollectives tp;
  Time ep;  // per MoE layer, forward
};

// The TP and EP collectives of a stage of a CSA2 layer list, into `c`; adds its layers' whole
// parameters to `model_params`. Returns the stage's parameters on one rank: the split ones / t,
// the replicated ones whole (LayerReplicatedParams), the routed experts / ep.
StageParams AddLayerListStage(const Config& config, const Partition& partition, int32_t stage,
                              const LayerListCosts& costs, double& model_params,
                              StageCollectives& c) {
  const Csa2Dims& dims = config.model.dims;
  const int32_t t = std::max(1, config.parallel.tp);
  const int32_t ep = config.parallel.ep;
  StageParams sums;
  for (int32_t index = partition.begin(stage); index < partition.end(stage); ++index) {
    const LayerSpec& layer = config.model.layers[index];
    const double routed = LayerRoutedExpertParams(layer, dims);
    const double params = LayerParams(layer, dims);
    model_params += params;
    if (t > 1) {
      const double replicated = LayerReplicatedParams(layer, dims);
      sums.dense += (params - routed - replicated) / t + replicated;
      sums.experts += routed / ep / t;
    } else {
      sums.dense += params - routed;
      sums.experts += routed / ep;
    }
    const bool recomputes =
        costs.layer_run.RecomputeOf(layer, static_cast<size_t>(index)) == Recompute::kFull;
    if (routed > 0) {
      c.ep_forward += costs.ep;
      c.ep_backward += ExpertBackward(costs.ep, recomputes);
    }
    if (t == 1) continue;
    if (layer.kind == LayerKind::kEmbedding) c.tp_forward += costs.tp.activation;
    if (layer.kind == LayerKind::kHead) c.tp_forward += costs.tp.loss * 3;
    if (layer.kind == LayerKind::kDecoder) {
      const TpExposure exposure =
          Csa2DecoderTp(config, costs.layer_run, layer, recomputes, costs.tp.activation);
      c.tp_forward += exposure.forward;
      c.tp_backward += exposure.backward;
    }
  }
  return sums;
}

// CSA2 layer lists (csa2.md formulas): tensor, context, expert and data parallelism around the
// pipeline. Rank order: tp innermost (a TP group shares a node while tp <= devices per node),
// then cp, then dp with its ep groups, pp outermost. Routed experts are sharded over ep (and
// their width over tp) and their gradients reduced over dp·cp/ep; the other gradients are
// all-reduced over dp·cp (the distributed optimizer shards the optimizer step only).
ParallelPlan PlanLayerListParallel(const Config& config, const Partition& partition,
                                   const Schedule& schedule) {
  ParallelPlan plan;
  const ModelSpec& model = config.model;
  const ParallelSpec& parallel = config.parallel;
  const int32_t t = std::max(1, parallel.tp);
  const int32_t cp = parallel.cp;
  const double rank_tokens = static_cast<double>(model.tokens_per_microbatch()) / cp;
  const LayerListCosts costs{LayerRunOf(config, &partition),
                             TpCollectivesOf(config.cluster, t, rank_tokens, model.dims.hidden),
                             LayerListExpertAllToAlls(config)};
  SetLayerListTotals(config, costs.layer_run, schedule, plan);
  const DataParallelGroup group = DataParallelGroupOf(config, /*hybrid_shard=*/false);
  plan.shard_ranks = group.reducers;
  const auto stages = static_cast<size_t>(partition.num_stages());
  plan.collectives.resize(stages);
  std::vector<double> stage_params(stages, 0.0);
  const std::vector<SharedStateEdge> edges =
      cp > 1 ? SharedStateEdges(model.layers, model.dims) : std::vector<SharedStateEdge>();
  for (int32_t stage = 0; stage < partition.num_stages(); ++stage) {
    StageCollectives& c = plan.collectives[stage];
    if (cp > 1) {
      const CpExposure exposure = LayerListStageContextParallel(config, partition, stage, edges);
      c.cp_forward += exposure.forward;
      c.cp_backward += exposure.backward;
    }
    const StageParams params = AddLayerListStage(config, partition, stage, costs, plan.params, c);
    stage_params[stage] = params.dense + params.experts;
    AddGradientReduce(parallel, config.cluster, group, Collective::kAllReduce, params, c);
  }
  plan.rank_params = RankParams(schedule, stage_params);
  if (parallel.dp == 1 && parallel.ep == 1 && cp == 1 && t == 1) {
    plan.collectives.clear();  // no collectives: a single pipeline
    return plan;
  }
  plan.optimizer_step = OptimizerSteps(config.cluster, schedule, stage_params,
                                       OptimizerShards(parallel, group.reducers));
  return plan;
}

}  // namespace

ParallelPlan PlanParallel(const Config& config, const Partition& partition,
                          const Schedule& schedule) {
  if (config.model.is_transformer()) return PlanTransformerParallel(config, partition, schedule);
  if (config.model.is_layer_list()) return PlanLayerListParallel(config, partition, schedule);
  return ParallelPlan();
}

}  // namespace stagecraft
