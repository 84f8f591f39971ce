// The multimodal sections of a config as plain values (issue 6; csa2.md, "Multimodal"): the
// vision encoder and where it runs, and how the Engram tables are sharded. The config reader
// (io) fills them; the multimodal module costs and places them (multimodal/vision.h,
// multimodal/engram.h), so reading a config never reaches the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_table.h"
#include "model/image_tokens.h"

namespace stagecraft {

enum class VisionPlacement : uint8_t { kColocated, kDecoupled, kDisaggregated, kBubbleFill };
// Every placement with its name (multimodal.vision.placement, --vision-placement), in `list
// vision` order.
inline constexpr EnumTable<VisionPlacement> kVisionPlacementNames = {
    {"colocated", VisionPlacement::kColocated},
    {"decoupled", VisionPlacement::kDecoupled},
    {"disaggregated", VisionPlacement::kDisaggregated},
    {"bubble-fill", VisionPlacement::kBubbleFill},
};
constexpr const char* VisionPlacementName(VisionPlacement placement) {
  return kVisionPlacementNames.Name(placement);
}

struct VisionSpec {
  bool given = false;  // false: the model has no vision encoder
  VisionPlacement placement = VisionPlacement::kDecoupled;
  // The V4.1 encoder (csa2.md): 32 layers, hidden 1024, 16 heads, MLP 2816, patch 14, a 3×3
  // pixel-unshuffle (an image token covers 9 patches), a projector to the language model's width.
  int32_t layers = 32;
  int32_t hidden = 1024;
  int32_t heads = 16;
  int32_t mlp = 2816;
  int32_t patch = 14;
  int32_t unshuffle = 3;
  int32_t images_per_sample = 1;
  // Full activation recomputation in the encoder: each layer keeps only its input (2·N_p·d_v
  // bytes) and the backward first runs the forward again.
  bool recompute = false;
  ImageTokenDistribution image_tokens;  // tokens per image (≤ 1024 in V4.1)
  // disaggregated: the encoder's devices per pipeline replica and their layout (dp = devices /
  // (tp · pp)); each simulated encoder rank stands for its tp devices, as a pipeline rank does.
  int32_t devices = 0;
  int32_t tp = 1;
  int32_t pp = 1;
  bool operator==(const VisionSpec&) const = default;

  int32_t dp() const { return devices / (tp * pp); }
};

// How a run shards the Engram tables (config `multimodal.engram`): over a process group of
// `owners` devices among the ranks that hold an Engram layer's stage (its data- and
// context-parallel peers). Per iteration and Engram layer, before the stage's first forward: an
// all-to-all of the local batch's ids (int64) to the owners and one of the rows (264 B each)
// back; after the stage's last backward: an all-to-all of the rows' gradients (bf16, 256 values)
// to the owners. With `host_memory` the owners keep their rows in host memory and move the rows
// they serve (and the gradients they receive) over PCIe.
struct EngramSharding {
  bool given = false;
  int32_t owners = 16;
  bool host_memory = false;
  // PCIe 5.0 x16: 64 GB/s per direction raw (PCI-SIG); 50 GB/s usable is an assumption.
  double pcie_bytes_per_s = 50e9;
  // Rows of each Engram layer's table; 0 = V4.1's (EngramSpec::table_rows, the last repeated
  // when the model has more Engram layers).
  int64_t table_rows = 0;
  bool operator==(const EngramSharding&) const = default;
};

}  // namespace stagecraft
