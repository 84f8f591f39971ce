// The engines' rules for a layout, ported from their argument checks. Sources (read at the
// versions named; the checks moved between files over the releases):
//   Megatron-LM   megatron/training/arguments.py, validate_args (core_r0.9-r0.12): world size
//                 divisible by tp x pp x cp; num_attention_heads and num_query_groups divisible
//                 by tp; num_layers divisible by pp and, with a virtual pipeline, layers per
//                 stage divisible by vpp, unless --pipeline-model-parallel-layout gives the
//                 split (then any pp x vpp up to the layers); the interleaved schedule needs the
//                 microbatches divisible by pp (megatron/core/pipeline_parallel/schedules.py,
//                 forward_backward_pipelining_with_interleaving); context parallelism with load
//                 balancing splits the sequence into 2 x cp chunks. Recompute: none, selective,
//                 full. The distributed optimizer is ZeRO-1 over dp x cp.
//   torchtitan    torchtitan/distributed/parallel_dims.py (dp_replicate x dp_shard x cp x tp x pp
//                 = world; FSDP over dp_shard x cp), torchtitan/distributed/pipeline.py (the
//                 layers split over the stages, unevenly when pp x vpp does not divide them),
//                 torch/distributed/pipelining/schedules.py (GPipe, 1F1B, Interleaved1F1B and
//                 LoopedBFS with n_microbatches a multiple of the pipeline ranks, DualPipeV with at
//                 least 2 x pp microbatches; any other schedule's actions from a CSV through
//                 _PipelineScheduleRuntime, pipeline_parallel_schedule_csv: ZB-H1, ZB-H2,
//                 ZB-1P, ZB-2P, ZB-V, V-Half, V-Min);
//                 activation checkpointing none, selective per op, full.
//   DeepSpeed     deepspeed/runtime/pipe/engine.py and schedule.py: the pipeline engine runs
//                 one schedule (TrainSchedule, 1F1B), no interleaving, and asserts ZeRO stage < 2
//                 with pipeline parallelism; ZeRO 0-3 without it; activation checkpointing full
//                 or none; tensor parallelism through Megatron-DeepSpeed; no context parallelism.
// Shared: tensor parallelism within a node (its all-reduces per layer need NVLink), expert
// parallelism dividing the routed experts and the data-parallel ranks (as stagecraft models it).
#include "plan/plan_rules.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <utility>

#include "run/run_size.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

std::vector<int32_t> Divisors(int32_t n) {
  std::vector<int32_t> divisors;
  for (int32_t d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return divisors;
}

struct EngineSpace {
  // Schedules with the vpp values each is asked at (pp > 1).
  std::vector<std::pair<std::string, std::vector<int32_t>>> schedules;
  std::vector<Recompute> recompute;
  std::vector<int32_t> zero;
};

constexpr int32_t kMaxVpp = 8;

std::vector<int32_t> InterleavedVpps() {
  std::vector<int32_t> vpps;
  for (int32_t v = 2; v <= kMaxVpp; ++v) vpps.push_back(v);
  return vpps;
}

EngineSpace SpaceOf(Engine engine) {
  switch (engine) {
    case Engine::kMegatron:
      return {{{"1f1b", {1}}, {"interleaved-1f1b", InterleavedVpps()}},
              {Recompute::kNone, Recompute::kSelective, Recompute::kFull},
              {0, 1}};
    case Engine::kTorchtitan:
      // The zero-bubble and V-shape schedules are not torch classes (or not ours: torch's
      // ZBVZeroBubble orders its own actions): torchtitan runs them as their actions from
      // pipeline_parallel_schedule_csv (torch's _PipelineScheduleRuntime; the export writes the
      // CSV). Those with no closed form are screened by a compute-only run (ScheduleProbe).
      return {{{"gpipe", {1}},
               {"1f1b", {1}},
               {"zb-h1", {1}},
               {"zb-h2", {1}},
               {"zb-1p", {1}},
               {"zb-2p", {1}},
               {"interleaved-1f1b", InterleavedVpps()},
               {"looped-bfs", InterleavedVpps()},
               {"dualpipev", {2}},
               {"zb-v", {2}},
               {"v-half", {2}},
               {"v-min", {2}}},
              {Recompute::kNone, Recompute::kSelectiveOp, Recompute::kFull},
              {0, 3}};
    case Engine::kDeepSpeed:
    case Engine::kAny:
      break;
  }
  return {{{"1f1b", {1}}}, {Recompute::kNone, Recompute::kFull}, {0, 1, 2, 3}};
}

// A layer list's space (no engine's rules: the layouts the run library simulates): the
// generators it runs on layer lists, each partition that balances the stages by itself and each
// state policy that moves shared state by one rule (auto, which picks per flow, is left to
// `simulate --state-policy auto`).
EngineSpace LayerListSpace() {
  return {
      {{"1f1b", {1}}, {"interleaved-1f1b", InterleavedVpps()}, {"zb-h1", {1}}, {"dualpipev", {2}}},
      {Recompute::kNone, Recompute::kSelective, Recompute::kFull},
      {0, 1, 2}};
}
constexpr PartitionMethod kLayerListPartitions[] = {PartitionMethod::kStateAware,
                                                    PartitionMethod::kCost};
constexpr StatePolicy kLayerListPolicies[] = {StatePolicy::kPayload, StatePolicy::kDirect,
                                              StatePolicy::kShadow, StatePolicy::kAuto};

// The first of the user's constraints `c` is outside, or "".
std::string OutsideConstraints(const Candidate& c, const PlanConstraints& constraints) {
  if (!constraints.tp.Admits(c.tp)) return "tp other than --tp";
  if (!constraints.pp.Admits(c.pp)) return "pp other than --pp";
  if (!constraints.vpp.Admits(c.vpp)) return "vpp other than --vpp";
  if (!constraints.cp.Admits(c.cp)) return "cp other than --cp";
  if (!constraints.ep.Admits(c.ep)) return "ep other than --ep";
  if (!constraints.dp.Admits(c.dp)) return "dp other than --dp";
  if (!constraints.micro_batch_size.Admits(c.micro_batch_size)) {
    return "micro-batch size other than --micro-batch-size";
  }
  if (!constraints.zero.Admits(c.zero_stage)) return "ZeRO stage other than --zero";
  const auto& schedules = constraints.schedules;
  if (!schedules.empty() &&
      std::find(schedules.begin(), schedules.end(), c.schedule) == schedules.end()) {
    return "schedule other than --schedule";
  }
  const auto& recompute = constraints.recompute;
  if (!recompute.empty() &&
      std::find(recompute.begin(), recompute.end(), c.recompute) == recompute.end()) {
    return "recompute other than --recompute";
  }
  return "";
}

// The first rule `c` breaks, or "" when it is legal.
std::string Broken(const Candidate& c, const PlanSpec& spec, const PlanShape& shape) {
  const bool deepspeed = c.engine == Engine::kDeepSpeed;
  const bool torchtitan = c.engine == Engine::kTorchtitan;
  const std::string outside = OutsideConstraints(c, spec.constraints);
  if (!outside.empty()) return outside;
  if (spec.max_pp && c.pp > *spec.max_pp) return "pp above --max-pp";
  if (c.tp > shape.gpus_per_node) return "tp crosses a node";
  if (shape.heads % c.tp != 0) return "tp does not divide the attention heads";
  if (shape.kv_heads % c.tp != 0) return "tp does not divide the KV heads";
  if (shape.ffn % c.tp != 0) return "tp does not divide the MLP width";
  if (shape.output_groups > 0 && shape.output_groups % c.tp != 0) {
    return "tp does not divide the output groups";
  }
  if (torchtitan || deepspeed || shape.layer_list || !c.layout_counts.empty()) {
    // torchtitan splits the model's modules over the stages itself, unevenly when it must
    // (torchtitan/distributed/pipeline.py, generate_llm_fqn_per_model_part); so does DeepSpeed's
    // pipeline model (deepspeed/runtime/pipe/module.py, partition_method 'type:transformer':
    // DeepSpeedTransformerCounts); Megatron takes any split as --pipeline-model-parallel-layout
    // (pipeline_parallel_layer_layout.py; arguments.py drops the divisibility checks with it).
    // Every stage needs a layer.
    if (shape.layers < c.pp * c.vpp) return "fewer layers than pipeline stages";
  } else {
    if (shape.layers < c.pp * c.vpp) return "fewer layers than pipeline stages";
    if (shape.layers % c.pp != 0) return "pp does not divide the layers";
    if (c.vpp > 1 && (shape.layers / c.pp) % c.vpp != 0) {
      return "vpp does not divide the layers of a stage";
    }
  }
  if (deepspeed && c.cp > 1) return "deepspeed: no context parallelism";
  if (c.cp > 1 && shape.seq_len % (2 * c.cp) != 0) {
    return "cp does not split the sequence into 2 x cp chunks";
  }
  if (c.ep > 1 && shape.experts % c.ep != 0) return "ep does not divide the experts";
  if (spec.global_batch % (int64_t{c.dp} * c.micro_batch_size) != 0) {
    return "global batch not divisible by dp x micro-batch size";
  }
  if (c.pp > 1 && (c.schedule == "interleaved-1f1b" || c.schedule == "looped-bfs") &&
      c.microbatches % c.pp != 0) {
    return "interleaved schedules need microbatches divisible by pp";
  }
  if (c.schedule == "dualpipev" && c.microbatches < 2 * c.pp) {
    return "dualpipev needs at least 2 x pp microbatches";
  }
  if (c.pp > 1 && c.microbatches < c.pp) return "fewer microbatches than pipeline stages";
  if (EstimateRunBytes(RunSize{c.pp, int64_t{c.pp} * c.vpp, c.microbatches, false}) >
      static_cast<long double>(kMaxRunBytes)) {
    // What simulate would refuse (CheckRunSize); the probe and the ranking would allocate it.
    return "too large to simulate (over the run-size limit: a smaller --global-batch-size)";
  }
  if (c.zero_stage > 0 && c.dp * c.cp == 1) return "sharding over one data-parallel rank";
  if (deepspeed && c.pp > 1 && c.zero_stage >= 2) {
    return "deepspeed: ZeRO-2/3 with pipeline parallelism";
  }
  if (torchtitan && c.zero_stage == 0 && c.dp * c.cp > 1) {
    // torchtitan's data parallelism over dp_shard x cp is FSDP2; its DDP
    // (data_parallel_replicate_degree alone) is read (--from-torchtitan) but not searched.
    return "torchtitan: data parallelism searched as FSDP2 only (zero 3; its DDP is not searched)";
  }
  if (c.recompute == Recompute::kFull && c.recompute_num_layers > 1 && c.recompute_uniform &&
      torchtitan) {
    // torchtitan's full activation checkpointing wraps each TransformerBlock
    // (torchtitan/distributed/activation_checkpoint.py).
    return "torchtitan: full recomputation checkpoints each block, not groups of layers";
  }
  if (deepspeed && c.pp > 1 && c.recompute == Recompute::kFull && c.recompute_num_layers > 0 &&
      !c.recompute_uniform) {
    // Megatron-DeepSpeed's pipeline model takes only the uniform method's interval (gpt_model.py).
    return "deepspeed: block recomputation with its pipeline model";
  }
  return "";
}

}  // namespace

Status CheckGlobalBatchSimulable(const PlanSpec& spec) {
  const int32_t largest_mbs = std::end(kPlanMicroBatchSizes)[-1];
  const int64_t largest_step = int64_t{spec.gpus} * largest_mbs;
  const int64_t microbatches =
      spec.global_batch / largest_step + (spec.global_batch % largest_step != 0 ? 1 : 0);
  const RunSize smallest{1, 1, microbatches, false};
  const long double bytes = EstimateRunBytes(smallest);
  if (bytes <= static_cast<long double>(kMaxRunBytes)) return Status::Ok();
  return Error{"plan: --global-batch-size " + std::to_string(spec.global_batch) +
               " cannot be simulated on " + std::to_string(spec.gpus) +
               " GPUs: even the smallest layout (pp 1, dp " + std::to_string(spec.gpus) +
               " x micro-batch size " + std::to_string(largest_mbs) + ") runs " +
               std::to_string(microbatches) + " microbatches, about " + RunGibText(bytes) +
               " to simulate, more than a run's limit of " + RunGibText(kMaxRunBytes) +
               " (doc/config.md); expected at most " +
               std::to_string(MaxMicrobatches(smallest) * largest_step) +
               " sequences per iteration (a smaller --global-batch-size, or more --gpus)"};
}

PlanShape PlanShapeOf(const Config& config) {
  const TransformerSpec& t = config.model.transformer;
  PlanShape shape;
  if (!config.model.is_transformer()) {
    shape = LayerListShape(config.model);
  } else {
    shape.layers = t.layers;
    shape.heads = t.heads;
    shape.kv_heads = t.kv_heads_or_heads();
    shape.ffn = t.moe() ? std::max<int64_t>(t.ffn_or_default(), 1) : t.ffn_or_default();
    shape.experts = t.experts;
  }
  shape.seq_len = config.model.seq_len;
  shape.gpus_per_node = config.cluster.devices_per_node;
  return shape;
}

std::string BrokenRule(const Candidate& c, const PlanSpec& spec, const PlanShape& shape,
                       bool schedule_csv) {
  if (c.engine == Engine::kAny) return "no engine named";
  const EngineSpace space = SpaceOf(c.engine);
  const std::string engine = EngineName(c.engine);
  if (c.pp > 1 && !schedule_csv) {
    const auto schedule =
        std::find_if(space.schedules.begin(), space.schedules.end(),
                     [&](const auto& entry) { return entry.first == c.schedule; });
    if (schedule == space.schedules.end()) {
      std::string names;
      for (const auto& entry : space.schedules) {
        names += (names.empty() ? "" : ", ") + entry.first;
      }
      return engine + ": no schedule '" + c.schedule + "' (it runs " + names + ")";
    }
    const std::vector<int32_t>& vpps = schedule->second;
    if (std::find(vpps.begin(), vpps.end(), c.vpp) == vpps.end() &&
        !(c.schedule != "dualpipev" && c.vpp > kMaxVpp && vpps.size() > 1)) {
      return engine + ": " + c.schedule + " with vpp " + std::to_string(c.vpp) + " (it runs vpp " +
             (vpps.size() == 1 ? std::to_string(vpps.front())
                               : std::to_string(vpps.front()) + " and more") +
             ")";
    }
  }
  if (std::find(space.recompute.begin(), space.recompute.end(), c.recompute) ==
      space.recompute.end()) {
    return engine + ": no recompute '" + std::string(RecomputeName(c.recompute)) + "'";
  }
  if (std::find(space.zero.begin(), space.zero.end(), c.zero_stage) == space.zero.end()) {
    return engine + ": no ZeRO stage " + std::to_string(c.zero_stage);
  }
  return Broken(c, spec, shape);
}

namespace {

void EnumerateEngine(Engine engine, const PlanSpec& spec, const PlanShape& shape,
                     Enumeration& out) {
  const EngineSpace space = shape.layer_list ? LayerListSpace() : SpaceOf(engine);
  // Transformers: the engines' own split, no shared state (one pass of the last two loops).
  const std::vector<PartitionMethod> partitions =
      shape.layer_list ? std::vector<PartitionMethod>(std::begin(kLayerListPartitions),
                                                      std::end(kLayerListPartitions))
                       : std::vector<PartitionMethod>{PartitionMethod::kStateAware};
  const std::vector<StatePolicy> policies =
      shape.layer_list
          ? std::vector<StatePolicy>(std::begin(kLayerListPolicies), std::end(kLayerListPolicies))
          : std::vector<StatePolicy>{StatePolicy::kPayload};
  const int32_t n = spec.gpus;
  for (int32_t tp : Divisors(n)) {
    for (int32_t pp : Divisors(n / tp)) {
      for (int32_t cp : Divisors(n / (tp * pp))) {
        const int32_t dp = n / (tp * pp * cp);
        const std::vector<int32_t> eps = shape.experts > 0 ? Divisors(dp) : std::vector<int32_t>{1};
        for (int32_t ep : eps) {
          for (int32_t mbs : kPlanMicroBatchSizes) {
            std::vector<std::pair<std::string, std::vector<int32_t>>> schedules = space.schedules;
            if (pp == 1) schedules = {{"1f1b", {1}}};
            for (const auto& [schedule, vpps] : schedules) {
              for (int32_t vpp : vpps) {
                for (Recompute recompute : space.recompute) {
                  for (int32_t zero : space.zero) {
                    for (PartitionMethod partition : partitions) {
                      for (StatePolicy policy : policies) {
                        // One stage: nothing to partition and no state between stages.
                        if (pp == 1 &&
                            (partition != partitions.front() || policy != policies.front())) {
                          continue;
                        }
                        Candidate c;
                        c.engine = engine;
                        c.layer_list = shape.layer_list;
                        c.partition = partition;
                        c.state_policy = policy;
                        c.tp = tp;
                        c.pp = pp;
                        c.dp = dp;
                        c.cp = cp;
                        c.ep = ep;
                        c.vpp = vpp;
                        c.micro_batch_size = mbs;
                        const int64_t per_step = int64_t{dp} * mbs;
                        c.microbatches = static_cast<int32_t>(
                            std::min<int64_t>(spec.global_batch / per_step, int64_t{1} << 30));
                        c.schedule = schedule;
                        c.recompute = recompute;
                        c.zero_stage = zero;
                        if (engine == Engine::kMegatron && !shape.layer_list && pp > 1 &&
                            shape.layers % (pp * vpp) != 0 && shape.layers >= pp * vpp) {
                          // pp x vpp does not divide the layers: Megatron runs it only as a
                          // layout string, here the even split's (the screen may balance it).
                          c.layout_counts = EvenTransformerCounts(shape.layers, pp * vpp);
                        }
                        ++out.asked;
                        const std::string reason = Broken(c, spec, shape);
                        if (reason.empty()) {
                          out.legal.push_back(std::move(c));
                        } else {
                          ++out.rejected[reason];
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

PlanShape LayerListShape(const ModelSpec& model) {
  const Csa2Dims& dims = model.dims;
  PlanShape shape;
  shape.layer_list = true;
  shape.layers = static_cast<int32_t>(model.layers.size());
  shape.heads = dims.heads;
  shape.kv_heads = dims.heads;  // one shared K = V head, replicated on every TP rank
  shape.output_groups = dims.output_groups;
  const int64_t dense = dims.dense_width > 0 ? dims.dense_width : 4 * int64_t{dims.hidden};
  for (const LayerSpec& layer : model.layers) {
    if (layer.kind != LayerKind::kDecoder) continue;
    const int64_t width = layer.mlp == MlpKind::kMoe ? dims.expert_width : dense;
    shape.ffn = std::gcd(shape.ffn, width);
    if (layer.mlp == MlpKind::kMoe) shape.experts = dims.routed_experts;
  }
  if (shape.ffn == 0) shape.ffn = 1;  // no decoder: nothing for tp to split
  return shape;
}

Enumeration EnumerateCandidates(const PlanSpec& spec, const PlanShape& shape) {
  Enumeration out;
  if (shape.layer_list) {
    EnumerateEngine(Engine::kAny, spec, shape, out);
  } else if (spec.engine == Engine::kAny) {
    for (Engine engine : {Engine::kMegatron, Engine::kTorchtitan, Engine::kDeepSpeed}) {
      EnumerateEngine(engine, spec, shape, out);
    }
  } else {
    EnumerateEngine(spec.engine, spec, shape, out);
  }
  return out;
}

}  // namespace stagecraft
