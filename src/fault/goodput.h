// `stagecraft goodput`: the failures a run of N GPUs meets, the checkpoint interval to take
// (Young, Daly, the exact model's optimum), the effective training time ratio, Google's goodput
// buckets, and a Monte Carlo of the whole run (doc/fault-tolerance.md). The inputs are typed
// values (the command parses its flags into them, commands/goodput_command.h); the checks that
// need the job (its nodes, its MTTF, the optimum) are made here, and each error names the flag
// the input comes from, its value and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "fault/checkpoint_interval.h"
#include "fault/failure_rates.h"
#include "fault/monte_carlo.h"
#include "fault/storage.h"
#include "io/files.h"

namespace stagecraft {

// The inputs' ranges. The command refuses flags outside them with the flag's text; ComputeGoodput
// refuses values outside them too (a caller that skips the command).
inline constexpr int64_t kMaxGoodputGpus = 1000000000;  // --gpus: 1 to 10^9
inline constexpr int64_t kMaxGpusPerNode = 1000000;     // --gpus-per-node: 1 to 10^6
// --failures-per-1000-node-days: 0.001 to 10^6
inline constexpr double kMinFailuresPer1000NodeDays = 1e-3;
inline constexpr double kMaxFailuresPer1000NodeDays = 1e6;
inline constexpr double kMaxMtbfHours = 1e8;                  // --mtbf-hours: above 0, at most 10^8
inline constexpr double kMaxGoodputDurationS = 1e5 * 3600.0;  // a duration flag: at most 10^5 h
inline constexpr double kMaxGoodputDays = 3650;               // --days (and what --tokens take)
inline constexpr double kMaxGoodputTokens = 1e18;             // --tokens: at most 10^18 (10^6 T)
inline constexpr int64_t kMaxMonteCarloRuns = 1000000;        // --monte-carlo: 1 to 10^6
inline constexpr int64_t kMaxSpareNodes = 1000000000;         // --spares: 0 to 10^9
inline constexpr double kMinWeibullShape = 0.3;               // --weibull-shape: 0.3 to 5
inline constexpr double kMaxWeibullShape = 5.0;

// --correlated SHARE:NODES: a share of the failures takes a group of nodes down at once.
struct CorrelatedFailures {
  double share = 0;   // (0, 1]
  int64_t nodes = 1;  // 1 to the job's nodes
};

// What `goodput` computes from; durations in seconds. An unset optional is "not given": its
// default (in the comment) is taken, or computed, by ComputeGoodput.
struct GoodputInputs {
  std::string config_path;               // CONFIG: gpus and gpus per node; "" = none
  std::optional<int64_t> gpus;           // --gpus N (default: the config's world)
  std::optional<int64_t> gpus_per_node;  // --gpus-per-node G (default 8 or the config's)
  // The failure rate, one of four ways (none: the llama3-405b preset).
  std::optional<double> failures_per_1000_node_days;   // --failures-per-1000-node-days R
  std::optional<double> mtbf_hours;                    // --mtbf-hours H: the job's own MTBF
  std::optional<std::vector<double>> failure_trace_s;  // --failure-trace: failure times, s
  std::optional<FailureRatePreset> failure_preset;     // --failure-preset NAME
  std::optional<double> checkpoint_blocking_s;         // --checkpoint-blocking T (or --storage)
  std::optional<double> checkpoint_persist_s;          // --checkpoint-persist T (default 0: sync)
  std::optional<double> restart_s;                     // --restart T, or its parts:
  std::optional<double> detection_s;                   // --detection T
  std::optional<double> reschedule_s;                  // --reschedule T
  std::optional<double> init_s;                        // --init T
  std::optional<double> load_s;                        // --load T
  std::optional<double> warmup_s;                      // --warmup T
  std::optional<double> interval_s;                    // --interval T (default: the optimum)
  std::optional<double> tokens;                  // --tokens (with a CONFIG: days from its step)
  std::optional<double> days;                    // --days D of training (default 30)
  std::optional<int64_t> monte_carlo_runs;       // --monte-carlo RUNS
  uint64_t seed = 1;                             // --seed S
  double weibull_shape = 1.0;                    // --weibull-shape K
  std::optional<int64_t> spares;                 // --spares N: hot spare nodes (Monte Carlo)
  std::optional<double> repair_s;                // --repair-time T: a node's repair
  std::optional<CorrelatedFailures> correlated;  // --correlated SHARE:NODES
  double fp16_overflow_probability = 0;          // --fp16-overflow-probability P (0: none)
  std::optional<StorageTier> storage;  // --storage TIER: save costs from the config's checkpoint
  bool sync_save = false;              // --sync-save: with --storage, the write blocks too
  bool what_if = false;                // --what-if: --repair-time alone feeds its spares table
  Files files = LocalFiles();          // the CONFIG is read
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

// Errors (bad input): a value outside its range; inputs that conflict or are missing (two
// failure rates, --restart and its parts, no --restart, no blocking time nor --storage); the
// CONFIG's own errors; a job that would hardly train (the restart and save above 10 MTTFs, an
// interval shorter than the save or above 50 MTTFs, a Monte Carlo of more than 5e7 failures,
// --tokens that take over 3650 days).
Result<GoodputResult> ComputeGoodput(const GoodputInputs& inputs);

}  // namespace stagecraft
