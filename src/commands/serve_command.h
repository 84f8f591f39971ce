// The serving commands as text: `serve`, `serve-plan` and `serve-plan --space vidur`, from the
// serve module's specs and values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commands/transcript.h"
#include "serve/explorer_search.h"
#include "serve/serve.h"
#include "serve/serve_plan.h"

namespace stagecraft {

Status RunServe(const ServeSpec& spec, Transcript& transcript);

// The Chrome / Perfetto trace of the batches: one process per replica, one complete event per
// iteration with its prefill and decode tokens, and a counter track of the KV blocks in use.
std::string FormatServeTrace(const std::vector<IterationRecord>& iterations, int32_t replicas);

Status RunServePlan(const ServePlanSpec& spec, Transcript& transcript);

// The probes of every plan as a scatter (x: P90 TPOT in ms, y: GPU-seconds per request, the
// inverse of the rate per GPU; lower is better on both), probes over the SLO crossed out, and
// the Pareto front of the rest: throughput per GPU against latency.
std::string FormatServePlanSvg(const ServePlanResult& result);

// `serve-plan --space vidur`: reads the traces (`spec.space_traces`/NAME.csv, cut to each
// trace's max_seq_len), searches, and writes the best configuration per model, trace and
// cluster (text or --json), then the rejections.
Status RunExplorerSearch(const ServePlanSpec& spec, Transcript& transcript);

}  // namespace stagecraft
