// `stagecraft plan` as text: the ranked table, its JSON, the HTML report and the sweep over
// clusters, from the planner's values (plan/plan.h).
#pragma once

#include <string>
#include <vector>

#include "commands/transcript.h"
#include "plan/plan.h"

namespace stagecraft {

// The ranked table (with the rejections by reason), and the JSON object of the interface
// (`candidates`, `rejected`, `plans` with tp, pp, dp, cp, ep, vpp, micro_batch_size,
// microbatches, schedule, recompute, zero_stage, step_ms, tokens_per_s, mfu,
// peak_memory_bytes, fits).
std::string FormatPlanTable(const PlanResult& result);
std::string FormatPlanJson(const PlanResult& result);
// The HTML report (report/html.h): the ranked table, the Pareto front of step time against peak
// memory over every fitting simulated plan, the rejections by reason, what the figures rest on.
std::string PlanReportHtml(const PlanResult& result);

// A sweep's answer (--clusters): per cluster, what PlanLayouts gave (its best plan first) or why
// it gave nothing.
struct SweepRow {
  std::string cluster;  // the preset as given, "h100x8"
  int32_t gpus = 0;
  Result<PlanResult> result = Error{"not planned"};
};
std::string FormatSweepTable(const PlanSpec& spec, const std::vector<SweepRow>& rows);
std::string FormatSweepJson(const PlanSpec& spec, const std::vector<SweepRow>& rows);

// `stagecraft plan`: the table (or JSON) into the transcript; no fitting layout is kInfeasible.
Status RunPlan(const PlanSpec& spec, bool json, Transcript& transcript);

}  // namespace stagecraft
