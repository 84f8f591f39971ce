// ClusterSpec: nodes of devices joined by intra-node and inter-node links (DESIGN.md §3: a
// transfer of n bytes over a directed link costs latency + n / bandwidth).
#pragma once

#include <cstdint>
#include <string>

#include "core/ids.h"
#include "core/time.h"
#include "hardware/kernel_model.h"

namespace stagecraft {

struct LinkSpec {
  Time latency;                        // per transfer; default 0
  double bandwidth_bytes_per_s = 0.0;  // 0 = infinite (bytes cost nothing)
  bool operator==(const LinkSpec&) const = default;
};

// 2 GiB: the default framework reserve (ClusterSpec::memory_reserve_bytes).
inline constexpr int64_t kDefaultMemoryReserveBytes = int64_t{2} << 30;

// The most devices a cluster (or a run's pp x tp x cp x dp) may have: 2^20, five times the
// largest GPU clusters built so far, and small enough that device counts stay within int32.
inline constexpr int64_t kMaxClusterDevices = int64_t{1} << 20;

struct ClusterSpec {
  bool given = false;            // false: no cluster in the config; transfers cost only cost_p2p
  int32_t devices_per_node = 8;  // devices sharing the intra-node links
  int32_t nodes = 1;             // number of nodes
  LinkSpec intra_node;           // e.g. NVLink
  LinkSpec inter_node;           // e.g. InfiniBand / RoCE
  // Compute of one device, for costs derived from FLOPs. Default: H800/H100 SXM dense BF16
  // peak, 989.5 TFLOP/s (NVIDIA H100 datasheet), at 40% efficiency (assumed default).
  double peak_flops_per_s = 989.5e12;
  double compute_efficiency = 0.4;
  // True when the config sets cluster.device.efficiency: every FLOPs-derived cost is then
  // FLOPs / (peak x efficiency) (the one-efficiency override). False: transformer models are
  // costed kernel by kernel (hardware/kernel_model.h) with `kernels`.
  bool efficiency_given = false;
  double fp8_flops_per_s = 0.0;  // dense FP8 peak; 0 = none (FP8 GEMMs at the BF16 rate)
  KernelModel kernels;           // the device's kernel-model constants (presets.cc)
  // Fraction of the HBM bandwidth a memory-bound kernel reaches (assumed default).
  double memory_efficiency = 0.8;
  // From a preset (hardware/presets.h); zero / "custom" when the config spells the cluster out.
  std::string device = "custom";
  int64_t hbm_bytes = 0;  // device memory; 0 = unknown (no capacity check)
  // Memory the framework holds besides the model's tensors, counted in every memory verdict:
  // the CUDA context with cuBLAS/cuDNN workspaces (0.3-1 GB per process) and NCCL's
  // communicator buffers and the caching allocator's slack (assumed; cluster.device.
  // memory_reserve overrides it).
  int64_t memory_reserve_bytes = kDefaultMemoryReserveBytes;
  double hbm_bytes_per_s = 0.0;  // device memory bandwidth; 0 = unknown
  bool operator==(const ClusterSpec&) const = default;

  double effective_flops_per_s() const { return peak_flops_per_s * compute_efficiency; }
  // Whether derived costs come from the kernel model (the default) or from one forced
  // efficiency (cluster.device.efficiency given, or no cluster at all).
  bool kernel_costed() const { return given && !efficiency_given; }
  DeviceRates rates() const {
    return {peak_flops_per_s, fp8_flops_per_s, hbm_bytes_per_s, memory_efficiency, kernels};
  }

  // REQUIRES: devices_per_node * nodes <= kMaxClusterDevices (the readers check it).
  int32_t num_devices() const { return devices_per_node * nodes; }
  bool SameNode(DeviceId a, DeviceId b) const {
    return a.value() / devices_per_node == b.value() / devices_per_node;
  }
  const LinkSpec& LinkBetween(DeviceId a, DeviceId b) const {
    return SameNode(a, b) ? intra_node : inter_node;
  }
};

// Time to move `bytes` from `from` to `to` over one link: latency + bytes / bandwidth, rounded
// to the nearest ns, plus the fixed `extra` (the --cost-p2p figure). With no cluster given,
// only `extra`.
Time TransferTime(const ClusterSpec& cluster, DeviceId from, DeviceId to, int64_t bytes,
                  Time extra);
// The same over a given link of the cluster (for devices outside the pipeline's numbering).
Time LinkTransferTime(const ClusterSpec& cluster, const LinkSpec& link, int64_t bytes, Time extra);

}  // namespace stagecraft
