// The run library's entry (src/run/): from a RunSpec (a config as a file or text, plus
// overrides) to a ready-to-simulate run: read the config (or the bundled one) through the
// injected files, apply the overrides, build or load the schedule, and compute the stage costs.
// Every user error comes back as an Error naming the file or flag; nothing here prints or exits.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "io/config.h"
#include "io/files.h"
#include "lower/layer_pipeline.h"
#include "lower/lower.h"
#include "parallel/parallel_plan.h"
#include "run/multimodal_setup.h"
#include "schedule/partition.h"
#include "schedule/schedule.h"

namespace stagecraft {

// A config as read: the file (or text, or the bundled example) with --hf-config's model.
struct LoadedConfig {
  Config config;
  ConfigLocations locations;  // where each config key was written
  std::string label;          // "file.yaml", "bundled example '...'"
};

// A run as data: the config and the overrides on it. Unset optionals leave the config alone;
// each override is a row of RunOverrides() (its flag, config key and help).
struct RunSpec {
  std::string config_path;                 // positional CONFIG; "" = the bundled example
  std::optional<std::string> config_text;  // the config's text, read instead of the file
                                           // (config_path then only names it)
  Files files = LocalFiles();              // how the config, HF config and CSV are read
  // A config loaded once (LoadRunConfig) for many runs, e.g. a planner's candidates: used
  // instead of reading config_path and --hf-config; the overrides and `edit` still apply.
  std::shared_ptr<const LoadedConfig> loaded;
  // A program's own changes, applied after the overrides (a planner's candidate layout).
  std::function<Status(Config&)> edit;
  std::optional<std::string> schedule;           // --schedule NAME
  std::optional<std::string> pp;                 // --pp P
  std::optional<std::string> hf_config;          // --hf-config FILE
  std::optional<std::string> seq_len;            // --seq-len S
  std::optional<std::string> micro_batch_size;   // --micro-batch-size B
  std::optional<std::string> tp;                 // --tp T
  std::optional<std::string> dp;                 // --dp D
  std::optional<std::string> cp;                 // --cp C
  std::optional<std::string> cp_sharding;        // --cp-sharding contiguous|zigzag
  std::optional<std::string> ep;                 // --ep E
  std::optional<std::string> vpp;                // --vpp V
  std::optional<std::string> microbatches;       // --microbatches M
  std::optional<std::string> group_size;         // --group-size G
  std::optional<std::string> cost_forward;       // --cost-forward T
  std::optional<std::string> cost_input_grad;    // --cost-input-grad T
  std::optional<std::string> cost_weight_grad;   // --cost-weight-grad T
  std::optional<std::string> cost_fb;            // --cost-fb T
  std::optional<std::string> cost_p2p;           // --cost-p2p T
  std::optional<std::string> state_policy;       // --state-policy payload|direct|shadow|auto
  std::optional<std::string> partition;          // --partition state-aware|cost|counts|layout
  std::optional<std::string> p2p;                // --p2p async|rendezvous
  std::optional<std::string> schedule_csv;       // --schedule-csv FILE
  std::optional<std::string> vision_placement;   // --vision-placement NAME
  std::optional<std::string> cluster;            // --cluster DEVICE or DEVICExNODES
  std::optional<std::string> recompute;          // --recompute none|selective|full|selective-op
  std::optional<std::string> zero_stage;         // --zero-stage 0-3
  std::optional<std::string> global_batch_size;  // --global-batch-size N (sequences)
  std::optional<std::string> from_megatron;      // --from-megatron FILE (io/megatron_args.h)
  std::optional<std::string> from_torchtitan;    // --from-torchtitan FILE (io/torchtitan_config.h)
  std::optional<std::string> from_deepspeed;     // --from-deepspeed PATH (io/deepspeed_config.h)
  // The run must hold under every p2p mode (`check` without --p2p): a cost-aware schedule then
  // keeps only orders whose links carry their messages in the receiver's order, as under
  // rendezvous.
  bool every_p2p_mode = false;
  // A Chrome trace of the run will be written (simulate --trace, checkpoint --trace): its events
  // count in the run's size estimate (run/run_size.h).
  bool trace = false;
};

struct PreparedRun {
  Config config;
  Partition partition;        // layer-list models: layers of each stage
  ConfigLocations locations;  // where each config key was written
  std::string label;          // what runs: "file.yaml" or "bundled example '...'"
  Schedule schedule;
  std::vector<StageCost> stage_costs;
  LowerOptions lower;
  ParallelPlan parallel_plan;      // transformer models: collectives and FLOP counts
  MultimodalPlan multimodal;       // the vision encoder and Engram pieces, when configured
  std::vector<std::string> notes;  // things the user should know (printed to stderr)
};

// One override of a run: a command-line flag and the config key it sets, in the order the
// command line lists them (one table for the flags, their help and their application). A row
// with no `apply` is handled by PrepareRun itself (it replaces a section or reads a file:
// --hf-config, --cluster, --global-batch-size, --schedule-csv's path).
struct RunOverride {
  const char* flag;         // "--pp"
  const char* config_path;  // "parallel.pp"; "" when the flag is not one config key
  const char* type_name;    // "P", shown in --help
  std::string help;
  std::optional<std::string> RunSpec::*field;
  // Parses `value` (errors name `flag`) and sets the config key.
  Status (*apply)(const std::string& value, const char* flag, Config& config) = nullptr;
};
const std::vector<RunOverride>& RunOverrides();

// Reads the config of `spec` (its file, text or the bundled example) and --hf-config's model,
// without the overrides: what RunSpec::loaded takes.
Result<LoadedConfig> LoadRunConfig(const RunSpec& spec);

// The first half of PrepareRun: the config with --hf-config's model, then the overrides, then
// `edit` applied (run.config, label, locations, notes); no costs, no schedule.
Result<PreparedRun> ResolveRun(const RunSpec& spec);

// Loads and merges everything. Checks cross-field rules (stages <= layers, pp fits the
// cluster, the schedule name exists) but not the schedule's soundness (the checker's job).
Result<PreparedRun> PrepareRun(const RunSpec& flags);

// For a layer-list model (run.schedule built): derives missing layer costs, partitions the layers
// into the schedule's stages as the config says, and fills run.stage_costs and run.lower.states.
Status PrepareLayerModel(PreparedRun& run);

// The partition a method gives for this run (state-aware, cost, counts, layout).
Result<Partition> PartitionLayers(const PreparedRun& run, PartitionMethod method);

// How BuildLayerPipeline should treat this run's state (policy, reading, ranks, links).
LayerPipelineOptions PipelineOptionsOf(const PreparedRun& run);

}  // namespace stagecraft
