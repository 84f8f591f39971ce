// The training engine that issues a layer's kernels, and the host time it spends per kernel
// (KernelSum::HostBound: a pass takes at least its kernels times this). An eager PyTorch engine
// issues every kernel from Python through the dispatcher and autograd, on one CPU thread per GPU;
// a small layer at a small micro-batch is bound by that issue rate, not by the GPU.
#pragma once

#include <cstdint>

#include "core/enum_table.h"
#include "hardware/kernel_model.h"

namespace stagecraft {

// parallel.engine: which code ran the step. kUnstated keeps the device's issue rate
// (KernelModel::host_seconds_per_kernel, an assumption).
enum class TrainingEngine : uint8_t {
  kUnstated,
  kMegatronLm,
  kMegatronDeepSpeed,
  kTorchtitan,
  kDeepSpeed,
  kLlmFoundry
};
inline constexpr EnumTable<TrainingEngine> kTrainingEngineNames = {
    {"megatron-lm", TrainingEngine::kMegatronLm},
    {"megatron-deepspeed", TrainingEngine::kMegatronDeepSpeed},
    {"torchtitan", TrainingEngine::kTorchtitan},
    {"deepspeed", TrainingEngine::kDeepSpeed},
    {"llm-foundry", TrainingEngine::kLlmFoundry}};

// Megatron-DeepSpeed's host time per transformer layer and microbatch with full recomputation
// (forward, the recomputed forward and the backward), measured: vTrain's single-node ground
// truth (github.com/VIA-Research/vTrain @ f8dda84, data/ground_truth_single.csv, Megatron-DeepSpeed
// on 8 A100 SXM4) at hidden 1024 and micro-batch 1, TP 1 to 4 (272 runs, where the GPU's work is
// a third of the step or less), fitted as iteration = a · (microbatches + pp − 1) · layers/pp + b
// by least squares: a = 3.459 ms (b = 15.2 ms an iteration; median residual 3.9%). The time per
// layer and microbatch stays at a from micro-batch 1 to 2 while the GPU's work doubles (hidden
// 1024, TP 2: 3.64 and 3.94 ms; TP 4: 3.66 and 3.59), so the host's issue overlaps the GPU's
// work (a pass takes the larger of the two) rather than adding to it.
inline constexpr double kMegatronDeepSpeedHostSecondsPerLayer = 3.459e-3;
// The kernels KernelSum counts for that layer (a GPT layer with biases, LayerNorm, learned
// positions and the unfused attention core: 13 forward, 15 backward, 4 weight-gradient, and the
// recomputed forward's 13): the measured time spread over them gives the host time per kernel.
inline constexpr double kGptLayerKernelsWithRecompute = 13 + 15 + 4 + 13;

// The host's time per kernel the engine issues, on `device` (whose default stands for engines
// without their own measurement).
double HostSecondsPerKernel(TrainingEngine engine, const KernelModel& device);
// Where that figure comes from, for the assumptions line.
const char* HostSecondsSource(TrainingEngine engine);

}  // namespace stagecraft
