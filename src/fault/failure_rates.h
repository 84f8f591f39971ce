// Failure rates of large training clusters, per node-day, as presets with their sources, and the
// mean time to failure of a job that spans N nodes (a series system: any node's failure stops
// the job, so the job's rate is N times a node's; Kokolis et al. 2024, "Revisiting Reliability
// in Large-Scale Machine Learning Research Clusters", §V: MTTF projection from the per-node
// rate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace stagecraft {

struct FailureRatePreset {
  const char* name;      // what --failure-preset accepts
  double failures = 0;   // failures observed (or the published rate's numerator)
  double node_days = 0;  // over this many node-days (nodes × days)
  const char* source;    // where the counts come from
  // The failures by cause where the source publishes them (name, count), largest first; the
  // rest, when the source lists more than these, is "other" (the count left over).
  std::vector<std::pair<const char*, int64_t>> causes = {};
  double PerThousandNodeDays() const { return failures / node_days * 1000.0; }
};

// The presets, in the order `goodput --help` lists them.
const std::vector<FailureRatePreset>& FailureRatePresets();
Result<FailureRatePreset> FindFailureRatePreset(const std::string& name);

// Mean time to failure of a job on `nodes` nodes, in hours, from a per-node rate
// (failures per 1000 node-days). REQUIRES: rate > 0, nodes > 0.
double JobMttfHours(double failures_per_1000_node_days, int64_t nodes);

}  // namespace stagecraft
