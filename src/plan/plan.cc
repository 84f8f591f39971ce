#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "analysis/closed_form.h"
#include "core/suggest.h"
#include "memory/model_states.h"
#include "plan/plan_rules.h"
#include "plan/schedule_probe.h"
#include "plan/work_split.h"
#include "report/summary.h"
#include "run/simulate.h"
#include "schedule/generator.h"
#include "schedule/partition.h"

namespace stagecraft {

const std::vector<std::pair<std::string, Engine>>& EngineChoices() {
  static const std::vector<std::pair<std::string, Engine>> choices = {
      {"megatron", Engine::kMegatron},
      {"torchtitan", Engine::kTorchtitan},
      {"deepspeed", Engine::kDeepSpeed},
      {"any", Engine::kAny},
  };
  return choices;
}

const char* EngineName(Engine engine) {
  for (const auto& [name, value] : EngineChoices()) {
    if (value == engine) return name.c_str();
  }
  return "?";
}

Result<Engine> ParseEngine(const std::string& name, const std::string& flag) {
  std::vector<std::string> names;
  for (const auto& [known, value] : EngineChoices()) {
    if (name == known) return value;
    names.push_back(known);
  }
  return Error{flag + ": unknown engine '" + name + "'" + DidYouMean(name, names) + " (expected " +
               JoinChoices(names) + ")"};
}

std::vector<int32_t> Candidate::StageCounts(int32_t layers) const {
  if (!layout_counts.empty()) return layout_counts;
  if (first_stage_layers > 0 && pp >= 3 && vpp == 1) {
    std::vector<int32_t> counts(static_cast<size_t>(pp), MiddleStageLayers(layers));
    counts.front() = first_stage_layers + 1;  // and the embedding
    counts.back() = last_stage_layers + 1;    // and the head
    return counts;
  }
  const int32_t stages = std::max(1, pp * vpp);
  if (engine == Engine::kTorchtitan && stages > 1 && layers >= stages) {
    // torchtitan's own splitter, with the less-layers weights the export writes.
    auto counts = TorchtitanTransformerCounts(layers, stages, first_less, last_less);
    if (counts.ok()) return std::move(counts).value();
  }
  if (engine == Engine::kDeepSpeed && stages > 1 && layers >= stages) {
    // DeepSpeed's pipeline model splits itself (partition_method 'type:transformer').
    return DeepSpeedTransformerCounts(layers, stages);
  }
  return EvenTransformerCounts(layers, stages);  // Megatron's default split
}

void Candidate::ApplyTo(Config& config) const {
  ParallelSpec& p = config.parallel;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.cp = cp;
  p.ep = ep;
  p.vpp = vpp;
  p.microbatches = microbatches;
  p.recompute = recompute;
  p.recompute_num_layers = recompute == Recompute::kFull ? recompute_num_layers : 0;
  p.recompute_method = recompute_uniform ? RecomputeMethod::kUniform : RecomputeMethod::kBlock;
  config.model.micro_batch_size = micro_batch_size;
  config.schedule.name = schedule;
  config.schedule.group_size = 0;
  p.layout.clear();
  if (layer_list) {
    p.partition = partition;
    p.layer_counts.clear();
    config.schedule.state_policy = state_policy;
  } else {
    p.partition = PartitionMethod::kCounts;
    p.layer_counts = StageCounts(config.model.transformer.layers);
  }
  p.placement = Placement::kLoop;
  const bool data_parallel = dp * cp > 1;
  p.sequence_parallel = tp > 1 && engine != Engine::kDeepSpeed;
  p.distributed_optimizer = false;
  p.overlap_grad_reduce = false;
  p.overlap_param_gather = false;
  p.grad_buckets = GradBuckets::kNone;
  p.reshard_after_forward = ReshardAfterForward::kDefault;
  p.zero_stage = 0;
  // PyTorch's context_parallel is torchtitan's alone; the other engines run their own CP
  // (cp_mode: Megatron's ring or all-gather).
  const CpRotate config_rotate = p.cp_rotate;
  p.cp_rotate = CpRotate::kNone;
  // The loss: torchtitan's is PyTorch's cross_entropy on fp32 logits; Megatron and DeepSpeed
  // keep the config's fusion, which is theirs (none: the unfused VocabParallelCrossEntropy).
  if (p.cross_entropy_fusion == CrossEntropyFusion::kTorch ||
      p.cross_entropy_fusion == CrossEntropyFusion::kTorchCompiled) {
    p.cross_entropy_fusion = CrossEntropyFusion::kNone;
  }
  switch (engine) {
    case Engine::kMegatron:
      // The recipe Megatron's examples run: the distributed optimizer with both overlaps.
      p.distributed_optimizer = zero_stage == 1;
      p.overlap_grad_reduce = data_parallel;
      p.overlap_param_gather = zero_stage == 1;
      break;
    case Engine::kTorchtitan:
      p.zero_stage = zero_stage;  // 3: FSDP2 over dp_shard x cp
      // Compiled with the model where the candidate compiles (fused kernels), as torchtitan
      // does since e7c0cae (components/loss.py).
      p.cross_entropy_fusion =
          p.fused_kernels ? CrossEntropyFusion::kTorchCompiled : CrossEntropyFusion::kTorch;
      // torchtitan's CP is PyTorch's context_parallel with its rotate method (the config's, or
      // torchtitan's default allgather), never Megatron's ring or Llama 3's all-gather.
      if (cp > 1 && !layer_list) {
        p.cp_rotate = config_rotate == CpRotate::kNone ? CpRotate::kAllGather : config_rotate;
        p.cp_all_gather = false;
      }
      break;
    case Engine::kDeepSpeed:
    case Engine::kAny:
      p.zero_stage = zero_stage;
      break;
  }
}

RunSpec CandidateRun(const RunSpec& run, const Candidate& candidate) {
  RunSpec edited = run;
  edited.edit = [edit = run.edit, candidate](Config& config) -> Status {
    if (edit) STAGECRAFT_RETURN_IF_ERROR(edit(config));
    candidate.ApplyTo(config);
    return Status::Ok();
  };
  return edited;
}

std::string Candidate::Describe() const {
  return std::string(EngineName(engine)) + " tp " + std::to_string(tp) + " pp " +
         std::to_string(pp) + " vpp " + std::to_string(vpp) + " dp " + std::to_string(dp) + " cp " +
         std::to_string(cp) + " ep " + std::to_string(ep) + " mbs " +
         std::to_string(micro_batch_size) + " m " + std::to_string(microbatches) + " " + schedule +
         " recompute " + RecomputeText() + " zero " + std::to_string(zero_stage) +
         (first_stage_layers > 0 ? " first " + std::to_string(first_stage_layers) + " last " +
                                       std::to_string(last_stage_layers)
                                 : std::string()) +
         (engine == Engine::kTorchtitan && pp > 1 && (first_less != 1 || last_less != 1)
              ? " less " + std::to_string(first_less) + "/" + std::to_string(last_less)
              : std::string()) +
         (layout_counts.empty() ? std::string()
                                : " layout " + TransformerLayoutString(layout_counts)) +
         (layer_list ? std::string(" partition ") + PartitionMethodName(partition) + " state " +
                           StatePolicyName(state_policy)
                     : std::string());
}

std::string Candidate::LayoutKey() const {
  Candidate c = *this;
  c.first_stage_layers = 0;
  c.last_stage_layers = 0;
  c.first_less = 1;
  c.last_less = 1;
  c.layout_counts.clear();
  c.partition = PartitionMethod::kStateAware;
  c.state_policy = StatePolicy::kPayload;
  return c.Describe();
}

std::string Candidate::ScheduleText(int32_t layers) const {
  if (layer_list) {
    // One stage: nothing to partition, no state between stages.
    if (pp == 1) return schedule;
    return schedule + " " + PartitionMethodName(partition) + "/" + StatePolicyName(state_policy);
  }
  if (!layout_counts.empty()) return schedule + " " + TransformerLayoutString(layout_counts);
  if (engine == Engine::kTorchtitan && pp > 1 && (first_less != 1 || last_less != 1)) {
    return schedule + " less " + std::to_string(first_less) + "/" + std::to_string(last_less);
  }
  if (first_stage_layers == 0 || pp < 3) return schedule;
  return schedule + " " + std::to_string(first_stage_layers) + "/" +
         std::to_string(MiddleStageLayers(layers)) + "/" + std::to_string(last_stage_layers);
}

std::string Candidate::RecomputeText() const {
  if (recompute == Recompute::kFull && recompute_num_layers > 0) {
    // full:N the first N layers of each chunk; full/N every layer, N to a checkpoint.
    return (recompute_uniform ? "full/" : "full:") + std::to_string(recompute_num_layers);
  }
  return RecomputeName(recompute);
}

namespace {

// What the screen keeps of one prepared layout: the slowest chunk's costs with the collectives
// each op waits for, what follows the last backward, and the memory per device.
struct Costed {
  bool ok = false;
  Time forward;       // of one chunk, with its exposed TP / CP / EP collectives
  Time backward;      // B = I + W, likewise
  Time weight_grad;   // W
  Time tail;          // after the pipeline: exposed DP reduction, optimizer step, first gather
  double states = 0;  // model states of the fullest device
  int64_t chunk_activations = 0;  // activations one chunk holds per microbatch (largest),
                                  // the head's loss apart
  int64_t head_activations = 0;   // what the head's loss holds per microbatch (last stage)
  int64_t recompute = 0;          // recomputation's working set during a backward (largest)
  int64_t capacity = 0;
  int64_t reserve = 0;
  // With three or more stages: one decoder's F + B with its collectives (a middle stage's over
  // its decoders), and what the embedding and the head add to the first and the last stage.
  Time decoder;
  Time embedding;
  Time head;
};

// The V-shape schedules (dualpipev, zb-v, v-half, v-min): two chunks a rank, placed in a V.
bool VShaped(const Candidate& c) { return c.pp > 1 && RequiredChunksPerRank(c.schedule) == 2; }

// Everything but the schedule's order and the microbatch count changes the costs; the screen
// prepares one representative per key.
using CostKey = std::tuple<int, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int,
                           int32_t, bool, int32_t, bool, int32_t, int32_t, std::vector<int32_t>,
                           int32_t, int32_t, int, int>;
CostKey KeyOf(const Candidate& c) {
  return {static_cast<int>(c.engine),
          c.tp,
          c.pp,
          c.dp,
          c.cp,
          c.ep,
          c.vpp,
          c.micro_batch_size,
          static_cast<int>(c.recompute),
          c.recompute_num_layers,
          c.recompute_uniform,
          c.zero_stage,
          VShaped(c),
          c.first_stage_layers,
          c.last_stage_layers,
          c.layout_counts,
          c.first_less,
          c.last_less,
          static_cast<int>(c.partition),
          static_cast<int>(c.state_policy)};
}

// The planner's run of `candidate`: the loaded config with the candidate's layout applied.
RunSpec RunOf(const PlanSpec& spec, const std::shared_ptr<const LoadedConfig>& base,
              const Candidate& candidate) {
  RunSpec run = spec.run;
  run.loaded = base;
  return CandidateRun(run, candidate);
}

Costed Cost(const PlanSpec& spec, const std::shared_ptr<const LoadedConfig>& base,
            const Candidate& candidate) {
  Candidate probe = candidate;  // a short run of the same layout
  const bool v_shape = VShaped(candidate);  // the V's costs, from DualPipeV's placement
  probe.schedule = v_shape ? "dualpipev" : candidate.vpp > 1 ? "interleaved-1f1b" : "1f1b";
  probe.microbatches = candidate.pp == 1 ? 1 : v_shape ? 2 * candidate.pp : candidate.pp;
  auto prepared = PrepareRun(RunOf(spec, base, probe));
  Costed costed;
  if (!prepared.ok()) return costed;
  const PreparedRun& r = prepared.value();
  const std::vector<StageCollectives>& collectives = r.parallel_plan.collectives;
  const std::vector<LayerSpec>& layers = r.config.model.layers;
  if (!layers.empty() && layers.back().kind == LayerKind::kHead) {
    costed.head_activations = layers.back().activation_bytes;
  }
  std::vector<Time> stage_totals;
  Time dp_tail;
  Time gather;
  for (size_t stage = 0; stage < r.stage_costs.size(); ++stage) {
    const StageCost& cost = r.stage_costs[stage];
    Time f = cost.forward;
    Time b = cost.backward();
    if (stage < collectives.size()) {
      const StageCollectives& c = collectives[stage];
      f += c.tp_forward + c.cp_forward + c.ep_forward;
      b += c.tp_backward + c.cp_backward + c.ep_backward;
      const int32_t units = std::max(1, c.shard_units);
      f += Time::Nanoseconds(c.shard_gather.ns() / units);
      if (c.shard_gather_backward) b += Time::Nanoseconds(c.shard_gather.ns() / units);
      const Time reduce = c.dp_buckets.empty() ? c.dp_reduce : c.dp_buckets.back().second;
      dp_tail = std::max(dp_tail, reduce + c.shard_reduce);
      gather = std::max(gather, c.first_gather);
    }
    stage_totals.push_back(f + b);
    if (f + b > costed.forward + costed.backward) {
      costed.forward = f;
      costed.backward = b;
      costed.weight_grad = cost.weight_grad;
    }
    const bool last = stage + 1 == r.stage_costs.size();
    costed.chunk_activations = std::max(
        costed.chunk_activations, cost.activation_bytes - (last ? costed.head_activations : 0));
    costed.recompute = std::max(costed.recompute, cost.recompute_bytes);
  }
  const std::vector<int32_t>& counts = r.config.parallel.layer_counts;
  if (stage_totals.size() >= 3 && counts.size() == stage_totals.size() && counts[1] > 0) {
    const int64_t per_decoder = stage_totals[1].ns() / counts[1];
    costed.decoder = Time::Nanoseconds(per_decoder);
    costed.embedding = stage_totals.front() - Time::Nanoseconds(per_decoder * (counts.front() - 1));
    costed.head = stage_totals.back() - Time::Nanoseconds(per_decoder * (counts.back() - 1));
  }
  Time optimizer;
  for (Time step : r.parallel_plan.optimizer_step) optimizer = std::max(optimizer, step);
  costed.tail = dp_tail + optimizer + gather;
  for (size_t rank = 0; rank < r.parallel_plan.rank_params.size(); ++rank) {
    costed.states =
        std::max(costed.states, RankModelStates(r.parallel_plan, r.config.parallel, rank).total());
  }
  costed.capacity = r.config.cluster.given ? r.config.cluster.hbm_bytes : 0;
  costed.reserve = r.config.cluster.given ? r.config.cluster.memory_reserve_bytes : 0;
  costed.ok = true;
  return costed;
}

// Where `c`'s chunks run: in a V for the V-shape schedules (rank r holds chunks r and 2pp - 1 - r),
// else chunk s on rank s mod pp.
ChunkPlacement PlacementOf(const Candidate& c) {
  return VShaped(c) ? ChunkPlacement::kV : ChunkPlacement::kLoop;
}

// The slowest rank's time of a transformer split `counts` (the embedding and the head included)
// under `c`'s placement; a chunk costs its decoders, plus the embedding on the first and the
// head on the last (the screen's three costs).
int64_t SlowestRankNs(const std::vector<int32_t>& counts, const Candidate& c,
                      const Costed& costed) {
  return SlowestTransformerRank(counts, std::max(1, c.pp), costed.decoder, costed.embedding,
                                costed.head, PlacementOf(c))
      .ns();
}

// Whether the split `counts` of `c` lengthens, by more than `tie`, the chain of levels a looped
// schedule with virtual stages runs (TransformerLevelChain) against `reference`. A split that
// takes time off the slowest rank by piling a level onto one chunk (a heavy head alone on the
// last chunk, its rank's other chunks nearly empty) runs slower in the exact simulation: the
// ranks wait on that chunk level by level. Never for the V (dualpipev) or without virtual stages,
// where the slowest rank is the measure.
bool LengthensTheChain(const std::vector<int32_t>& counts, const std::vector<int32_t>& reference,
                       const Candidate& c, const Costed& costed, int64_t tie) {
  if (c.vpp < 2 || PlacementOf(c) != ChunkPlacement::kLoop) return false;
  const auto chain = [&](const std::vector<int32_t>& split) {
    return TransformerLevelChain(split, c.pp, costed.decoder, costed.embedding, costed.head).ns();
  };
  return chain(counts) > chain(reference) + tie;
}

// Whether a split `counts` of the layout `c` (whose own split is `parent`, screened at `step`)
// may screen below `cutoff`: `step` scaled by the larger of the two shares the split takes off,
// its slowest rank's under c's placement and its slowest chunk's. In the screen's three costs
// no split does better than that share.
bool Promising(const std::vector<int32_t>& counts, const std::vector<int32_t>& parent,
               const Candidate& c, const Costed& costed, Time step, Time cutoff) {
  const auto chunks = static_cast<int32_t>(counts.size());
  const double rank_share = static_cast<double>(SlowestRankNs(counts, c, costed)) /
                            static_cast<double>(SlowestRankNs(parent, c, costed));
  const double chunk_share =
      static_cast<double>(
          SlowestTransformerRank(counts, chunks, costed.decoder, costed.embedding, costed.head)
              .ns()) /
      static_cast<double>(
          SlowestTransformerRank(parent, chunks, costed.decoder, costed.embedding, costed.head)
              .ns());
  return static_cast<double>(step.ns()) * std::min(rank_share, chunk_share) <
         static_cast<double>(cutoff.ns());
}

// Chunk activations the fullest rank (the first) holds at its peak.
int64_t ChunksInFlight(const Candidate& c) {
  const int64_t m = c.microbatches;
  const int64_t p = c.pp;
  const int64_t v = c.vpp;
  if (p == 1) return 1;
  if (c.schedule == "gpipe") return m;
  if (c.schedule == "looped-bfs") return m * v;
  if (c.schedule == "interleaved-1f1b") return std::min(m * v, 2 * (p - 1) + (v - 1) * p + 1);
  if (c.schedule == "dualpipev") return std::min(2 * m, 2 * p + 1);
  if (c.schedule == "zb-h2") return std::min(m, 2 * p - 1);  // 2(p - 1) warm-up forwards
  return std::min(m, p);  // 1f1b
}

// The activations of the fullest rank at the schedule's peak, as the screen bounds them: `chunks`
// in flight of the largest chunk (the first rank's), or `last_chunks` with the head's loss (the
// last rank's).
double ScreenedActivations(const Costed& costed, int64_t chunks, int64_t last_chunks) {
  return static_cast<double>(
      std::max(chunks * costed.chunk_activations,
               last_chunks * costed.chunk_activations + costed.head_activations));
}

// The last rank's chunks in flight: one under 1F1B or without stages; elsewhere the first rank's
// count `chunks`, a bound (a V places the head on the first rank).
int64_t LastRankChunks(const Candidate& c, int64_t chunks) {
  return c.pp == 1 || c.schedule == "1f1b" ? 1 : chunks;
}

double Budget(const PlanSpec& spec, int64_t capacity) {
  return static_cast<double>(capacity) * (1.0 - spec.headroom);
}

std::string ClusterText(const ClusterSpec& cluster) {
  return cluster.device + " x " + std::to_string(cluster.nodes) + " node" +
         (cluster.nodes == 1 ? "" : "s") + " of " + std::to_string(cluster.devices_per_node);
}

}  // namespace

Result<PlanResult> PlanLayouts(const PlanSpec& spec) {
  std::unique_ptr<WorkSplit> threads;
  if (spec.split == nullptr) {
    if (spec.jobs < 1 || spec.jobs > 1024) {
      return Error{"plan: --jobs must be between 1 and 1024 (threads), got " +
                   std::to_string(spec.jobs)};
    }
    threads = ThreadSplit(spec.jobs);
  }
  WorkSplit& split = spec.split != nullptr ? *spec.split : *threads;
  if (spec.gpus < 1) {
    return Error{"plan: --gpus N is required (the world size every layout fills, e.g. --gpus 64)"};
  }
  if (spec.global_batch < 1) {
    return Error{
        "plan: --global-batch-size B is required (sequences per iteration, e.g. "
        "--global-batch-size 512)"};
  }
  if (spec.headroom < 0 || spec.headroom > 0.9) {
    return Error{"plan: --memory-headroom must be between 0 and 0.9 (a share of the device)"};
  }
  if (!spec.layout.empty()) {
    // Bad --layout text fails before the search (RankLayout reads it again after).
    auto layout = ParseLayoutSpec(spec.layout, spec);
    if (!layout.ok()) return layout.error();
  }
  auto loaded = LoadRunConfig(spec.run);
  if (!loaded.ok()) return loaded.error();
  auto base = std::make_shared<const LoadedConfig>(std::move(loaded).value());
  RunSpec resolve_spec = spec.run;
  resolve_spec.loaded = base;
  auto resolved = ResolveRun(resolve_spec);
  if (!resolved.ok()) return resolved.error();
  const Config& config = resolved.value().config;
  const bool layer_list = !config.model.is_transformer();
  if (layer_list && config.model.layers.empty()) {
    return Error{"plan: the model '" + config.model.name +
                 "' has no layers to split (expected model.type: transformer, model.type: layers "
                 "or --hf-config)"};
  }
  if (layer_list && spec.export_engine) {
    return Error{"plan: --export: the model '" + config.model.name +
                 "' is a layer list (CSA2); no engine export writes its layers (drop --export)"};
  }
  if (layer_list && spec.engine != Engine::kAny) {
    return Error{"plan: --engine " + std::string(EngineName(spec.engine)) + ": the model '" +
                 config.model.name +
                 "' is a layer list (CSA2), which no engine stagecraft writes rules for runs; "
                 "plan it with --engine any (the layouts the run library simulates)"};
  }
  if (!config.cluster.given) {
    return Error{
        "plan: no cluster to plan for; give one (--cluster h100x8, or a cluster "
        "section; stagecraft list presets)"};
  }
  const int64_t devices = int64_t{config.cluster.nodes} * config.cluster.devices_per_node;
  if (spec.gpus > devices) {
    return Error{"plan: --gpus " + std::to_string(spec.gpus) + " is more than the cluster's " +
                 std::to_string(devices) + " GPUs (" + ClusterText(config.cluster) +
                 "); give a larger --cluster, e.g. " + config.cluster.device + "x" +
                 std::to_string((spec.gpus + config.cluster.devices_per_node - 1) /
                                config.cluster.devices_per_node)};
  }
  const PlanShape shape = PlanShapeOf(config);

  PlanResult result;
  result.config = config;
  result.label = base->label;
  result.model = config.model.name;
  result.cluster = ClusterText(config.cluster) + " (" + std::to_string(spec.gpus) + " GPUs used)";
  Enumeration enumeration = EnumerateCandidates(spec, shape);
  result.candidates = enumeration.asked;
  result.rejected = enumeration.rejected;

  // The screen: every legal candidate, analytically.
  struct Screened {
    size_t index;
    Time step;
  };
  std::vector<Screened> fitting;
  // One representative per cost key, prepared by the workers; the screen then reads them in the
  // candidates' order, so the answer does not depend on how the work was split.
  std::map<CostKey, size_t> key_index;
  std::vector<size_t> representatives;  // a candidate index per key, in first-seen order
  for (size_t index = 0; index < enumeration.legal.size(); ++index) {
    if (key_index.try_emplace(KeyOf(enumeration.legal[index]), representatives.size()).second) {
      representatives.push_back(index);
    }
  }
  const std::vector<std::string> costed_bytes = split.Map(
      representatives.size(),
      [&](size_t key) {
        const Costed costed = Cost(spec, base, enumeration.legal[representatives[key]]);
        return ByteWriter().Put(costed).Take();
      },
      nullptr);
  std::vector<Costed> costs;
  costs.reserve(costed_bytes.size());
  for (const std::string& bytes : costed_bytes) costs.push_back(ByteReader(bytes).Get<Costed>());
  // Each candidate's screened step, fitting or not (-1 ns: none); the uneven splits below start
  // from it.
  std::vector<Time> screen_step;
  const auto fits = [&](const Costed& costed, int64_t chunks, int64_t last_chunks) {
    const double memory = costed.states + ScreenedActivations(costed, chunks, last_chunks) +
                          static_cast<double>(costed.recompute + costed.reserve);
    return costed.capacity <= 0 || memory <= Budget(spec, costed.capacity);
  };
  // Candidates whose schedule has no closed form wait here for their probes (below).
  std::vector<size_t> unprobed;
  const auto screen = [&](size_t index, const Costed& costed) {
    const Candidate& c = enumeration.legal[index];
    screen_step.resize(enumeration.legal.size(), Time::Nanoseconds(-1));
    if (!costed.ok) {
      ++result.rejected["refused when prepared (stagecraft simulate says why)"];
      return;
    }
    ++result.screened;
    ClosedFormInputs inputs;
    inputs.schedule = c.pp == 1 ? "1f1b" : c.schedule;
    inputs.pp = c.pp;
    inputs.vpp = c.vpp;
    inputs.microbatches = c.microbatches;
    inputs.chunk_forward = costed.forward;
    inputs.chunk_backward = costed.backward;
    inputs.chunk_weight_grad = costed.weight_grad;
    if (!HasClosedForm(inputs.schedule)) {
      if (!fits(costed, 1, 1)) {
        ++result.rejected["over memory (screen)"];
        return;
      }
      unprobed.push_back(index);
      return;
    }
    auto form = DeriveClosedForm(inputs);
    if (form.ok()) screen_step[index] = form.value().makespan + costed.tail;
    const int64_t chunks = ChunksInFlight(c);
    if (!fits(costed, chunks, LastRankChunks(c, chunks))) {
      ++result.rejected["over memory (screen)"];
      return;
    }
    if (!form.ok()) {
      ++result.rejected["no closed form to screen it"];
      return;
    }
    fitting.push_back({index, screen_step[index]});
  };
  // The schedules with no closed form (zb-1p, zb-2p, zb-v, v-half, v-min): generated and run
  // compute-only (ScheduleProbe), once per shape and costs, where they may reach the exact
  // simulation. Each rank works m x vpp x (F + B) whatever the order, and the last rank starts
  // after the (pp - 1) forwards before it, so a candidate whose bound (those two and the tail)
  // already reaches the screen's simulate-th best step is not generated.
  const size_t keep = static_cast<size_t>(std::max(1, spec.simulate));
  // The screen's simulate-th best step so far (no bound while fewer fit).
  const auto simulated_cutoff = [&]() {
    if (fitting.size() < keep) return Time::Nanoseconds(std::numeric_limits<int64_t>::max());
    std::vector<Time> steps;
    for (const Screened& one : fitting) steps.push_back(one.step);
    std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(keep - 1),
                     steps.end());
    return steps[keep - 1];
  };
  bool probed_any = false;
  const auto probe_waiting = [&]() {
    if (unprobed.empty()) return;
    probed_any = true;
    const Time cutoff = simulated_cutoff();
    using ProbeKey = std::tuple<std::string, int32_t, int32_t, int32_t, int64_t, int64_t, int64_t>;
    std::map<ProbeKey, size_t> probe_index;
    std::vector<ProbeKey> keys;
    std::vector<std::pair<size_t, size_t>> probed;  // candidate, key
    for (const size_t index : unprobed) {
      const Candidate& c = enumeration.legal[index];
      const Costed& costed = costs[key_index.at(KeyOf(c))];
      const int64_t work = int64_t{c.microbatches} * c.vpp * costed.backward.ns() +
                           (int64_t{c.microbatches} * c.vpp + c.pp - 1) * costed.forward.ns();
      if (Time::Nanoseconds(work) + costed.tail >= cutoff) {
        ++result.rejected["its bound is no faster than the screen's best (not generated)"];
        continue;
      }
      const ProbeKey key{c.schedule,
                         c.pp,
                         c.vpp,
                         c.microbatches,
                         costed.forward.ns(),
                         (costed.backward - costed.weight_grad).ns(),
                         costed.weight_grad.ns()};
      const auto [found, added] = probe_index.try_emplace(key, keys.size());
      if (added) keys.push_back(key);
      probed.emplace_back(index, found->second);
    }
    const std::vector<std::string> outcomes = split.Map(
        keys.size(),
        [&](size_t k) {
          const auto& [name, pp, vpp, m, forward, input_grad, weight_grad] = keys[k];
          auto probe = ProbeSchedule(name, pp, vpp, m, Time::Nanoseconds(forward),
                                     Time::Nanoseconds(input_grad), Time::Nanoseconds(weight_grad));
          ByteWriter out;
          out.Put<bool>(probe.ok());
          if (probe.ok()) out.Put(probe.value().makespan.ns()).Put(probe.value().peak_chunks);
          return out.Take();
        },
        nullptr);
    for (const auto& [index, k] : probed) {
      ByteReader in(outcomes[k]);
      if (!in.Get<bool>()) {
        ++result.rejected["the schedule's generator refuses the shape"];
        continue;
      }
      const Costed& costed = costs[key_index.at(KeyOf(enumeration.legal[index]))];
      screen_step[index] = Time::Nanoseconds(in.Get<int64_t>()) + costed.tail;
      const int64_t chunks = in.Get<int64_t>();  // the probe's peak over the ranks
      if (!fits(costed, chunks, chunks)) {
        ++result.rejected["over memory (screen)"];
        continue;
      }
      fitting.push_back({index, screen_step[index]});
    }
    unprobed.clear();
  };
  const size_t enumerated = enumeration.legal.size();
  for (size_t index = 0; index < enumerated; ++index) {
    screen(index, costs[key_index.at(KeyOf(enumeration.legal[index]))]);
  }
  probe_waiting();

  // Megatron's block recomputation (--recompute-method block --recompute-num-layers N): the
  // first N layers of each chunk recompute, the rest keep their activations, so time grows and
  // memory falls with N, layer by layer. Where a layout does not fit without recomputation but
  // does with all of it, the best N is the fewest layers that fit: found from the two screened
  // ends (activations falling linearly in N), then costed and screened as a candidate of its own.
  std::vector<Candidate> derived;
  for (size_t index = 0; index < enumerated; ++index) {
    const Candidate& c = enumeration.legal[index];
    // Megatron, and Megatron-DeepSpeed without pipeline stages (its Megatron model, written with
    // --no-pipeline-parallel: DeepSpeed's pipe model has no block method).
    const bool block =
        c.engine == Engine::kMegatron || (c.engine == Engine::kDeepSpeed && c.pp == 1);
    if (!block || c.recompute != Recompute::kFull) continue;
    const int32_t chunk_layers = shape.layers / std::max(1, c.pp * c.vpp);
    if (chunk_layers < 2) continue;
    Candidate twin = c;
    twin.recompute = Recompute::kNone;
    const auto found = key_index.find(KeyOf(twin));
    if (found == key_index.end()) continue;
    const Costed& none = costs[found->second];
    const Costed& full = costs[key_index.at(KeyOf(c))];
    if (!none.ok || !full.ok || full.capacity <= 0) continue;
    const int64_t chunks = ChunksInFlight(c);
    const int64_t last_chunks = LastRankChunks(c, chunks);
    const double inflight = static_cast<double>(chunks);
    const double budget = Budget(spec, full.capacity);
    const double without =
        none.states + ScreenedActivations(none, chunks, last_chunks) + none.reserve;
    // Any recomputing layer adds its working set during its backward (Costed::recompute).
    const double with_all = full.states + ScreenedActivations(full, chunks, last_chunks) +
                            static_cast<double>(full.recompute) + full.reserve;
    const double saved_per_layer =
        inflight * static_cast<double>(none.chunk_activations - full.chunk_activations) /
        chunk_layers;
    if (without <= budget || with_all > budget || saved_per_layer <= 0) continue;
    const double layers =
        std::ceil((without + static_cast<double>(full.recompute) - budget) / saved_per_layer);
    if (layers >= chunk_layers) continue;
    Candidate partial = c;
    partial.recompute_num_layers = static_cast<int32_t>(std::max(1.0, layers));
    derived.push_back(partial);
  }
  // Megatron's uneven splits. The first stage also holds the embedding and the last the head
  // and the loss, so the even split leaves them the slowest. From a layout's screened costs (one
  // decoder's F + B with its collectives, and what the embedding and the head add), two
  // derivations, each costed and screened as a candidate of its own where it beats the even
  // split's slowest rank:
  // - vpp 1: --decoder-first-pipeline-num-layers F --decoder-last-pipeline-num-layers L
  //   (megatron/core/transformer/transformer_config.py: the middle stages' decoders even); every
  //   (F, L) whose middle divides evenly is tried and the one with the least slowest stage kept;
  // - any vpp: --pipeline-model-parallel-layout (pipeline_parallel_layer_layout.py, which takes
  //   any count per virtual stage): the exact balance of BalancedTransformerCounts, kept where it
  //   also beats the first/last split (the simpler flags win a tie).
  // A split can only make a layout faster by what it takes off the slowest rank (or chunk), so
  // a parent whose screened step, scaled by that share, is no faster than the screen's
  // simulate-th best cannot reach the exact simulation; its splits are not derived.
  const Time cutoff = simulated_cutoff();
  for (size_t index = 0; index < enumerated; ++index) {
    const Candidate& c = enumeration.legal[index];
    if (c.engine == Engine::kTorchtitan && c.pp >= 2) {
      // torchtitan's own knob (pipeline_parallel.py): the embedding and the head count as
      // first_less and last_less layers in its split (default 1 and 1). Every pair 0-3 that
      // torchtitan accepts is tried under the schedule's placement, and the one with the least
      // slowest rank kept where it beats the default by more than 1% of a decoder.
      const Costed& costed = costs[key_index.at(KeyOf(c))];
      if (!costed.ok || costed.decoder <= Time() || screen_step[index] < Time()) continue;
      const int32_t stages = c.pp * c.vpp;
      const std::vector<int32_t> parent = c.StageCounts(shape.layers);
      const int64_t tie = std::max<int64_t>(1, costed.decoder.ns() / 100);
      int64_t best = SlowestRankNs(parent, c, costed);
      std::vector<int32_t> best_counts = parent;
      std::optional<std::pair<int32_t, int32_t>> chosen;
      for (int32_t first = 0; first <= 3; ++first) {
        for (int32_t last = 0; last <= 3; ++last) {
          auto counts = TorchtitanTransformerCounts(shape.layers, stages, first, last);
          if (!counts.ok()) continue;
          const int64_t time = SlowestRankNs(counts.value(), c, costed);
          if (time + tie <= best) {
            best = time;
            best_counts = std::move(counts).value();
            chosen = std::make_pair(first, last);
          }
        }
      }
      if (chosen) {
        Candidate weighted = c;
        weighted.first_less = chosen->first;
        weighted.last_less = chosen->second;
        // As for Megatron below: derived only where the share it takes off could reach the
        // simulated best.
        const std::vector<int32_t> counts =
            TorchtitanTransformerCounts(shape.layers, stages, chosen->first, chosen->second)
                .value();
        if (Promising(counts, parent, c, costed, screen_step[index], cutoff)) {
          derived.push_back(weighted);
        }
      }
      // Any split, as module_fqns_per_model_part (which pipeline_llm takes in place of its
      // splitter): the exact balance under the schedule's placement, kept where it beats the
      // best weights (the weights win a tie: one knob against a list of every module) without
      // lengthening a looped schedule's chain of levels.
      std::vector<int32_t> balanced = BalancedTransformerCounts(
          shape.layers, c.pp, c.vpp, costed.decoder, costed.embedding, costed.head, PlacementOf(c));
      if (balanced.empty() || SlowestRankNs(balanced, c, costed) + tie > best ||
          LengthensTheChain(balanced, best_counts, c, costed, tie) ||
          !Promising(balanced, parent, c, costed, screen_step[index], cutoff)) {
        continue;
      }
      Candidate layout = c;
      layout.layout_counts = std::move(balanced);
      derived.push_back(std::move(layout));
      continue;
    }
    if (c.engine != Engine::kMegatron || c.pp < 2) continue;
    const Costed& costed = costs[key_index.at(KeyOf(c))];
    if (!costed.ok || costed.decoder <= Time() || screen_step[index] < Time()) continue;
    const std::vector<int32_t> parent = c.StageCounts(shape.layers);
    const auto promising = [&](const std::vector<int32_t>& counts) {
      return Promising(counts, parent, c, costed, screen_step[index], cutoff);
    };
    const int64_t layers = shape.layers;
    const int64_t decoder = costed.decoder.ns();
    // Where two splits differ by less than 1% of one decoder (below what the model resolves),
    // the one nearer the even split (fewer stages at the maximum).
    const int64_t tie = std::max<int64_t>(1, decoder / 100);
    // The split it runs: the even one, or (pp x vpp not dividing the layers) its layout.
    int64_t best = SlowestTransformerRank(c.StageCounts(shape.layers), c.pp, costed.decoder,
                                          costed.embedding, costed.head)
                       .ns();
    if (c.vpp == 1 && c.pp >= 3) {
      const int64_t middle_stages = c.pp - 2;
      const auto slowest = [&](int64_t first, int64_t last) {
        const int64_t middle = (layers - first - last) / middle_stages;
        return std::max({costed.embedding.ns() + first * decoder, last * decoder + costed.head.ns(),
                         middle * decoder});
      };
      const int64_t even = layers / c.pp;
      int64_t best_first = even;
      int64_t best_last = even;
      int64_t best_distance = 0;
      for (int64_t first = 1; first < layers; ++first) {
        for (int64_t last = 1; first + last + middle_stages <= layers; ++last) {
          if ((layers - first - last) % middle_stages != 0) continue;
          const int64_t time = slowest(first, last);
          const int64_t distance = std::abs(first - even) + std::abs(last - even);
          const bool faster = time + tie <= best;
          const bool as_fast_and_nearer = time < best + tie && distance < best_distance;
          if (faster || as_fast_and_nearer) {
            best = std::min(best, time);
            best_distance = distance;
            best_first = first;
            best_last = last;
          }
        }
      }
      if (best_first != even || best_last != even) {
        Candidate uneven = c;
        uneven.first_stage_layers = static_cast<int32_t>(best_first);
        uneven.last_stage_layers = static_cast<int32_t>(best_last);
        uneven.layout_counts.clear();
        if (promising(uneven.StageCounts(shape.layers))) derived.push_back(uneven);
      }
    }
    std::vector<int32_t> balanced = BalancedTransformerCounts(
        shape.layers, c.pp, c.vpp, costed.decoder, costed.embedding, costed.head);
    if (balanced.empty()) continue;
    const Time time =
        SlowestTransformerRank(balanced, c.pp, costed.decoder, costed.embedding, costed.head);
    if (time.ns() + tie > best || balanced == c.layout_counts ||
        LengthensTheChain(balanced, parent, c, costed, tie) || !promising(balanced)) {
      continue;
    }
    Candidate layout = c;
    layout.layout_counts = std::move(balanced);
    derived.push_back(std::move(layout));
  }
  if (!derived.empty()) {
    std::vector<size_t> new_keys;  // indices into `derived` of the first of each new key
    for (size_t index = 0; index < derived.size(); ++index) {
      if (key_index.try_emplace(KeyOf(derived[index]), representatives.size()).second) {
        representatives.push_back(enumeration.legal.size() + index);
        new_keys.push_back(index);
      }
    }
    const std::vector<std::string> derived_bytes = split.Map(
        new_keys.size(),
        [&](size_t key) {
          return ByteWriter().Put(Cost(spec, base, derived[new_keys[key]])).Take();
        },
        nullptr);
    for (const std::string& bytes : derived_bytes) {
      costs.push_back(ByteReader(bytes).Get<Costed>());
    }
    result.derived = static_cast<int64_t>(derived.size());
    for (Candidate& partial : derived) {
      enumeration.legal.push_back(std::move(partial));
      const size_t index = enumeration.legal.size() - 1;
      screen(index, costs[key_index.at(KeyOf(enumeration.legal[index]))]);
    }
    probe_waiting();
  }
  std::stable_sort(fitting.begin(), fitting.end(),
                   [](const Screened& a, const Screened& b) { return a.step < b.step; });

  // The exact simulation of the best of the screen, through the run library. A layout comes in
  // variants the screen ranks apart but close: a transformer's stage splits (even, first/last,
  // torchtitan's weights, a layout string), a layer list's partition x state policy (which the
  // screen does not tell apart at all: it leaves out the shared state's transfers). Ranked as
  // they come, variants of a few layouts would fill the simulation. The first round takes the
  // best `simulate` layouts, each once (its best-screened variant), and a second round every
  // other variant of the `variant_layouts` fastest of them, so the variants are still ranked by
  // simulation.
  const size_t variant_layouts = static_cast<size_t>(std::max(0, spec.variant_layouts));
  const auto layout_of = [&](size_t position) {
    return enumeration.legal[fitting[position].index].LayoutKey();
  };
  const size_t wanted = static_cast<size_t>(std::max(1, spec.simulate));
  std::vector<size_t> first_round;                      // positions in `fitting`
  std::map<std::string, std::vector<size_t>> variants;  // layout -> its other positions
  // Each schedule's layouts in screen order (one family for a transformer); for a layer list the
  // schedules take turns, best first, so that a schedule the screen overrates (its closed form
  // leaves out the state transfers of deeper interleaving) cannot take every slot.
  std::vector<std::pair<std::string, std::vector<size_t>>> by_schedule;
  for (size_t position = 0; position < fitting.size(); ++position) {
    const std::string layout = layout_of(position);
    const auto found = variants.find(layout);
    if (found != variants.end()) {
      found->second.push_back(position);
      continue;
    }
    variants[layout];
    const std::string schedule =
        layer_list ? enumeration.legal[fitting[position].index].schedule : std::string();
    auto family = std::find_if(by_schedule.begin(), by_schedule.end(),
                               [&](const auto& one) { return one.first == schedule; });
    if (family == by_schedule.end()) {
      by_schedule.push_back({schedule, {}});
      family = by_schedule.end() - 1;
    }
    family->second.push_back(position);
  }
  for (size_t turn = 0; first_round.size() < wanted; ++turn) {
    bool taken = false;
    for (const auto& [schedule, positions] : by_schedule) {
      if (turn >= positions.size() || first_round.size() == wanted) continue;
      first_round.push_back(positions[turn]);
      taken = true;
    }
    if (!taken) break;
  }
  std::sort(first_round.begin(), first_round.end());
  std::vector<PlannedLayout> plans;
  size_t simulate = 0;  // candidates simulated, both rounds
  const auto simulate_round = [&](const std::vector<size_t>& positions) {
    const std::vector<std::string> simulated = split.Map(
        positions.size(),
        [&](size_t rank) {
          auto outcome =
              SimulateSpec(RunOf(spec, base, enumeration.legal[fitting[positions[rank]].index]));
          ByteWriter bytes;
          bytes.Put<uint8_t>(outcome.ok() ? 1 : 0);
          if (!outcome.ok()) return bytes.Take();
          const PlannedLayout p =
              PlannedOf(enumeration.legal[fitting[positions[rank]].index], outcome.value());
          bytes.Put(p.step).Put(p.tokens_per_s).Put(p.mfu).Put(p.tflops_per_gpu);
          bytes.Put(p.bubble_pipeline).Put(p.bubble_exposed).Put(p.recompute_share);
          bytes.Put(p.memory);
          return bytes.Take();
        },
        [&](size_t taken) {
          if (!spec.progress || taken == 0) return;
          spec.progress("[" + std::to_string(simulate + taken) + "/" +
                        std::to_string(simulate + positions.size()) + "] simulating " +
                        enumeration.legal[fitting[positions[taken - 1]].index].Describe());
        });
    for (size_t rank = 0; rank < positions.size(); ++rank) {
      ++result.simulated;
      ByteReader bytes(simulated[rank]);
      if (bytes.Get<uint8_t>() == 0) {
        ++result.rejected["failed in simulation"];
        continue;
      }
      PlannedLayout plan;
      plan.candidate = enumeration.legal[fitting[positions[rank]].index];
      plan.screen_step = fitting[positions[rank]].step;
      plan.step = bytes.Get<Time>();
      plan.tokens_per_s = bytes.Get<double>();
      plan.mfu = bytes.Get<double>();
      plan.tflops_per_gpu = bytes.Get<double>();
      plan.bubble_pipeline = bytes.Get<double>();
      plan.bubble_exposed = bytes.Get<double>();
      plan.recompute_share = bytes.Get<double>();
      plan.memory = bytes.Get<MemoryInfo>();
      if (plan.memory.capacity_known &&
          plan.memory.peak_bytes > Budget(spec, plan.memory.capacity_bytes)) {
        ++result.rejected["over memory (simulated)"];
        continue;
      }
      plans.push_back(plan);
    }
    simulate += positions.size();
  };
  simulate_round(first_round);
  // A layout the simulation finds over memory, or that fails, gives its slot to the next
  // screened layout without a fitting plan (the screen's activations are the schedule's
  // closed-form peak, which the simulated timeline can exceed; another split of the same layout
  // may fit), until `wanted` fit or kRefillFactor x `wanted` have been simulated: a plan is
  // never short of a fitting layout the screen ranked close behind.
  constexpr size_t kRefillFactor = 4;
  std::vector<bool> tried(fitting.size(), false);
  for (size_t position : first_round) tried[position] = true;
  for (size_t next = 0; plans.size() < wanted && simulate < kRefillFactor * wanted;) {
    std::set<std::string> planned;
    for (const PlannedLayout& plan : plans) planned.insert(plan.candidate.LayoutKey());
    std::vector<size_t> refill;
    const size_t room = std::min(wanted - plans.size(), kRefillFactor * wanted - simulate);
    for (; next < fitting.size() && refill.size() < room; ++next) {
      if (tried[next] || planned.count(layout_of(next)) > 0) continue;
      tried[next] = true;
      planned.insert(layout_of(next));
      refill.push_back(next);
    }
    if (refill.empty()) break;
    simulate_round(refill);
  }
  {
    std::vector<PlannedLayout> fastest = plans;
    std::stable_sort(
        fastest.begin(), fastest.end(),
        [](const PlannedLayout& a, const PlannedLayout& b) { return a.step < b.step; });
    std::vector<size_t> second_round;
    for (size_t rank = 0; rank < std::min(variant_layouts, fastest.size()); ++rank) {
      for (size_t position : variants[fastest[rank].candidate.LayoutKey()]) {
        if (!tried[position]) second_round.push_back(position);
      }
    }
    std::sort(second_round.begin(), second_round.end());
    simulate_round(second_round);
  }
  if (spec.progress) spec.progress("");
  std::stable_sort(plans.begin(), plans.end(),
                   [](const PlannedLayout& a, const PlannedLayout& b) { return a.step < b.step; });
  result.all_fitting = plans;
  if (!layer_list) {
    // A transformer's layout shows as its fastest split; a layer list's partition and state
    // policy are choices of their own and stay.
    std::set<std::string> shown;
    std::vector<PlannedLayout> distinct;
    for (PlannedLayout& plan : plans) {
      if (shown.insert(plan.candidate.LayoutKey()).second) distinct.push_back(std::move(plan));
    }
    plans = std::move(distinct);
  }
  if (plans.size() > static_cast<size_t>(std::max(1, spec.top))) {
    plans.resize(static_cast<size_t>(std::max(1, spec.top)));
  }
  result.plans = std::move(plans);
  result.assumptions = {
      layer_list ? "step times: the kernel model on the layer list's per-layer costs and the "
                   "parallel cost model (doc/fidelity.md), shared state moved by each "
                   "candidate's state policy (doc/csa2.md); a layer list obeys no engine's rules "
                   "(doc/plan.md)"
                 : "step times: the kernel model and the parallel cost model (doc/fidelity.md), "
                   "the engines' overlap options per engine (doc/plan.md)",
      std::string("screen: the schedule's closed form on the slowest chunk plus the exposed DP "
                  "tail") +
          (probed_any ? " (schedules without one: a compute-only run of the generated schedule)"
                      : "") +
          "; ranking: the exact simulation of the best " + std::to_string(first_round.size()) +
          " layouts of " + std::to_string(fitting.size()) + " candidates (" +
          (layer_list ? "one partition and state policy each" : "one stage split each") +
          "), then every variant of the " +
          std::to_string(std::min(variant_layouts, first_round.size())) +
          " fastest: " + std::to_string(simulate) + " simulated",
      "memory: model states + activations at the schedule's peak (with recomputation's "
      "working set) + the framework reserve, against the device" +
          (spec.headroom > 0
               ? " less " + std::to_string(static_cast<int>(std::lround(spec.headroom * 100))) +
                     "% headroom"
               : std::string(""))};
  if (!spec.layout.empty()) {
    RunSpec run = spec.run;
    run.loaded = base;
    auto ranking = RankLayout(spec, run, result);
    if (!ranking.ok()) return ranking.error();
    result.layout = std::move(ranking).value();
  }
  return result;
}

}  // namespace stagecraft
