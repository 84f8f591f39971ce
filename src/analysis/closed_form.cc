#include "analysis/closed_form.h"

#include <algorithm>

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

// The Zero-Bubble forms (Qi et al., ICLR 2024, Table 2) state the bubble per rank: its span
// minus its m(F + I + W) of work. Every rank does the same work, so bubble_fraction and
// bubble_overhead follow from the makespan. `bubble` is the makespan's bubble term with the
// numbers plugged in (makespan = work + bubble).
void FillZeroBubbleNumbers(ClosedForm& form, const ClosedFormInputs& in, Time input_grad, Time work,
                           const std::string& bubble) {
  form.makespan_numbers = Int(in.microbatches) + " * (" + Ms(in.chunk_forward) + " + " +
                          Ms(input_grad) + " + " + Ms(in.chunk_weight_grad) + ") + " + bubble;
  form.bubble_numbers = bubble + " / " + Ms(form.makespan);
  const double makespan = static_cast<double>(form.makespan.ns());
  const double idle = static_cast<double>((form.makespan - work).ns());
  form.bubble_fraction = makespan > 0 ? idle / makespan : 0.0;
  form.bubble_overhead = work.ns() > 0 ? idle / static_cast<double>(work.ns()) : 0.0;
}

// ZB-H1: bubble (p−1)(F+I−W), makespan m(F+I+W) + (p−1)(F+I−W) (Table 2). Exact when m >= p and
// W <= min(F, I) (each deferred W then fits the gap it fills; checked by closed_form_test.cc).
ClosedForm ZbH1Form(const ClosedFormInputs& in) {
  ClosedForm form;
  const int64_t p = in.pp;
  const int64_t m = in.microbatches;
  const Time f = in.chunk_forward;
  const Time w = in.chunk_weight_grad;
  const Time i = in.chunk_backward - w;
  const Time work = (f + i + w) * m;
  form.source = "ZB-H1: Zero Bubble Pipeline Parallelism (Qi et al., ICLR 2024, Table 2)";
  form.makespan_formula = "makespan = m * (F + I + W) + (p - 1) * (F + I - W)";
  form.makespan = work + (f + i - w) * (p - 1);
  form.bubble_formula = "bubble_fraction = (p - 1) * (F + I - W) / makespan";
  form.overhead_formula = "bubble_overhead = (p - 1) * (F + I - W) / (m * (F + I + W))";
  FillZeroBubbleNumbers(form, in, i, work,
                        "(" + Int(p) + " - 1) * (" + Ms(f) + " + " + Ms(i) + " - " + Ms(w) + ")");
  form.assumption = "uniform stages, no communication, m >= p, W <= min(F, I)";
  form.exact = m >= p && w <= f && w <= i;
  form.inexact_reason =
      m < p ? "with m < p each rank has too few W passes to fill its p - 1 cool-down gaps: the "
              "makespan is (m + p - 1) * (F + I) + W, (p - m) * W more"
            : "a W pass longer than F or I overflows the gap it fills and delays the passes "
              "behind it";
  return form;
}

// ZB-H2: bubble (p−1)(F+I−2W) per rank span (Table 2). The ranks form a parallelogram: rank r
// starts at r·F and its span is m(F+I+W) + (p−1−r)(F+I−2W), so the makespan is
// m(F+I+W) + (p−1)·max(F, F+I−2W): the Table 2 form when I >= 2W, and the last rank's start
// (p−1)F plus its work otherwise. Exact when m >= 2p − 1 and W <= min(F, I) (closed_form_test.cc).
ClosedForm ZbH2Form(const ClosedFormInputs& in) {
  ClosedForm form;
  const int64_t p = in.pp;
  const int64_t m = in.microbatches;
  const Time f = in.chunk_forward;
  const Time w = in.chunk_weight_grad;
  const Time i = in.chunk_backward - w;
  const Time work = (f + i + w) * m;
  form.source = "ZB-H2: Zero Bubble Pipeline Parallelism (Qi et al., ICLR 2024, Table 2)";
  form.makespan_formula =
      "makespan = m * (F + I + W) + (p - 1) * max(F, F + I - 2W)  [Table 2 bubble per rank: "
      "(p - 1) * (F + I - 2W)]";
  form.makespan = work + std::max(f, f + i - w * 2) * (p - 1);
  form.bubble_formula = "bubble_fraction = (p - 1) * max(F, F + I - 2W) / makespan";
  form.overhead_formula = "bubble_overhead = (p - 1) * max(F, F + I - 2W) / (m * (F + I + W))";
  FillZeroBubbleNumbers(form, in, i, work,
                        "(" + Int(p) + " - 1) * max(" + Ms(f) + ", " + Ms(f) + " + " + Ms(i) +
                            " - 2 * " + Ms(w) + ")");
  form.assumption = "uniform stages, no communication, m >= 2p - 1, W <= min(F, I)";
  form.exact = m >= 2 * p - 1 && w <= f && w <= i;
  form.inexact_reason =
      m < 2 * p - 1
          ? "with m < 2p - 1 the warm-up of 2(p - r - 1) forwards is cut short and the ranks "
            "cannot form the parallelogram"
          : "a W pass longer than F or I overflows the gap it fills and delays the passes "
            "behind it";
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
    form.inexact_reason =
        "with fewer microbatches than ranks each chunk's forward pass waits for the previous "
        "chunk, which adds idle time";
    return form;
  }
  if (in.schedule == "zb-h1") return ZbH1Form(in);
  if (in.schedule == "zb-h2") return ZbH2Form(in);
  return Error{"no closed form for schedule '" + in.schedule +
               "' (derive covers gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2)"};
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
    result.explanation = "the closed form assumes " + form.assumption + "; " + form.inexact_reason;
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
