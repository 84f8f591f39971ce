// `stagecraft goodput`: the failures a run of N GPUs meets, the checkpoint interval to take
// (Young, Daly, the exact model's optimum), the effective training time ratio, Google's goodput
// buckets, and a Monte Carlo of the whole run (doc/fault-tolerance.md). Flags arrive as the user
// typed them and are parsed and checked here; each error names the flag, the value and what was
// expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "fault/checkpoint_interval.h"
#include "fault/flag_values.h"
#include "fault/monte_carlo.h"
#include "fault/storage.h"
#include "io/files.h"

namespace stagecraft {

struct GoodputSpec {
  std::string config_path;                   // CONFIG: gpus and gpus per node; "" = none
  std::optional<std::string> gpus;           // --gpus N (default: the config's world)
  std::optional<std::string> gpus_per_node;  // --gpus-per-node G (default 8 or config's)
  std::optional<std::string> failures_per_1000_node_days;  // --failures-per-1000-node-days R
  std::optional<std::string> mtbf_hours;                   // --mtbf-hours H: the job's own MTBF
  std::optional<std::string> failure_trace;        // --failure-trace FILE: failure times, hours
  std::optional<std::string> failure_preset;       // --failure-preset NAME (default llama3-405b)
  std::optional<std::string> checkpoint_blocking;  // --checkpoint-blocking T (required)
  std::optional<std::string> checkpoint_persist;   // --checkpoint-persist T (default 0: sync)
  std::optional<std::string> restart;              // --restart T (or its parts)
  std::optional<std::string> detection;      // --detection T: the restart's parts, instead of it
  std::optional<std::string> reschedule;     // --reschedule T
  std::optional<std::string> init;           // --init T
  std::optional<std::string> load;           // --load T
  std::optional<std::string> warmup;         // --warmup T
  std::optional<std::string> interval;       // --interval T (default: the optimum)
  std::optional<std::string> tokens;         // --tokens T (with a CONFIG: days from its step)
  std::optional<std::string> days;           // --days D of training (default 30)
  std::optional<std::string> monte_carlo;    // --monte-carlo RUNS
  std::optional<std::string> seed;           // --seed S (default 1)
  std::optional<std::string> weibull_shape;  // --weibull-shape K (default 1)
  std::optional<std::string> spares;         // --spares N: hot spare nodes (Monte Carlo)
  std::optional<std::string> repair_time;    // --repair-time T: a node's repair
  std::optional<std::string> correlated;     // --correlated SHARE:NODES
  std::optional<std::string> fp16_overflow;  // --fp16-overflow-probability P (default 0)
  bool json = false;                         // --json
  std::optional<std::string> storage;  // --storage TIER: save costs from the config's checkpoint
  bool sync_save = false;              // --sync-save: with --storage, the write blocks too
  bool what_if = false;                // --what-if: the rate x save table
  std::string plot_path;       // --plot FILE: SVG of the waste against the interval; "" = none
  std::string report_path;     // --report FILE.html: the HTML report; "" = none
  Files files = LocalFiles();  // the CONFIG is read, --plot written
};

// The answer, every time in seconds.
struct GoodputResult {
  int64_t gpus = 0;
  int64_t gpus_per_node = 8;
  int64_t nodes = 0;
  std::string rate_source;  // the preset's or "--mtbf-hours" / "--failures-per-..."
  // The preset's failures by cause (name, count; "other" last) where its source publishes them.
  std::vector<std::pair<std::string, int64_t>> causes;
  double per_1000_node_days = 0;  // 0 when the job's MTBF was given directly
  double mttf_s = 0;
  CheckpointCosts costs;
  std::vector<std::pair<std::string, double>> restart_parts;  // given as parts: name, seconds
  double young_s = 0;
  double daly_first_s = 0;
  double daly_higher_s = 0;
  double optimal_s = 0;   // the exact model's, at least the persist
  double interval_s = 0;  // --interval, or the optimum
  bool interval_given = false;
  double ettr = 0;  // the exact model at interval_s
  WasteShares shares;
  double days = 30;
  double tokens = 0;              // --tokens, when given
  double step_s = 0;              // the CONFIG's simulated step; 0 = no config
  double tokens_per_step = 0;     // m · b · s · dp
  double mfu = 0;                 // the CONFIG's model FLOPs utilization; 0 = unknown
  double wall_days = 0;           // days on the clock for `days` of training
  double failures = 0;            // expected failures in them
  double skipped_step_share = 0;  // fp16 steps skipped by the loss scaler
  int64_t scaler_steps = 0;       // steps the scaler was run for
  std::optional<MonteCarloResult> monte_carlo;
  std::vector<double> trace_s;       // --failure-trace: the failure times, seconds
  double trace_ettr = 0;             // the trace replayed at the interval
  std::optional<SaveCosts> storage;  // with --storage: what the costs came from
  std::string storage_tier;
  double weibull_shape = 1.0;
  int64_t spares = -1;  // -1: a spare always free
  double repair_s = 0;
  double correlated_share = 0;
  int64_t correlated_nodes = 1;
};

Result<GoodputResult> ComputeGoodput(const GoodputSpec& spec);

}  // namespace stagecraft
