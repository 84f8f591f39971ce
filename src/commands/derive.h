// The parts of `stagecraft derive` that several model kinds print (derive.cc dispatches by kind:
// the uniform model, a dense or MoE transformer, a CSA2 layer list): the schedule's closed form
// next to the simulated value, the per-layer FLOPs and parameters, the inference KV cache per
// token. Text tables name their columns as `--json` names its keys.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/closed_form.h"
#include "analysis/metrics.h"
#include "commands/commands.h"
#include "model/kv_cache.h"
#include "report/json_writer.h"
#include "run/run_setup.h"

namespace stagecraft {

// The schedule's closed form set next to a simulated run (`chunk` names whose F and B the
// form uses: "per chunk" for the uniform model, the slowest stage's for a layer list).
struct ScheduleDerivation {
  ClosedForm form;
  GapExplanation gap;
  std::string chunk;
  Time chunk_forward;
  Time chunk_backward;
};

// The closed form of `run`'s schedule with the F and B of its slowest stage (the largest F + B;
// every stage alike for the uniform model). When the stages differ, the gap explanation says so.
Result<ClosedForm> ScheduleClosedForm(const PreparedRun& run);
ScheduleDerivation DeriveSchedule(const PreparedRun& run, const ClosedForm& form,
                                  const RunOutcome& simulated);
// "schedule ..., p = ..." through the gap line, as `derive` prints it for the uniform model.
std::string ScheduleDerivationText(const PreparedRun& run, const ScheduleDerivation& derivation,
                                   const Metrics& metrics);
// The same figures as keys of an open JSON object.
void WriteScheduleDerivationJson(JsonWriter& json, const PreparedRun& run,
                                 const ScheduleDerivation& derivation, const Metrics& metrics);

// The figures of one layer, or of a run of consecutive layers that share them (first..last,
// indices in the layer list, embedding 0). FLOPs are one microbatch's through the whole layer
// (before tensor or context parallelism splits it); parameters the whole layer's.
struct LayerFigures {
  int32_t first = 0;
  int32_t last = 0;
  std::string kind;           // "embedding", "decoder dense", "decoder full m=2 moe", ...
  double forward_flops = 0;   // F
  double backward_flops = 0;  // I + W without recomputation
  double recompute_selective_flops = 0;  // what selective recomputation adds to the backward
  double recompute_full_flops = 0;       // what full recomputation adds (the forward again)
  double attention_params = 0;
  double mlp_params = 0;  // dense MLP, or routed + shared experts and router
  double params = 0;      // the whole layer's (norms, Engram included)
};
// One row per layer, consecutive rows with equal figures merged.
std::vector<LayerFigures> TransformerLayerFigures(const PreparedRun& run);
std::vector<LayerFigures> Csa2LayerFigures(const PreparedRun& run);
std::string LayerFiguresText(const PreparedRun& run, const std::vector<LayerFigures>& rows);
// "layers": [...] into an open JSON object.
void WriteLayerFiguresJson(JsonWriter& json, const std::vector<LayerFigures>& rows);

// derive for a dense or MoE transformer (model.type: transformer, --hf-config).
Status DeriveTransformer(const PreparedRun& run, bool json, std::ostream& out, std::ostream& err);

}  // namespace stagecraft
