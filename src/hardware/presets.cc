#include "hardware/presets.h"

#include <charconv>

#include "core/suggest.h"

namespace stagecraft {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr int64_t kGB = 1'000'000'000;

}  // namespace

const std::vector<DevicePreset>& DevicePresets() {
  // Peaks are dense (without 2:4 sparsity); NVLink is the per-GPU total divided by two
  // directions; NIC is the per-GPU scale-out port of the vendor's 8-GPU system.
  static const std::vector<DevicePreset> kPresets = {
      {"a100", "NVIDIA A100 SXM4 80 GB", 312 * kTera, 0, 80 * kGB, 2039 * kGiga, 300 * kGiga,
       25 * kGiga, 8,
       "NVIDIA A100 datasheet: BF16 312 TFLOP/s, 80 GB HBM2e at 2,039 GB/s, NVLink 600 GB/s; "
       "DGX A100: one 200 Gb/s HDR InfiniBand port per GPU"},
      {"h100", "NVIDIA H100 SXM5 80 GB", 989.5 * kTera, 1979 * kTera, 80 * kGB, 3350 * kGiga,
       450 * kGiga, 50 * kGiga, 8,
       "NVIDIA H100 datasheet (SXM5): BF16 989 TFLOP/s, FP8 1,979 TFLOP/s dense, 80 GB HBM3 at "
       "3.35 TB/s, NVLink 900 GB/s; DGX H100: one 400 Gb/s ConnectX-7 per GPU"},
      {"h200", "NVIDIA H200 SXM 141 GB", 989.5 * kTera, 1979 * kTera, 141 * kGB, 4800 * kGiga,
       450 * kGiga, 50 * kGiga, 8,
       "NVIDIA H200 datasheet (SXM): H100's tensor cores, 141 GB HBM3e at 4.8 TB/s, NVLink 900 "
       "GB/s; HGX H200: one 400 Gb/s NIC per GPU"},
      {"h800", "NVIDIA H800 SXM5 80 GB (export variant)", 989.5 * kTera, 1979 * kTera, 80 * kGB,
       3350 * kGiga, 160 * kGiga / kNvlinkEfficiency, 50 * kGiga / kNicEfficiency, 8,
       "H100 compute and memory; links as the DeepSeek-V3 report §3.1 measures its H800 "
       "cluster: NVLink 160 GB/s, InfiniBand 50 GB/s per GPU (stored so that the usable "
       "bandwidth is exactly those)"},
      {"b200", "NVIDIA B200 (HGX, 1000 W) 192 GB", 2250 * kTera, 4500 * kTera, 192 * kGB,
       8000 * kGiga, 900 * kGiga, 50 * kGiga, 8,
       "NVIDIA HGX B200 datasheet: BF16 2.25 PFLOP/s, FP8 4.5 PFLOP/s dense, 192 GB HBM3e at "
       "8 TB/s, NVLink 5 1.8 TB/s; one 400 Gb/s NIC per GPU"},
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
  ClusterSpec cluster;
  cluster.given = true;
  cluster.device = spec.name;
  cluster.devices_per_node = spec.devices_per_node;
  cluster.nodes = nodes;
  cluster.intra_node = {Time::Nanoseconds(kNvlinkLatencyNs),
                        spec.nvlink_bytes_per_s * kNvlinkEfficiency};
  cluster.inter_node = {Time::Nanoseconds(kNicLatencyNs), spec.nic_bytes_per_s * kNicEfficiency};
  cluster.peak_flops_per_s = spec.bf16_flops_per_s;
  cluster.hbm_bytes = spec.hbm_bytes;
  cluster.hbm_bytes_per_s = spec.hbm_bytes_per_s;
  return cluster;
}

}  // namespace stagecraft
