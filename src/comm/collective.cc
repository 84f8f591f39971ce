#include "comm/collective.h"

#include <algorithm>
#include <cmath>

#include "core/units.h"

namespace stagecraft {
namespace {

// Seconds of latency and bandwidth for one link kind.
double Seconds(Time time) { return static_cast<double>(time.ns()) * 1e-9; }
double Transfer(double bytes, const LinkSpec& link) {
  return link.bandwidth_bytes_per_s > 0.0 ? bytes / link.bandwidth_bytes_per_s : 0.0;
}

std::string Gbps(const LinkSpec& link) {
  return FormatFixed(link.bandwidth_bytes_per_s / 1e9, 1) + " GB/s";
}
std::string Us(Time time) { return FormatFixed(static_cast<double>(time.ns()) / 1e3, 1) + " us"; }

// Ring RS or AG of `bytes` over n ranks on `link`: (n−1)α + (n−1)/n·S/β, in seconds.
double RingHalf(double bytes, int32_t n, const LinkSpec& link) {
  return (n - 1) * Seconds(link.latency) + (n - 1) * Transfer(bytes, link) / n;
}

}  // namespace

Time RingAttentionExposed(int32_t cp, double step_flops, double flops_per_s, double step_bytes,
                          const LinkSpec& link) {
  if (cp <= 1) return Time();
  const double compute = flops_per_s > 0 ? step_flops / flops_per_s : 0.0;
  const double transfer = Seconds(link.latency) + Transfer(step_bytes, link);
  return FromSeconds((cp - 1) * std::max(0.0, transfer - compute));
}

Result<Collective> ParseCollective(std::string_view name) {
  if (const auto collective = kCollectiveNames.Parse(name)) return *collective;
  return Error{"unknown collective '" + std::string(name) + "'" +
               kCollectiveNames.DidYouMean(name) + " (expected " + kCollectiveNames.Joined() + ")"};
}

Result<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name) {
  if (const auto algorithm = kCollectiveAlgorithmNames.Parse(name)) return *algorithm;
  return Error{"unknown algorithm '" + std::string(name) + "'" +
               kCollectiveAlgorithmNames.DidYouMean(name) + " (expected " +
               kCollectiveAlgorithmNames.Joined() + ")"};
}

double BusBandwidthFactor(Collective collective, int32_t ranks) {
  const double n = std::max(1, ranks);
  switch (collective) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

CollectiveGroup GroupOnCluster(const ClusterSpec& cluster, int32_t ranks) {
  CollectiveGroup group;
  group.ranks = ranks;
  group.ranks_per_node = std::min(ranks, std::max(1, cluster.devices_per_node));
  group.intra_node = cluster.intra_node;
  group.inter_node = cluster.inter_node;
  return group;
}

namespace {

// EstimateCollective's work; `describe` false leaves the formula empty (RingTime, called per
// layout by the planner, needs only the time).
Result<CollectiveCost> Estimate(Collective collective, CollectiveAlgorithm algorithm, int64_t bytes,
                                const CollectiveGroup& group, bool describe) {
  const int32_t n = group.ranks;
  const int32_t g = std::min(group.ranks_per_node, n);
  if (n < 1) return Error{"a collective needs at least 1 rank, got " + std::to_string(n)};
  if (bytes < 0) return Error{"a collective moves >= 0 bytes, got " + std::to_string(bytes)};
  if (algorithm != CollectiveAlgorithm::kRing && collective != Collective::kAllReduce) {
    return Error{std::string(CollectiveAlgorithmName(algorithm)) + " is an all-reduce algorithm; " +
                 CollectiveName(collective) + " runs as a ring (drop --algorithm or use 'ring')"};
  }
  LinkSpec link = group.intra_node;
  if (group.spans_nodes()) {
    link.latency = group.inter_node.latency;
    link.bandwidth_bytes_per_s = std::min(group.intra_node.bandwidth_bytes_per_s,
                                          g * group.inter_node.bandwidth_bytes_per_s);
  }
  const double s = static_cast<double>(bytes);
  const std::string where = !describe ? ""
                            : group.spans_nodes()
                                ? "min(intra " + Gbps(group.intra_node) + ", " + std::to_string(g) +
                                      " rails x " + Gbps(group.inter_node) + ")"
                                : "intra-node";
  const std::string alpha = describe ? Us(link.latency) : "";
  const std::string beta = describe ? Gbps(link) : "";
  double seconds = 0.0;
  std::string formula;
  const std::string ns = describe ? std::to_string(n) : "";
  if (n == 1) {
    if (describe) formula = "one rank: nothing moves";
  } else {
    switch (collective) {
      case Collective::kAllReduce:
        if (algorithm == CollectiveAlgorithm::kRing) {
          seconds = 2 * RingHalf(s, n, link);
          if (describe)
            formula = "ring: 2(n-1)*a + 2(n-1)/n * S/b, n = " + ns + ", a = " + alpha +
                      ", b = " + beta + " (" + where + ")";
        } else if (algorithm == CollectiveAlgorithm::kTree) {
          const int steps = static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
          seconds = 2 * steps * Seconds(link.latency) + 2 * Transfer(s, link);
          if (describe)
            formula = "tree: 2*ceil(log2 n)*a + 2*S/b, n = " + ns + ", a = " + alpha +
                      ", b = " + beta + " (" + where + ")";
        } else {
          if (!group.spans_nodes() || n % g != 0) {
            return Error{
                "hierarchical all-reduce needs a group of whole nodes over more than one "
                "node (got " +
                ns + " ranks, " + std::to_string(g) +
                " per node); use 'ring' or 'tree' within a node"};
          }
          const int32_t nodes = n / g;
          seconds = RingHalf(s, g, group.intra_node) +
                    2 * RingHalf(s / g, nodes, group.inter_node) + RingHalf(s, g, group.intra_node);
          if (describe)
            formula = "hierarchical: intra-node RS of S over g = " + std::to_string(g) +
                      " (b = " + Gbps(group.intra_node) + "), inter-node ring AR of S/g over " +
                      std::to_string(nodes) + " nodes (b = " + Gbps(group.inter_node) +
                      "), intra-node AG of S";
        }
        break;
      case Collective::kReduceScatter:
      case Collective::kAllGather:
        seconds = RingHalf(s, n, link);
        if (describe)
          formula = "ring: (n-1)*a + (n-1)/n * S/b, n = " + ns + ", a = " + alpha +
                    ", b = " + beta + " (" + where + ")";
        break;
      case Collective::kAllToAll: {
        const double intra = (g - 1) * Transfer(s, group.intra_node) / n;
        const double inter = (n - g) * Transfer(s, group.inter_node) / n;
        seconds = (n - 1) * Seconds(link.latency) + std::max(intra, inter);
        if (describe)
          formula =
              "all-to-all: (n-1)*a + max((g-1)/n * S/b_intra, (n-g)/n * S/b_inter), n = " + ns +
              ", g = " + std::to_string(g) + ", b_intra = " + Gbps(group.intra_node) +
              (group.spans_nodes() ? ", b_inter = " + Gbps(group.inter_node) : "");
        break;
      }
      case Collective::kBroadcast:
      case Collective::kReduce:
        seconds = (n - 1) * Seconds(link.latency) + Transfer(s, link);
        if (describe)
          formula = "pipelined chain: (n-1)*a + S/b, n = " + ns + ", a = " + alpha +
                    ", b = " + beta + " (" + where + ")";
        break;
      case Collective::kSendRecv:
        seconds = Seconds(link.latency) + Transfer(s, link);
        if (describe)
          formula = "point to point: a + S/b, a = " + alpha + ", b = " + beta + " (" + where + ")";
        break;
    }
  }
  CollectiveCost cost;
  cost.time = FromSeconds(seconds);
  if (describe) cost.formula = formula;
  if (cost.time.ns() > 0) {
    cost.algbw_bytes_per_s = s / (static_cast<double>(cost.time.ns()) * 1e-9);
    cost.busbw_bytes_per_s = cost.algbw_bytes_per_s * BusBandwidthFactor(collective, n);
  }
  return cost;
}

}  // namespace

Result<CollectiveCost> EstimateCollective(Collective collective, CollectiveAlgorithm algorithm,
                                          int64_t bytes, const CollectiveGroup& group) {
  return Estimate(collective, algorithm, bytes, group, /*describe=*/true);
}

Time RingTime(const ClusterSpec& cluster, Collective kind, int32_t ranks, int32_t ranks_per_node,
              double bytes) {
  if (ranks <= 1 || bytes <= 0) return Time();
  CollectiveGroup group = GroupOnCluster(cluster, ranks);
  group.ranks_per_node = std::max(1, std::min(ranks, ranks_per_node));
  auto cost = Estimate(kind, CollectiveAlgorithm::kRing, std::llround(bytes), group,
                       /*describe=*/false);
  return cost.ok() ? cost.value().time : Time();
}

}  // namespace stagecraft
