// Hardware presets: datasheet figures of common training accelerators and the clusters built
// from them (`stagecraft list presets`). A cluster preset is a device name with an optional node
// count, "h100" (one node of 8) or "h100x2" (two nodes of 8). The links of a preset cluster
// carry the bandwidth a collective can use (the datasheet figure times a measured efficiency,
// see presets.cc); the compute keeps the datasheet peak, with ClusterSpec's efficiency applied.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "hardware/kernel_model.h"

namespace stagecraft {

// The usable fraction of a link's datasheet bandwidth for a large collective (presets.cc:
// from nccl-tests figures in the reference facts).
inline constexpr double kNvlinkEfficiency = 370.0 / 450.0;  // 8xH100 ring all-reduce busbw
inline constexpr double kNicEfficiency = 47.5 / 50.0;       // one 400 Gb/s NIC: 46-49 GB/s
// Per-step latency of a collective on each link kind (assumed defaults, not datasheet figures:
// NCCL's per-hop software latency on NVLink and on InfiniBand are a few microseconds).
inline constexpr int64_t kNvlinkLatencyNs = 3'000;
inline constexpr int64_t kNicLatencyNs = 6'000;

struct DevicePreset {
  const char* name;           // "h100"
  const char* description;    // "NVIDIA H100 SXM5 80 GB"
  double bf16_flops_per_s;    // dense peak (no 2:4 sparsity)
  double fp8_flops_per_s;     // dense peak; 0 = no FP8 tensor cores
  int64_t hbm_bytes;          // HBM capacity
  double hbm_bytes_per_s;     // HBM bandwidth
  double nvlink_bytes_per_s;  // NVLink, one direction, per device (datasheet / 2)
  double nic_bytes_per_s;     // scale-out network per device (one NIC per GPU)
  int32_t devices_per_node;   // in the standard 8-GPU baseboard
  const char* source;         // where the figures come from
  KernelModel kernels;        // the kernel model's constants (hardware/kernel_model.h)
  const char* kernel_source;  // where those come from
  // The NVLink share a large collective reaches and its per-step latency, where a measured
  // table of the device's own exists (presets.cc); else the defaults above.
  double nvlink_efficiency = kNvlinkEfficiency;
  int64_t nvlink_latency_ns = kNvlinkLatencyNs;
  // What `list presets` calls the intra-node link and the device memory ("PCIe" and "GDDR6"
  // for a40; the link's figures are in the NVLink fields whatever it is).
  const char* intra_node_link = "NVLink";
  const char* memory_kind = "HBM";
};

// The table, in the order `list presets` prints it.
const std::vector<DevicePreset>& DevicePresets();
// Unknown names get "did you mean" and the list command.
Result<const DevicePreset*> FindDevicePreset(std::string_view name);

// "h100", "h100x2", "b200x16": nodes of the device's baseboard, links as above. Errors name the
// expected form and suggest a device.
Result<ClusterSpec> ClusterFromPreset(std::string_view name);

// What to say when `gpus` do not fit `cluster`: "give a larger --cluster, e.g. h100x16", or,
// past the largest cluster a preset can name (kMaxClusterDevices), that limit.
std::string LargerClusterHint(const ClusterSpec& cluster, int64_t gpus);

}  // namespace stagecraft
