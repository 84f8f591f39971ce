// Save and load costs of a checkpoint from the storage tier it goes to: the device-to-host copy
// that blocks training (asynchronous saves) or the whole write (synchronous), the background
// persist, and the load on restart. Bandwidths are bytes per second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "fault/checkpoint_manifest.h"
#include "hardware/cluster_spec.h"

namespace stagecraft {

struct StorageTier {
  const char* name;                  // what --storage accepts
  double aggregate_bytes_per_s = 0;  // the file system's sustained rate (unused over network)
  bool over_network = false;         // in-memory copies to peer hosts, at the nodes' NIC rate
  const char* source;
};

const std::vector<StorageTier>& StorageTiers();
Result<StorageTier> FindStorageTier(const std::string& name);

// PCIe 5.0 x16, one direction: 32 GT/s x 16 lanes x 128/130 encoding / 8 bits = 63.0 GB/s
// (PCI-SIG PCIe 5.0 base specification); the H100 SXM's host link. An upper bound: the copy
// time is a lower bound.
double HostCopyBytesPerSecond();

struct SaveCosts {
  double device_bytes = 0;       // the fullest device's saved bytes
  double total_bytes = 0;        // unique bytes of one checkpoint
  double write_bytes_per_s = 0;  // the rate the whole checkpoint is written and read at
  double copy_s = 0;             // device -> host copy of the fullest device
  double write_s = 0;            // the write of the whole checkpoint
  double blocking_s = 0;         // async: the copy; sync: copy and write
  double persist_s = 0;          // async: the write; sync: 0
  double load_s = 0;             // reading it back on restart, at the write rate
};

// REQUIRES: nodes >= 1; manifest.ranks not empty.
SaveCosts EstimateSaveCosts(const CheckpointManifest& manifest, const ClusterSpec& cluster,
                            int64_t nodes, const StorageTier& tier, bool synchronous);

}  // namespace stagecraft
