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

// The terms of Table 2's zero-bubble rows: p, m, the chunk's F, I (= B − W) and W, and the
// m(F + I + W) of work each rank does.
struct ZbTerms {
  int64_t p;
  int64_t m;
  Time f;
  Time i;
  Time w;
  Time work;
};

ZbTerms ZbTermsOf(const ClosedFormInputs& in) {
  const Time w = in.chunk_weight_grad;
  const Time i = in.chunk_backward - w;
  return {
      in.pp, in.microbatches, in.chunk_forward, i, w, (in.chunk_forward + i + w) * in.microbatches};
}

// ZB-H1: bubble (p−1)(F+I−W), makespan m(F+I+W) + (p−1)(F+I−W) (Table 2). Exact when m >= p and
// W <= min(F, I) (each deferred W then fits the gap it fills; checked by closed_form_test.cc).
ClosedForm ZbH1Form(const ClosedFormInputs& in) {
  ClosedForm form;
  const auto [p, m, f, i, w, work] = ZbTermsOf(in);
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
  const auto [p, m, f, i, w, work] = ZbTermsOf(in);
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

// DualPipe and DualPipeV (DeepSeek-V3 technical report, Table 2): bubble (PP/2 − 1)(F&B + B − 3W)
// with parameters 2× and activations PP + 1. Here n ranks run along a direction and each phase
// gets c microbatches: DualPipe n = p/2, c = m/2, stage costs; DualPipeV n = p, c = m, chunk
// costs (the V is a DualPipe of PP = 2p stages folded onto p ranks). Rank h (distance from its
// end) runs 2c(F + B) of work less its F&B ops' gain g = F + B − F&B; it runs 2c − 3n + h + 1 F&B
// ops (one fewer on the turning rank h = n − 1). The turning rank idles exactly the Table 2
// bubble, so makespan = 2c(F + B) − (2c − 2n − 1)·g + (n − 1)(F&B + B − 3W). Exact (checked in
// closed_form_test.cc) with uniform stages, no communication, F = I, W <= F and g <= W; with
// F != I the simulated makespan differs by a few chunk times (I − F when I > F, (n−1)(F − I)
// when F > I, found by sweeping), which Table 2 does not model.
ClosedForm DualPipeForm(const ClosedFormInputs& in, bool folded) {
  ClosedForm form;
  const int64_t p = in.pp;
  const int64_t m = in.microbatches;
  const int64_t n = folded ? p : p / 2;
  const int64_t c = folded ? m : m / 2;
  const int64_t stages = folded ? 2 * p : p;  // PP of Table 2
  const Time f = in.chunk_forward;
  const Time b = in.chunk_backward;
  const Time w = in.chunk_weight_grad;
  const Time fb = in.chunk_fb.ns() > 0 ? in.chunk_fb : f + b;
  const Time gain = f + b - fb;
  const Time bubble = (fb + b - w * 3) * (n - 1);
  form.source = std::string(folded ? "DualPipeV (DualPipe cut in half, one parameter copy); "
                                   : "DualPipe; ") +
                "DeepSeek-V3 technical report (2024), Table 2";
  form.makespan_formula =
      "makespan = 2c * (F + B) - (2c - 2n - 1) * (F + B - F&B) + (n - 1) * (F&B + B - 3W)" +
      std::string(folded ? "  [n = p, c = m; PP = 2p]" : "  [n = p/2, c = m/2; PP = p]");
  form.makespan = (f + b) * (2 * c) - gain * (2 * c - 2 * n - 1) + bubble;
  form.makespan_numbers = Int(2 * c) + " * (" + Ms(f) + " + " + Ms(b) + ") - " +
                          Int(2 * c - 2 * n - 1) + " * " + Ms(gain) + " + (" + Int(n) +
                          " - 1) * (" + Ms(fb) + " + " + Ms(b) + " - 3 * " + Ms(w) + ")";
  // Work of every rank, for the fractions.
  int64_t total_ops = 0;
  int64_t ranks = 0;
  for (int64_t h = 0; h < n; ++h) {
    const int64_t ops = 2 * c - 3 * n + h + 1 - (h == n - 1 ? 1 : 0);
    const int64_t copies = folded ? 1 : 2;
    total_ops += copies * ops;
    ranks += copies;
  }
  const Time work_all = (f + b) * (2 * c * ranks) - gain * total_ops;
  const double capacity = static_cast<double>(form.makespan.ns()) * static_cast<double>(ranks);
  const double idle = capacity - static_cast<double>(work_all.ns());
  form.bubble_formula = "bubble_fraction = 1 - (work of all ranks) / (ranks * makespan)";
  form.bubble_numbers = "1 - " + Ms(work_all) + " / (" + Int(ranks) + " * " + Ms(form.makespan) +
                        ")  [turning rank idles (PP/2 - 1) * (F&B + B - 3W) = " + Ms(bubble) + "]";
  form.bubble_fraction = capacity > 0 ? idle / capacity : 0.0;
  form.overhead_formula = "bubble_overhead = idle / work, all ranks";
  form.bubble_overhead = work_all.ns() > 0 ? idle / static_cast<double>(work_all.ns()) : 0.0;
  const Time input_grad = b - w;
  form.assumption = std::string("uniform stages, no communication, ") +
                    (folded ? "m >= 2p" : "even p, even m >= 2p") +
                    ", F = I, W <= F, F&B gain F + B - F&B <= W";
  form.exact = gain <= w && gain >= Time() && c >= 2 * n && input_grad == f && w <= f;
  form.inexact_reason =
      gain < Time() ? "an F&B op costing more than F + B is outside Table 2's model"
      : input_grad != f || w > f
          ? "Table 2's bubble takes forward and input-gradient chunks of equal time and W <= F; "
            "otherwise the chain of forwards and backwards the turning rank waits for changes "
            "length (the simulation schedules it exactly)"
          : "an F&B gain larger than W shortens the overlapped ops below the chain of forwards "
            "and backwards they wait for, so other gaps appear";
  // Table 2, with the numbers of this run (per chunk; PP as above).
  const int64_t pp = stages;
  const auto row = [](const std::string& method, const std::string& bubble_text,
                      const std::string& params, const std::string& activations) {
    return "  " + PadRight(method, 10) + PadRight(bubble_text, 44) + PadRight(params, 11) +
           activations + "\n";
  };
  form.table = "DeepSeek-V3 Table 2 (PP = " + Int(pp) + ", per chunk F = " + Ms(f) +
               ", B = " + Ms(b) + ", W = " + Ms(w) + ", F&B = " + Ms(fb) + "):\n";
  form.table += row("method", "bubble", "parameter", "activation");
  form.table += row("1F1B", "(PP-1)(F+B) = " + Ms((f + b) * (pp - 1)), "1x", "PP");
  form.table += row("ZB1P", "(PP-1)(F+B-2W) = " + Ms((f + b - w * 2) * (pp - 1)), "1x", "PP");
  form.table += row(folded ? "DualPipeV" : "DualPipe",
                    "(PP/2-1)(F&B+B-3W) = " + Ms((fb + b - w * 3) * (pp / 2 - 1)),
                    folded ? "1x" : "2x", "PP+1");
  return form;
}

}  // namespace

// The schedules DeriveClosedForm knows, in the order its refusal lists them.
constexpr const char* kClosedForms[] = {"gpipe", "1f1b",  "interleaved-1f1b", "looped-bfs",
                                        "zb-h1", "zb-h2", "dualpipe",         "dualpipev"};

bool HasClosedForm(std::string_view schedule) {
  for (const char* known : kClosedForms) {
    if (schedule == known) return true;
  }
  return false;
}

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
  if (in.schedule == "dualpipe") return DualPipeForm(in, /*folded=*/false);
  if (in.schedule == "dualpipev") return DualPipeForm(in, /*folded=*/true);
  std::string known;
  for (const char* name : kClosedForms) known += std::string(known.empty() ? "" : ", ") + name;
  return Error{"no closed form for schedule '" + in.schedule + "' (derive covers " + known + ")"};
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
  if (path.collectives > 0) {
    text += " and " + std::to_string(path.collectives) + " collectives (" +
            FormatMs(path.collective_time) + " ms)";
  }
  if (path.waiting.ns() != 0) text += " and waits " + FormatMs(path.waiting) + " ms";
  text += "; the closed form counts no communication";
  const Time communication = path.transfer_time + path.collective_time;
  if (communication == result.gap) {
    text += ", so the gap is exactly the communication on the critical path";
    if (!cluster_given && cost_p2p.ns() > 0 && path.transfer_time == cost_p2p * path.transfers) {
      text += " (" + std::to_string(path.transfers) + " x c, c = " + FormatMs(cost_p2p) + " ms)";
    }
  } else if (path.collectives == 0 && path.waiting.ns() == 0) {
    text += "; the rest of the gap (" + FormatMs(result.gap - communication) +
            " ms) comes from a longer compute chain than the closed form's (non-uniform costs "
            "or a different order)";
  } else {
    // Shorter or longer: the path's compute against the form's makespan, plus its waits.
    text += "; the rest of the gap (" + FormatMs(result.gap - communication) +
            " ms) is the difference between the path's compute chain and the closed form's "
            "(non-uniform costs or a different order)" +
            std::string(path.waiting.ns() != 0 ? " plus its waits" : "");
  }
  result.explanation = text;
  return result;
}

}  // namespace stagecraft
