// `stagecraft goodput`: its flags as the user typed them, parsed into fault/goodput.h's typed
// inputs (each error names the flag, the value and what was expected), and the answer as a
// table, JSON or an HTML report.
#pragma once

#include <optional>
#include <string>

#include "commands/transcript.h"
#include "core/result.h"
#include "fault/goodput.h"
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
  Files files = LocalFiles();  // the CONFIG and --failure-trace are read, --plot written
};

// The flags' values, each checked on its own (a number, whole where it counts, in its range; a
// known preset and tier; the trace's times increasing). What needs the job is checked by
// ComputeGoodput.
Result<GoodputInputs> ParseGoodputFlags(const GoodputSpec& spec);

Status RunGoodput(const GoodputSpec& spec, Transcript& transcript);

}  // namespace stagecraft
