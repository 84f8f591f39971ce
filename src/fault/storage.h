// Save and load costs of a checkpoint from the storage tier it goes to: the device-to-host copy
// that blocks training (asynchronous saves) or the whole write (synchronous), the background
// persist, and the load on restart. Bandwidths are bytes per second.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "fault/checkpoint_manifest.h"
#include "hardware/cluster_spec.h"

namespace stagecraft {

struct StorageTier {
  const char* name;                     // what --storage accepts
  double aggregate_bytes_per_s = 0;     // the whole file system's sustained rate, written and read
                                        // (0: no job-wide bound)
  double device_write_bytes_per_s = 0;  // local storage per device (one drive per GPU; 0: none)
  double device_read_bytes_per_s = 0;   // ... and its read rate
  double node_bytes_per_s = 0;          // per node, written and read (0: no per-node bound)
  bool over_network = false;            // in-memory copies to peer hosts, at the nodes' NIC rate
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
  double write_bytes_per_s = 0;  // the rate the whole checkpoint is written at
  double read_bytes_per_s = 0;   // ... and read back at
  double copy_s = 0;             // device -> host copy of the fullest device
  double write_s = 0;            // the write of the whole checkpoint
  double blocking_s = 0;         // async: the copy; sync: copy and write
  double persist_s = 0;          // async: the write; sync: 0
  double load_s = 0;             // reading it back on restart, at the read rate
};

// The job's write and read rates on `tier` over `nodes` nodes of `cluster`: the smallest of the
// tier's bounds (aggregate, per node x nodes, per device x devices). REQUIRES: nodes >= 1.
std::pair<double, double> JobStorageRates(const StorageTier& tier, const ClusterSpec& cluster,
                                          int64_t nodes);

// One device's share of the tier's read rate in a job of `devices` devices: the job's read rate
// split evenly, or over the network its inter-node link. A resharded load reads each new shard
// with its data- and context-parallel replicas, each a part (then shared by broadcast), so the
// shard takes its bytes / (replicas x this). REQUIRES: devices >= 1.
double DeviceReadBytesPerSecond(const StorageTier& tier, const ClusterSpec& cluster,
                                int64_t devices);

// REQUIRES: nodes >= 1; manifest.ranks not empty.
SaveCosts EstimateSaveCosts(const CheckpointManifest& manifest, const ClusterSpec& cluster,
                            int64_t nodes, const StorageTier& tier, bool synchronous);

// The time a save blocks the devices of each pipeline rank (manifest.ranks order), for the
// simulated iteration that ends in a save. Asynchronous: the rank's own saved bytes over the host
// copy. Synchronous: that plus its share of the write: over the network, its bytes over its
// link; to a file system, its devices write their part of the unique bytes (in proportion to
// their saved bytes) at their part of the job's rate (split evenly over the `pp` x
// devices_per_rank devices), so balanced ranks take the whole write's time.
// REQUIRES: costs = EstimateSaveCosts(manifest, cluster, ...) with the same tier.
std::vector<double> RankBlockingSeconds(const CheckpointManifest& manifest, const SaveCosts& costs,
                                        const ClusterSpec& cluster, const StorageTier& tier,
                                        bool synchronous);

}  // namespace stagecraft
