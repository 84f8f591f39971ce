// `stagecraft export`: the config's layout checked against the engine's rules, simulated as
// given and as the engine runs it, and written as the engine's files (plan/export.h's values).
#include "commands/export_command.h"

#include <algorithm>
#include <memory>

#include "commands/commands.h"
#include "core/units.h"
#include "plan/plan_rules.h"
#include "run/simulate.h"
#include "schedule/partition.h"
#include "schedule/schedule_csv.h"

namespace stagecraft {
namespace {

std::string OnOff(bool value) { return value ? "on" : "off"; }

// The options the engine's run sets differently from the config: "overlap_grad_reduce off -> on".
std::vector<std::string> OptionChanges(const ParallelSpec& given, const ParallelSpec& run) {
  std::vector<std::string> changes;
  const auto flag = [&](const char* name, bool before, bool after) {
    if (before != after)
      changes.push_back(std::string(name) + " " + OnOff(before) + " -> " + OnOff(after));
  };
  flag("sequence_parallel", given.sequence_parallel, run.sequence_parallel);
  flag("distributed_optimizer", given.distributed_optimizer, run.distributed_optimizer);
  flag("overlap_grad_reduce", given.overlap_grad_reduce, run.overlap_grad_reduce);
  flag("overlap_param_gather", given.overlap_param_gather, run.overlap_param_gather);
  if (given.zero_stage != run.zero_stage) {
    changes.push_back("zero_stage " + std::to_string(given.zero_stage) + " -> " +
                      std::to_string(run.zero_stage));
  }
  if (given.grad_buckets != run.grad_buckets) changes.push_back("grad_buckets -> the engine's");
  if (given.reshard_after_forward != run.reshard_after_forward) {
    changes.push_back("fsdp_reshard_after_forward -> the engine's default");
  }
  return changes;
}

std::string Ms(Time time) { return FormatMs(time) + " ms"; }

}  // namespace

Status RunExport(const ExportSpec& spec, Transcript& transcript) {
  if (spec.engine == Engine::kAny) {
    return Error{"export: --engine: name one engine (megatron, torchtitan or deepspeed)"};
  }
  if (spec.dir.empty()) return Error{"export: --out DIR is required (the folder to write into)"};
  const std::string engine = EngineName(spec.engine);
  // Loaded once: the engine's run below edits the same config (its model read already).
  auto loaded = LoadRunConfig(spec.run);
  if (!loaded.ok()) return loaded.error();
  RunSpec given_spec = spec.run;
  given_spec.loaded = std::make_shared<const LoadedConfig>(std::move(loaded).value());
  auto prepared = PrepareRun(given_spec);
  if (!prepared.ok()) return prepared.error();
  const PreparedRun& run = prepared.value();
  const Config& config = run.config;
  if (!config.model.is_transformer()) {
    return Error{"export: the model '" + config.model.name +
                 "' is not a transformer given by its dimensions (a layer list or a uniform "
                 "model); no engine export writes it (expected model.type: transformer or "
                 "--hf-config)"};
  }
  if (!config.cluster.given) {
    return Error{
        "export: no cluster to launch on; give one (--cluster h100x8, or a cluster "
        "section; stagecraft list presets)"};
  }
  if (!config.schedule.csv.empty()) {
    return Error{
        "export: the schedule is a CSV; the exports name a generator the engine runs "
        "(expected schedule.name)"};
  }
  auto made = CandidateOfRun(run, spec.engine);
  if (!made.ok()) return made.error();
  const Candidate& c = made.value();
  PlanSpec rules;
  rules.gpus = c.tp * c.pp * c.dp * c.cp;
  rules.global_batch = int64_t{c.dp} * c.micro_batch_size * c.microbatches;
  rules.engine = spec.engine;
  // A schedule torch ships no class for runs in torchtitan as its actions from a CSV (the
  // bidirectional DualPipe's placement has no torch style: pipeline_module_split knows the loop
  // and the V only).
  const std::string broken = BrokenRule(c, rules, PlanShapeOf(config),
                                        TorchtitanNeedsScheduleCsv(c, run.schedule.placement));
  if (!broken.empty()) {
    return Error{"export " + engine + ": the layout " + c.Describe() +
                 " breaks the engine's rules: " + broken + " (doc/plan.md, the rules by engine)"};
  }

  RunOutcome given;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(run, given, transcript.err()));
  auto engine_run = PrepareRun(CandidateRun(given_spec, c));
  if (!engine_run.ok()) return engine_run.error();
  // Its notes are the given run's, said once above.
  auto simulated = SimulatePrepared(engine_run.value());
  if (!simulated.ok()) return simulated.error();
  const RunOutcome& exported = simulated.value();
  const MemoryInfo& memory = exported.info.memory;

  std::ostream& out = transcript.out();
  out << "stagecraft export: " << run.label << " for " << engine << "\n"
      << "  layout            " << c.Describe() << "\n"
      << "  split             "
      << TransformerLayoutString(c.StageCounts(config.model.transformer.layers)) << "\n"
      << "  step as exported  " << Ms(exported.metrics.makespan) << " (the engine's options)\n"
      << "  step as given     " << Ms(given.metrics.makespan);
  std::vector<std::string> changes =
      OptionChanges(config.parallel, engine_run.value().config.parallel);
  const std::string given_split = TransformerLayoutString(run.partition.layer_counts());
  const std::string engine_split =
      TransformerLayoutString(engine_run.value().partition.layer_counts());
  if (given_split != engine_split)
    changes.push_back("split " + given_split + " -> " + engine_split);
  if (changes.empty()) {
    out << " (the same options)\n";
  } else {
    out << "\n  the engine sets   ";
    for (size_t index = 0; index < changes.size(); ++index) {
      out << (index > 0 ? ", " : "") << changes[index];
    }
    out << "\n";
  }
  out << "  memory            ";
  if (memory.capacity_known) {
    out << FormatGib(memory.peak_bytes) << " of "
        << FormatGib(static_cast<double>(memory.capacity_bytes))
        << " GiB on the fullest device: " << (memory.fits ? "fits" : "does not fit") << "\n";
  } else {
    out << "the device's capacity is unknown\n";
  }
  if (memory.capacity_known && !memory.fits) {
    return MakeError(ErrorKind::kInfeasible,
                     "export: the layout does not fit the device as " + engine +
                         " runs it (nothing written; `stagecraft memory` shows what fills it, "
                         "`stagecraft plan` finds one that fits)");
  }
  const std::optional<ScheduleCsv> schedule_csv = TorchtitanScheduleCsv(c, engine_run.value());
  auto files = ExportPlan(config, c, rules.global_batch, spec.engine,
                          schedule_csv ? &*schedule_csv : nullptr);
  if (!files.ok()) return files.error();
  // All the engine's files or none (a launch script without its config would mislead).
  std::vector<FileToWrite> outputs;
  for (const ExportedFile& file : files.value()) {
    outputs.push_back({spec.dir + "/" + file.name, file.text});
  }
  const Status written = spec.run.files.write_all(outputs);
  if (!written.ok()) return Error{"--out: " + written.error().message};
  for (const FileToWrite& output : outputs) {
    transcript.err() << "stagecraft: wrote " << output.path << "\n";
  }
  return Status::Ok();
}

}  // namespace stagecraft
