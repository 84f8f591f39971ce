// The validation suite's input (bench/validation/runs/*.yaml, doc/fidelity.md): published
// measured training runs, one file per source, each run with its measured step time and a
// stagecraft config describing its layout. Read into plain values; the config of each run stays
// YAML text for ParseConfig, named "FILE: RUN-ID" in its messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace stagecraft {

struct MeasuredRun {
  std::string id;         // unique over the suite
  std::string hardware;   // as the source describes it
  std::string published;  // the figure as the source states it
  double step_s = 0;      // the measured iteration time (stated or derived), > 0
  // The measured peak memory per GPU in GiB as the source states it (the source's
  // memory_measured says what it counts); 0 when the source gives none.
  double memory_gib = 0;
  std::string derivation;   // how step_s follows from `published`; "" when stated
  std::string assumed;      // layout details the source leaves out, and why they were chosen
  std::string config_text;  // the run's stagecraft config, as YAML
};

struct MeasurementSource {
  std::string id;
  std::string cite;
  std::string url;
  std::string measured;  // what the source measured and how
  // What its runs' memory_gib counts (e.g. PyTorch's peak reserved bytes, the largest over the
  // ranks); required when a run gives memory_gib.
  std::string memory_measured;
  std::vector<MeasuredRun> runs;
};

// Parses one file. `source_name` names it in messages ("file:line:col: what; expected").
// Errors: not YAML, a missing or mistyped key, an unknown key, step_s <= 0, memory_gib <= 0 or
// without the source's memory_measured, no runs.
Result<MeasurementSource> ParseMeasurementSource(std::string_view yaml_text,
                                                 std::string_view source_name);

// The serving suite's input (bench/validation/serving/*.yaml, bench/validation/SCHEMA.md
// "Serving rows"): published measured serving figures, one file per source, each row one
// measured number of one deployment under one client, with the config and the `serve` flags
// that rerun it.
struct MeasuredServing {
  std::string id;            // unique over the suite
  std::string hardware;      // as the source describes it
  std::string engine;        // the engine and its version, as the source states them
  std::string published;     // the figure as the source states it
  std::string metric;        // output_tokens_per_s, ttft_ms_p50, ... (SCHEMA.md's table)
  std::string metric_where;  // "file:line:col: " of the metric, for messages
  double measured = 0;       // in the metric's unit, > 0
  std::string derivation;
  std::string assumed;
  std::string config_text;  // the model and the devices, as `serve CONFIG` reads them
  // One `serve` flag as written: its name without "--", its value as text ("true" for a switch)
  // and where it stands ("file:line:col: ") for messages.
  struct Flag {
    std::string name;
    std::string value;
    std::string where;
  };
  std::vector<Flag> serve;
};

struct ServingSource {
  std::string id;
  std::string cite;
  std::string url;
  std::string measured;  // how the source measured: the tool, the client, what its metric counts
  std::vector<MeasuredServing> runs;
};

// Parses one serving file; errors as ParseMeasurementSource's (a missing or unknown key, a
// measured value that is not a number > 0, a `serve` entry that is not a scalar, no runs). The
// metric's name and the flags' values are checked by the command that runs the rows.
Result<ServingSource> ParseServingSource(std::string_view yaml_text, std::string_view source_name);

}  // namespace stagecraft
