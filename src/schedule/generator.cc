#include "schedule/generator.h"

#include <algorithm>

#include "core/suggest.h"

namespace stagecraft {

const std::vector<ScheduleGenerator>& ScheduleGenerators() {
  static const std::vector<ScheduleGenerator> kGenerators = {
      {"gpipe", "GPipe: all forwards, then all backwards (one chunk per rank)", GenerateGpipe},
      {"1f1b",
       "1F1B in Megatron's order: rank r runs min(p-r-1, m) warm-up forwards, then alternates",
       GenerateOneFOneB},
      {"interleaved-1f1b",
       "Megatron's interleaved 1F1B over v chunks per rank, microbatch groups (default p)",
       GenerateInterleavedOneFOneB},
      {"looped-bfs",
       "breadth-first over looped stages: each chunk forwards every microbatch, then backwards",
       GenerateLoopedBfs},
      {"zb-h1",
       "Zero Bubble ZB-H1: 1F1B with split backward; rank r defers r W passes into the bubbles",
       GenerateZbH1},
      {"zb-h2",
       "Zero Bubble ZB-H2: 2(p-r-1) warm-up forwards, rank r defers 2r W passes (parallelogram)",
       GenerateZbH2},
      {"zb-v",
       "Zero Bubble V: 2 chunks per rank in a V, 2p chunk activations, 0 bubble if F=I=W, "
       "m>=2p-1; a run takes it or the authors' greedy V order for its costs, the faster",
       GenerateZbV},
      {"v-half",
       "V-Half (controllable memory): V building block, links aligned; (p+2)//2 microbatches; "
       "a run not bound to rendezvous takes the authors' order if faster",
       GenerateVHalf},
      {"v-min",
       "V-Min (controllable memory): V placement, minimal-lifespan block; (p+4)//3 microbatches; "
       "a run not bound to rendezvous takes the authors' order if faster",
       GenerateVMin},
      {"dualpipe",
       "DualPipe: bidirectional, two parameter copies (dual placement), F&B overlapped ops, "
       "even p, even m >= 2p",
       GenerateDualPipe},
      {"dualpipev", "DualPipeV: DualPipe cut in half, V placement, F&B overlapped ops, m >= 2p",
       GenerateDualPipeV},
  };
  return kGenerators;
}

int32_t RequiredChunksPerRank(std::string_view name) {
  for (const char* v_shape : {"zb-v", "v-half", "v-min", "dualpipev"}) {
    if (name == v_shape) return 2;
  }
  return 0;
}

const std::vector<CostAwareScheduleGenerator>& CostAwareScheduleGenerators() {
  static const std::vector<CostAwareScheduleGenerator> kGenerators = {
      {"zb-1p",
       "Zero Bubble automatic: greedy heuristics on the run's costs and transfers, seeded with "
       "ZB-H1, memory <= p*M_B per rank",
       GenerateZb1p},
      {"zb-2p",
       "Zero Bubble automatic: greedy heuristics on the run's costs and transfers, seeded with "
       "ZB-H1/H2, memory <= 2p*M_B per rank",
       GenerateZb2p},
      // Also in the table above, whose generator gives the schedule to callers without costs
      // (unit tests, library callers); a run (PrepareRun) and the planner's probe use these.
      {"zb-v", "", GenerateZbVAuto},
      {"v-half", "", GenerateVHalfAuto},
      {"v-min", "", GenerateVMinAuto},
  };
  return kGenerators;
}

const CostAwareScheduleGenerator* FindCostAwareScheduleGenerator(std::string_view name) {
  for (const CostAwareScheduleGenerator& generator : CostAwareScheduleGenerators()) {
    if (name == generator.name) return &generator;
  }
  return nullptr;
}

std::vector<std::string> ScheduleNames() {
  std::vector<std::string> names;
  for (const ScheduleGenerator& generator : ScheduleGenerators())
    names.emplace_back(generator.name);
  return names;
}

std::vector<std::string> AllScheduleNames() {
  std::vector<std::string> names = ScheduleNames();
  for (const CostAwareScheduleGenerator& generator : CostAwareScheduleGenerators()) {
    if (std::find(names.begin(), names.end(), generator.name) == names.end()) {
      names.emplace_back(generator.name);
    }
  }
  return names;
}

Result<const ScheduleGenerator*> FindScheduleGenerator(std::string_view name) {
  for (const ScheduleGenerator& generator : ScheduleGenerators()) {
    if (name == generator.name) return &generator;
  }
  return Error{"unknown schedule '" + std::string(name) + "'" +
               DidYouMean(name, AllScheduleNames()) + " (stagecraft list schedules)"};
}

Status CheckOneChunkParams(const GeneratorParams& params, std::string_view name,
                           std::string_view hint) {
  STAGECRAFT_RETURN_IF_ERROR(CheckBasicParams(params, name));
  if (params.vpp != 1) {
    return Error{std::string(name) + ": runs one chunk per rank, got vpp = " +
                 std::to_string(params.vpp) + " (" + std::string(hint) + ")"};
  }
  return Status::Ok();
}

Status CheckBasicParams(const GeneratorParams& params, std::string_view name) {
  const std::string prefix = std::string(name) + ": ";
  if (params.pp < 1)
    return Error{prefix + "pp must be at least 1, got " + std::to_string(params.pp)};
  if (params.vpp < 1) {
    return Error{prefix + "vpp must be at least 1, got " + std::to_string(params.vpp)};
  }
  if (params.microbatches < 1) {
    return Error{prefix + "microbatches must be at least 1, got " +
                 std::to_string(params.microbatches)};
  }
  return Status::Ok();
}

Schedule EmptyLoopSchedule(const GeneratorParams& params, std::string_view name) {
  Schedule schedule;
  schedule.name = std::string(name);
  schedule.num_ranks = params.pp;
  schedule.num_stages = params.pp * params.vpp;
  schedule.num_microbatches = params.microbatches;
  schedule.placement = Placement::kLoop;
  schedule.rank_actions.resize(static_cast<size_t>(params.pp));
  return schedule;
}

}  // namespace stagecraft
