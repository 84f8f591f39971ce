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
namespace {}  // namespace

bool TorchtitanNeedsScheduleCsv(const Candidate& c, Placement placement) {
  return c.engine == Engine::kTorchtitan && c.pp > 1 && !TorchtitanShipsSchedule(c.schedule) &&
         placement != Placement::kDual;
}

std::optional<ScheduleCsv> TorchtitanScheduleCsv(const Candidate& c, const PreparedRun& run) {
  if (!TorchtitanNeedsScheduleCsv(c, run.schedule.placement)) return std::nullopt;
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
  const std::vector<int32_t> counts = run.partition.layer_counts();
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

}  // namespace stagecraft
