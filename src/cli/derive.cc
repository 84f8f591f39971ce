// `stagecraft derive`: the closed form of the configured schedule, numbers plugged in, next to
// the simulated value, and why they differ when they do.
#include "analysis/closed_form.h"
#include "analysis/critical_path.h"
#include "cli/commands.h"
#include "core/units.h"
#include "report/json_writer.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

ClosedFormInputs InputsOf(const PreparedRun& run) {
  ClosedFormInputs inputs;
  inputs.schedule = run.schedule.name;
  inputs.pp = run.schedule.num_ranks;
  inputs.vpp = run.schedule.chunks_per_rank();
  inputs.microbatches = run.schedule.num_microbatches;
  inputs.chunk_forward = run.stage_costs.front().forward;
  inputs.chunk_backward = run.stage_costs.front().backward();
  inputs.chunk_weight_grad = run.stage_costs.front().weight_grad;
  inputs.chunk_fb = run.stage_costs.front().forward + run.stage_costs.front().backward() -
                    run.stage_costs.front().overlap_saving;
  return inputs;
}

std::string DeriveText(const PreparedRun& run, const ClosedForm& form, const Metrics& metrics,
                       const GapExplanation& gap) {
  const StageCost& chunk = run.stage_costs.front();
  std::string text = "stagecraft derive: " + run.label + "\n";
  text += "schedule " + run.schedule.name + ", p = " + std::to_string(run.schedule.num_ranks) +
          ", v = " + std::to_string(run.schedule.chunks_per_rank()) +
          ", m = " + std::to_string(run.schedule.num_microbatches) +
          "; per chunk F = " + FormatMs(chunk.forward) +
          " ms, B = I + W = " + FormatMs(chunk.backward()) + " ms\n";
  text += "source: " + form.source + "\n";
  text += "exact for: " + form.assumption + "\n\n";
  text += "  " + form.makespan_formula + "\n";
  text += "    = " + form.makespan_numbers + "\n";
  text += "    = " + FormatMs(form.makespan) + " ms    simulated " + FormatMs(metrics.makespan) +
          " ms\n";
  text += "  " + form.bubble_formula + "\n";
  text += "    = " + form.bubble_numbers + "\n";
  text += "    = " + FormatFixed(form.bubble_fraction, 6) + "    simulated " +
          FormatFixed(metrics.bubble_fraction, 6) + "\n";
  text += "  " + form.overhead_formula + "\n";
  text += "    = " + FormatFixed(form.bubble_overhead, 6) + "    simulated " +
          FormatFixed(metrics.bubble_overhead, 6) + "\n\n";
  text += "gap: " + FormatMs(gap.gap) + " ms: " + gap.explanation + "\n";
  if (!form.table.empty()) text += "\n" + form.table;
  return text;
}

std::string DeriveJson(const PreparedRun& run, const ClosedForm& form, const Metrics& metrics,
                       const GapExplanation& gap) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("schedule").String(run.schedule.name);
  json.Key("pp").Int(run.schedule.num_ranks);
  json.Key("vpp").Int(run.schedule.chunks_per_rank());
  json.Key("microbatches").Int(run.schedule.num_microbatches);
  json.Key("source").String(form.source);
  json.Key("exact_for").String(form.assumption);
  json.Key("makespan_formula").String(form.makespan_formula);
  json.Key("closed_form_makespan_ms").Raw(FormatMs(form.makespan));
  json.Key("simulated_makespan_ms").Raw(FormatMs(metrics.makespan));
  json.Key("bubble_formula").String(form.bubble_formula);
  json.Key("closed_form_bubble_fraction").Fixed(form.bubble_fraction, 6);
  json.Key("simulated_bubble_fraction").Fixed(metrics.bubble_fraction, 6);
  json.Key("closed_form_bubble_overhead").Fixed(form.bubble_overhead, 6);
  json.Key("simulated_bubble_overhead").Fixed(metrics.bubble_overhead, 6);
  json.Key("gap_ms").Raw(FormatMs(gap.gap));
  json.Key("explanation").String(gap.explanation);
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace

int RunDerive(const RunFlags& flags, bool json, std::ostream& out, std::ostream& err) {
  auto run = PrepareRun(flags);
  if (!run.ok()) return Fail(err, run.error().message);
  if (run.value().config.model.is_layer_list()) {
    return DeriveLayerModel(run.value(), json, out, err);
  }
  auto form = DeriveClosedForm(InputsOf(run.value()));
  if (!form.ok()) return Fail(err, form.error().message);
  Simulated simulated;
  const int code = SimulateRun(run.value(), simulated, err);
  if (code != kExitOk) return code;
  const CriticalPath path = FindCriticalPath(simulated.graph, simulated.trace);
  const GapExplanation gap =
      ExplainGap(form.value(), simulated.metrics, path, run.value().lower.cost_p2p,
                 run.value().lower.cluster.given);
  out << (json ? DeriveJson(run.value(), form.value(), simulated.metrics, gap)
               : DeriveText(run.value(), form.value(), simulated.metrics, gap));
  return kExitOk;
}

}  // namespace stagecraft
