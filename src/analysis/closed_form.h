// Closed forms of the classic schedules (uniform stages, no communication), and their
// comparison with a simulated run: what `stagecraft derive` prints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/metrics.h"
#include "core/result.h"
#include "core/time.h"

namespace stagecraft {

struct ClosedFormInputs {
  std::string schedule;  // generator name
  int32_t pp = 1;
  int32_t vpp = 1;
  int32_t microbatches = 1;
  Time chunk_forward;      // F of one chunk (per-rank F / v)
  Time chunk_backward;     // B = I + W of one chunk
  Time chunk_weight_grad;  // W of one chunk (part of chunk_backward); the Zero-Bubble forms need it
  Time chunk_fb = Time();  // an overlapped F&B op of one chunk (DualPipe); zero = F + B
};

struct ClosedForm {
  std::string source;            // paper and equation
  std::string makespan_formula;  // symbolic
  std::string makespan_numbers;  // with the numbers plugged in
  Time makespan;
  std::string bubble_formula;  // bubble_fraction, symbolic
  std::string bubble_numbers;
  double bubble_fraction = 0.0;
  double bubble_overhead = 0.0;  // Megatron's idle / ideal
  std::string overhead_formula;
  std::string assumption;      // when the form is exact
  bool exact = true;           // false when the inputs break the assumption
  std::string inexact_reason;  // when exact is false: what the schedule does instead
  std::string table;           // optional: a comparison table printed after the form (DualPipe)
};

// The schedules with a closed form: gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2,
// dualpipe, dualpipev.
Result<ClosedForm> DeriveClosedForm(const ClosedFormInputs& inputs);
// Whether DeriveClosedForm knows `schedule` (it may still refuse its inputs).
bool HasClosedForm(std::string_view schedule);

// Why the simulated makespan differs from the closed form ("" when they agree).
struct GapExplanation {
  Time gap;  // simulated − closed form
  std::string explanation;
};
// Uses the critical path to attribute the gap to the transfers the schedule cannot hide.
GapExplanation ExplainGap(const ClosedForm& form, const Metrics& simulated,
                          const CriticalPath& path, Time cost_p2p, bool cluster_given);

}  // namespace stagecraft
