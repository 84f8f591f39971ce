// `stagecraft comm OP --bytes SIZE --ranks N [--cluster PRESET] [--algorithm A] [--json]`: the
// α-β cost of one collective on a preset cluster, with nccl-tests' algbw and busbw.
#include <charconv>
#include <ostream>

#include "comm/collective.h"
#include "commands/commands.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "report/json_writer.h"

namespace stagecraft {

Status RunComm(const CommSpec& flags, Transcript& transcript) {
  std::ostream& out = transcript.out();
  auto collective = ParseCollective(flags.operation);
  if (!collective.ok()) return Error{"comm: " + collective.error().message};
  auto algorithm = ParseCollectiveAlgorithm(flags.algorithm);
  if (!algorithm.ok()) return Error{"--algorithm: " + algorithm.error().message};
  auto bytes = ParseBytes(flags.bytes);
  if (!bytes.ok()) return Error{"--bytes: " + bytes.error().message};
  auto cluster = ClusterFromPreset(flags.cluster);
  if (!cluster.ok()) return Error{"--cluster: " + cluster.error().message};
  int64_t ranks = 0;
  const char* ranks_end = flags.ranks.data() + flags.ranks.size();
  const auto [stop, parse_error] = std::from_chars(flags.ranks.data(), ranks_end, ranks);
  if (parse_error != std::errc() || stop != ranks_end) {
    return Error{"--ranks: '" + flags.ranks +
                 "' is not a whole number (expected a rank count, e.g. --ranks 8)"};
  }
  if (ranks < 1) return Error{"--ranks: needs at least 1 rank, got " + flags.ranks};
  const ClusterSpec& spec = cluster.value();
  if (ranks > spec.num_devices()) {
    const int64_t nodes = (ranks + spec.devices_per_node - 1) / spec.devices_per_node;
    const std::string hint =
        nodes * spec.devices_per_node <= kMaxClusterDevices
            ? "; use a preset with more nodes, e.g. '" + spec.device + "x" + std::to_string(nodes) +
                  "'"
            : "; a cluster has at most " + std::to_string(kMaxClusterDevices) + " devices";
    return Error{"--ranks: " + std::to_string(ranks) + " ranks do not fit cluster '" +
                 flags.cluster + "' (" + std::to_string(spec.num_devices()) + " devices)" + hint};
  }
  const CollectiveGroup group = GroupOnCluster(spec, static_cast<int32_t>(ranks));
  auto cost = EstimateCollective(collective.value(), algorithm.value(), bytes.value(), group);
  if (!cost.ok()) return Error{"comm: " + cost.error().message};
  const CollectiveCost& c = cost.value();
  const double factor = BusBandwidthFactor(collective.value(), static_cast<int32_t>(ranks));
  if (flags.json) {
    JsonWriter json(/*pretty=*/true);
    json.BeginObject();
    json.Key("collective").String(CollectiveName(collective.value()));
    json.Key("algorithm").String(CollectiveAlgorithmName(algorithm.value()));
    json.Key("bytes").Int(bytes.value());
    json.Key("ranks").Int(ranks);
    json.Key("cluster").String(flags.cluster);
    json.Key("time_ms").Raw(FormatMs(c.time));
    json.Key("algbw_gb_per_s").Raw(FormatFixed(c.algbw_bytes_per_s / 1e9, 3));
    json.Key("busbw_gb_per_s").Raw(FormatFixed(c.busbw_bytes_per_s / 1e9, 3));
    json.Key("busbw_factor").Raw(FormatFixed(factor, 6));
    json.Key("formula").String(c.formula);
    json.EndObject();
    out << json.text() << "\n";
    return Status::Ok();
  }
  out << "stagecraft comm: " << CollectiveName(collective.value()) << " of "
      << FormatBytes(bytes.value()) << " over " << ranks << " ranks of " << flags.cluster << " ("
      << group.ranks_per_node << " per node)"
      << (collective.value() == Collective::kAllReduce
              ? std::string(", ") + CollectiveAlgorithmName(algorithm.value())
              : std::string())
      << "\n";
  out << "  " << c.formula << "\n";
  out << "  time     " << FormatMs(c.time) << " ms\n";
  out << "  algbw    " << FormatFixed(c.algbw_bytes_per_s / 1e9, 3) << " GB/s  (bytes / time)\n";
  out << "  busbw    " << FormatFixed(c.busbw_bytes_per_s / 1e9, 3) << " GB/s  (algbw x "
      << FormatFixed(factor, 6) << ", nccl-tests)\n";
  return Status::Ok();
}

}  // namespace stagecraft
