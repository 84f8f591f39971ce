#include "fault/storage.h"

#include <algorithm>
#include <limits>

#include "core/suggest.h"

namespace stagecraft {

const std::vector<StorageTier>& StorageTiers() {
  static const std::vector<StorageTier> tiers = {
      {"tectonic", 2e12, false,
       "Meta's Tectonic for Llama 3 (Dubey et al. 2024, §3.3.1): 240 PB on 7,500 SSD servers, "
       "2 TB/s sustained (7 TB/s peak)"},
      {"peer-memory", 0, true,
       "in-memory copies to peer hosts (as Gemini, Wang et al. SOSP'23): each node's share over "
       "its inter-node links (cluster preset)"},
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

SaveCosts EstimateSaveCosts(const CheckpointManifest& manifest, const ClusterSpec& cluster,
                            int64_t nodes, const StorageTier& tier, bool synchronous) {
  SaveCosts costs;
  for (const RankManifest& row : manifest.ranks) {
    costs.device_bytes = std::max(costs.device_bytes, row.saved_bytes);
  }
  costs.total_bytes = manifest.total_bytes;
  if (tier.over_network) {
    // Each node sends all its devices' shards to a peer (an in-memory copy must restore the
    // node alone, so nothing is deduplicated), over its devices' inter-node links in parallel.
    const double link = cluster.inter_node.bandwidth_bytes_per_s;
    costs.write_bytes_per_s = link > 0
                                  ? link * cluster.devices_per_node * static_cast<double>(nodes)
                                  : std::numeric_limits<double>::infinity();
    costs.write_s = link > 0 ? costs.device_bytes / link : 0.0;
  } else {
    // The fully parallel save spreads the unique bytes over every node (Megatron's
    // --ckpt-fully-parallel-save, DCP's deduplicated plan); the file system's rate bounds it.
    costs.write_bytes_per_s = tier.aggregate_bytes_per_s;
    costs.write_s = costs.total_bytes / tier.aggregate_bytes_per_s;
  }
  costs.copy_s = costs.device_bytes / HostCopyBytesPerSecond();
  costs.blocking_s = synchronous ? costs.copy_s + costs.write_s : costs.copy_s;
  costs.persist_s = synchronous ? 0 : costs.write_s;
  costs.load_s = costs.write_s;
  return costs;
}

}  // namespace stagecraft
