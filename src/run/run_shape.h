// The run's shape beyond what the config says: the default run of --hf-config without a config
// file, --cluster, dp filling the cluster, the vpp a V-shape schedule implies, and the note on
// idle GPUs. Called by PrepareRun (run_setup.cc) in that order; each note goes to run.notes.
#pragma once

#include "core/result.h"
#include "io/config.h"
#include "run/run_setup.h"

namespace stagecraft {

// --hf-config without a config file: the bundled example's cluster and layout are for its own
// model, so the run starts from defaults: one node of h100, pp 1, 1f1b, ParallelSpec's 8
// microbatches; FillDataParallel then sets dp.
Result<Config> HfDefaultConfig();

// --cluster: the preset replaces the config's whole cluster section; keys the config set beside
// its preset are dropped with a note.
Status ApplyClusterFlag(const RunSpec& flags, PreparedRun& run);

// --hf-config without a config file and without --dp: dp fills the cluster (Megatron: dp = world
// / (tp x pp x cp)); the note says what runs. Nothing otherwise.
void FillDataParallel(const RunSpec& flags, PreparedRun& run);

// The V-shape schedules run 2 chunks per rank: implied (with a note) when neither --vpp nor
// parallel.vpp gave one; a given vpp stays, and the generator refuses it.
void ImplyChunksPerRank(const RunSpec& flags, PreparedRun& run);

// A note when pp x tp x cp x dp (plus the vision encoder's own devices) leaves GPUs of the
// cluster idle: Megatron requires world = pp x tp x cp x dp.
void NoteIdleDevices(const RunSpec& flags, PreparedRun& run);

}  // namespace stagecraft
