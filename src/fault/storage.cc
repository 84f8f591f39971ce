#include "fault/storage.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "core/suggest.h"

namespace stagecraft {

const std::vector<StorageTier>& StorageTiers() {
  static const std::vector<StorageTier> tiers = {
      {"tectonic", 2e12, 0, 0, 0, false,
       "Meta's Tectonic for Llama 3 (Dubey et al. 2024, §3.3.1): 240 PB on 7,500 SSD servers, "
       "2 TB/s sustained (7 TB/s peak)"},
      {"peer-memory", 0, 0, 0, 0, true,
       "in-memory copies to peer hosts (as Gemini, Wang et al. SOSP'23): each node's share over "
       "its inter-node links (cluster preset)"},
      // S3 publishes request rates, not bytes: 3,500 PUT and 5,500 GET per second per
      // partitioned prefix (AWS, "Best practices design patterns: optimizing Amazon S3
      // performance"), not binding with a prefix per shard and multi-MiB parts; a node's rate is
      // the measured 8,003 MB/s of a c5n.18xlarge (100 Gb/s; dvassallo/s3-benchmark, 2019).
      {"s3", 0, 0, 0, 8.003e9, false,
       "Amazon S3: no job-wide bound (3,500 PUT / 5,500 GET per s per partitioned prefix, AWS "
       "S3 performance guidelines); 8,003 MB/s per node measured from a 100 Gb/s c5n.18xlarge "
       "(dvassallo/s3-benchmark 2019), writes assumed alike"},
      // Samsung PM1743 (PCIe 5.0 x4 enterprise SSD, announced December 2021): sequential read
      // 13,000 MB/s, sequential write 6,600 MB/s; one drive per GPU, as a DGX H100's 8 data
      // drives.
      {"local-nvme", 0, 6.6e9, 13e9, 0, false,
       "local NVMe, one Samsung PM1743 (PCIe 5.0) per GPU: 6,600 MB/s sequential write, 13,000 "
       "MB/s read (Samsung, December 2021); lost with its node"},
  };
  return tiers;
}

Result<StorageTier> FindStorageTier(const std::string& name) {
  std::vector<std::string> names;
  for (const StorageTier& tier : StorageTiers()) {
    if (name == tier.name) return tier;
    names.push_back(tier.name);
  }
  return Error{"--storage: unknown storage tier '" + name + "'" + DidYouMean(name, names) +
               " (expected " + JoinChoices(names) + ")"};
}

double HostCopyBytesPerSecond() { return 32e9 * 16 * 128.0 / 130.0 / 8.0; }

std::pair<double, double> JobStorageRates(const StorageTier& tier, const ClusterSpec& cluster,
                                          int64_t nodes) {
  double write = std::numeric_limits<double>::infinity();
  double read = write;
  const auto bound = [&](double rate_write, double rate_read) {
    if (rate_write > 0) write = std::min(write, rate_write);
    if (rate_read > 0) read = std::min(read, rate_read);
  };
  const double node_count = static_cast<double>(nodes);
  bound(tier.aggregate_bytes_per_s, tier.aggregate_bytes_per_s);
  bound(tier.node_bytes_per_s * node_count, tier.node_bytes_per_s * node_count);
  const double devices = node_count * cluster.devices_per_node;
  bound(tier.device_write_bytes_per_s * devices, tier.device_read_bytes_per_s * devices);
  if (tier.over_network) {
    // Each node sends all its devices' shards to a peer over its devices' inter-node links.
    const double link = cluster.inter_node.bandwidth_bytes_per_s;
    bound(link * devices, link * devices);
  }
  return {write, read};
}

double DeviceReadBytesPerSecond(const StorageTier& tier, const ClusterSpec& cluster,
                                int64_t devices) {
  if (tier.over_network) return cluster.inter_node.bandwidth_bytes_per_s;
  const int64_t per_node = std::max<int32_t>(1, cluster.devices_per_node);
  const int64_t nodes = (devices + per_node - 1) / per_node;
  return JobStorageRates(tier, cluster, nodes).second / static_cast<double>(devices);
}

SaveCosts EstimateSaveCosts(const CheckpointManifest& manifest, const ClusterSpec& cluster,
                            int64_t nodes, const StorageTier& tier, bool synchronous) {
  SaveCosts costs;
  for (const RankManifest& row : manifest.ranks) {
    costs.device_bytes = std::max(costs.device_bytes, row.saved_bytes);
  }
  costs.total_bytes = manifest.total_bytes;
  std::tie(costs.write_bytes_per_s, costs.read_bytes_per_s) = JobStorageRates(tier, cluster, nodes);
  if (tier.over_network) {
    // An in-memory copy must restore the node alone, so nothing is deduplicated: the fullest
    // device's shard over its link.
    const double link = cluster.inter_node.bandwidth_bytes_per_s;
    costs.write_s = link > 0 ? costs.device_bytes / link : 0.0;
    costs.load_s = costs.write_s;
  } else {
    // The fully parallel save spreads the unique bytes over every node (Megatron's
    // --ckpt-fully-parallel-save, DCP's deduplicated plan); the tier's rate bounds it.
    costs.write_s = costs.total_bytes / costs.write_bytes_per_s;
    costs.load_s = costs.total_bytes / costs.read_bytes_per_s;
  }
  costs.copy_s = costs.device_bytes / HostCopyBytesPerSecond();
  costs.blocking_s = synchronous ? costs.copy_s + costs.write_s : costs.copy_s;
  costs.persist_s = synchronous ? 0 : costs.write_s;
  return costs;
}

std::vector<double> RankBlockingSeconds(const CheckpointManifest& manifest, const SaveCosts& costs,
                                        const ClusterSpec& cluster, const StorageTier& tier,
                                        bool synchronous) {
  double saved = 0;
  for (const RankManifest& row : manifest.ranks) saved += row.saved_bytes;
  const double ranks = static_cast<double>(manifest.ranks.size());
  std::vector<double> seconds;
  for (const RankManifest& row : manifest.ranks) {
    double blocking = row.saved_bytes / HostCopyBytesPerSecond();
    if (synchronous && tier.over_network) {
      const double link = cluster.inter_node.bandwidth_bytes_per_s;
      blocking += link > 0 ? row.saved_bytes / link : 0.0;
    } else if (synchronous && saved > 0) {
      blocking += costs.write_s * ranks * row.saved_bytes / saved;
    }
    seconds.push_back(blocking);
  }
  return seconds;
}

}  // namespace stagecraft
