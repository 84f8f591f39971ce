// `stagecraft memory [CONFIG] [flags]`: memory per device. Model states (parameters, gradients,
// optimizer state) by precision and ZeRO stage; the peak of activations and resident shared
// state from the simulated schedule (its in-flight microbatches, with recomputation and
// tensor/sequence parallelism in the per-layer activation bytes); the framework reserve; the sum
// against the device's capacity (run/memory_verdict.h). A vision encoder's model states count on
// the devices that hold it (unsharded), its activations in the simulated peak. Exit 1 when a
// device does not fit.
#include <algorithm>
#include <ostream>

#include "commands/commands.h"
#include "core/units.h"
#include "memory/model_states.h"
#include "report/json_writer.h"
#include "run/memory_verdict.h"

namespace stagecraft {

Status RunMemory(const RunSpec& flags, bool json, Transcript& transcript) {
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  auto prepared = PrepareRun(flags);
  if (!prepared.ok()) return prepared.error();
  const PreparedRun& run = prepared.value();
  RunOutcome simulated;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(run, simulated, err));
  const ParallelSpec& parallel = run.config.parallel;
  const MemoryReport report = ComputeMemory(run, simulated);
  const MemoryInfo& verdict = report.verdict;
  if (json) {
    JsonWriter writer(/*pretty=*/true);
    writer.BeginObject();
    writer.Key("precision").String(TrainingPrecisionName(parallel.precision));
    writer.Key("zero_stage").Int(report.zero_stage);
    writer.Key("capacity_bytes").Int(verdict.capacity_bytes);
    writer.Key("reserve_bytes").Int(verdict.reserve_bytes);
    if (verdict.capacity_known) {
      writer.Key("fits").Bool(verdict.fits);
    } else {
      writer.Key("fits").Raw("null");
    }
    writer.Key("ranks").BeginArray();
    for (const RankMemory& row : report.ranks) {
      writer.BeginObject();
      writer.Key("rank").Int(row.rank);
      writer.Key("params").Fixed(row.params, 0);
      writer.Key("parameter_bytes").Fixed(row.states.parameters, 0);
      writer.Key("gradient_bytes").Fixed(row.states.gradients, 0);
      writer.Key("optimizer_bytes").Fixed(row.states.optimizer, 0);
      writer.Key("activation_bytes").Int(row.activations);
      writer.Key("recompute_bytes").Int(row.recompute);
      writer.Key("shared_state_bytes").Int(row.state);
      writer.Key("total_bytes").Fixed(row.total, 0);
      writer.EndObject();
    }
    writer.EndArray();
    writer.EndObject();
    out << writer.text() << "\n";
  } else {
    const int32_t zero = report.zero_stage;
    out << "stagecraft memory: " << run.label << "\n";
    out << "  precision " << TrainingPrecisionName(parallel.precision) << ", ZeRO stage " << zero
        << (zero == 0 ? std::string(" (nothing sharded)")
                      : " over " + std::to_string(report.shard_ranks) + " ranks" +
                            (parallel.hybrid_shard ? " (hybrid: one node's)" : ""))
        << ", recompute " << RecomputeName(parallel.recompute) << ", capacity "
        << (verdict.capacity_known
                ? FormatGib(static_cast<double>(verdict.capacity_bytes)) + " GiB per device"
                : std::string("unknown (no cluster preset)"))
        << "\n";
    const StateResidency& residency = run.parallel_plan.residency;
    if (!residency.gathered_parameter_bytes.empty()) {
      out << "  FSDP keeps the gathered parameters"
          << (residency.gradients_whole ? " and the fp32 gradients whole until a stage's last "
                                          "backward (torch.distributed.pipelining under PP)"
                                        : " whole from a block's forward to its backward "
                                          "(reshard_after_forward false)")
          << "; the optimizer state stays sharded\n";
    }
    if (verdict.reserve_bytes > 0) {
      out << "  each total holds a framework reserve of "
          << FormatGib(static_cast<double>(verdict.reserve_bytes))
          << " GiB (CUDA context, workspaces, NCCL buffers; cluster.device.memory_reserve)\n";
    }
    if (parallel.recompute != Recompute::kNone) {
      out << "  activations include recomputation's working set: what a recomputing layer "
             "rematerialises, held during its backward (doc/metrics.md)\n";
    }
    if (!verdict.states_known) {
      out << "  model states: not derived for this model (parameters are known for "
             "transformer and layer-list models); activations and shared state only\n";
    }
    out << "\n  rank  params_B  params_GiB  grads_GiB  optim_GiB  activ_GiB  state_GiB  "
           "total_GiB\n";
    for (const RankMemory& row : report.ranks) {
      out << "  " << PadLeft(std::to_string(row.rank), 4)
          << PadLeft(FormatFixed(row.params / 1e9, 3), 10)
          << PadLeft(FormatGib(row.states.parameters), 12)
          << PadLeft(FormatGib(row.states.gradients), 11)
          << PadLeft(FormatGib(row.states.optimizer), 11)
          << PadLeft(FormatGib(static_cast<double>(row.activations)), 11)
          << PadLeft(FormatGib(static_cast<double>(row.state)), 11)
          << PadLeft(FormatGib(row.total), 11) << (row.over ? "  OVER" : "") << "\n";
    }
  }
  if (!verdict.fits) {
    err << "stagecraft: memory: " << OverCapacityMessage(run, verdict) << "\n";
    return MakeError(ErrorKind::kInfeasible, "");
  }
  return Status::Ok();
}

}  // namespace stagecraft
