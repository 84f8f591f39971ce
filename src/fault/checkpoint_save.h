// The iteration that ends in a checkpoint save, simulated: each pipeline rank's blocking part of
// the save (fault/storage.h) lowered after its optimizer step on its data-parallel stream
// (LowerOptions::checkpoint_save), against the same iteration without it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "fault/checkpoint_manifest.h"
#include "fault/storage.h"
#include "run/run_setup.h"
#include "run/simulate.h"

namespace stagecraft {

struct SavingIteration {
  SaveCosts costs;  // the job-wide save and load costs (goodput's inputs)
  // [row of manifest.ranks] the time the save blocks that rank's devices, in seconds
  std::vector<double> rank_save_s;
  int32_t slowest_rank = 0;  // the pipeline rank whose save blocks longest
  int64_t nodes = 1;         // the job's nodes (pp x tp x cp x dp over devices per node)
  Time plain_step;           // the iteration's makespan without the save
  RunOutcome outcome;        // the saving iteration simulated (its trace)
};

// REQUIRES: `plain` is `run` simulated; `manifest` is built from its memory report.
// Errors: a rank's save longer than the clock's limit on one task (core/time.h); the saving
// iteration's own simulation errors.
Result<SavingIteration> SimulateSavingIteration(const PreparedRun& run, const RunOutcome& plain,
                                                const CheckpointManifest& manifest,
                                                const StorageTier& tier, bool synchronous);

}  // namespace stagecraft
