// Config: the whole input of a run as plain values — the YAML file's `model`, `cluster`,
// `parallel` and `schedule` sections (doc/config.md). Flags override fields after loading.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/result.h"
#include "hardware/cluster_spec.h"
#include "lower/task_graph.h"
#include "model/model_spec.h"
#include "schedule/schedule.h"

namespace stagecraft {

struct ParallelSpec {
  int32_t pp = 4;            // pipeline-parallel ranks
  int32_t vpp = 1;           // chunks (virtual stages) per rank
  int32_t microbatches = 8;  // m, microbatches per iteration
  bool operator==(const ParallelSpec&) const = default;
};

struct ScheduleSpec {
  std::string name = "1f1b";      // a generator from `stagecraft list schedules`
  int32_t group_size = 0;         // interleaved-1f1b microbatch group size; 0 = pp
  P2pMode p2p = P2pMode::kAsync;  // point-to-point semantics: async | rendezvous
  Time cost_p2p;                  // fixed time added to every transfer between two ranks; 0
  std::string csv;                // a schedule CSV file to load instead of a generator; ""
  bool operator==(const ScheduleSpec&) const = default;
};

struct Config {
  ModelSpec model;
  ClusterSpec cluster;
  ParallelSpec parallel;
  ScheduleSpec schedule;
  bool operator==(const Config&) const = default;
};

// Where each key of a parsed config was written: "model.layers" → "run.yaml:4:11", so that
// errors found after parsing (cross-field rules) can still point at the file.
struct ConfigLocations {
  std::string source;                          // the file name used in messages
  std::map<std::string, std::string> by_path;  // key path → "source:line:col"

  // "run.yaml:4:11: model.layers: " when the key was written, else "run.yaml: model.layers: ".
  std::string Where(const std::string& path) const;
};

// Parses YAML text. `source` names the file in messages, which read
// "source:line:col: what was wrong (what was expected)[; did you mean ...]". Unknown keys are
// errors (with "did you mean"), so typos never pass silently, and so is an unknown schedule
// name. Every section is optional. `locations`, when given, receives where each key was written.
Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source,
                           ConfigLocations* locations = nullptr);

}  // namespace stagecraft
