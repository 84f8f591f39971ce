// `stagecraft export` as text (plan/export.h's values: the engine's files, the candidate of a run).
#pragma once

#include <string>

#include "commands/transcript.h"
#include "plan/export.h"
#include "run/run_setup.h"

namespace stagecraft {

// `stagecraft export CONFIG --engine ENGINE --out DIR`: the config's layout checked against the
// engine's rules, simulated as given and as the engine runs it (its options), and, where it fits,
// written into DIR as ExportPlan's files (through run.files). Errors: bad input (no engine, no
// folder, a model no engine export writes, a schedule CSV, a broken rule), kInfeasible (the
// engine's run does not fit the device: nothing is written).
struct ExportSpec {
  RunSpec run;
  Engine engine = Engine::kAny;
  std::string dir;
};
Status RunExport(const ExportSpec& spec, Transcript& transcript);

}  // namespace stagecraft
