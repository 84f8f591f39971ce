#include "fault/checkpoint_save.h"

#include <algorithm>

#include "core/units.h"

namespace stagecraft {

Result<SavingIteration> SimulateSavingIteration(const PreparedRun& run, const RunOutcome& plain,
                                                const CheckpointManifest& manifest,
                                                const StorageTier& tier, bool synchronous) {
  SavingIteration saving;
  const ParallelSpec& parallel = run.config.parallel;
  const int64_t devices =
      static_cast<int64_t>(parallel.pp) * parallel.tp * parallel.cp * parallel.dp;
  const int64_t per_node = std::max<int64_t>(1, run.config.cluster.devices_per_node);
  saving.nodes = (devices + per_node - 1) / per_node;
  saving.costs = EstimateSaveCosts(manifest, run.config.cluster, saving.nodes, tier, synchronous);
  saving.rank_save_s =
      RankBlockingSeconds(manifest, saving.costs, run.config.cluster, tier, synchronous);
  saving.plain_step = plain.metrics.makespan;
  PreparedRun with_save = run;
  with_save.lower.checkpoint_save.assign(static_cast<size_t>(run.schedule.num_ranks), Time());
  size_t slowest_row = 0;
  for (size_t row = 0; row < manifest.ranks.size(); ++row) {
    const double seconds = saving.rank_save_s[row];
    if (seconds > saving.rank_save_s[slowest_row]) slowest_row = row;
    const Time blocking = FromSeconds(seconds);
    if (blocking > kMaxInputDuration) {
      return Error{"--storage: rank " + std::to_string(manifest.ranks[row].rank) + "'s save on " +
                   tier.name + " blocks " + FormatFixed(seconds, 1) +
                   " s, over the clock's limit of one task (2^42 ns, about 73 minutes); an "
                   "asynchronous save (drop --sync-save) or a faster tier blocks less"};
    }
    const auto rank = static_cast<size_t>(manifest.ranks[row].rank);
    if (rank < with_save.lower.checkpoint_save.size()) {
      with_save.lower.checkpoint_save[rank] = blocking;
    }
  }
  if (!manifest.ranks.empty()) saving.slowest_rank = manifest.ranks[slowest_row].rank;
  auto outcome = SimulatePrepared(with_save);
  if (!outcome.ok()) return outcome.error();
  saving.outcome = std::move(outcome.value());
  return saving;
}

}  // namespace stagecraft
