#include "hardware/cluster_spec.h"

#include <cmath>

namespace stagecraft {

Time TransferTime(const ClusterSpec& cluster, DeviceId from, DeviceId to, int64_t bytes,
                  Time extra) {
  return LinkTransferTime(cluster, cluster.LinkBetween(from, to), bytes, extra);
}

Time LinkTransferTime(const ClusterSpec& cluster, const LinkSpec& link, int64_t bytes, Time extra) {
  if (!cluster.given) return extra;
  Time time = link.latency + extra;
  if (link.bandwidth_bytes_per_s > 0.0 && bytes > 0) {
    time += FromSeconds(static_cast<double>(bytes) / link.bandwidth_bytes_per_s);
  }
  return time;
}

}  // namespace stagecraft
