// Schedule generators: one file each, all listed in one table (ScheduleGenerators()), which
// `stagecraft list schedules` prints and every name lookup uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/time.h"
#include "model/model_spec.h"
#include "schedule/schedule.h"

namespace stagecraft {

struct GeneratorParams {
  int32_t pp = 1;            // pipeline ranks
  int32_t vpp = 1;           // chunks (stages) per rank
  int32_t microbatches = 1;  // m
  int32_t group_size = 0;    // interleaved: microbatch group size; 0 = pp (Megatron's default)
};

using GenerateFn = Result<Schedule> (*)(const GeneratorParams&);

struct ScheduleGenerator {
  const char* name;
  const char* description;  // one line, for `stagecraft list schedules`
  GenerateFn generate;
};

// The registry: a constant table, in the order `list` prints it.
const std::vector<ScheduleGenerator>& ScheduleGenerators();
std::vector<std::string> ScheduleNames();
// Unknown names get "did you mean" and the list command.
Result<const ScheduleGenerator*> FindScheduleGenerator(std::string_view name);

// The chunks per rank a generator requires whatever the config says: 2 for the V-shape schedules
// (zb-v, v-half, v-min, dualpipev), 0 for those that take the configured vpp. The CLI implies it
// when vpp was not given (PrepareRun).
int32_t RequiredChunksPerRank(std::string_view name);

// Cost-aware generators: a second, equally constant table for generators that time the pipeline
// while they build it, so they also need the per-stage costs and the p2p cost. `list` prints
// them after the table above; the CLI looks here first (PrepareRun), and a config's
// schedule.name may name either table. A name in both tables (zb-v, v-half, v-min) has a plain
// generator for callers without costs and a cost-aware one that a run uses; `list` prints it
// once, from the table above.
// What a cost-aware generator times: per stage its compute costs, per cut s (between stages s
// and s + 1) how long an activation send and a gradient send take there (with a cluster, the
// link's latency and bandwidth; with CSA2 state, the payload riding the send).
struct PipelineCosts {
  std::vector<StageCost> stages;
  std::vector<Time> activation_p2p;  // [cut], num_stages − 1 entries (or more)
  std::vector<Time> gradient_p2p;    // [cut]
  // The run's p2p matches each send with a receive in issue order (rendezvous): only orders in
  // which every link carries its messages in the order the receiver takes them will run.
  bool links_in_receiver_order = false;
};
// Every cut costs `cost_p2p` both ways.
PipelineCosts UniformPipelineCosts(std::vector<StageCost> stages, Time cost_p2p);

using GenerateWithCostsFn = Result<Schedule> (*)(const GeneratorParams&,
                                                 const PipelineCosts& costs);

struct CostAwareScheduleGenerator {
  const char* name;
  const char* description;  // one line, for `stagecraft list schedules`
  GenerateWithCostsFn generate;
};

const std::vector<CostAwareScheduleGenerator>& CostAwareScheduleGenerators();
// nullptr when `name` is not in the cost-aware table.
const CostAwareScheduleGenerator* FindCostAwareScheduleGenerator(std::string_view name);
// Every schedule name: the generators', then the cost-aware ones' (zb-1p, zb-2p).
std::vector<std::string> AllScheduleNames();

// The generators (one file each).
Result<Schedule> GenerateGpipe(const GeneratorParams& params);
Result<Schedule> GenerateOneFOneB(const GeneratorParams& params);
Result<Schedule> GenerateInterleavedOneFOneB(const GeneratorParams& params);
Result<Schedule> GenerateLoopedBfs(const GeneratorParams& params);
Result<Schedule> GenerateZbH1(const GeneratorParams& params);
Result<Schedule> GenerateZbH2(const GeneratorParams& params);
Result<Schedule> GenerateZbV(const GeneratorParams& params);
Result<Schedule> GenerateVHalf(const GeneratorParams& params);
Result<Schedule> GenerateVMin(const GeneratorParams& params);
Result<Schedule> GenerateDualPipe(const GeneratorParams& params);
Result<Schedule> GenerateDualPipeV(const GeneratorParams& params);
// Automatic zero-bubble schedules (zb_auto.cc) under p or 2p in-flight activations.
// REQUIRES of the caller: costs.stages has one entry per stage (pp · vpp), the p2p vectors
// at least pp − 1.
Result<Schedule> GenerateZb1p(const GeneratorParams& params, const PipelineCosts& costs);
Result<Schedule> GenerateZb2p(const GeneratorParams& params, const PipelineCosts& costs);
// The argument checks of zb-1p / zb-2p (one chunk per rank), so a caller can fail early.
Status CheckZbAutoParams(const GeneratorParams& params, std::string_view name);
// ZB-V for the run's costs (zb_v_auto.cc): the handcrafted ZB-V above or the authors' greedy V
// order, whichever has the smaller largest span (the handcrafted one when
// costs.links_in_receiver_order); at most 2p chunk activations (M_B-weighted as zb-2p's) per
// rank. REQUIRES of the caller: costs.stages has 2p entries, the p2p vectors at
// least 2p − 1.
Result<Schedule> GenerateZbVAuto(const GeneratorParams& params, const PipelineCosts& costs);
// V-Half and V-Min for the run's costs (v_half.cc, v_min.cc): the plain order (its links in their
// receivers' order) or, unless costs.links_in_receiver_order, the authors' squeezed order as
// their generator lists it, whichever has the smaller largest span at no more activation memory.
// REQUIRES of the caller: as GenerateZbVAuto.
Result<Schedule> GenerateVHalfAuto(const GeneratorParams& params, const PipelineCosts& costs);
Result<Schedule> GenerateVMinAuto(const GeneratorParams& params, const PipelineCosts& costs);

// A fixed order timed as the cost-aware generators time their candidates: async p2p, each pass
// as soon as its input is there and its rank is free, a cut's transfer time added where its two
// stages sit on different ranks. Empty when the order is stuck (a pass waits for one that never
// runs before it on its rank).
struct TimedOrder {
  Schedule schedule;
  int64_t max_span_ns = 0;  // the largest (last end − first start) of a rank
  int64_t makespan_ns = 0;
};
std::optional<TimedOrder> TimeOrder(Schedule schedule, const PipelineCosts& costs);
// Keeps `candidate` in `best` when it has the smaller largest span, or the same and an earlier
// makespan (how the cost-aware generators choose among their orders).
void KeepFaster(std::optional<TimedOrder>& best, std::optional<TimedOrder> candidate);

// The Zero Bubble paper's weighted activation memory (App. G) of one stage: F adds M_B, I adds
// M_W − M_B, W frees M_W, with M_B and M_W the stage's activation_bytes and weight_grad_bytes;
// without M_B the unit is one activation held from F until its W (M_B = M_W = 1, the bound for
// any M_W <= M_B: the papers' limits then hold whatever the model); with M_B but no M_W (a layer
// list's derived activations), M_W = M_B, the same bound. `limit` is factor·p·M_B.
struct MemoryUnits {
  int64_t forward;      // +M_B
  int64_t input_grad;   // M_W − M_B
  int64_t weight_grad;  // −M_W
  int64_t limit;        // factor·p·M_B
};
MemoryUnits UnitsOf(const StageCost& cost, int32_t factor, int32_t pp);
// True when no rank's running total of its passes' units (each of its stage) goes above the
// limit of the rank's first stage (the loop's only stage, the V's down stage).
bool WithinActivationLimit(const Schedule& schedule, const std::vector<StageCost>& costs,
                           int32_t factor);

// One rank of a Zero-Bubble handcrafted schedule (ZB-H1, ZB-H2; defined in zb_h1.cc): `warmup`
// forwards, then (F, I) pairs, then the remaining I passes; the I of microbatch k is followed by
// the W of microbatch k − deferred_weight_grads when that is >= 0, and the last
// deferred_weight_grads W passes close the rank. Appends 3·microbatches actions.
// REQUIRES: 0 <= warmup <= microbatches, deferred_weight_grads >= 0.
void AppendSplitBackwardRank(StageId stage, int32_t microbatches, int32_t warmup,
                             int32_t deferred_weight_grads, std::vector<Action>& actions);

// Shared argument checks: pp, vpp, microbatches >= 1. `name` prefixes the message.
Status CheckBasicParams(const GeneratorParams& params, std::string_view name);
// CheckBasicParams, and vpp must be 1; `hint` (in parentheses) says what to use instead.
Status CheckOneChunkParams(const GeneratorParams& params, std::string_view name,
                           std::string_view hint);
// An empty schedule of the right shape with loop placement.
Schedule EmptyLoopSchedule(const GeneratorParams& params, std::string_view name);

// V-shape schedules (zb-v, v-half, v-min; shared pieces in v_shape.cc). Rank r holds two chunks:
// the "down" stage r and the "up" stage 2p − 1 − r, so a microbatch's forward runs down the ranks
// and back up, and its backward the other way. They split the backward (F, I, W).
struct VStages {
  StageId down;  // r: forward from rank r − 1, before the turn
  StageId up;    // 2p − 1 − r: forward from rank r + 1, after the turn
};
VStages VStagesOfRank(int32_t rank, int32_t pp);
// CheckBasicParams, and vpp must be 2: the V places exactly two chunks per rank.
Status CheckVShapeParams(const GeneratorParams& params, std::string_view name);
// An empty schedule of 2p stages with V placement (loop when p = 1: the same map, and what the
// CSV reader calls it). REQUIRES: CheckVShapeParams passed.
Schedule EmptyVSchedule(const GeneratorParams& params, std::string_view name);

// The authors' V building blocks (Pipeline Parallelism with Controllable Memory; zbv_greedy.py's
// stable patterns): V-Half's and V-Min's. SqueezedVBlock repeats one every 6 unit slots, squeezes
// its warm-up and cool-down, places the W passes and, with `align_links`, lists the links in
// their receivers' order (v_half.cc; without, the authors' order, which deadlocks under
// rendezvous p2p for most m > 2). REQUIRES: CheckVShapeParams passed.
enum class VPattern { kHalf, kMin };
Schedule SqueezedVBlock(const GeneratorParams& params, std::string_view name, VPattern pattern,
                        bool align_links = true);
// `schedule` (a V order, e.g. SqueezedVBlock's unaligned) with its links listed in their
// receivers' order as SqueezedVBlock aligns them; unchanged for p < 2.
Schedule AlignVSchedule(const Schedule& schedule);
// The most chunk activations a rank of `schedule` holds, from F until `release` (W: the paper's
// accounting; I: the full activations, which the simulator holds until the I).
int32_t PeakChunkActivations(const Schedule& schedule, ActionKind release);
// True when `candidate` holds no more chunk activations than `reference` on any rank's peak, from
// F until W and from F until I.
bool HoldsNoMoreActivations(const Schedule& candidate, const Schedule& reference);
// The faster of two orders of one V shape for the run's costs (TimeOrder: the smaller largest
// span, then the earlier makespan): `plain` always, `unaligned` only when the run does not need
// links in their receivers' order and it holds no more chunk activations (F until W and I).
Result<Schedule> FasterVOrder(Schedule plain, Schedule unaligned, const PipelineCosts& costs);
// The longest span (last end − first start) of a rank in a unit-cost run; INT64_MAX on deadlock.
int64_t UnitCostMaxSpan(const Schedule& schedule);

// Each action's start in a unit-cost run of `schedule` (every F, I, W takes 1 and nothing else
// costs time; each rank runs its program in order, an action once its inputs are done), indexed
// by ActionSlot (INT64_MAX for an action the schedule lacks); empty when the programs deadlock.
// REQUIRES: F, I, W passes only (v_link_order.cc).
std::vector<int64_t> UnitCostStarts(const Schedule& schedule);
// A V schedule listed again so that every link carries its messages in the order the receiver
// takes them (it then runs under rendezvous point-to-point): every rank interleaves its down F
// and up I as `down_class_rank` does, and its up F and down I as `up_class_rank` does; in unit
// time, no pass earlier and no rank holding more chunk activations (F until W) than in
// `schedule`, W passes in the free slots (v_link_order.cc). nullopt when `schedule` deadlocks or
// the two orders and the activation caps block each other.
// REQUIRES: a V schedule of F, I, W passes, p >= 2, both ranks < p.
std::optional<Schedule> AlignVLinkOrders(const Schedule& schedule, int32_t down_class_rank,
                                         int32_t up_class_rank);

}  // namespace stagecraft
