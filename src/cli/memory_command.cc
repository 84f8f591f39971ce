// `stagecraft memory [CONFIG] [flags]`: memory per device. Model states (parameters, gradients,
// optimizer state) by precision and ZeRO stage for transformer models; the peak of activations
// and resident shared state from the simulated schedule (its in-flight microbatches, with
// recomputation and tensor/sequence parallelism in the per-layer activation bytes); the sum
// against the device's capacity. A vision encoder's model states count on the devices that hold
// it (unsharded), its activations in the simulated peak. Exit 1 when a device does not fit.
#include <algorithm>
#include <ostream>

#include "cli/commands.h"
#include "core/units.h"
#include "memory/model_states.h"
#include "report/json_writer.h"

namespace stagecraft {

int RunMemory(const RunFlags& flags, bool json, std::ostream& out, std::ostream& err) {
  auto prepared = PrepareRun(flags);
  if (!prepared.ok()) return Fail(err, prepared.error().message);
  const PreparedRun& run = prepared.value();
  Simulated simulated;
  const int code = SimulateRun(run, simulated, err);
  if (code != kExitOk) return code;
  const ParallelSpec& parallel = run.config.parallel;
  const int32_t zero = std::max(parallel.zero_stage, parallel.distributed_optimizer ? 1 : 0);
  const int32_t shard_ranks = std::max(1, run.parallel_plan.shard_ranks);
  const bool states_known = !run.parallel_plan.rank_params.empty();
  const int64_t capacity = run.config.cluster.hbm_bytes;
  struct Row {
    int32_t rank;
    double params;
    ModelStateBytes states;
    int64_t activations;
    int64_t state;
    double total;
    bool over_capacity;
  };
  std::vector<Row> rows;
  bool over = false;
  for (const RankMetrics& rank : simulated.metrics.ranks) {
    // Activations: the schedule's, or more where a vision encoder's add to them (the memory
    // timeline's peak less the resident state is a lower bound on the combined peak).
    const int64_t activations =
        std::max(rank.peak_activation_bytes, rank.peak_memory_bytes - rank.peak_state_bytes);
    Row row{rank.rank, 0, {}, activations, rank.peak_state_bytes, 0, false};
    const auto index = static_cast<size_t>(rank.rank);
    if (states_known && index < run.parallel_plan.rank_params.size()) {
      row.params = run.parallel_plan.rank_params[index];
      row.states = ShardedModelStates(row.params, parallel.precision, zero, shard_ranks);
    }
    // A vision encoder's copy (or share) on this device, not sharded (multimodal/vision.h).
    if (index < simulated.vision.params_per_rank.size()) {
      const double encoder = simulated.vision.params_per_rank[index];
      row.params += encoder;
      row.states += ShardedModelStates(encoder, parallel.precision, 0, 1);
    }
    const int64_t transient = std::max(rank.peak_memory_bytes, rank.peak_activation_bytes);
    row.total = row.states.total() + static_cast<double>(transient);
    row.over_capacity = capacity > 0 && row.total > static_cast<double>(capacity);
    over = over || row.over_capacity;
    rows.push_back(row);
  }
  auto gib = [](double bytes) { return FormatFixed(bytes / 1073741824.0, 2); };
  if (json) {
    JsonWriter writer(/*pretty=*/true);
    writer.BeginObject();
    writer.Key("precision").String(TrainingPrecisionName(parallel.precision));
    writer.Key("zero_stage").Int(zero);
    writer.Key("capacity_bytes").Int(capacity);
    writer.Key("fits").Bool(!over);
    writer.Key("ranks").BeginArray();
    for (const Row& row : rows) {
      writer.BeginObject();
      writer.Key("rank").Int(row.rank);
      writer.Key("params").Fixed(row.params, 0);
      writer.Key("parameter_bytes").Fixed(row.states.parameters, 0);
      writer.Key("gradient_bytes").Fixed(row.states.gradients, 0);
      writer.Key("optimizer_bytes").Fixed(row.states.optimizer, 0);
      writer.Key("activation_bytes").Int(row.activations);
      writer.Key("shared_state_bytes").Int(row.state);
      writer.Key("total_bytes").Fixed(row.total, 0);
      writer.EndObject();
    }
    writer.EndArray();
    writer.EndObject();
    out << writer.text() << "\n";
  } else {
    out << "stagecraft memory: " << run.label << "\n";
    out << "  precision " << TrainingPrecisionName(parallel.precision) << ", ZeRO stage " << zero
        << (zero == 0 ? std::string(" (nothing sharded)")
                      : " over " + std::to_string(shard_ranks) + " ranks" +
                            (parallel.hybrid_shard ? " (hybrid: one node's)" : ""))
        << ", recompute "
        << (parallel.recompute == Recompute::kFull          ? "full"
            : parallel.recompute == Recompute::kSelective   ? "selective"
            : parallel.recompute == Recompute::kSelectiveOp ? "selective-op"
                                                            : "none")
        << ", capacity "
        << (capacity > 0 ? gib(static_cast<double>(capacity)) + " GiB per device"
                         : std::string("unknown (no cluster preset)"))
        << "\n";
    if (!states_known) {
      out << "  model states: not derived for this model (parameters are known for "
             "model.type: transformer); activations and shared state only\n";
    }
    out << "\n  rank  params_B  params_GiB  grads_GiB  optim_GiB  activ_GiB  state_GiB  "
           "total_GiB\n";
    for (const Row& row : rows) {
      out << "  " << PadLeft(std::to_string(row.rank), 4)
          << PadLeft(FormatFixed(row.params / 1e9, 3), 10)
          << PadLeft(gib(row.states.parameters), 12) << PadLeft(gib(row.states.gradients), 11)
          << PadLeft(gib(row.states.optimizer), 11)
          << PadLeft(gib(static_cast<double>(row.activations)), 11)
          << PadLeft(gib(static_cast<double>(row.state)), 11) << PadLeft(gib(row.total), 11)
          << (row.over_capacity ? "  OVER" : "") << "\n";
    }
  }
  if (over) {
    const Row& worst = *std::max_element(
        rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.total < b.total; });
    err << "stagecraft: memory: rank " << worst.rank << " needs " << gib(worst.total)
        << " GiB but a device has " << gib(static_cast<double>(capacity))
        << " GiB; shard more (parallel.zero_stage, distributed_optimizer), recompute "
           "(parallel.recompute: full), or raise tp/pp\n";
    return kExitViolations;
  }
  return kExitOk;
}

}  // namespace stagecraft
