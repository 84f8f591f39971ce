#include "memory/model_states.h"

#include <algorithm>

namespace stagecraft {
namespace {

// `per` bytes per parameter, stage 1 sharding the optimizer state over the data-parallel
// ranks, 2 also the gradients, 3 also the parameters.
ModelStateBytes Shard(const BytesPerParam& per, double params, int32_t zero_stage,
                      int32_t data_parallel) {
  const double n = std::max(1, data_parallel);
  ModelStateBytes bytes;
  bytes.parameters = per.parameters * params / (zero_stage >= 3 ? n : 1);
  bytes.gradients = per.gradients * params / (zero_stage >= 2 ? n : 1);
  bytes.optimizer = per.optimizer * params / (zero_stage >= 1 ? n : 1);
  return bytes;
}

}  // namespace

ModelStateBytes ZeroModelStates(double params, double optimizer_bytes_per_param,
                                int32_t data_parallel, ZeroStage stage) {
  // ZeRO's mixed-precision accounting: fp16 parameters and gradients, K bytes of optimizer state.
  return Shard({2, 2, optimizer_bytes_per_param}, params, static_cast<int32_t>(stage),
               data_parallel);
}

double ZeroCommunicationElements(double params, ZeroStage stage) {
  return (stage == ZeroStage::kParameters ? 3 : 2) * params;
}

double MegatronBytesPerParam(bool distributed_optimizer, int32_t data_parallel) {
  // bf16 parameters (2) + fp32 gradients (4) + fp32 main parameters, Adam m and v (12).
  return distributed_optimizer ? 6.0 + 12.0 / std::max(1, data_parallel) : 18.0;
}

BytesPerParam ModelStateBytesPerParam(TrainingPrecision precision) {
  switch (precision) {
    case TrainingPrecision::kFp32:
      return {4, 4, 8};
    case TrainingPrecision::kBf16:
    case TrainingPrecision::kFp16:
      return {2, 4, 12};
    case TrainingPrecision::kFp8:
      return {3, 4, 12};
  }
  return {2, 4, 12};
}

ModelStateBytes ShardedModelStates(double params, TrainingPrecision precision, int32_t zero_stage,
                                   int32_t data_parallel) {
  return Shard(ModelStateBytesPerParam(precision), params, zero_stage, data_parallel);
}

ModelStateBytes ResidentModelStates(double params, TrainingPrecision precision, int32_t zero_stage,
                                    int32_t data_parallel, const StateResidency& residency,
                                    size_t rank) {
  ModelStateBytes bytes = ShardedModelStates(params, precision, zero_stage, data_parallel);
  if (rank < residency.gathered_parameter_bytes.size()) {
    bytes.parameters = residency.gathered_parameter_bytes[rank];
  }
  if (residency.gradients_whole) {
    bytes.gradients = ModelStateBytesPerParam(precision).gradients * params;
  }
  return bytes;
}

DeepSpeedZero2Estimate EstimateDeepSpeedZero2(double params, int32_t gpus_per_node, int32_t nodes,
                                              bool cpu_offload) {
  const double per_node = std::max(1, gpus_per_node);
  const double total_gpus = per_node * std::max(1, nodes);
  DeepSpeedZero2Estimate estimate;
  if (cpu_offload) {
    estimate.gpu_bytes = 2 * params;
    estimate.cpu_bytes = params * std::max(4 * per_node, 16.0) * 1.5;
  } else {
    estimate.gpu_bytes = 2 * params + 18 * params / total_gpus;
  }
  return estimate;
}

double ActivationBytesPerLayer(const ActivationShape& shape) {
  const double sbh = shape.seq_len * shape.micro_batch * shape.hidden;
  const double t = std::max(1, shape.tensor_parallel);
  const double attention = 5 * shape.heads * shape.seq_len / (shape.hidden * t);
  return KorthikantiLayerBytes(sbh, t, attention, shape.sequence_parallel, shape.recompute);
}

double FirstStageActivationBytes(const ActivationShape& shape, int32_t layers,
                                 int32_t pipeline_parallel, int32_t virtual_stages) {
  const double p = std::max(1, pipeline_parallel);
  const double v = std::max(1, virtual_stages);
  const double plain = p * (layers / p) * ActivationBytesPerLayer(shape);
  return v > 1 ? plain * (1 + (p - 1) / (p * v)) : plain;
}

double MegatronParameterCount(double layers, double hidden, double vocab, double seq_len) {
  return 12 * layers * hidden * hidden *
         (1 + 13 / (12 * hidden) + (vocab + seq_len) / (12 * layers * hidden));
}

double MegatronFlopsPerIteration(double batch, double seq_len, double layers, double hidden,
                                 double vocab) {
  return 96 * batch * seq_len * layers * hidden * hidden *
         (1 + seq_len / (6 * hidden) + vocab / (16 * layers * hidden));
}

}  // namespace stagecraft
