#include "hardware/presets.h"

#include <algorithm>
#include <charconv>

#include "core/suggest.h"

namespace stagecraft {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr int64_t kGB = 1'000'000'000;
// A device's memory as its driver reports it (nvidia-smi's memory total, MiB). The datasheets'
// "80 GB" of HBM is 80 GiB of stacks, less what the driver keeps: an H100 80GB shows 81559 MiB,
// 79.6 GiB, not 80e9 bytes (74.5 GiB). The readings (nvidia-smi tables in public logs):
// A100-SXM4-80GB 81920, A100-SXM4-40GB 40960, H100 80GB HBM3 81559, H100 PCIe 81559, H100 NVL
// 95830, H200 143771, H800 81559, B200 183359 MiB. Parts without a reading here (A40, the 96 GB
// H100, GH200) keep their datasheet's decimal GB.
constexpr int64_t kMiB = 1 << 20;

}  // namespace

// Kernel-model constants (hardware/kernel_model.h), one set per tensor-core generation. The
// GEMM figures are measured maximum achievable matmul FLOP/s (MAMF: the best of a brute-force
// scan of BF16 matmul shapes) over the datasheet peak, with the best shape's K, from
// stas00/ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS
// comparison table" (A100 SXM 267.9 of 312 at 6912x16384x2048, H100 SXM 792.1 of 989 at
// 6144x17920x2816, GH200 821.0 of 989 at 11264x19712x1536; CUDA 12.1-12.5). The share of it a
// training step sustains (A100 0.80, Hopper 0.76) is fitted on the validation suite
// (doc/fidelity.md). The attention shares are FlashAttention-2's, causal, head dim 128, sequence
// 2k-8k: on A100 from its paper (Dao 2023, Fig. 4-6), on H100 as the FlashAttention-3 paper
// measures it (Shah et al. 2024, Fig. 5-7), and FlashAttention-3's and cuDNN's from the same
// paper's H100 SXM5 figures (causal forward at 16k: 616 and 539 TFLOP/s; non-causal backward at
// 16k: 561 and 516), FP8 forward from the FP8 pull request's benchmark (Dao-AILab/flash-attention
// #1075, H100 PCIe, head dim 128, 8448 keys: FlashAttention-3 618.05 and cuDNN 668.55 TFLOP/s of
// 1513). The FP8 GEMM share is the same table's FP8 MAMF (H100 SXM, torch._scaled_mm with
// tensorwise scales: 1402.6 of 1979 TFLOP/s at 1024x9216x14336; it was 0.70 fitted on the suite
// before). The memory-bound kernels' floor is an assumption; the GEMM latency is XLA's CUPTI
// kernel time of its smallest GEMMs (kernel_model.h).
// FP8 recipes' GEMMs on Hopper (hardware/fp8_recipe.h). Rowwise: PyTorch's CUTLASS rowwise
// torch._scaled_mm with fast accumulation runs "most shapes within 90-100% of tensor-wise
// efficiency" of cuBLAS's tensorwise kernel on H100 (pytorch/pytorch#147971): the middle, 0.95.
// Blockwise: the forward and input-gradient GEMMs (1x128 by 128x128 scales) at the tensorwise
// share (DeepGEMM's README rows, bench/validation/kernels, are within +1.0% of it on average);
// the weight-gradient GEMM (1x128 by 128x1) from torch._scaled_mm on cuBLAS 12.9, H100 PCIe,
// 16640x5120x8192: 580.38 TFLOP/s against BF16's 433.0 (pytorch/ao#3342), a speedup of 1.340
// where the tensorwise share over the BF16 MAMF gives 1.772 on that part: 0.756 of it.
constexpr double kHopperRowwiseShare = 0.95;
constexpr double kHopperBlockwiseWgradShare =
    (580.38 / 433.0) / ((1513.0 * 1402.6 / 1979.0) / (756.0 * 792.1 / 989.5));
constexpr KernelModel kAmpere = {.sms = 108,
                                 .gemm_efficiency = 267.9 / 312.0,
                                 .gemm_best_k = 2048,
                                 .gemm_sustained = 0.80,
                                 .fp8_gemm_efficiency = 0.0,
                                 .attention_forward_efficiency = 0.55,
                                 .attention_backward_efficiency = 0.45,
                                 .kernel_floor_s = 5e-6};
// The FlashAttention-3 paper's backward figure is non-causal: at 16k a query tile meets 128
// key blocks, not the reference's 64 (AttentionTime's roll-off), so its share there is higher by
// (128/129)/(64/65).
constexpr double kNonCausal16k = (128.0 / 129.0) / (64.0 / 65.0);
constexpr KernelModel kHopper = {.sms = 132,
                                 .gemm_efficiency = 792.1 / 989.5,
                                 .gemm_best_k = 2816,
                                 .gemm_sustained = 0.76,
                                 .fp8_gemm_efficiency = 1402.6 / 1979.0,
                                 .fp8_rowwise_gemm_share = kHopperRowwiseShare,
                                 .fp8_blockwise_wgrad_share = kHopperBlockwiseWgradShare,
                                 .attention_forward_efficiency = 0.33,
                                 .attention_backward_efficiency = 0.29,
                                 .flash3_forward_efficiency = 616.0 / 989.5,
                                 .flash3_backward_efficiency = 561.0 / 989.5 / kNonCausal16k,
                                 .cudnn_forward_efficiency = 539.0 / 989.5,
                                 .cudnn_backward_efficiency = 516.0 / 989.5 / kNonCausal16k,
                                 .fp8_attention_forward_efficiency = 618.05 / 1513.0,
                                 .fp8_cudnn_forward_efficiency = 668.55 / 1513.0,
                                 .kernel_floor_s = 5e-6};
// Blackwell (B200), from its own measurements: the GEMM maximum from the MAMF table (BF16
// 1745.0 of 2250 TFLOP/s at 1792x16128x3072, FP8 3432.5 of 4500 at 15360x4096x3072, torch 2.7.1,
// CUDA 12.8); MXFP8 GEMMs (cuBLAS, block-scaled tensor cores) at the FP8 rate: torchao measures
// "up to ~2x" BF16 on B200 (torchao/prototype/mx_formats/README.md at 4446ad91), as the MAMF
// table's FP8 over BF16 (1.97); the rowwise and blockwise shares are Hopper's (no B200 source
// read); attention from NVIDIA's cudnn-frontend SDPA training benchmark on B200 (its
// results CSV: causal, 128 query heads of dim 128, 16k: FlashAttention-2 2.7.3 428.6 forward and
// 354.7 backward, cuDNN 9.10 1358.6 and 1074.5 TFLOP/s). FlashAttention-3 is Hopper's only.
constexpr KernelModel kBlackwell = {.sms = 148,
                                    .gemm_efficiency = 1745.0 / 2250.0,
                                    .gemm_best_k = 3072,
                                    .gemm_sustained = 0.76,
                                    .fp8_gemm_efficiency = 3432.5 / 4500.0,
                                    .fp8_rowwise_gemm_share = kHopperRowwiseShare,
                                    .fp8_blockwise_wgrad_share = kHopperBlockwiseWgradShare,
                                    .mxfp8_gemm = true,
                                    .attention_forward_efficiency = 428.6 / 2250.0,
                                    .attention_backward_efficiency = 354.7 / 2250.0,
                                    .cudnn_forward_efficiency = 1358.6 / 2250.0,
                                    .cudnn_backward_efficiency = 1074.5 / 2250.0,
                                    .kernel_floor_s = 5e-6};
// A generation's constants on a part with another SM count, or another measured GEMM maximum.
constexpr KernelModel WithSms(KernelModel model, int32_t sms) {
  model.sms = sms;
  return model;
}
constexpr KernelModel WithMamf(KernelModel model, double efficiency, double best_k) {
  model.gemm_efficiency = efficiency;
  model.gemm_best_k = best_k;
  return model;
}

// A100 NVLink as measured on an 8-GPU A100 SXM4 NVSwitch node: vTrain's NCCL all-reduce tables
// (VIA-Research/vTrain, trace/a100/AR_GPU8_1M_1024M_LUT and AR_GPU4_...): 92.8 us for 1 MiB over
// 8 GPUs (51 us over 4), and a fit over 16-256 MiB of 95 us + S / 124 GB/s over 8 GPUs, i.e. a
// bus bandwidth of 218 GB/s (of 300: 0.727) and about 7 us a ring step (14 steps).
constexpr double kA100NvlinkEfficiency = 218.0 / 300.0;
constexpr int64_t kA100NvlinkLatencyNs = 7'000;

constexpr const char* kAmpereSource =
    "MAMF 267.9 of 312 TFLOP/s BF16 at K 2048 (ml-engineering MAMF table), 0.80 of it sustained "
    "(fitted on the validation suite); attention from FlashAttention-2's A100 figures; 108 SMs";
constexpr const char* kHopperSource =
    "MAMF 792.1 of 989 TFLOP/s BF16 at K 2816 (ml-engineering MAMF table), 0.76 of it sustained "
    "(fitted on the validation suite); attention: FlashAttention-2 on H100 as the FA3 paper "
    "measures it, FlashAttention-3 and cuDNN from the FA3 paper's figures; FP8 MAMF 1402.6 of "
    "1979; 132 SMs";

const std::vector<DevicePreset>& DevicePresets() {
  // Peaks are dense (without 2:4 sparsity); NVLink is the per-GPU total divided by two
  // directions; NIC is the per-GPU scale-out port of the vendor's 8-GPU system.
  static const std::vector<DevicePreset> kPresets = {
      {"a100", "NVIDIA A100 SXM4 80 GB", 312 * kTera, 0, 81920 * kMiB, 2039 * kGiga, 300 * kGiga,
       25 * kGiga, 8,
       "NVIDIA A100 datasheet: BF16 312 TFLOP/s, 80 GB HBM2e at 2,039 GB/s, NVLink 600 GB/s; "
       "DGX A100: one 200 Gb/s HDR InfiniBand port per GPU; NVLink's usable bandwidth and "
       "latency from vTrain's measured A100 all-reduce tables",
       kAmpere, kAmpereSource, kA100NvlinkEfficiency, kA100NvlinkLatencyNs},
      {"a100-40gb", "NVIDIA A100 SXM4 40 GB", 312 * kTera, 0, 40960 * kMiB, 1555 * kGiga,
       300 * kGiga, 25 * kGiga, 8,
       "NVIDIA A100 datasheet: BF16 312 TFLOP/s, 40 GB HBM2 at 1,555 GB/s, NVLink 600 GB/s; "
       "DGX A100: one 200 Gb/s HDR InfiniBand port per GPU; NVLink's usable bandwidth and "
       "latency from vTrain's measured A100 all-reduce tables",
       kAmpere, kAmpereSource, kA100NvlinkEfficiency, kA100NvlinkLatencyNs},
      {"a40", "NVIDIA A40 48 GB (PCIe, 8 per server)", 149.7 * kTera, 0, 48 * kGB, 696 * kGiga,
       32 * kGiga, 12.5 * kGiga, 8,
       "NVIDIA A40 datasheet: BF16 149.7 TFLOP/s dense, 48 GB GDDR6 at 696 GB/s, PCIe Gen4 x16 "
       "(64 GB/s, 32 each way) between the GPUs of a server (the NVLink bridge joins pairs "
       "only and is not modelled: tp 2 is costed over PCIe too), 84 SMs; a 100 Gb/s NIC per "
       "GPU assumed; Vidur's A40 cluster (its config explorer) has 8 per node",
       WithSms(kAmpere, 84),
       "as a100 (no published A40 MAMF in our sources: A100's share assumed), 84 SMs (GA102)",
       kNvlinkEfficiency, kNvlinkLatencyNs, "PCIe", "GDDR6"},
      {"h100", "NVIDIA H100 SXM5 80 GB", 989.5 * kTera, 1979 * kTera, 81559 * kMiB, 3350 * kGiga,
       450 * kGiga, 50 * kGiga, 8,
       "NVIDIA H100 datasheet (SXM5): BF16 989 TFLOP/s, FP8 1,979 TFLOP/s dense, 80 GB HBM3 at "
       "3.35 TB/s, NVLink 900 GB/s; DGX H100: one 400 Gb/s ConnectX-7 per GPU",
       kHopper, kHopperSource},
      {"h100-96gb", "NVIDIA H100 SXM 96 GB HBM2e, 500 W (Meta Grand Teton)", 835 * kTera,
       1670 * kTera, 96 * kGB, 2400 * kGiga, 450 * kGiga, 50 * kGiga, 8,
       "torchtitan's benchmarks (docs/performance.md, benchmarks/): H100 SXM with 96 GB HBM2e "
       "at 2.4 TB/s and a 500 W power limit, its peak 'between SXM and NVL' (989 and 835 "
       "TFLOP/s BF16 dense); the sustained clock at 500 W is not published: the lower bound, "
       "835, fitted on the validation suite (doc/fidelity.md); 400 Gb/s RDMA per GPU",
       kHopper, "as h100 (the power limit is in the peak)"},
      {"h100-pcie", "NVIDIA H100 PCIe 80 GB", 756 * kTera, 1513 * kTera, 81559 * kMiB, 2000 * kGiga,
       64 * kGiga, 50 * kGiga, 8,
       "NVIDIA H100 datasheet (PCIe): BF16 756 TFLOP/s, FP8 1,513 TFLOP/s dense, 80 GB HBM2e at "
       "2 TB/s, 114 SMs; GPUs of a server joined by PCIe Gen5 x16 (64 GB/s each way), one 400 "
       "Gb/s NIC per GPU",
       WithSms(kHopper, 114), "as h100 (SXM5's MAMF share assumed), 114 SMs (H100 whitepaper)",
       kNvlinkEfficiency, kNvlinkLatencyNs, "PCIe"},
      {"h100-nvl", "NVIDIA H100 NVL 94 GB", 835 * kTera, 1670 * kTera, 95830 * kMiB, 3900 * kGiga,
       300 * kGiga, 50 * kGiga, 8,
       "NVIDIA H100 datasheet (NVL): BF16 1,671 TFLOP/s with sparsity (835 dense), FP8 3,341 "
       "(1,670 dense), 94 GB HBM3 at 3.9 TB/s, NVLink bridge 600 GB/s; one 400 Gb/s NIC per GPU",
       kHopper, "as h100 (SXM5's MAMF share assumed)"},
      {"h200", "NVIDIA H200 SXM 141 GB", 989.5 * kTera, 1979 * kTera, 143771 * kMiB, 4800 * kGiga,
       450 * kGiga, 50 * kGiga, 8,
       "NVIDIA H200 datasheet (SXM): H100's tensor cores, 141 GB HBM3e at 4.8 TB/s, NVLink 900 "
       "GB/s; HGX H200: one 400 Gb/s NIC per GPU",
       kHopper, kHopperSource},
      {"h800", "NVIDIA H800 SXM5 80 GB (export variant)", 989.5 * kTera, 1979 * kTera, 81559 * kMiB,
       3350 * kGiga, 160 * kGiga / kNvlinkEfficiency, 50 * kGiga / kNicEfficiency, 8,
       "H100 compute and memory; links as the DeepSeek-V3 report §3.1 measures its H800 "
       "cluster: NVLink 160 GB/s, InfiniBand 50 GB/s per GPU (stored so that the usable "
       "bandwidth is exactly those)",
       kHopper, kHopperSource},
      {"gh200", "NVIDIA GH200 Grace Hopper 96 GB (4 per node)", 989.5 * kTera, 1979 * kTera,
       96 * kGB, 4000 * kGiga, 450 * kGiga, 25 * kGiga, 4,
       "NVIDIA GH200 datasheet: H100 tensor cores (BF16 989 TFLOP/s, FP8 1,979 dense), 96 GB "
       "HBM3 at 4 TB/s, NVLink 900 GB/s; HPE Cray EX254n blade: 4 GH200 per node, one 200 Gb/s "
       "Slingshot-11 NIC each",
       WithMamf(kHopper, 821.0 / 989.5, 1536),
       "MAMF 821.0 of 989 TFLOP/s BF16 at K 1536 (ml-engineering MAMF table); otherwise as "
       "h100"},
      {"b200", "NVIDIA B200 (HGX, 1000 W) 192 GB", 2250 * kTera, 4500 * kTera, 183359 * kMiB,
       8000 * kGiga, 900 * kGiga, 50 * kGiga, 8,
       "NVIDIA HGX B200 datasheet: BF16 2.25 PFLOP/s, FP8 4.5 PFLOP/s dense, 192 GB HBM3e at "
       "8 TB/s, NVLink 5 1.8 TB/s; one 400 Gb/s NIC per GPU",
       kBlackwell,
       "MAMF 1745.0 of 2250 TFLOP/s BF16 at K 3072, FP8 3432.5 of 4500 (ml-engineering MAMF "
       "table); Hopper's sustained share assumed; attention (FlashAttention-2, cuDNN) from "
       "cudnn-frontend's B200 SDPA benchmark; 148 SMs"},
  };
  return kPresets;
}

Result<const DevicePreset*> FindDevicePreset(std::string_view name) {
  std::vector<std::string> names;
  for (const DevicePreset& preset : DevicePresets()) {
    if (name == preset.name) return &preset;
    names.emplace_back(preset.name);
  }
  return Error{"unknown device preset '" + std::string(name) + "'" + DidYouMean(name, names) +
               " (stagecraft list presets)"};
}

Result<ClusterSpec> ClusterFromPreset(std::string_view name) {
  std::string_view device = name;
  int32_t nodes = 1;
  const size_t cross = name.rfind('x');
  if (cross != std::string_view::npos && cross + 1 < name.size() &&
      name.substr(cross + 1).find_first_not_of("0123456789") == std::string_view::npos) {
    device = name.substr(0, cross);
    const std::string_view count = name.substr(cross + 1);
    const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), nodes);
    if (error != std::errc() || end != count.data() + count.size() || nodes < 1) {
      return Error{"cluster preset '" + std::string(name) +
                   "': the node count must be a whole number >= 1 (expected DEVICE or "
                   "DEVICExNODES, e.g. 'h100x2')"};
    }
  }
  auto preset = FindDevicePreset(device);
  if (!preset.ok()) {
    return Error{"cluster preset '" + std::string(name) + "': " + preset.error().message +
                 " (expected DEVICE or DEVICExNODES, e.g. 'h100x2')"};
  }
  const DevicePreset& spec = *preset.value();
  if (int64_t{nodes} * spec.devices_per_node > kMaxClusterDevices) {
    return Error{"cluster preset '" + std::string(name) + "': " + std::to_string(nodes) +
                 " nodes of " + std::to_string(spec.devices_per_node) + " devices are more than " +
                 "the limit of " + std::to_string(kMaxClusterDevices) + " devices"};
  }
  ClusterSpec cluster;
  cluster.given = true;
  cluster.device = spec.name;
  cluster.devices_per_node = spec.devices_per_node;
  cluster.nodes = nodes;
  cluster.intra_node = {Time::Nanoseconds(spec.nvlink_latency_ns),
                        spec.nvlink_bytes_per_s * spec.nvlink_efficiency};
  cluster.inter_node = {Time::Nanoseconds(kNicLatencyNs), spec.nic_bytes_per_s * kNicEfficiency};
  cluster.peak_flops_per_s = spec.bf16_flops_per_s;
  cluster.fp8_flops_per_s = spec.fp8_flops_per_s;
  cluster.kernels = spec.kernels;
  cluster.hbm_bytes = spec.hbm_bytes;
  cluster.hbm_bytes_per_s = spec.hbm_bytes_per_s;
  return cluster;
}

std::string LargerClusterHint(const ClusterSpec& cluster, int64_t gpus) {
  const int64_t per_node = std::max<int64_t>(1, cluster.devices_per_node);
  if (gpus > kMaxClusterDevices) {
    return "at most " + std::to_string(kMaxClusterDevices) + " GPUs fit a cluster preset (e.g. " +
           cluster.device + "x" + std::to_string(kMaxClusterDevices / per_node) + ")";
  }
  return "give a larger --cluster, e.g. " + cluster.device + "x" +
         std::to_string((gpus + per_node - 1) / per_node);
}

}  // namespace stagecraft
