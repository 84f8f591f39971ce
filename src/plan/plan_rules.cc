// The engines' rules for a layout, ported from their argument checks. Sources (read at the
// versions named; the checks moved between files over the releases):
//   Megatron-LM   megatron/training/arguments.py, validate_args (core_r0.9-r0.12): world size
//                 divisible by tp x pp x cp; num_attention_heads and num_query_groups divisible
//                 by tp; num_layers divisible by pp (without an uneven layout); with a virtual
//                 pipeline, layers per stage divisible by vpp; the interleaved schedule needs the
//                 microbatches divisible by pp (megatron/core/pipeline_parallel/schedules.py,
//                 forward_backward_pipelining_with_interleaving); context parallelism with load
//                 balancing splits the sequence into 2 x cp chunks. Recompute: none, selective,
//                 full. The distributed optimizer is ZeRO-1 over dp x cp.
//   torchtitan    torchtitan/distributed/parallel_dims.py (dp_replicate x dp_shard x cp x tp x pp
//                 = world; FSDP over dp_shard x cp), torchtitan/distributed/pipeline.py (the
//                 layers split over the stages, unevenly when pp x vpp does not divide them), torch/distributed/pipelining/schedules.py
//                 (GPipe, 1F1B, Interleaved1F1B and LoopedBFS with n_microbatches a multiple of
//                 the pipeline ranks, DualPipeV with at least 2 x pp microbatches);
//                 activation checkpointing none, selective per op, full.
//   DeepSpeed     deepspeed/runtime/pipe/engine.py and schedule.py: the pipeline engine runs
//                 one schedule (TrainSchedule, 1F1B), no interleaving, and asserts ZeRO stage < 2
//                 with pipeline parallelism; ZeRO 0-3 without it; activation checkpointing full
//                 or none; tensor parallelism through Megatron-DeepSpeed; no context parallelism.
// Shared: tensor parallelism within a node (its all-reduces per layer need NVLink), expert
// parallelism dividing the routed experts and the data-parallel ranks (as stagecraft models it).
#include "plan/plan_rules.h"

#include <algorithm>
#include <utility>

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
      return {{{"gpipe", {1}},
               {"1f1b", {1}},
               {"interleaved-1f1b", InterleavedVpps()},
               {"looped-bfs", InterleavedVpps()},
               {"dualpipev", {2}}},
              {Recompute::kNone, Recompute::kSelectiveOp, Recompute::kFull},
              {0, 3}};
    case Engine::kDeepSpeed:
    case Engine::kAny:
      break;
  }
  return {{{"1f1b", {1}}}, {Recompute::kNone, Recompute::kFull}, {0, 1, 2, 3}};
}

// The first rule `c` breaks, or "" when it is legal.
std::string Broken(const Candidate& c, const PlanSpec& spec, const PlanShape& shape) {
  const bool deepspeed = c.engine == Engine::kDeepSpeed;
  const bool torchtitan = c.engine == Engine::kTorchtitan;
  if (spec.fixed_tp && c.tp != *spec.fixed_tp) return "tp other than --tp";
  if (spec.max_pp && c.pp > *spec.max_pp) return "pp above --max-pp";
  if (c.tp > shape.gpus_per_node) return "tp crosses a node";
  if (shape.heads % c.tp != 0) return "tp does not divide the attention heads";
  if (shape.kv_heads % c.tp != 0) return "tp does not divide the KV heads";
  if (shape.ffn % c.tp != 0) return "tp does not divide the MLP width";
  if (torchtitan) {
    // torchtitan splits the model's modules over the stages itself, unevenly when it must
    // (torchtitan/distributed/pipeline.py, generate_llm_fqn_per_model_part); every stage needs a
    // layer.
    if (shape.layers < c.pp * c.vpp) return "fewer layers than pipeline stages";
  } else {
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
  if (c.zero_stage > 0 && c.dp * c.cp == 1) return "sharding over one data-parallel rank";
  if (deepspeed && c.pp > 1 && c.zero_stage >= 2) {
    return "deepspeed: ZeRO-2/3 with pipeline parallelism";
  }
  if (torchtitan && c.zero_stage == 0 && c.dp * c.cp > 1) return "torchtitan: FSDP over dp";
  return "";
}

void EnumerateEngine(Engine engine, const PlanSpec& spec, const PlanShape& shape,
                     Enumeration& out) {
  const EngineSpace space = SpaceOf(engine);
  const int32_t n = spec.gpus;
  for (int32_t tp : Divisors(n)) {
    for (int32_t pp : Divisors(n / tp)) {
      for (int32_t cp : Divisors(n / (tp * pp))) {
        const int32_t dp = n / (tp * pp * cp);
        const std::vector<int32_t> eps = shape.experts > 0 ? Divisors(dp) : std::vector<int32_t>{1};
        for (int32_t ep : eps) {
          for (int32_t mbs : {1, 2, 4, 8, 16}) {
            std::vector<std::pair<std::string, std::vector<int32_t>>> schedules = space.schedules;
            if (pp == 1) schedules = {{"1f1b", {1}}};
            for (const auto& [schedule, vpps] : schedules) {
              for (int32_t vpp : vpps) {
                for (Recompute recompute : space.recompute) {
                  for (int32_t zero : space.zero) {
                    Candidate c;
                    c.engine = engine;
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

}  // namespace

Enumeration EnumerateCandidates(const PlanSpec& spec, const PlanShape& shape) {
  Enumeration out;
  if (spec.engine == Engine::kAny) {
    for (Engine engine : {Engine::kMegatron, Engine::kTorchtitan, Engine::kDeepSpeed}) {
      EnumerateEngine(engine, spec, shape, out);
    }
  } else {
    EnumerateEngine(spec.engine, spec, shape, out);
  }
  return out;
}

}  // namespace stagecraft
