#include "parallel/tensor_parallel.h"

#include <algorithm>

#include "model/layer_kernels.h"
#include "model/transformer_kernels.h"
#include "parallel/parallel_common.h"

namespace stagecraft {

TpCollectives TpCollectivesOf(const ClusterSpec& cluster, int32_t tp, double tokens,
                              double hidden) {
  const int32_t tp_per_node = std::min(tp, std::max(1, cluster.devices_per_node));
  return {RingAllReduce(cluster, tp, tp_per_node, 2.0 * tokens * hidden),
          RingAllReduce(cluster, tp, tp_per_node, 4.0 * tokens)};
}

TpRecompute TpRecomputeOf(Recompute recompute, double fraction) {
  if (recompute == Recompute::kFull) return {fraction, fraction};
  if (recompute == Recompute::kSelectiveOp) return {1.0, 0.5};
  return {};
}

bool TpOverlaps(const Config& config) {
  const ParallelSpec& parallel = config.parallel;
  return (parallel.tp_comm_overlap || parallel.async_tp) && parallel.tp > 1 &&
         config.cluster.kernel_costed();
}

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

namespace {

TpExposure DecoderTpExposure(const Config& config, const TransformerRun& run, Time collective,
                             TpRecompute recomputed, bool moe_layer) {
  return ExposeTp(config, collective, recomputed,
                  TpOverlaps(config) ? DecoderKernelTimes(config.model.transformer, run,
                                                          TrainingRates(config), moe_layer)
                                     : LayerKernelTimes());
}

}  // namespace

TransformerTp TransformerTensorParallel(const Config& config, const TransformerRun& run) {
  const TransformerSpec& spec = config.model.transformer;
  const double tokens =
      static_cast<double>(run.seq_len * run.micro_batch) / config.parallel.cp;  // per CP rank
  const TpCollectives collectives =
      TpCollectivesOf(config.cluster, config.parallel.tp, tokens, static_cast<double>(spec.hidden));
  const TpRecompute recomputed = TpRecomputeOf(config.parallel.recompute, run.recompute_fraction);
  TransformerTp tp;
  tp.embedding = collectives.activation;
  tp.loss = collectives.loss;
  tp.dense = DecoderTpExposure(config, run, collectives.activation, recomputed, false);
  tp.moe = spec.moe() ? DecoderTpExposure(config, run, collectives.activation, recomputed, true)
                      : tp.dense;
  return tp;
}

TpExposure Csa2DecoderTp(const Config& config, const LayerRun& layer_run, const LayerSpec& layer,
                         bool recomputes, Time collective) {
  LayerKernelTimes kernels;
  if (TpOverlaps(config)) {
    const ModelSpec& model = config.model;
    LayerRun one = layer_run;
    one.recompute = Recompute::kNone;  // ExposeTp adds the recomputed forward's GEMMs
    kernels = Csa2LayerKernelTimes(layer, model.dims, model.seq_len, model.micro_batch_size, one,
                                   TrainingRates(config));
  }
  return ExposeTp(config, collective,
                  TpRecomputeOf(recomputes ? Recompute::kFull : Recompute::kNone, 1.0), kernels);
}

}  // namespace stagecraft
