#include "analysis/closed_form.h"

#include "core/units.h"

namespace stagecraft {
namespace {

std::string Ms(Time time) { return FormatMs(time) + " ms"; }
std::string Int(int64_t value) { return std::to_string(value); }

// GPipe and 1F1B: makespan (m + p − 1)(F + B), bubble (p−1)/(m+p−1) of the makespan
// (Huang et al. 2019; Narayanan et al. SC'21 §2.2.1: bubble time fraction (p−1)/m).
ClosedForm FlatForm(const ClosedFormInputs& in, const char* source) {
  ClosedForm form;
  const int64_t p = in.pp;
  const int64_t m = in.microbatches;
  const Time cycle = in.chunk_forward + in.chunk_backward;
  form.source = source;
  form.makespan_formula = "makespan = (m + p - 1) * (F + B)";
  form.makespan_numbers = "(" + Int(m) + " + " + Int(p) + " - 1) * (" + Ms(in.chunk_forward) +
                          " + " + Ms(in.chunk_backward) + ")";
  form.makespan = cycle * (m + p - 1);
  form.bubble_formula = "bubble_fraction = (p - 1) / (m + p - 1)";
  form.bubble_numbers = "(" + Int(p) + " - 1) / (" + Int(m) + " + " + Int(p) + " - 1)";
  form.bubble_fraction = static_cast<double>(p - 1) / static_cast<double>(m + p - 1);
  form.overhead_formula = "bubble_overhead = (p - 1) / m";
  form.bubble_overhead = static_cast<double>(p - 1) / static_cast<double>(m);
  form.assumption = "uniform stages, no communication";
  return form;
}

// Interleaved (and looped breadth-first) over v chunks of cost F/v, B/v: makespan
// (v·m + p − 1)(F + B)/v, bubble (p−1)/(v·m + p − 1) (Narayanan et al. SC'21 §2.2.2: bubble
// time fraction (p−1)/(v·m)).
ClosedForm ChunkedForm(const ClosedFormInputs& in, const char* source) {
  ClosedForm form;
  const int64_t p = in.pp;
  const int64_t m = in.microbatches;
  const int64_t v = in.vpp;
  const Time chunk_cycle = in.chunk_forward + in.chunk_backward;
  form.source = source;
  form.makespan_formula = "makespan = (v*m + p - 1) * (F + B) / v";
  form.makespan_numbers = "(" + Int(v) + "*" + Int(m) + " + " + Int(p) + " - 1) * (" +
                          Ms(in.chunk_forward) + " + " + Ms(in.chunk_backward) + ")  [per chunk]";
  form.makespan = chunk_cycle * (v * m + p - 1);
  form.bubble_formula = "bubble_fraction = (p - 1) / (v*m + p - 1)";
  form.bubble_numbers =
      "(" + Int(p) + " - 1) / (" + Int(v) + "*" + Int(m) + " + " + Int(p) + " - 1)";
  form.bubble_fraction = static_cast<double>(p - 1) / static_cast<double>(v * m + p - 1);
  form.overhead_formula = "bubble_overhead = (p - 1) / (v*m)";
  form.bubble_overhead = static_cast<double>(p - 1) / static_cast<double>(v * m);
  form.assumption = "uniform stages, no communication";
  return form;
}

}  // namespace

Result<ClosedForm> DeriveClosedForm(const ClosedFormInputs& in) {
  if (in.schedule == "gpipe") {
    return FlatForm(in, "GPipe (Huang et al., NeurIPS 2019); Narayanan et al. SC'21 eq. (1)");
  }
  if (in.schedule == "1f1b") {
    return FlatForm(in, "PipeDream-Flush / 1F1B (Narayanan et al., SC'21 §2.2.1)");
  }
  if (in.schedule == "interleaved-1f1b") {
    return ChunkedForm(in, "interleaved 1F1B (Narayanan et al., SC'21 §2.2.2)");
  }
  if (in.schedule == "looped-bfs") {
    ClosedForm form = ChunkedForm(in, "breadth-first looped (Lamy-Poirier, MLSys'23 §3)");
    form.assumption = "uniform stages, no communication, m >= p";
    form.exact = in.microbatches >= in.pp;
    return form;
  }
  return Error{"no closed form for schedule '" + in.schedule +
               "' (derive covers gpipe, 1f1b, interleaved-1f1b, looped-bfs)"};
}

GapExplanation ExplainGap(const ClosedForm& form, const Metrics& simulated,
                          const CriticalPath& path, Time cost_p2p, bool cluster_given) {
  GapExplanation result;
  result.gap = simulated.makespan - form.makespan;
  if (result.gap.ns() == 0) {
    result.explanation = "the simulation matches the closed form exactly";
    return result;
  }
  if (!form.exact) {
    result.explanation = "the closed form assumes " + form.assumption +
                         "; with fewer microbatches than ranks each chunk's forward pass waits "
                         "for the previous chunk, which adds idle time";
    return result;
  }
  std::string text = "the critical path runs " + std::to_string(path.compute_actions) +
                     " compute actions (" + FormatMs(path.compute_time) + " ms) and " +
                     std::to_string(path.transfers) + " transfers (" +
                     FormatMs(path.transfer_time) + " ms)";
  if (path.waiting.ns() != 0) text += " and waits " + FormatMs(path.waiting) + " ms";
  text += "; the closed form counts no communication";
  if (path.transfer_time == result.gap) {
    text += ", so the gap is exactly the communication on the critical path";
    if (!cluster_given && cost_p2p.ns() > 0 && path.transfer_time == cost_p2p * path.transfers) {
      text += " (" + std::to_string(path.transfers) + " x c, c = " + FormatMs(cost_p2p) + " ms)";
    }
  } else {
    text += "; the rest of the gap (" + FormatMs(result.gap - path.transfer_time) +
            " ms) comes from a longer compute chain than the closed form's (non-uniform costs "
            "or a different order)";
  }
  result.explanation = text;
  return result;
}

}  // namespace stagecraft
