// Memory and FLOPs formulas of the published training-memory models, as plain functions of the
// model's sizes (DESIGN.md §6 "memory"). Bytes are bytes; the papers' "GB" is 1e9 bytes.
//   - ZeRO (Rajbhandari et al., SC'20, §5 and Figure 1): model states per device with Ψ
//     parameters, K bytes of optimizer state per parameter (12 for mixed-precision Adam) and N_d
//     data-parallel ranks: baseline (2 + 2 + K)Ψ; stage 1 2Ψ + 2Ψ + KΨ/N_d; stage 2
//     2Ψ + (2 + K)Ψ/N_d; stage 3 (2 + 2 + K)Ψ/N_d. Communication per step: 2Ψ elements for the
//     baseline and stages 1-2, 3Ψ for stage 3.
//   - Megatron-LM distributed optimizer (bf16 parameters, fp32 gradients): 18 bytes per
//     parameter without it, 6 + 12/d with it over d data-parallel ranks.
//   - DeepSpeed estimate_zero2_model_states_mem_needs (current code): without offload the GPU
//     holds 2P + 18P/G bytes; with CPU offload the GPU holds 2P and the CPU P·max(4G, 16)·1.5,
//     G the GPUs per node.
//   - Activations per transformer layer (Korthikanti et al., MLSys'23, Table 2), s sequence,
//     b microbatch, h hidden, a heads, t tensor-parallel: none sbh(34 + 5as/h); TP
//     sbh(10 + 24/t + 5as/(ht)); TP + SP sbh(34/t + 5as/(ht)); TP + selective sbh(10 + 24/t);
//     TP + SP + selective 34sbh/t; full recompute 2sbh. The first stage of 1F1B holds p
//     microbatches × L/p layers; interleaved multiplies that by 1 + (p − 1)/(p·v).
//   - Megatron (Narayanan et al., SC'21, §5.1): parameters P = 12lh²(1 + 13/(12h) + (V+s)/(12lh));
//     FLOPs per iteration with activation recomputation 96Bslh²(1 + s/(6h) + V/(16lh)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/enum_table.h"
#include "model/transformer.h"  // Recompute

namespace stagecraft {

enum class ZeroStage : uint8_t { kNone = 0, kOptimizer = 1, kGradients = 2, kParameters = 3 };

// Bytes of parameters, gradients and optimizer state per device (ZeRO, §5).
struct ModelStateBytes {
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return parameters + gradients + optimizer; }
  ModelStateBytes& operator+=(const ModelStateBytes& other) {
    parameters += other.parameters;
    gradients += other.gradients;
    optimizer += other.optimizer;
    return *this;
  }
};
ModelStateBytes ZeroModelStates(double params, double optimizer_bytes_per_param,
                                int32_t data_parallel, ZeroStage stage);
// Elements each device sends and receives per step for gradient reduction and parameter
// gathering: 2Ψ, or 3Ψ with stage 3.
double ZeroCommunicationElements(double params, ZeroStage stage);

// Megatron's bytes per parameter (bf16 parameters, fp32 main gradients and Adam state).
double MegatronBytesPerParam(bool distributed_optimizer, int32_t data_parallel);

// Bytes per parameter of the model states by training precision, with Adam:
//   fp32  parameters 4, gradients 4, optimizer 8 (m, v)
//   bf16  parameters 2, gradients 4 (fp32 main gradients, Megatron), optimizer 12 (fp32 master
//         weights, m, v): Megatron's 18 bytes per parameter
//   fp16  as bf16 (with loss scaling, precision/loss_scaler.h)
//   fp8   as bf16 plus the fp8 copy of the weights the GEMMs read (1): 19
enum class TrainingPrecision : uint8_t { kFp32, kBf16, kFp16, kFp8 };
// Their names (parallel.precision).
inline constexpr EnumTable<TrainingPrecision> kTrainingPrecisionNames = {
    {"fp32", TrainingPrecision::kFp32},
    {"bf16", TrainingPrecision::kBf16},
    {"fp16", TrainingPrecision::kFp16},
    {"fp8", TrainingPrecision::kFp8}};
constexpr const char* TrainingPrecisionName(TrainingPrecision precision) {
  return kTrainingPrecisionNames.Name(precision);
}
struct BytesPerParam {
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
};
BytesPerParam ModelStateBytesPerParam(TrainingPrecision precision);
// Model-state bytes of `params` parameters on one device with ZeRO stage `zero_stage` (0-3)
// over `data_parallel` ranks: stage 1 shards the optimizer state, 2 also the gradients, 3 also
// the parameters.
ModelStateBytes ShardedModelStates(double params, TrainingPrecision precision, int32_t zero_stage,
                                   int32_t data_parallel);

// What an engine keeps whole at a rank's peak although its ZeRO stage shards it (FSDP under
// pipeline parallelism: parallel/data_parallel.cc, FsdpResidency, cites the engines' code).
struct StateResidency {
  // [rank] bytes of the gathered working parameters held whole (bf16; FP8 for float8 linears
  // gathered in FP8); empty: the parameters are sharded as the ZeRO stage says.
  std::vector<double> gathered_parameter_bytes;
  // The gradients accumulate unsharded (in the precision's gradient bytes, fp32) until the
  // last backward reduce-scatters them.
  bool gradients_whole = false;
  bool operator==(const StateResidency&) const = default;
};
// ShardedModelStates with what `residency` keeps whole on `rank` in place of its shards: the
// gathered parameters, the whole gradients. The optimizer state (with the fp32 master
// parameters) stays sharded.
ModelStateBytes ResidentModelStates(double params, TrainingPrecision precision, int32_t zero_stage,
                                    int32_t data_parallel, const StateResidency& residency,
                                    size_t rank);

struct DeepSpeedZero2Estimate {
  double gpu_bytes = 0;
  double cpu_bytes = 0;
};
DeepSpeedZero2Estimate EstimateDeepSpeedZero2(double params, int32_t gpus_per_node, int32_t nodes,
                                              bool cpu_offload);

struct ActivationShape {
  double seq_len = 0;           // s
  double micro_batch = 0;       // b
  double hidden = 0;            // h
  double heads = 0;             // a
  int32_t tensor_parallel = 1;  // t
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
};
// Bytes of activations one transformer layer stores for one microbatch (Korthikanti Table 2).
double ActivationBytesPerLayer(const ActivationShape& shape);
// The first pipeline stage's peak: p microbatches in flight × L/p layers, × (1 + (p−1)/(p·v))
// when interleaved over v chunks (v = 1: plain 1F1B).
double FirstStageActivationBytes(const ActivationShape& shape, int32_t layers,
                                 int32_t pipeline_parallel, int32_t virtual_stages);

// Megatron's GPT parameter count and FLOPs per iteration (with recomputation).
double MegatronParameterCount(double layers, double hidden, double vocab, double seq_len);
double MegatronFlopsPerIteration(double batch, double seq_len, double layers, double hidden,
                                 double vocab);

}  // namespace stagecraft
