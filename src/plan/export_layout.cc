// `stagecraft export CONFIG --engine ENGINE --out DIR` (planner issue, Part C): the layout a
// config gives, as the files an engine launches it with. The layout is read from the prepared
// run (its split is the one the simulation ran), checked against the engine's rules
// (plan_rules.cc), simulated the way the engine runs it (Candidate::ApplyTo: the engine's
// options, which may differ from the config's), and written by ExportPlan, so the files read
// back (`simulate --from-ENGINE`) to that simulation.
#include <algorithm>
#include <memory>

#include "core/units.h"
#include "plan/export.h"
#include "plan/plan_rules.h"
#include "run/simulate.h"
#include "schedule/partition.h"
#include "schedule/schedule_csv.h"

namespace stagecraft {
namespace {

std::vector<int32_t> CountsOf(const Partition& partition) {
  std::vector<int32_t> counts;
  for (int32_t stage = 0; stage < partition.num_stages(); ++stage) {
    counts.push_back(partition.end(stage) - partition.begin(stage));
  }
  return counts;
}

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

// Whether torchtitan runs `c` from a schedule CSV: a schedule torch ships no class for, in a
// placement pipeline_module_split knows (the loop or the V; not DualPipe's two ways).
bool NeedsScheduleCsv(const Candidate& c, Placement placement) {
  return c.engine == Engine::kTorchtitan && c.pp > 1 && !TorchtitanShipsSchedule(c.schedule) &&
         placement != Placement::kDual;
}

}  // namespace

std::optional<ScheduleCsv> TorchtitanScheduleCsv(const Candidate& c, const PreparedRun& run) {
  if (!NeedsScheduleCsv(c, run.schedule.placement)) return std::nullopt;
  ScheduleCsv csv;
  csv.text = WriteScheduleCsv(run.schedule);
  csv.v_shape = run.schedule.placement == Placement::kV;
  return csv;
}

Result<Candidate> CandidateOfRun(const PreparedRun& run, Engine engine) {
  const Config& config = run.config;
  const ParallelSpec& p = config.parallel;
  Candidate c;
  c.engine = engine;
  c.tp = p.tp;
  c.pp = p.pp;
  c.dp = p.dp;
  c.cp = p.cp;
  c.ep = p.ep;
  c.vpp = p.pp > 1 ? p.vpp : 1;
  c.micro_batch_size = config.model.micro_batch_size;
  c.microbatches = p.microbatches;
  c.schedule = p.pp > 1 ? config.schedule.name : "1f1b";
  c.recompute = p.recompute;
  c.recompute_num_layers = p.recompute == Recompute::kFull ? p.recompute_num_layers : 0;
  c.recompute_uniform =
      c.recompute_num_layers > 0 && p.recompute_method == RecomputeMethod::kUniform;
  switch (engine) {
    case Engine::kMegatron:
      if (p.zero_stage > 1) {
        return Error{"export megatron: zero_stage " + std::to_string(p.zero_stage) +
                     " (Megatron-LM shards the optimizer only: --use-distributed-optimizer, "
                     "zero_stage 1; expected 0 or 1, or export to torchtitan or deepspeed)"};
      }
      c.zero_stage = p.distributed_optimizer || p.zero_stage == 1 ? 1 : 0;
      break;
    case Engine::kTorchtitan:
      if (p.zero_stage == 1 || p.zero_stage == 2) {
        return Error{"export torchtitan: zero_stage " + std::to_string(p.zero_stage) +
                     " (torchtitan shards with FSDP2, zero_stage 3, over dp x cp; expected 3, or "
                     "0 without data parallelism)"};
      }
      c.zero_stage = p.zero_stage;
      break;
    case Engine::kDeepSpeed:
      c.zero_stage = p.zero_stage;
      break;
    case Engine::kAny:
      return Error{"export: name one engine (megatron, torchtitan or deepspeed)"};
  }
  // The split the run simulated, as the engine's own where it is one, else as a list of counts
  // (Megatron's layout string, torchtitan's module lists).
  const std::vector<int32_t> counts = CountsOf(run.partition);
  const int32_t layers = config.model.transformer.layers;
  if (counts != c.StageCounts(layers)) {
    if (engine == Engine::kTorchtitan) {
      // The first pair of less-layers weights (0-3 each) whose split is the run's.
      bool found = false;
      for (int32_t first = 0; first <= 3 && !found; ++first) {
        for (int32_t last = 0; last <= 3 && !found; ++last) {
          auto weighted =
              TorchtitanTransformerCounts(layers, static_cast<int32_t>(counts.size()), first, last);
          found = weighted.ok() && weighted.value() == counts;
          if (found) {
            c.first_less = first;
            c.last_less = last;
          }
        }
      }
    }
    // DeepSpeed's pipeline model splits by its own partition_method (Megatron-DeepSpeed's
    // GPTModelPipe: type:transformer, DeepSpeedTransformerCounts): the export runs that split.
    if (counts != c.StageCounts(layers) && engine != Engine::kDeepSpeed) c.layout_counts = counts;
  }
  // Megatron runs stages that pp x vpp does not divide only as a layout string, the even split
  // included (the planner's candidates carry it the same way, plan_rules.cc).
  if (engine == Engine::kMegatron && c.pp > 1 && c.layout_counts.empty() &&
      layers % (c.pp * c.vpp) != 0) {
    c.layout_counts = counts;
  }
  return c;
}

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
  const std::string broken =
      BrokenRule(c, rules, PlanShapeOf(config), NeedsScheduleCsv(c, run.schedule.placement));
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
  const std::string given_split = TransformerLayoutString(CountsOf(run.partition));
  const std::string engine_split = TransformerLayoutString(CountsOf(engine_run.value().partition));
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
  for (const ExportedFile& file : files.value()) {
    const std::string path = spec.dir + "/" + file.name;
    STAGECRAFT_RETURN_IF_ERROR(spec.run.files.write(path, file.text));
    transcript.err() << "stagecraft: wrote " << path << "\n";
  }
  return Status::Ok();
}

}  // namespace stagecraft
