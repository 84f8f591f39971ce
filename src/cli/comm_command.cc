// `stagecraft comm OP --bytes SIZE --ranks N [--cluster PRESET] [--algorithm A] [--json]`: the
// α-β cost of one collective on a preset cluster, with nccl-tests' algbw and busbw.
#include <ostream>

#include "cli/commands.h"
#include "comm/collective.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "report/json_writer.h"

namespace stagecraft {

int RunComm(const CommFlags& flags, std::ostream& out, std::ostream& err) {
  auto collective = ParseCollective(flags.operation);
  if (!collective.ok()) return Fail(err, "comm: " + collective.error().message);
  auto algorithm = ParseCollectiveAlgorithm(flags.algorithm);
  if (!algorithm.ok()) return Fail(err, "--algorithm: " + algorithm.error().message);
  auto bytes = ParseBytes(flags.bytes);
  if (!bytes.ok()) return Fail(err, "--bytes: " + bytes.error().message);
  auto cluster = ClusterFromPreset(flags.cluster);
  if (!cluster.ok()) return Fail(err, "--cluster: " + cluster.error().message);
  if (flags.ranks < 1) {
    return Fail(err, "--ranks: needs at least 1 rank, got " + std::to_string(flags.ranks));
  }
  if (flags.ranks > cluster.value().num_devices()) {
    return Fail(err, "--ranks: " + std::to_string(flags.ranks) + " ranks do not fit cluster '" +
                         flags.cluster + "' (" + std::to_string(cluster.value().num_devices()) +
                         " devices); use a preset with more nodes, e.g. '" +
                         cluster.value().device + "x" +
                         std::to_string((flags.ranks + cluster.value().devices_per_node - 1) /
                                        cluster.value().devices_per_node) +
                         "'");
  }
  const CollectiveGroup group = GroupOnCluster(cluster.value(), flags.ranks);
  auto cost = EstimateCollective(collective.value(), algorithm.value(), bytes.value(), group);
  if (!cost.ok()) return Fail(err, "comm: " + cost.error().message);
  const CollectiveCost& c = cost.value();
  const double factor = BusBandwidthFactor(collective.value(), flags.ranks);
  if (flags.json) {
    JsonWriter json(/*pretty=*/true);
    json.BeginObject();
    json.Key("collective").String(CollectiveName(collective.value()));
    json.Key("algorithm").String(CollectiveAlgorithmName(algorithm.value()));
    json.Key("bytes").Int(bytes.value());
    json.Key("ranks").Int(flags.ranks);
    json.Key("cluster").String(flags.cluster);
    json.Key("time_ms").Raw(FormatMs(c.time));
    json.Key("algbw_gb_per_s").Raw(FormatFixed(c.algbw_bytes_per_s / 1e9, 3));
    json.Key("busbw_gb_per_s").Raw(FormatFixed(c.busbw_bytes_per_s / 1e9, 3));
    json.Key("busbw_factor").Raw(FormatFixed(factor, 6));
    json.Key("formula").String(c.formula);
    json.EndObject();
    out << json.text() << "\n";
    return kExitOk;
  }
  out << "stagecraft comm: " << CollectiveName(collective.value()) << " of "
      << FormatBytes(bytes.value()) << " over " << flags.ranks << " ranks of " << flags.cluster
      << " (" << group.ranks_per_node << " per node)"
      << (collective.value() == Collective::kAllReduce
              ? std::string(", ") + CollectiveAlgorithmName(algorithm.value())
              : std::string())
      << "\n";
  out << "  " << c.formula << "\n";
  out << "  time     " << FormatMs(c.time) << " ms\n";
  out << "  algbw    " << FormatFixed(c.algbw_bytes_per_s / 1e9, 3) << " GB/s  (bytes / time)\n";
  out << "  busbw    " << FormatFixed(c.busbw_bytes_per_s / 1e9, 3) << " GB/s  (algbw x "
      << FormatFixed(factor, 6) << ", nccl-tests)\n";
  return kExitOk;
}

}  // namespace stagecraft
