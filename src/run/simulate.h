// A prepared run simulated: the library call behind `simulate` and everything that simulates a
// layout (the comparisons, bench-schedules, validate, derive, memory). Nothing here prints: the
// outcome is data, and a failure is an Error whose kind says what went wrong.
#pragma once

#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "core/progress.h"
#include "lower/task_graph.h"
#include "report/run_info.h"
#include "run/run_setup.h"
#include "sim/simulator.h"

namespace stagecraft {

// A finished simulation and what it rests on.
struct RunOutcome {
  TaskGraph graph;
  Trace trace;
  Metrics metrics;
  VisionPlacementStats vision;  // what the vision placement did (multimodal runs)
  RunInfo info;                 // what ran, the assumptions, the memory verdict (report/run_info.h)
  std::vector<std::string> notes;     // the run's notes (PreparedRun::notes)
  std::vector<std::string> warnings;  // e.g. the layout does not fit the device
};

// Checks the schedule's structure, lowers and simulates it, then computes the metrics, the
// run's report facts and its memory verdict. Errors: kViolation (a broken schedule: `detail`
// holds the violations; or a lowering error), kDeadlock (`detail` holds the wait-for cycle).
// `progress`, when given, is told the phases and the tasks simulated (core/progress.h).
Result<RunOutcome> SimulatePrepared(const PreparedRun& run, const ProgressSink& progress = nullptr);

// PrepareRun then SimulatePrepared: a RunSpec to its outcome in one call.
Result<RunOutcome> SimulateSpec(const RunSpec& spec);

// An error as the command line shows it: "stagecraft: error: MESSAGE" (when there is a message,
// its invalid bytes escaped), then the detail; a violation with a detail is a checker's report,
// the violations first and then "stagecraft: MESSAGE", the summary.
std::string FormatError(const Error& error);

// The run's notes as the command line shows them, one "stagecraft: note: ..." line each.
std::string FormatNotes(const std::vector<std::string>& notes);

}  // namespace stagecraft
