// A plan as the files an engine launches it with (planner issue, Part C): `plan --export ENGINE
// DIR`. Megatron-LM: pretrain_gpt.py's arguments (one per line, megatron-args.txt), a torchrun
// launcher and a SLURM batch script; torchtitan: the TOML job config of its 0.2 releases and its
// launcher, and the Python config registry function of the generation after them
// (stagecraft_plan.py, launch-registry.sh); DeepSpeed: ds_config.json and Megatron-DeepSpeed's
// arguments with the launcher. io/megatron_args.h, io/torchtitan_config.h,
// io/torchtitan_registry.h and io/deepspeed_config.h read them back (`simulate --from-ENGINE`),
// so an exported plan simulates to the same step.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "io/config.h"
#include "plan/plan.h"

namespace stagecraft {

struct ExportedFile {
  std::string name;  // relative to the export folder
  std::string text;
};

// The files for `engine` (not kAny) launching `candidate` of the model in `config` on its
// cluster, with `global_batch` sequences. Errors: a candidate the engine cannot express (its
// engine differs, a schedule it lacks).
Result<std::vector<ExportedFile>> ExportPlan(const Config& config, const Candidate& candidate,
                                             int64_t global_batch, Engine engine);

}  // namespace stagecraft
