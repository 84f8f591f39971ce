#include "hardware/fp8_recipe.h"

namespace stagecraft {
namespace {

// Bytes an element: a BF16 read or write, an FP8 write, and a scale's share of its block.
constexpr double kBf16 = 2;
constexpr double kFp8 = 1;
constexpr double kFp32 = 4;
constexpr double kE8m0 = 1;

}  // namespace

// The casts are torchao's own accounting of the kernels each recipe launches, per tensor role
// (pytorch/ao torchao/testing/training/roofline_utils.py at 104f01a8,
// get_tensor_memory_traffic_ovhd_s and get_blockwise_float8_mem_sympy, without the fusion with
// the previous op), put in the pass that launches them; delayed is Transformer Engine's fused
// cast-transpose (amax into the history in the same kernel), its FP8 weights kept for the step.
Fp8RecipeCost RecipeCost(Fp8Recipe recipe) {
  Fp8RecipeCost cost;
  switch (recipe) {
    case Fp8Recipe::kTensorwise:
      // Input and output gradient: amax (read), then one cast writing both layouts. Weight: amax
      // and a cast forward, a second cast (the other layout) backward.
      cost.input_forward_bytes = kBf16 + kBf16 + 2 * kFp8;
      cost.grad_output_bytes = kBf16 + kBf16 + 2 * kFp8;
      cost.weight_forward_bytes = kBf16 + kBf16 + kFp8;
      cost.weight_backward_bytes = kBf16 + kFp8;
      cost.forward_kernels = 6;   // two amax stages and a cast, for input and weight
      cost.backward_kernels = 4;  // the output gradient's three, the weight's cast
      cost.amax_all_reduce = true;
      break;
    case Fp8Recipe::kDelayed:
      cost.input_forward_bytes = kBf16 + 2 * kFp8;
      cost.grad_output_bytes = kBf16 + 2 * kFp8;
      cost.forward_kernels = 1;
      cost.backward_kernels = 1;
      cost.amax_all_reduce = true;  // once a step, off the critical path
      break;
    case Fp8Recipe::kRowwise:
      // Row scales are local: one cast per layout, but the column-wise layout the other GEMMs
      // read needs a BF16 transpose first (not fusable without holding the tensor in shared
      // memory). Input: cast writing FP8 rows and the BF16 transpose, then the transpose's cast.
      cost.input_forward_bytes = kBf16 + kFp8 + kBf16;
      cost.input_backward_bytes = kBf16 + kFp8;
      cost.grad_output_bytes = (kBf16 + kFp8 + kBf16) + (kBf16 + kFp8);
      cost.weight_forward_bytes = kBf16 + kFp8;
      cost.weight_backward_bytes = 2 * kBf16 + (kBf16 + kFp8);
      // The backward GEMMs run without fast accumulation, which torchao sends to the tensorwise
      // cuBLAS kernel and rescales after (torchao/float8/float8_ops.py, addmm_float8_unwrapped;
      // one extra kernel per GEMM, pytorch/ao#2184): read and write the BF16 output.
      cost.rescale_bytes = 2 * kBf16;
      cost.forward_kernels = 3;
      cost.backward_kernels = 7;
      break;
    case Fp8Recipe::kRowwiseWithGwHp:
      // Only the layouts of the forward and input-gradient GEMMs; the weight gradient reads the
      // BF16 tensors. The weight is cast again (tensorwise) for the input gradient.
      cost.input_forward_bytes = kBf16 + kFp8;
      cost.grad_output_bytes = kBf16 + kFp8;
      cost.weight_forward_bytes = kBf16 + kFp8;
      cost.weight_backward_bytes = kBf16 + kFp8;
      cost.forward_kernels = 2;
      cost.backward_kernels = 3;
      cost.weight_grad_bf16 = true;
      break;
    case Fp8Recipe::kBlockwise:
      // One quantization per layout each GEMM reads, fp32 scales per 1x128 tile (activations)
      // or 128x128 block (weights).
      cost.input_forward_bytes = kBf16 + kFp8 + kFp32 / 128;
      cost.input_backward_bytes = kBf16 + kFp8 + kFp32 / 128;
      cost.grad_output_bytes = 2 * (kBf16 + kFp8 + kFp32 / 128);
      cost.weight_forward_bytes = kBf16 + kFp8 + kFp32 / (128 * 128);
      cost.weight_backward_bytes = kBf16 + kFp8 + kFp32 / (128 * 128);
      cost.forward_kernels = 2;
      cost.backward_kernels = 4;
      break;
    case Fp8Recipe::kMxfp8:
      // Two casts of each tensor (along rows and along columns: the 1x32 blocks run along the
      // reduction dimension of each GEMM), each writing an E8M0 scale per 32 elements.
      cost.input_forward_bytes = kBf16 + kFp8 + kE8m0 / 32;
      cost.input_backward_bytes = kBf16 + kFp8 + kE8m0 / 32;
      cost.grad_output_bytes = 2 * (kBf16 + kFp8 + kE8m0 / 32);
      cost.weight_forward_bytes = kBf16 + kFp8 + kE8m0 / 32;
      cost.weight_backward_bytes = kBf16 + kFp8 + kE8m0 / 32;
      cost.forward_kernels = 2;
      cost.backward_kernels = 4;
      break;
  }
  return cost;
}

double RecipeGemmShare(const KernelModel& model, Fp8Recipe recipe, LinearGemm gemm) {
  if ((recipe == Fp8Recipe::kRowwise || recipe == Fp8Recipe::kRowwiseWithGwHp) &&
      gemm == LinearGemm::kForward) {
    return model.fp8_rowwise_gemm_share;
  }
  if (recipe == Fp8Recipe::kBlockwise && gemm == LinearGemm::kWeightGrad) {
    return model.fp8_blockwise_wgrad_share;
  }
  return 1.0;
}

bool RecipeRuns(const KernelModel& model, Fp8Recipe recipe) {
  return recipe != Fp8Recipe::kMxfp8 || model.mxfp8_gemm;
}

double RecipeGemmSeconds(const DeviceRates& device, const GemmShape& shape, Fp8Recipe recipe,
                         LinearGemm gemm) {
  if (gemm == LinearGemm::kWeightGrad && RecipeCost(recipe).weight_grad_bf16) {
    return GemmSeconds(device, shape, false);
  }
  const double share = RecipeGemmShare(device.kernels, recipe, gemm);
  if (share == 1.0) return GemmSeconds(device, shape, true);
  DeviceRates scaled = device;
  const double fp8 = device.kernels.fp8_gemm_efficiency > 0 ? device.kernels.fp8_gemm_efficiency
                                                            : device.kernels.gemm_efficiency;
  scaled.kernels.fp8_gemm_efficiency = fp8 * share;
  if (device.fp8_flops_per_s <= 0) scaled.kernels.gemm_efficiency *= share;
  return GemmSeconds(scaled, shape, true);
}

}  // namespace stagecraft
