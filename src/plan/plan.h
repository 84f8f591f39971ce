// The planner behind `stagecraft plan` (planner issue, Part B): which layout to run a
// transformer model on N GPUs at a global batch, for an engine (Megatron-LM, torchtitan,
// DeepSpeed, or any of them). It enumerates every candidate the engine can run (DP x TP x PP x CP
// x EP x virtual stages x micro-batch size x ZeRO/FSDP x recompute x schedule; each rule with the
// engine source it comes from, plan_rules.cc), screens every candidate analytically (the layer
// costs of the kernel model and the parallel cost model, the schedule's closed form, the memory
// per device), then simulates the best of them exactly through the run library and ranks those
// by the simulated step time. A candidate whose memory does not fit is rejected with its reason;
// every rejection is counted by reason. A CSA2 layer list obeys no engine (kAny only, no export):
// its candidates add the partition and the state policy (plan_rules.cc, LayerListSpace).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/progress.h"
#include "core/result.h"
#include "io/config.h"
#include "plan/plan_constraints.h"
#include "report/run_info.h"
#include "run/run_setup.h"

namespace stagecraft {

enum class Engine : uint8_t { kMegatron, kTorchtitan, kDeepSpeed, kAny };
// Every engine with its name (--engine, --export, the plan's reports).
inline constexpr EnumTable<Engine> kEngineNames = {{"megatron", Engine::kMegatron},
                                                   {"torchtitan", Engine::kTorchtitan},
                                                   {"deepspeed", Engine::kDeepSpeed},
                                                   {"any", Engine::kAny}};
constexpr const char* EngineName(Engine engine) { return kEngineNames.Name(engine); }
// An engine by name; an unknown one is bad input naming `flag`, with "did you mean".
Result<Engine> ParseEngine(const std::string& name, const std::string& flag);

class WorkSplit;  // plan/work_split.h

struct PlanSpec {
  RunSpec run;                   // the model and the cluster (config, --hf-config, --cluster)
  int32_t gpus = 0;              // N: the world size every candidate fills exactly
  int64_t global_batch = 0;      // sequences per iteration
  Engine engine = Engine::kAny;  // whose rules the candidates obey
  int32_t top = 10;              // plans in the answer
  int32_t simulate = 50;         // candidates simulated exactly (the best of the screen)
  // The fastest simulated layouts whose every other variant (stage split; a layer list's
  // partition and state policy) is simulated too, in a second round (Candidate::LayoutKey).
  int32_t variant_layouts = 5;
  PlanConstraints constraints;    // --tp, --pp, --vpp, ... (plan/plan_constraints.h)
  std::optional<int32_t> max_pp;  // --max-pp
  double headroom = 0.0;          // --memory-headroom: the share of the device kept free (0-0.9)
  // --export ENGINE DIR: the best plan as the files that launch it (plan/export.h), written
  // through run.files into DIR (which must exist); the plan is searched under that engine.
  std::optional<Engine> export_engine;
  std::string export_dir;
  std::string report_path;  // --report FILE.html: the plan's HTML report; "" = none
  // --clusters A,B,...: a hardware sweep, the planner once per cluster preset (DEVICExNODES),
  // each filling --gpus (or, without it, all the cluster's GPUs); RunPlan prints the best plan
  // of each side by side. Empty: the one cluster of `run`.
  std::vector<std::string> sweep_clusters;
  // --layout SPEC: the user's own layout ("tp 8 pp 16 vpp 2 ..."; ParseLayoutSpec), simulated and
  // ranked among the fitting plans with the difference to the best; "" = none.
  std::string layout;
  int32_t jobs = 1;            // --jobs N: threads that prepare and simulate candidates
  WorkSplit* split = nullptr;  // where the work runs (an MPI job's); unset = `jobs` threads
  // The candidates costed, probed and simulated (core/progress.h); nullptr: none.
  ProgressSink progress;
};

// One layout.
struct Candidate {
  Engine engine = Engine::kMegatron;
  int32_t tp = 1;
  int32_t pp = 1;
  int32_t dp = 1;
  int32_t cp = 1;
  int32_t ep = 1;
  int32_t vpp = 1;
  int32_t micro_batch_size = 1;
  int32_t microbatches = 1;
  std::string schedule;  // a generator name; "1f1b" when pp is 1 (no pipeline)
  Recompute recompute = Recompute::kNone;
  // With kFull: 0 = every layer recomputes; N > 0 = the first N layers of each pipeline chunk
  // (Megatron's --recompute-method block --recompute-num-layers N), the others keep their
  // activations. The planner derives N for a layout: the fewest layers that fit (PlanLayouts).
  int32_t recompute_num_layers = 0;
  // With kFull and recompute_num_layers N: every layer recomputes in groups of N that keep only
  // their input (Megatron's --recompute-method uniform, DeepSpeed's checkpoint interval) instead
  // of the first N layers recomputing. Read from a config or launch files; not searched.
  bool recompute_uniform = false;
  int32_t zero_stage = 0;  // Megatron: 1 = the distributed optimizer; torchtitan: 3 = FSDP
  // Megatron's uneven split (--decoder-first-pipeline-num-layers F
  // --decoder-last-pipeline-num-layers L, vpp 1): decoders on the first and the last stage, the
  // rest even over the middle ones; 0 = the even split. The planner derives F and L for a
  // layout: the split that balances the embedding and the head (PlanLayouts).
  int32_t first_stage_layers = 0;
  int32_t last_stage_layers = 0;
  // torchtitan's pipeline_parallel_first_stage_less_layers and ..._last_stage_less_layers: the
  // embedding and the head count as that many layers in torchtitan's split
  // (TorchtitanTransformerCounts); its default 1 and 1. The planner derives other weights for a
  // layout where they make the slowest rank faster (PlanLayouts).
  int32_t first_less = 1;
  int32_t last_less = 1;
  // Megatron's --pipeline-model-parallel-layout (any vpp): the layers of each of the pp x vpp
  // chunks, the embedding with the first and the head with the last (as EvenTransformerCounts);
  // empty = the even split or the first/last one above. The planner derives it for a layout: the
  // split whose slowest rank is fastest (BalancedTransformerCounts), where it beats both.
  std::vector<int32_t> layout_counts;
  // A layer-list model (CSA2): no engine's rules (engine kAny), its layers split by `partition`
  // (state-aware or cost, schedule/partition.h) and its shared state moved by `state_policy`
  // (payload, direct, shadow or auto, lower/state_flow.h), both searched.
  bool layer_list = false;
  PartitionMethod partition = PartitionMethod::kStateAware;
  StatePolicy state_policy = StatePolicy::kPayload;
  // Decoders on each middle stage of that split, of `layers` in all. REQUIRES: pp >= 3.
  int32_t MiddleStageLayers(int32_t layers) const {
    return (layers - first_stage_layers - last_stage_layers) / (pp - 2);
  }

  // The layers of each chunk this layout runs (the embedding and the head included): the
  // layout's counts, the first/last split's, torchtitan's splitter with its weights, or the even
  // split of Megatron and DeepSpeed.
  std::vector<int32_t> StageCounts(int32_t layers) const;

  // The config changes that make this layout (what a RunSpec's `edit` applies).
  void ApplyTo(Config& config) const;
  // "megatron tp 8 pp 4 vpp 2 dp 2 cp 1 ep 1 mbs 1 m 32 interleaved-1f1b recompute selective zero
  // 1".
  std::string Describe() const;
  // Describe() without the stage split (first/last, torchtitan's weights, a layout string) and,
  // for a layer list, without the partition and the state policy: the layout as a user states it.
  // Candidates with one key are variants of one layout, which the planner simulates as one.
  std::string LayoutKey() const;
  // "none", "selective", "full", or "full:N" for N layers of each chunk.
  std::string RecomputeText() const;
  // The schedule, with an uneven split's decoders per stage: "1f1b 9/10/9" (first/middle/last),
  // or a derived layout's string: "interleaved-1f1b Et*2|(t*3|)*2(t*2|)*36L"; torchtitan's
  // weights where not its default: "1f1b less 2/1";
  // for a layer list over stages with its partition and state policy: "1f1b state-aware/payload".
  std::string ScheduleText(int32_t layers) const;
};

// `run` with `candidate`'s layout applied after run's own edit (what the planner simulates, and
// what an export of the candidate runs).
RunSpec CandidateRun(const RunSpec& run, const Candidate& candidate);

struct PlannedLayout {
  Candidate candidate;
  Time screen_step;  // the analytic estimate that ranked it for simulation
  Time step;         // simulated iteration
  double tokens_per_s = 0;
  double mfu = 0;
  double tflops_per_gpu = 0;
  double bubble_pipeline = 0;  // the bubble split (fractions of device time)
  double bubble_exposed = 0;   // exposed collectives + p2p + shared state
  // The share of busy time spent recomputing: 1 - model FLOPs / hardware FLOPs.
  double recompute_share = 0;
  MemoryInfo memory;  // the simulated memory verdict

  // The step's average idle time per device in the pipeline's bubble, and in exposed
  // communication; the busy time spent on recomputation.
  Time BubbleTime() const;
  Time ExposedTime() const;
  Time RecomputeTime() const;
};
struct RunOutcome;  // run/simulate.h
// One simulated layout's figures: the step, rates, bubble split, recomputation, memory.
PlannedLayout PlannedOf(const Candidate& candidate, const RunOutcome& outcome);

// The user's layout (--layout) against the plan.
struct LayoutRanking {
  Candidate candidate;
  std::string broken;      // the engine rule the layout breaks (BrokenRule); "" = legal
  bool simulated = false;  // false: it broke a rule or failed in simulation (`failure`)
  std::string failure;
  PlannedLayout planned;
  bool fits = false;   // within the device less --memory-headroom
  int32_t rank = 0;    // 1-based among the fitting simulated plans and it; 0 = it does not fit
  int32_t ranked = 0;  // how many it is ranked among
};

// --layout's text: "key value" pairs, space or comma separated, of engine (megatron, torchtitan,
// deepspeed; default --engine's), tp, pp, vpp, cp, ep (default 1), dp (default the GPUs left),
// mbs (micro-batch size, default 1), schedule (default 1f1b, interleaved-1f1b with vpp > 1),
// recompute (default none) and zero (default with data parallelism: Megatron and DeepSpeed 1,
// torchtitan 3; 0 without). The microbatches fill the global batch. Errors (bad input) name the
// key.
Result<Candidate> ParseLayoutSpec(const std::string& text, const PlanSpec& spec);

struct PlanResult {
  std::string label;       // the config's name
  std::string model;       // the model's name
  std::string cluster;     // "h100 x 8 nodes (64 GPUs)"
  int64_t candidates = 0;  // every candidate the engine rules were asked about
  int64_t screened = 0;    // candidates the rules allow (screened analytically)
  int64_t simulated = 0;   // candidates simulated exactly
  // Candidates the screen derived: Megatron layouts with the fewest block-recomputed layers
  // per chunk that fit (Candidate::recompute_num_layers), screened after the enumerated ones.
  int64_t derived = 0;
  std::map<std::string, int64_t> rejected;  // reason -> count (rules, memory)
  // Fitting plans, fastest first (at most `top`); a transformer's layouts once each, at their
  // fastest stage split (Candidate::LayoutKey).
  std::vector<PlannedLayout> plans;
  std::vector<PlannedLayout> all_fitting;  // every fitting simulated plan, fastest first
  std::vector<std::string> assumptions;    // what the figures rest on
  Config config;                           // the model and cluster planned for
  std::optional<LayoutRanking> layout;     // --layout's ranking
};

// Errors (bad input): no --gpus or --global-batch-size, a model with neither transformer
// dimensions nor layers, a layer list with an engine named or --export, a world that does not fit
// the cluster, no candidate at all (with the counts by reason).
Result<PlanResult> PlanLayouts(const PlanSpec& spec);
// spec.layout read, checked against the engine's rules, simulated on `run` (the planner's run of
// the model and cluster) and ranked among `result`'s fitting simulated plans.
Result<LayoutRanking> RankLayout(const PlanSpec& spec, const RunSpec& run,
                                 const PlanResult& result);

}  // namespace stagecraft
