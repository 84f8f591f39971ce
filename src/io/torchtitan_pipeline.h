// The pipeline of a torchtitan job config (torchtitan_pipeline.cc names the files its rules are
// ported from), read by io/torchtitan_config.cc. Internal to src/io.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.h"
#include "io/config.h"
#include "io/torchtitan_table.h"

namespace stagecraft::torchtitan_job {

// torchtitan's module_fqns_per_model_part (pipeline_llm takes it in place of its splitter;
// pipeline_module_split keeps each stage's modules of the model): the layers of each stage, the
// embedding and the head counted as a layer each (as EvenTransformerCounts). Read as a Llama's
// modules: "tok_embeddings" on the first stage, "norm" and "output" on the last, and "layers.N"
// for each decoder exactly once, each stage's a run that follows the stage before it (the
// stages run in their order, a stage's layers in the model's); nullopt when not given.
Result<std::optional<std::vector<int32_t>>> ModuleCounts(const TableValues& p, int32_t layers);

// The schedule, its stages per rank and the microbatches; fills the parallel spec.
Status ReadPipeline(const TableValues& p, const TransformerSpec& t, int64_t local_batch,
                    int64_t accumulation, const std::optional<std::vector<int32_t>>& modules,
                    ParallelSpec& parallel, ModelSpec& model, ScheduleSpec& schedule);

}  // namespace stagecraft::torchtitan_job
