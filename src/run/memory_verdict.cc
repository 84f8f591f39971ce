#include "run/memory_verdict.h"

#include <algorithm>

#include "core/units.h"
#include "schedule/schedule.h"

namespace stagecraft {
MemoryReport ComputeMemory(const PreparedRun& run, const RunOutcome& simulated) {
  const ParallelSpec& parallel = run.config.parallel;
  const ClusterSpec& cluster = run.config.cluster;
  MemoryReport report;
  report.zero_stage = EffectiveZeroStage(parallel);
  report.shard_ranks = std::max(1, run.parallel_plan.shard_ranks);
  MemoryInfo& verdict = report.verdict;
  verdict.computed = true;
  verdict.states_known = !run.parallel_plan.rank_params.empty();
  verdict.capacity_bytes = cluster.given ? cluster.hbm_bytes : 0;
  verdict.capacity_known = verdict.capacity_bytes > 0;
  verdict.reserve_bytes = cluster.given ? cluster.memory_reserve_bytes : 0;
  // Recomputation's working set per rank: the largest of its stages' (one pass over the stages,
  // not one per rank: pp 10^5 made that 10^10 steps).
  std::vector<int64_t> recompute_of_rank(simulated.metrics.ranks.size(), 0);
  const std::vector<int32_t> stage_ranks = StageRanks(run.schedule);
  for (size_t stage = 0; stage < stage_ranks.size() && stage < run.stage_costs.size(); ++stage) {
    const auto rank = static_cast<size_t>(stage_ranks[stage]);
    if (rank < recompute_of_rank.size()) {
      recompute_of_rank[rank] =
          std::max(recompute_of_rank[rank], run.stage_costs[stage].recompute_bytes);
    }
  }
  for (const RankMetrics& metrics : simulated.metrics.ranks) {
    RankMemory row;
    row.rank = metrics.rank;
    // Activations: the schedule's, or more where a vision encoder's add to them (the memory
    // timeline's peak less the resident state is a lower bound on the combined peak).
    row.activations = std::max(metrics.peak_activation_bytes,
                               metrics.peak_memory_bytes - metrics.peak_state_bytes);
    row.state = metrics.peak_state_bytes;
    row.transient = std::max(metrics.peak_memory_bytes, metrics.peak_activation_bytes);
    const auto index = static_cast<size_t>(metrics.rank);
    if (index < recompute_of_rank.size()) row.recompute = recompute_of_rank[index];
    if (index < run.parallel_plan.rank_params.size()) {
      row.params = run.parallel_plan.rank_params[index];
      row.states = RankModelStates(run.parallel_plan, parallel, index);
    }
    // A vision encoder's copy (or share) on this device, not sharded (multimodal/vision.h).
    if (index < simulated.vision.params_per_rank.size()) {
      const double encoder = simulated.vision.params_per_rank[index];
      row.params += encoder;
      row.states += ShardedModelStates(encoder, parallel.precision, 0, 1);
    }
    row.total = row.states.total() + static_cast<double>(row.transient) +
                static_cast<double>(verdict.reserve_bytes);
    row.over = verdict.capacity_known && row.total > static_cast<double>(verdict.capacity_bytes);
    if (report.ranks.empty() || row.total > verdict.peak_bytes) {
      verdict.rank = row.rank;
      verdict.peak_bytes = row.total;
      verdict.state_bytes = row.states.total();
      verdict.transient_bytes = row.transient;
    }
    report.ranks.push_back(row);
  }
  verdict.fits =
      !verdict.capacity_known || verdict.peak_bytes <= static_cast<double>(verdict.capacity_bytes);
  return report;
}

std::string MemoryHint(const PreparedRun& run) {
  const ParallelSpec& parallel = run.config.parallel;
  const ModelSpec& model = run.config.model;
  if (!model.is_layer_list()) {
    return "hold fewer microbatches at once (a schedule with a lower activation peak, e.g. "
           "1f1b rather than gpipe) or lower model.activation_bytes";
  }
  std::vector<std::string> options;
  const int32_t zero = EffectiveZeroStage(parallel);
  if (parallel.dp > 1 && zero < 3) {
    const std::string stage = std::to_string(zero + 1);
    options.push_back("shard more (parallel.zero_stage: " + stage + ", or --zero-stage " + stage +
                      ")");
  }
  const bool transformer = model.is_transformer();
  const bool partial = parallel.recompute == Recompute::kFull &&
                       parallel.recompute_num_layers > 0 &&
                       parallel.recompute_method == RecomputeMethod::kBlock;
  if (parallel.recompute != Recompute::kFull || partial) {
    // A CSA2 layer list's selective recompute stores what none does (doc/csa2.md).
    options.push_back(partial ? "recompute more layers (a larger parallel.recompute_num_layers, "
                                "or 0 for all)"
                      : transformer && parallel.recompute == Recompute::kNone
                          ? "recompute (parallel.recompute: selective or full, --recompute)"
                          : "recompute (parallel.recompute: full, or --recompute full)");
  }
  std::string raise = "raise tp or pp (--tp, --pp)";
  if (!transformer && model.dims.routed_experts > 0 && parallel.ep < parallel.dp) {
    raise += ", or ep (--ep: more data-parallel ranks share the experts)";
  }
  options.push_back(raise);
  std::string text;
  for (size_t index = 0; index < options.size(); ++index) {
    text += (index == 0 ? "" : index + 1 == options.size() ? ", or " : ", ") + options[index];
  }
  return text;
}

std::string OverCapacityMessage(const PreparedRun& run, const MemoryInfo& verdict) {
  std::string parts = "model states " + FormatGib(verdict.state_bytes) +
                      " + activations and shared state " +
                      FormatGib(static_cast<double>(verdict.transient_bytes)) + " + reserve " +
                      FormatGib(static_cast<double>(verdict.reserve_bytes)) + " GiB";
  return "rank " + std::to_string(verdict.rank) + " needs " + FormatGib(verdict.peak_bytes) +
         " GiB but a device has " + FormatGib(static_cast<double>(verdict.capacity_bytes)) +
         " GiB (" + parts + "); " + MemoryHint(run);
}

}  // namespace stagecraft
