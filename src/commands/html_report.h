// The HTML report of a simulated run (`simulate --report FILE.html`, report/html.h): the summary
// with the memory verdict, the timeline per rank and stream, memory over time per rank against
// the device, the idle time by cause, the shared-state flows per cut, the derivation with the
// run's numbers plugged in, and the assumptions the figures rest on.
#pragma once

#include <string>

#include "commands/commands.h"
#include "run/run_setup.h"
#include "run/simulate.h"

namespace stagecraft {

// REQUIRES: `simulated` is `run` simulated, `run` prepared from `spec` (the derivation is
// `stagecraft derive` on the same spec).
std::string SimulateReportHtml(const RunSpec& spec, const PreparedRun& run,
                               const RunOutcome& simulated);

// The assumptions a run's figures rest on, the memory verdict, its notes and warnings, as a
// report section's body (plan, serve and goodput reports show the run they rest on too).
std::string HtmlRunAssumptions(const RunOutcome& simulated);

}  // namespace stagecraft
