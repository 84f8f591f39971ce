// torchtitan's pipeline: the schedule by its name, the stages per rank, the microbatches and
// module_fqns_per_model_part (io/torchtitan_pipeline.h), ported from (pytorch/torchtitan):
//   torchtitan/distributed/pipeline_parallel.py (pipeline_llm,
//   fb3b230e2a050885057a1a02f167658b0cb6c5ac):
//     with pipeline_parallel_layers_per_stage, ceil((layers + first_stage_less_layers +
//     last_stage_less_layers) / layers_per_stage) stages, a multiple of pp, one per rank for the
//     single-stage schedules (1F1B, GPipe) and at least two for the others; without it, one or
//     two per rank; microbatches = local_batch_size / pipeline_parallel_microbatch_size;
//   torch/distributed/pipelining/schedules.py: the looped schedules need the microbatches
//     divisible by pp, DualPipeV at least 2 x pp of them.
#include "io/torchtitan_pipeline.h"

#include <algorithm>

#include "core/suggest.h"

namespace stagecraft::torchtitan_job {
namespace {

struct ScheduleName {
  const char* torchtitan;
  const char* stagecraft;
  bool single_stage;  // PipelineScheduleSingle: one stage per rank
  bool v_shaped;      // two stages per rank in a V
};

const std::vector<ScheduleName>& Schedules() {
  static const std::vector<ScheduleName> kSchedules = {
      {"1F1B", "1f1b", true, false},
      {"GPipe", "gpipe", true, false},
      {"Interleaved1F1B", "interleaved-1f1b", false, false},
      {"LoopedBFS", "looped-bfs", false, false},
      {"DualPipeV", "dualpipev", false, true},
      {"ZBVZeroBubble", "zb-v", false, true},
  };
  return kSchedules;
}

// The schedule by torchtitan's name; split points are refused.
Result<const ScheduleName*> ReadSchedule(const TableValues& p) {
  STAGECRAFT_ASSIGN_OR_RETURN(name, p.String("pipeline_parallel_schedule"));
  STAGECRAFT_ASSIGN_OR_RETURN(split_points, p.Names("pipeline_parallel_split_points"));
  if (!split_points.empty()) {
    return p.Fail("pipeline_parallel_split_points",
                  "are not read (expected pipeline_parallel_layers_per_stage, or none: "
                  "torchtitan's even split)");
  }
  const std::string wanted = name.value_or("1F1B");
  std::vector<std::string> names;
  for (const ScheduleName& schedule : Schedules()) {
    if (wanted == schedule.torchtitan) return &schedule;
    names.push_back(schedule.torchtitan);
  }
  return p.Fail("pipeline_parallel_schedule", "'" + EscapeBytes(wanted) + "' is not read" +
                                                  DidYouMean(wanted, names) + " (expected " +
                                                  JoinChoices(names) + ")");
}

// Stages per rank as torchtitan's pipeline_llm counts them, or as `modules`
// (module_fqns_per_model_part, ModuleCounts) gives them.
Result<int64_t> StagesPerRank(const TableValues& p, int32_t layers, int64_t pp,
                              const ScheduleName& schedule,
                              const std::optional<std::vector<int32_t>>& modules) {
  STAGECRAFT_ASSIGN_OR_RETURN(per_stage, p.Int("pipeline_parallel_layers_per_stage", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(first_less, p.Int("pipeline_parallel_first_stage_less_layers", 0));
  STAGECRAFT_ASSIGN_OR_RETURN(last_less, p.Int("pipeline_parallel_last_stage_less_layers", 0));
  int64_t per_rank = schedule.single_stage ? 1 : 2;
  if (per_stage) {
    const int64_t first = first_less.value_or(1);
    const int64_t last = last_less.value_or(1);
    const int64_t stages = (layers + first + last + *per_stage - 1) / *per_stage;
    if (stages % pp != 0 || (schedule.single_stage ? stages != pp : stages < 2 * pp)) {
      return p.Fail("pipeline_parallel_layers_per_stage",
                    "= " + std::to_string(*per_stage) + " makes " + std::to_string(stages) +
                        " stages of (" + std::to_string(layers) + " layers + " +
                        std::to_string(first) + " + " + std::to_string(last) +
                        ") (expected a multiple of pp " + std::to_string(pp) + ", " +
                        (schedule.single_stage ? "one" : "at least two") + " per rank for " +
                        schedule.torchtitan + "; torchtitan's pipeline_parallel.py)");
    }
    per_rank = stages / pp;
  }
  if (modules) {
    // pipeline_module_split asserts the stages divide over the ranks, two a rank in a V; with
    // one stage a rank torch runs the single-stage schedules.
    const auto stages = static_cast<int64_t>(modules->size());
    const std::string what = "gives " + std::to_string(stages) + " stages";
    if (stages % pp != 0) {
      return p.Fail("module_fqns_per_model_part",
                    what + " (expected a multiple of pp " + std::to_string(pp) +
                        "; torchtitan's pipeline_module_split asserts it)");
    }
    if (schedule.v_shaped && stages != 2 * pp) {
      return p.Fail("module_fqns_per_model_part", what + " over pp " + std::to_string(pp) +
                                                      " (expected 2 x pp: " + schedule.torchtitan +
                                                      " runs two stages a rank in a V)");
    }
    if (schedule.single_stage ? stages != pp : stages < 2 * pp) {
      return p.Fail("module_fqns_per_model_part",
                    what + " over pp " + std::to_string(pp) + " (expected " +
                        (schedule.single_stage ? "one" : "at least two") + " per rank for " +
                        schedule.torchtitan + ")");
    }
    return stages / pp;
  }
  if (schedule.v_shaped && per_rank != 2) {
    return p.Fail("pipeline_parallel_schedule",
                  std::string(schedule.torchtitan) +
                      " runs two stages per rank in a V (expected "
                      "pipeline_parallel_layers_per_stage for 2 x pp stages)");
  }
  if (layers < pp * per_rank) {
    return p.Fail("pipeline_parallel_degree",
                  "x stages per rank = " + std::to_string(pp * per_rank) + " stages for " +
                      std::to_string(layers) + " layers (expected at most one stage per layer)");
  }
  return per_rank;
}

// The microbatch size: pipeline_parallel_microbatch_size, or the local batch over the older
// pipeline_parallel_microbatches.
Result<int64_t> MicrobatchSize(const TableValues& p, int64_t local_batch) {
  STAGECRAFT_ASSIGN_OR_RETURN(microbatch_size, p.Int("pipeline_parallel_microbatch_size", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(microbatches, p.Int("pipeline_parallel_microbatches", 1));
  if (!microbatches) return microbatch_size.value_or(1);
  if (microbatch_size) {
    return p.Fail("pipeline_parallel_microbatches",
                  "and pipeline_parallel_microbatch_size both given (expected one of them)");
  }
  if (local_batch % *microbatches != 0) {
    return p.Fail("pipeline_parallel_microbatches", "= " + std::to_string(*microbatches) +
                                                        " does not divide the local batch " +
                                                        std::to_string(local_batch));
  }
  return local_batch / *microbatches;
}

}  // namespace

Result<std::optional<std::vector<int32_t>>> ModuleCounts(const TableValues& p, int32_t layers) {
  const std::string key = "module_fqns_per_model_part";
  STAGECRAFT_ASSIGN_OR_RETURN(lists, p.NameLists(key));
  if (!lists) return std::optional<std::vector<int32_t>>();
  if (lists->empty()) return p.Fail(key, "is empty (expected one array of module names a stage)");
  const auto stages = static_cast<int32_t>(lists->size());
  const std::vector<std::string> named = {"tok_embeddings", "norm", "output", "layers.N"};
  std::vector<int32_t> counts;
  std::vector<int32_t> stage_of(static_cast<size_t>(layers), -1);
  std::vector<std::string> seen_named;
  int32_t next = 0;  // the first decoder the next stage must hold
  for (int32_t stage = 0; stage < stages; ++stage) {
    const std::vector<std::string>& names = (*lists)[static_cast<size_t>(stage)];
    const std::string where = "stage " + std::to_string(stage) + " ";
    if (names.empty()) return p.Fail(key, where + "holds no module (expected at least one)");
    int32_t low = layers;
    int32_t high = -1;
    int32_t count = 0;
    for (const std::string& name : names) {
      if (name == "tok_embeddings" || name == "norm" || name == "output") {
        const bool first = name == "tok_embeddings";
        if (std::find(seen_named.begin(), seen_named.end(), name) != seen_named.end()) {
          return p.Fail(key, where + "names '" + name + "' again (expected each module once)");
        }
        seen_named.push_back(name);
        if (first ? stage != 0 : stage != stages - 1) {
          return p.Fail(key, where + "holds '" + name + "' (expected it on the " +
                                 (first ? "first" : "last") + " stage: the model runs " +
                                 (first ? "the embedding before the decoders"
                                        : "the final norm and the output after them") +
                                 ")");
        }
        continue;
      }
      const std::string prefix = "layers.";
      const std::string digits =
          name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : std::string();
      const bool number =
          !digits.empty() && digits.size() <= 9 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          (digits.size() == 1 || digits[0] != '0');
      if (!number) {
        return p.Fail(key, where + "names '" + EscapeBytes(name) + "'" + DidYouMean(name, named) +
                               " (expected tok_embeddings, layers.N, norm or output: a Llama's "
                               "modules)");
      }
      const int32_t layer = std::stoi(digits);
      if (layer >= layers) {
        return p.Fail(key, where + "names '" + name + "' of a model with " +
                               std::to_string(layers) + " layers (expected layers.0 to layers." +
                               std::to_string(layers - 1) + ")");
      }
      if (stage_of[static_cast<size_t>(layer)] >= 0) {
        return p.Fail(key, where + "names '" + name + "', which stage " +
                               std::to_string(stage_of[static_cast<size_t>(layer)]) +
                               " holds already (expected each layer once)");
      }
      stage_of[static_cast<size_t>(layer)] = stage;
      low = std::min(low, layer);
      high = std::max(high, layer);
      ++count;
    }
    if (count > 0 && (low != next || high - low + 1 != count)) {
      return p.Fail(key, where + "holds layers " + std::to_string(low) + "-" +
                             std::to_string(high) + " in " + std::to_string(count) +
                             (count == 1 ? " module" : " modules") + " (expected layers " +
                             std::to_string(next) +
                             " onward without a gap: the stages run the "
                             "decoders in order)");
    }
    next += count;
    const int32_t ends = (stage == 0 ? 1 : 0) + (stage == stages - 1 ? 1 : 0);
    if (count == 0 && ends == 0) {
      return p.Fail(key,
                    where + "holds no decoder (expected at least one layer on a middle stage)");
    }
    counts.push_back(count + ends);
  }
  for (const char* needed : {"tok_embeddings", "norm", "output"}) {
    if (std::find(seen_named.begin(), seen_named.end(), needed) == seen_named.end()) {
      return p.Fail(key, std::string("leaves out '") + needed + "' (expected it on the " +
                             (needed == std::string("tok_embeddings") ? "first" : "last") +
                             " stage)");
    }
  }
  if (next != layers) {
    return p.Fail(key, "holds " + std::to_string(next) + " of the model's " +
                           std::to_string(layers) + " layers (expected layers.0 to layers." +
                           std::to_string(layers - 1) + ", each once)");
  }
  return std::optional<std::vector<int32_t>>(std::move(counts));
}

Status ReadPipeline(const TableValues& p, const TransformerSpec& t, int64_t local_batch,
                    int64_t accumulation, const std::optional<std::vector<int32_t>>& modules,
                    ParallelSpec& parallel, ModelSpec& model, ScheduleSpec& schedule) {
  STAGECRAFT_ASSIGN_OR_RETURN(found, ReadSchedule(p));
  const int64_t pp = parallel.pp;
  STAGECRAFT_ASSIGN_OR_RETURN(per_rank, StagesPerRank(p, t.layers, pp, *found, modules));
  STAGECRAFT_ASSIGN_OR_RETURN(mbs, MicrobatchSize(p, local_batch));
  if (local_batch % mbs != 0) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "= " + std::to_string(mbs) + " does not divide the local batch " +
                      std::to_string(local_batch) + " (expected a divisor)");
  }
  const int64_t n = local_batch / mbs;
  if (accumulation > 1) {
    return p.Fail("pipeline_parallel_degree",
                  "> 1 with gradient accumulation (global batch / (local batch x dp) = " +
                      std::to_string(accumulation) +
                      ") runs one pipeline flush per step, which stagecraft does not read yet "
                      "(expected local_batch_size = global_batch_size / dp)");
  }
  if (!found->single_stage && !found->v_shaped && n % pp != 0) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "gives " + std::to_string(n) + " microbatches, not a multiple of pp " +
                      std::to_string(pp) + " (torch's looped schedules require it)");
  }
  if (found->torchtitan == std::string("DualPipeV") && n < 2 * pp) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "gives " + std::to_string(n) +
                      " microbatches (DualPipeV needs at least 2 x pp = " + std::to_string(2 * pp) +
                      ")");
  }
  if (n < pp) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "gives " + std::to_string(n) + " microbatches, fewer than the " +
                      std::to_string(pp) + " pipeline ranks (expected a smaller size)");
  }
  parallel.vpp = static_cast<int32_t>(per_rank);
  parallel.microbatches = static_cast<int32_t>(n);
  model.micro_batch_size = static_cast<int32_t>(mbs);
  schedule.name = found->stagecraft;
  // With a schedule CSV torch's _PipelineScheduleRuntime runs its actions; the named class still
  // gives the stages per rank and their placement (pipeline_llm, pipeline_module_split). The
  // path is as written: the run reads it from the job config's folder (run/run_setup.cc).
  STAGECRAFT_ASSIGN_OR_RETURN(csv, p.String("pipeline_parallel_schedule_csv"));
  schedule.csv = csv.value_or("");
  return Status::Ok();
}

}  // namespace stagecraft::torchtitan_job
