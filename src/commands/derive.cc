// `stagecraft derive`: by model kind — the uniform model: the closed form of the configured
// schedule, numbers plugged in, next to the simulated value and why they differ when they do;
// a transformer: the same with its slowest stage's costs, plus its per-layer FLOPs and
// parameters and its KV cache per token (derive_transformer.cc); a CSA2 layer list: the shared
// state (derive_state.cc).
#include "commands/derive.h"

#include <algorithm>

#include "analysis/critical_path.h"
#include "commands/commands.h"
#include "core/units.h"
#include "report/json_writer.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

Time CycleOf(const StageCost& cost) { return cost.forward + cost.backward(); }

// The stage whose F + B is largest (the first of equals): the one the steady state waits on.
size_t SlowestStage(const std::vector<StageCost>& costs) {
  size_t slowest = 0;
  for (size_t stage = 1; stage < costs.size(); ++stage) {
    if (CycleOf(costs[stage]) > CycleOf(costs[slowest])) slowest = stage;
  }
  return slowest;
}

ClosedFormInputs InputsOf(const PreparedRun& run, const StageCost& chunk) {
  ClosedFormInputs inputs;
  inputs.schedule = run.schedule.name;
  inputs.pp = run.schedule.num_ranks;
  inputs.vpp = run.schedule.chunks_per_rank();
  inputs.microbatches = run.schedule.num_microbatches;
  inputs.chunk_forward = chunk.forward;
  inputs.chunk_backward = chunk.backward();
  inputs.chunk_weight_grad = chunk.weight_grad;
  inputs.chunk_fb = chunk.forward + chunk.backward() - chunk.overlap_saving;
  return inputs;
}

std::string DeriveText(const PreparedRun& run, const ScheduleDerivation& derivation,
                       const Metrics& metrics) {
  return "stagecraft derive: " + run.label + "\n" +
         ScheduleDerivationText(run, derivation, metrics);
}

std::string DeriveJson(const PreparedRun& run, const ScheduleDerivation& derivation,
                       const Metrics& metrics) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  WriteScheduleDerivationJson(json, run, derivation, metrics);
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace

Result<ClosedForm> ScheduleClosedForm(const PreparedRun& run) {
  return DeriveClosedForm(InputsOf(run, run.stage_costs[SlowestStage(run.stage_costs)]));
}

ScheduleDerivation DeriveSchedule(const PreparedRun& run, const ClosedForm& form,
                                  const RunOutcome& simulated) {
  ScheduleDerivation derivation;
  derivation.form = form;
  const CriticalPath path = FindCriticalPath(simulated.graph, simulated.trace);
  derivation.gap =
      ExplainGap(form, simulated.metrics, path, run.lower.cost_p2p, run.lower.cluster.given);
  const std::vector<StageCost>& costs = run.stage_costs;
  const size_t slowest = SlowestStage(costs);
  const auto fastest = std::min_element(
      costs.begin(), costs.end(),
      [](const StageCost& a, const StageCost& b) { return CycleOf(a) < CycleOf(b); });
  if (derivation.gap.gap.ns() != 0 && CycleOf(*fastest) != CycleOf(costs[slowest])) {
    derivation.gap.explanation = "the stages differ (F + B from " + FormatMs(CycleOf(*fastest)) +
                                 " ms to " + FormatMs(CycleOf(costs[slowest])) +
                                 " ms per microbatch), so the form takes the slowest stage's; " +
                                 derivation.gap.explanation;
  }
  derivation.chunk = run.config.model.is_layer_list()
                         ? "slowest chunk (stage " + std::to_string(slowest) + ")"
                         : "per chunk";
  derivation.chunk_forward = costs[slowest].forward;
  derivation.chunk_backward = costs[slowest].backward();
  return derivation;
}

std::string ScheduleDerivationText(const PreparedRun& run, const ScheduleDerivation& derivation,
                                   const Metrics& metrics) {
  const ClosedForm& form = derivation.form;
  std::string text = "schedule " + run.schedule.name +
                     ", p = " + std::to_string(run.schedule.num_ranks) +
                     ", v = " + std::to_string(run.schedule.chunks_per_rank()) +
                     ", m = " + std::to_string(run.schedule.num_microbatches) + "; " +
                     derivation.chunk + " F = " + FormatMs(derivation.chunk_forward) +
                     " ms, B = I + W = " + FormatMs(derivation.chunk_backward) + " ms\n";
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
  text += "gap: " + FormatMs(derivation.gap.gap) + " ms: " + derivation.gap.explanation + "\n";
  if (!form.table.empty()) text += "\n" + form.table;
  return text;
}

void WriteScheduleDerivationJson(JsonWriter& json, const PreparedRun& run,
                                 const ScheduleDerivation& derivation, const Metrics& metrics) {
  const ClosedForm& form = derivation.form;
  json.Key("schedule").String(run.schedule.name);
  json.Key("pp").Int(run.schedule.num_ranks);
  json.Key("vpp").Int(run.schedule.chunks_per_rank());
  json.Key("microbatches").Int(run.schedule.num_microbatches);
  json.Key("source").String(form.source);
  json.Key("exact_for").String(form.assumption);
  json.Key("makespan_formula").String(form.makespan_formula);
  json.Key("makespan_numbers").String(form.makespan_numbers);
  json.Key("closed_form_makespan_ms").Raw(FormatMs(form.makespan));
  json.Key("simulated_makespan_ms").Raw(FormatMs(metrics.makespan));
  json.Key("bubble_formula").String(form.bubble_formula);
  json.Key("bubble_numbers").String(form.bubble_numbers);
  json.Key("closed_form_bubble_fraction").Fixed(form.bubble_fraction, 6);
  json.Key("simulated_bubble_fraction").Fixed(metrics.bubble_fraction, 6);
  json.Key("closed_form_bubble_overhead").Fixed(form.bubble_overhead, 6);
  json.Key("simulated_bubble_overhead").Fixed(metrics.bubble_overhead, 6);
  json.Key("gap_ms").Raw(FormatMs(derivation.gap.gap));
  json.Key("explanation").String(derivation.gap.explanation);
}

namespace {

// No closed form for the run's schedule, said where the schedule came from: --schedule-csv,
// --schedule or the config's schedule key; the simulated bubble is what remains.
Error NoClosedForm(const RunSpec& flags, const PreparedRun& run, const Error& error) {
  const std::string& csv = run.config.schedule.csv;
  if (!csv.empty()) {
    const std::string where = flags.schedule_csv ? "--schedule-csv " + *flags.schedule_csv + ": "
                                                 : run.locations.Where("schedule.csv");
    return Error{where +
                 "derive has no closed form for a schedule loaded from a CSV (closed forms "
                 "cover the generated schedules; `stagecraft simulate` gives its bubble, "
                 "`stagecraft check` its soundness)"};
  }
  const std::string where = flags.schedule ? "--schedule " + *flags.schedule + ": "
                                           : run.locations.Where("schedule.name");
  return Error{where + error.message + "; `stagecraft simulate` gives its bubble"};
}

}  // namespace

Status RunDerive(const RunSpec& flags, bool json, Transcript& transcript) {
  std::ostream& out = transcript.out();
  std::ostream& err = transcript.err();
  auto run = PrepareRun(flags);
  if (!run.ok()) return run.error();
  const ModelSpec& model = run.value().config.model;
  if (model.is_transformer()) return DeriveTransformer(run.value(), json, out, err);
  if (model.is_layer_list()) return DeriveLayerModel(run.value(), json, out, err);
  auto form = ScheduleClosedForm(run.value());
  if (!form.ok()) return NoClosedForm(flags, run.value(), form.error());
  RunOutcome simulated;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(run.value(), simulated, err));
  const ScheduleDerivation derivation = DeriveSchedule(run.value(), form.value(), simulated);
  out << (json ? DeriveJson(run.value(), derivation, simulated.metrics)
               : DeriveText(run.value(), derivation, simulated.metrics));
  return Status::Ok();
}

}  // namespace stagecraft
