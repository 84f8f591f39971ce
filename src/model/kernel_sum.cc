#include "model/kernel_sum.h"

#include <algorithm>

namespace stagecraft {

void KernelSum::Linear(double tokens, double n, double k, double batch) {
  if (tokens <= 0) return;
  const GemmShape forward_shape{tokens, n, k, batch};
  const GemmShape input_shape{tokens, k, n, batch};
  const GemmShape weight_shape{k, n, tokens, batch};
  const double forward =
      fp8 ? RecipeGemmSeconds(device, forward_shape, fp8_recipe, LinearGemm::kForward)
          : GemmSeconds(device, forward_shape);
  const double input =
      fp8 ? RecipeGemmSeconds(device, input_shape, fp8_recipe, LinearGemm::kInputGrad)
          : GemmSeconds(device, input_shape);
  const double weight =
      fp8 ? RecipeGemmSeconds(device, weight_shape, fp8_recipe, LinearGemm::kWeightGrad)
          : GemmSeconds(device, weight_shape);
  times.forward += forward;
  times.input_grad += input;
  times.weight_grad += weight;
  times.forward_gemm += forward;
  times.backward_gemm += input + weight;
  gemm_flops += 2 * tokens * n * k * batch;
  forward_kernels += 1;
  input_kernels += 1;
  weight_kernels += 1;
  if (fp8) Fp8Casts(tokens, n, k, batch);
}

void KernelSum::Fp8Casts(double tokens, double n, double k, double batch) {
  const Fp8RecipeCost cost = RecipeCost(fp8_recipe);
  const double inputs = batch * tokens * k;
  const double grads = batch * tokens * n;
  const double weights = fp8_weights_gathered ? 0.0 : batch * k * n * fp8_weight_casts;
  times.forward += MemoryBoundSeconds(
      device, inputs * cost.input_forward_bytes + weights * cost.weight_forward_bytes);
  times.input_grad += MemoryBoundSeconds(
      device, inputs * cost.input_backward_bytes + grads * cost.grad_output_bytes +
                  weights * cost.weight_backward_bytes + inputs * cost.rescale_bytes);
  times.weight_grad += MemoryBoundSeconds(device, batch * k * n * cost.rescale_bytes);
  forward_kernels += cost.forward_kernels;
  input_kernels += cost.backward_kernels;
}

void KernelSum::Elementwise(double bytes, int kernels) {
  for (int kernel = 0; kernel < kernels; ++kernel) {
    times.forward += MemoryBoundSeconds(device, bytes / kernels);
    times.input_grad += MemoryBoundSeconds(device, 2 * bytes / kernels);
  }
  forward_kernels += kernels;
  input_kernels += kernels;
}

void KernelSum::FusedAttention(double flops, double key_blocks) {
  if (flops <= 0) return;
  const double forward = AttentionSeconds(device, flops, false, key_blocks, attention);
  times.forward += forward;
  times.attention_core += forward;
  times.input_grad += AttentionSeconds(device, 2.5 * flops, true, key_blocks, attention);
  forward_kernels += 1;
  input_kernels += 1;
}

void KernelSum::MixtureOfExperts(double tokens, double hidden, double experts, double top_k,
                                 double width, double shared, double expert_parallel,
                                 double tensor_parallel) {
  const double ep = std::max(1.0, expert_parallel);
  const double slice = width / std::max(1.0, tensor_parallel);
  Linear(tokens, experts, hidden);  // router
  const double per_expert = tokens * top_k * ep / experts;
  Linear(per_expert, 2 * slice, hidden, experts / ep);
  Linear(per_expert, hidden, slice, experts / ep);
  if (shared > 0) {
    Linear(tokens, 2 * slice * shared, hidden);
    Linear(tokens, hidden, slice * shared);
  }
  // SwiGLU (read 2, write 1 element of bf16) of every active expert's slice.
  Elementwise(tokens * (top_k + shared) * slice * 2 * 3);
  // Permute before the dispatch and unpermute after the combine: top_k·hidden per token read
  // and written, each way.
  Elementwise(2 * tokens * top_k * hidden * 2 * 2);
}

void KernelSum::OutputAndLoss(double tokens, double hidden, double vocab,
                              CrossEntropyFusion fusion) {
  Linear(tokens, vocab, hidden);
  struct Passes {
    double forward_bytes, backward_bytes;
    int32_t forward_kernels, backward_kernels;
  };
  // kTorch: F.cross_entropy on .float() logits: the cast (read 2, write 4), log_softmax reading
  // its row for the max, again for the sum and again to write (12 + 4), the NLL gather; backward
  // the dense NLL gradient (zero fill and scatter, 4), log_softmax's backward (read the gradient
  // twice and the output once, write 4: 16), the cast back (read 4, write 2).
  const Passes passes = fusion == CrossEntropyFusion::kTe       ? Passes{2, 4, 2, 1}
                        : fusion == CrossEntropyFusion::kNative ? Passes{26, 14, 4, 3}
                        : fusion == CrossEntropyFusion::kTorch  ? Passes{22, 26, 3, 4}
                        : fusion == CrossEntropyFusion::kTorchCompiled
                            ? Passes{4, 4, 2, 1}  // Inductor: max and sum passes; one backward
                            : Passes{38, 14, 6, 3};
  times.forward += MemoryBoundSeconds(device, tokens * vocab * passes.forward_bytes);
  times.input_grad += MemoryBoundSeconds(device, tokens * vocab * passes.backward_bytes);
  forward_kernels += passes.forward_kernels;
  input_kernels += passes.backward_kernels;
}

LayerKernelTimes EmbeddingKernels(const DeviceRates& device, double tokens, double hidden,
                                  double table_rows) {
  const double rows = tokens * hidden;
  const double table = table_rows * hidden;
  LayerKernelTimes times;
  times.forward = MemoryBoundSeconds(device, rows * 2 * 2);             // bf16, read and write
  times.weight_grad = MemoryBoundSeconds(device, rows * (2 + 8)) +      // bf16 in, fp32 add
                      MemoryBoundSeconds(device, table * 2) +           // the zero-filled table
                      MemoryBoundSeconds(device, table * (2 + 4 + 4));  // into the fp32 buffer
  return times;
}

LayerKernelTimes KernelSum::HostBound() const {
  const double host = device.kernels.host_seconds_per_kernel;
  LayerKernelTimes bounded = times;
  bounded.forward = std::max(times.forward, forward_kernels * host);
  bounded.input_grad = std::max(times.input_grad, input_kernels * host);
  bounded.weight_grad = std::max(times.weight_grad, weight_kernels * host);
  return bounded;
}

}  // namespace stagecraft
