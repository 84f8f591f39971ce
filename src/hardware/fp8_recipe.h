// FP8 training recipes (parallel.fp8_recipe): how an engine scales the FP8 operands of a linear
// layer's three GEMMs, and what that costs besides the GEMMs. Each recipe is data: the bytes its
// casts, amax reductions and transposes move per element of the GEMM input, the output gradient
// and the weight, and the rate of its GEMMs as a share of the device's FP8 (tensorwise) rate
// (KernelModel). doc/fidelity.md, "FP8 recipes", gives the sources.
#pragma once

#include <cstdint>

#include "core/enum_table.h"
#include "hardware/kernel_model.h"

namespace stagecraft {

// The recipes by the engines' own names: torchao / torchtitan `float8.recipe_name` (tensorwise,
// rowwise, rowwise_with_gw_hp) and Megatron-LM's `--fp8-recipe` (tensorwise, delayed, blockwise,
// mxfp8; Transformer Engine's Float8CurrentScaling, DelayedScaling, Float8BlockScaling and
// MXFP8BlockScaling).
enum class Fp8Recipe : uint8_t {
  kTensorwise,       // one scale per tensor from its current amax
  kDelayed,          // one scale per tensor from an amax history (TE's DelayedScaling)
  kRowwise,          // one scale per row (torchao's axiswise scaling)
  kRowwiseWithGwHp,  // rowwise, the weight-gradient GEMM in BF16 (torchao)
  kBlockwise,        // 1x128 activation tiles, 128x128 weight blocks (DeepSeek-V3)
  kMxfp8,            // 1x32 blocks with E8M0 scales (OCP MX; native on Blackwell)
};
inline constexpr EnumTable<Fp8Recipe> kFp8RecipeNames = {
    {"tensorwise", Fp8Recipe::kTensorwise}, {"delayed", Fp8Recipe::kDelayed},
    {"rowwise", Fp8Recipe::kRowwise},       {"rowwise_with_gw_hp", Fp8Recipe::kRowwiseWithGwHp},
    {"blockwise", Fp8Recipe::kBlockwise},   {"mxfp8", Fp8Recipe::kMxfp8}};
constexpr const char* Fp8RecipeName(Fp8Recipe recipe) { return kFp8RecipeNames.Name(recipe); }

// The default with `fp8: true` and no recipe: torchtitan's (float8.recipe_name unset gives
// torchao's Float8LinearConfig(), tensorwise dynamic scaling), which is also what Megatron-Bridge's
// FP8-CS (current scaling) runs. A Megatron argument file without --fp8-recipe reads as Megatron's
// default, delayed (megatron/training/arguments.py).
inline constexpr Fp8Recipe kDefaultFp8Recipe = Fp8Recipe::kTensorwise;

// What one recipe moves and how fast its GEMMs run, per linear layer. Bytes are per element of
// the tensor named (reads plus writes; BF16 in, FP8 out), each pass of memory its own kernel.
struct Fp8RecipeCost {
  // The GEMM input's amax, casts and transposed copies (the layout the weight-gradient GEMM
  // reads), in the forward and in the backward; the output gradient's, in the backward.
  double input_forward_bytes = 0;
  double input_backward_bytes = 0;
  double grad_output_bytes = 0;
  // The weight's casts in the forward and in the backward, every microbatch (torchao casts
  // them in each pass; 0 where the engine keeps the FP8 weight for the step).
  double weight_forward_bytes = 0;
  double weight_backward_bytes = 0;
  // The input-gradient and weight-gradient GEMMs' outputs rescaled by a separate kernel
  // (torchao's rowwise: a tensorwise cuBLAS GEMM, then the outer product of the row scales).
  double rescale_bytes = 0;
  // Kernels launched per linear layer for those passes, forward and backward.
  int32_t forward_kernels = 0;
  int32_t backward_kernels = 0;
  bool weight_grad_bf16 = false;  // the weight-gradient GEMM in BF16 (rowwise_with_gw_hp)
  // Whether the scales need an all-reduce of amax across the ranks that shard a tensor (TP,
  // FSDP): a scalar per tensor, latency only, not timed.
  bool amax_all_reduce = false;
};

// The recipe's casts and kernels (device-independent: the engines' kernels).
Fp8RecipeCost RecipeCost(Fp8Recipe recipe);

// Which GEMM of a linear layer.
enum class LinearGemm : uint8_t { kForward, kInputGrad, kWeightGrad };

// The share of the device's FP8 GEMM rate (KernelModel::fp8_gemm_efficiency) the recipe's GEMM
// reaches (KernelModel's fp8_rowwise_gemm_share, fp8_blockwise_wgrad_share; 1 elsewhere).
double RecipeGemmShare(const KernelModel& model, Fp8Recipe recipe, LinearGemm gemm);

// Whether the device runs the recipe's GEMMs: mxfp8 needs the block-scaled tensor cores
// (KernelModel::mxfp8_gemm); the others run wherever FP8 does.
bool RecipeRuns(const KernelModel& model, Fp8Recipe recipe);

// Seconds of one GEMM of a linear layer under the recipe: GemmTime at the recipe's share of the
// FP8 rate (BF16 for rowwise_with_gw_hp's weight gradient).
double RecipeGemmSeconds(const DeviceRates& device, const GemmShape& shape, Fp8Recipe recipe,
                         LinearGemm gemm);

}  // namespace stagecraft
