// A plan as the files an engine launches it with (planner issue, Part C): `plan --export ENGINE
// DIR`. Megatron-LM: pretrain_gpt.py's arguments (one per line, megatron-args.txt), a torchrun
// launcher and a SLURM batch script; torchtitan: the TOML job config of its 0.2 releases and its
// launcher, and the Python config registry function of the generation after them
// (stagecraft_plan.py, launch-registry.sh); DeepSpeed: ds_config.json and Megatron-DeepSpeed's
// arguments with the launcher. io/megatron_args.h, io/torchtitan_config.h,
// io/torchtitan_registry.h and io/deepspeed_config.h read them back (`simulate --from-ENGINE`),
// so an exported plan simulates to the same step.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "io/config.h"
#include "plan/plan.h"
#include "run/run_setup.h"

namespace stagecraft {

struct ExportedFile {
  std::string name;  // relative to the export folder
  std::string text;
};

// A schedule torch ships no class for, as torch.distributed.pipelining's compute-only CSV
// (schedule/schedule_csv.h): torchtitan runs it through pipeline_parallel_schedule_csv.
struct ScheduleCsv {
  std::string text;
  bool v_shape = false;  // the V placement (two stages a rank, rank r holding r and 2pp - 1 - r)
};

// Whether torch.distributed.pipelining ships a schedule class for the generator `schedule`
// (1f1b, gpipe, interleaved-1f1b, looped-bfs, dualpipev), which torchtitan names.
bool TorchtitanShipsSchedule(const std::string& schedule);

// Whether torchtitan runs `c` from a schedule CSV: a schedule torch ships no class for, in a
// placement pipeline_module_split knows (the loop or the V; not DualPipe's two ways).
bool TorchtitanNeedsScheduleCsv(const Candidate& c, Placement placement);

// The schedule CSV torchtitan runs `c` with, from `run` (c's prepared run): c's schedule when
// torch ships no class for it (loop or V placement); nullopt when none is needed or possible.
std::optional<ScheduleCsv> TorchtitanScheduleCsv(const Candidate& c, const PreparedRun& run);

// The files for `engine` (not kAny) launching `candidate` of the model in `config` on its
// cluster, with `global_batch` sequences; for torchtitan with `csv`, the schedule as
// schedule.csv. Errors: a candidate the engine cannot express (its engine differs, a schedule it
// lacks and no CSV).
Result<std::vector<ExportedFile>> ExportPlan(const Config& config, const Candidate& candidate,
                                             int64_t global_batch, Engine engine,
                                             const ScheduleCsv* csv = nullptr);

// The layout of a prepared transformer run as `engine`'s candidate: its sizes, schedule,
// recompute and sharding, and the split the run simulated (the engine's own where it is one:
// Megatron's and DeepSpeed's even split, torchtitan's splitter with some less-layers weights;
// else layout_counts; DeepSpeed runs its even split whatever the run's). Errors (bad input):
// sharding the engine does not run (Megatron ZeRO-2/3, torchtitan ZeRO-1/2).
Result<Candidate> CandidateOfRun(const PreparedRun& run, Engine engine);

}  // namespace stagecraft
