// The HTML report of `stagecraft serve --report FILE.html` (report/html.h): the headline figures,
// the latency CDFs (TTFT, TPOT, end to end) with the SLO's bounds, the KV cache in use over
// time per replica, and the answer as `serve` prints it (the step costs and what they rest on).
#pragma once

#include <string>
#include <vector>

#include "serve/request_sim.h"
#include "serve/step_cost.h"

namespace stagecraft {

// `answer` is serve's text output; `iterations` every engine iteration in start order.
std::string ServeReportHtml(const std::string& label, const std::string& model,
                            const ReplicaModel& replica, const Slo& slo, const ServeStats& stats,
                            const std::vector<IterationRecord>& iterations,
                            const std::string& answer);

}  // namespace stagecraft
