// The kernel validation suite's input (bench/validation/kernels/*.csv, doc/fidelity.md):
// published per-shape kernel timings, one CSV per source. A file starts with `# source:` and
// `# measured:` lines (the citation, and how the source timed its kernels), then a header naming
// the kind: GEMM rows (device,dtype,m,n,k,batch,tflops,time_us,library,timing,note) or attention
// rows (device,dtype,impl,batch,heads,kv_heads,head_dim,seq,seq_kv,causal,pass,tflops,time_us,
// library,timing,note). Each row gives the rate or the time as the source prints it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace stagecraft {

enum class KernelKind : uint8_t { kGemm, kAttention };

struct KernelRow {
  int32_t line = 0;    // in its file, for messages
  std::string device;  // a device preset's name (list presets)
  std::string dtype;   // bf16 | fp16 | fp8 | fp32
  // GEMM: C[m x n] = A[m x k] · B[k x n], `batch` equal members.
  double m = 0, n = 0, k = 0;
  double batch = 1;  // GEMM members, or attention's batch
  // Attention.
  std::string impl;  // flash2, flash3, cudnn, te, triton, ...
  double heads = 0, kv_heads = 0, head_dim = 0, seq = 0, seq_kv = 0;
  bool causal = false;
  std::string pass;    // forward | backward | forward_backward
  double tflops = 0;   // as printed (0 = not given)
  double time_us = 0;  // as printed (0 = not given)
  std::string library;
  std::string timing;  // kernel | wall
  std::string note;
};

struct KernelSource {
  std::string name;      // the file's name without its folder and extension
  std::string cite;      // the `# source:` line
  std::string measured;  // the `# measured:` line
  KernelKind kind = KernelKind::kGemm;
  std::vector<KernelRow> rows;
};

// FLOPs of a row: 2·m·n·k·batch, or FlashAttention's 4·b·h·s·s_kv·d forward (halved causal),
// 2.5x backward, 3.5x forward plus backward.
double KernelRowFlops(KernelKind kind, const KernelRow& row);
// The measured seconds: time_us when given, else the FLOPs at the printed rate.
double KernelRowSeconds(KernelKind kind, const KernelRow& row);

// Parses one file; `name` is its path in messages ("path:line: column 'm': ...; expected ...").
// Errors: a missing `# source:` or `# measured:` line, an unknown header, a row with the wrong
// number of fields, a bad number or name, neither tflops nor time_us, no rows.
Result<KernelSource> ParseKernelSource(std::string_view text, std::string_view name);

}  // namespace stagecraft
