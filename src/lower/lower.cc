#include "lower/lower.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "lower/torch_comms.h"

namespace stagecraft {
namespace {

constexpr uint32_t kNoTask = 0xffffffffu;

std::string RankOf(size_t rank) { return "rank " + std::to_string(rank); }

class Lowering {
 public:
  Lowering(const Schedule& schedule, const std::vector<StageCost>& costs,
           const LowerOptions& options)
      : schedule_(schedule), costs_(costs), options_(options) {}

  Result<TaskGraph> Run() {
    graph_.mode = options_.mode;
    graph_.num_ranks = schedule_.num_ranks;
    graph_.states = options_.states;
    graph_.cluster = options_.cluster;
    graph_.cost_p2p = options_.cost_p2p;
    graph_.stage_ranks = StageRanks(schedule_);
    STAGECRAFT_RETURN_IF_ERROR(PlanStates());
    STAGECRAFT_RETURN_IF_ERROR(AddComputeTasks());
    const size_t num_compute = graph_.tasks.size();
    // Room for the common case without regrowing: an action's inputs take one edge on its rank
    // or two through a transfer, and a B takes two inputs (1F1B: 2.5 edges an action).
    edges_.reserve(3 * num_compute);
    ready_task_.resize(num_compute);
    for (uint32_t task = 0; task < num_compute; ++task) ready_task_[task] = task;
    AddCollectives();
    for (uint32_t task = 0; task < num_compute; ++task) {
      STAGECRAFT_RETURN_IF_ERROR(AddInputs(task));
    }
    STAGECRAFT_RETURN_IF_ERROR(fused_self_dependency_);
    STAGECRAFT_RETURN_IF_ERROR(AddDirectStateTransfers());
    AddShadowTransfers();
    AddReductions();
    if (options_.mode == P2pMode::kRendezvous) AddRendezvousEdges();
    BuildAdjacency(graph_, edges_);
    std::sort(graph_.links.begin(), graph_.links.end(), [](const Link& a, const Link& b) {
      return std::pair(a.from, a.to) < std::pair(b.from, b.to);
    });
    RenumberLinks();
    if (options_.mode == P2pMode::kTorchPipelining) {
      auto torch_edges = TorchPipeliningEdges(graph_, schedule_);
      if (!torch_edges.ok()) return torch_edges.error();
      edges_.insert(edges_.end(), torch_edges.value().begin(), torch_edges.value().end());
      BuildAdjacency(graph_, edges_);
    }
    STAGECRAFT_RETURN_IF_ERROR(CheckTotalDuration());
    return std::move(graph_);
  }

 private:
  size_t Slot(const Action& action) const { return ActionSlot(schedule_, action); }
  uint32_t Find(int32_t stage, ActionKind kind, MicrobatchId microbatch) const {
    return index_[Slot(Action{StageId(stage), kind, microbatch})];
  }

  Status AddComputeTask(size_t rank, const Action& action) {
    if (action.stage.value() >= schedule_.num_stages ||
        action.microbatch.value() >= schedule_.num_microbatches) {
      return Error{RankOf(rank) + ": action " + FormatAction(action) + " is out of range"};
    }
    uint32_t& slot = index_[Slot(action)];
    if (slot != kNoTask) {
      return Error{RankOf(rank) + ": action " + FormatAction(action) + " appears twice"};
    }
    slot = static_cast<uint32_t>(graph_.tasks.size());
    op_head_.push_back(slot);
    Task task;
    task.kind = TaskKind::kCompute;
    task.rank = static_cast<int32_t>(rank);
    task.action = action;
    task.position = static_cast<int32_t>(graph_.programs[rank].size());
    const int32_t stage = action.stage.value();
    const StageCost& cost = costs_[stage];
    switch (action.kind) {
      case ActionKind::kForward:
        task.duration = cost.forward + extra_forward_[stage];
        break;
      case ActionKind::kBackward:
        task.duration = cost.backward() + extra_backward_[stage];
        break;
      case ActionKind::kInputGrad:
        task.duration = cost.input_grad + extra_backward_[stage];
        break;
      case ActionKind::kWeightGrad:
        task.duration = cost.weight_grad;
        break;
    }
    if (action.overlapped) STAGECRAFT_RETURN_IF_ERROR(FuseWithPrevious(rank, task, slot));
    graph_.programs[rank].push_back(slot);
    graph_.tasks.push_back(task);
    return Status::Ok();
  }

  // An overlapped F&B op: the previous action of the rank (the head) becomes the fused op and
  // takes the pair's cost, F + B less the forward stage's overlap saving; `task` (the tail)
  // takes no time and ends with it. Every input of the tail is an input of the head.
  Status FuseWithPrevious(size_t rank, Task& task, uint32_t slot) {
    const std::string where = RankOf(rank) + ": overlapped action " + FormatAction(task.action);
    if (graph_.programs[rank].empty()) {
      return Error{where + " is the rank's first action; an F&B pair needs an action before it"};
    }
    const uint32_t head = graph_.programs[rank].back();
    Task& first = graph_.tasks[head];
    if (first.action.overlapped) {
      return Error{where + " follows another overlapped action; an F&B op fuses exactly two"};
    }
    const bool first_forward = first.action.kind == ActionKind::kForward;
    const bool second_forward = task.action.kind == ActionKind::kForward;
    const auto is_backward = [](ActionKind kind) { return ReleasesActivation(kind); };
    if (!((first_forward && is_backward(task.action.kind)) ||
          (second_forward && is_backward(first.action.kind)))) {
      return Error{where + " pairs " + FormatAction(first.action) + " with " +
                   FormatAction(task.action) +
                   "; an F&B op overlaps one forward (F) with one backward (B or I)"};
    }
    const int32_t forward_stage = (first_forward ? first.action : task.action).stage.value();
    const Time saving = costs_[forward_stage].overlap_saving;
    Time fused = first.duration + task.duration - saving;
    if (fused < Time()) fused = Time();
    first.duration = fused;
    task.duration = Time();
    op_head_[slot] = head;
    return Status::Ok();
  }

  Status AddComputeTasks() {
    index_.assign(ActionSlotCount(schedule_), kNoTask);
    graph_.tasks.reserve(schedule_.num_actions() * 2);
    graph_.programs.resize(schedule_.rank_actions.size());
    // Tasks are numbered position by position across ranks (all first actions, then all second
    // actions, ...): ranks advance together, so the simulator's accesses stay close in memory.
    size_t longest = 0;
    for (const auto& actions : schedule_.rank_actions) longest = std::max(longest, actions.size());
    for (size_t position = 0; position < longest; ++position) {
      for (size_t rank = 0; rank < schedule_.rank_actions.size(); ++rank) {
        if (position >= schedule_.rank_actions[rank].size()) continue;
        STAGECRAFT_RETURN_IF_ERROR(AddComputeTask(rank, schedule_.rank_actions[rank][position]));
      }
    }
    return Status::Ok();
  }

  uint32_t AddCollective(uint32_t after, PayloadKind kind, Time duration) {
    const Task& compute = graph_.tasks[after];
    Task task;
    task.kind = TaskKind::kCollective;
    task.payload = kind;
    task.rank = compute.rank;
    task.duration = duration;
    task.action = compute.action;
    const uint32_t id = static_cast<uint32_t>(graph_.tasks.size());
    graph_.tasks.push_back(task);
    return id;
  }

  // StageCollectives (lower.h): chains after each action, the per-stage reductions and the
  // per-rank optimizer step.
  void AddCollectives() {
    if (options_.collectives.empty() && options_.optimizer_step.empty()) return;
    const auto stage_of = [&](const Task& task) -> const StageCollectives* {
      const size_t stage = static_cast<size_t>(task.action.stage.value());
      return stage < options_.collectives.size() ? &options_.collectives[stage] : nullptr;
    };
    for (size_t rank = 0; rank < graph_.programs.size(); ++rank) {
      const auto& program = graph_.programs[rank];
      std::vector<uint32_t> reductions;
      std::set<int32_t> first_gathered;  // stages whose once-per-iteration gather is placed
      // ZeRO-3 / FSDP: gather the stage's parameters before each F and B/I, prefetched: the
      // gather for the op at position p starts when the op at p − 2 ends (one op ahead). With
      // several FSDP units only the first unit's share holds up the op.
      for (size_t position = 0; position < program.size(); ++position) {
        const Task& task = graph_.tasks[program[position]];
        const StageCollectives* stage = stage_of(task);
        if (stage == nullptr || task.action.kind == ActionKind::kWeightGrad) continue;
        const size_t head = task.action.overlapped ? position - 1 : position;
        if (stage->first_gather.ns() > 0 &&
            first_gathered.insert(task.action.stage.value()).second) {
          const uint32_t gather =
              AddCollective(program[position], PayloadKind::kShardGather, stage->first_gather);
          edges_.emplace_back(gather, program[head]);
        }
        if (stage->shard_gather.ns() <= 0 ||
            (!stage->shard_gather_backward && task.action.kind != ActionKind::kForward)) {
          continue;
        }
        // FSDP gathers unit by unit: the op waits for the first unit's share, the rest streams
        // in while it computes, and the rank's next op waits for all of it.
        const int64_t units = std::max(1, stage->shard_units);
        const Time first = Time::Nanoseconds(stage->shard_gather.ns() / units);
        const uint32_t gather = AddCollective(program[position], PayloadKind::kShardGather, first);
        if (head >= 2) edges_.emplace_back(program[head - 2], gather);
        edges_.emplace_back(gather, program[head]);
        if (units > 1 && position + 1 < program.size()) {
          const uint32_t rest = AddCollective(program[position], PayloadKind::kShardGather,
                                              stage->shard_gather - first);
          edges_.emplace_back(gather, rest);
          edges_.emplace_back(rest, program[position + 1]);
        }
      }
      for (size_t position = 0; position < program.size(); ++position) {
        const uint32_t compute = program[position];
        // The head of an F&B op waits for its tail: the pair's collectives follow the tail.
        if (FusedTail(graph_, rank, position) != nullptr) continue;
        const bool fused = graph_.tasks[compute].action.overlapped;
        const size_t first_part = fused ? position - 1 : position;  // an F&B op: both halves
        Time tp;
        Time ep;
        Time cp;
        for (size_t part = first_part; part <= position; ++part) {
          const Task& task = graph_.tasks[program[part]];
          const StageCollectives* stage = stage_of(task);
          if (stage == nullptr) continue;
          if (task.action.kind == ActionKind::kForward) {
            tp += stage->tp_forward;
            ep += stage->ep_forward;
            cp += stage->cp_forward;
          } else if (ReleasesActivation(task.action.kind)) {
            tp += stage->tp_backward;
            ep += stage->ep_backward;
            cp += stage->cp_backward;
          }
        }
        if (fused) ep = Time();  // hidden behind the other half's compute
        uint32_t last = compute;
        for (const auto& [kind, duration] : {std::pair{PayloadKind::kContextParallel, cp},
                                             std::pair{PayloadKind::kTensorParallel, tp},
                                             std::pair{PayloadKind::kExpertParallel, ep}}) {
          if (duration.ns() <= 0) continue;
          const uint32_t collective = AddCollective(compute, kind, duration);
          edges_.emplace_back(last, collective);
          last = collective;
        }
        if (last != compute) {
          ready_task_[compute] = last;
          if (fused) ready_task_[program[position - 1]] = last;
          if (position + 1 < program.size()) edges_.emplace_back(last, program[position + 1]);
        }
        // ZeRO-3 / FSDP: reduce-scatter the gradients the op produced (B or W), off the
        // critical path; the optimizer step waits for them.
        for (size_t part = first_part; part <= position; ++part) {
          const Task& task = graph_.tasks[program[part]];
          const StageCollectives* stage = stage_of(task);
          const bool weights = task.action.kind == ActionKind::kBackward ||
                               task.action.kind == ActionKind::kWeightGrad;
          if (stage == nullptr || stage->shard_reduce.ns() <= 0 || !weights) continue;
          const uint32_t reduce =
              AddCollective(program[part], PayloadKind::kShardReduce, stage->shard_reduce);
          edges_.emplace_back(last, reduce);
          reductions.push_back(reduce);
        }
      }
      shard_reductions_.push_back(std::move(reductions));
    }
  }

  // Data-parallel reductions after each stage's last action on its rank, then the optimizer
  // step. With gradient buckets (StageCollectives::dp_buckets) bucket k is reduced once the
  // last backward has produced its share: a delay task that starts with that backward (it has
  // the backward's inputs and the rank's previous action as predecessors) and lasts the
  // bucket's fraction of it. Runs after every input edge exists.
  void AddReductions() {
    if (options_.collectives.empty() && options_.optimizer_step.empty() &&
        options_.checkpoint_save.empty()) {
      return;
    }
    std::vector<std::vector<uint32_t>> preds_of(graph_.tasks.size());
    std::vector<uint8_t> wanted(graph_.tasks.size(), 0);
    for (size_t rank = 0; rank < graph_.programs.size(); ++rank) {
      for (uint32_t compute : graph_.programs[rank]) wanted[op_head_[compute]] = 1;
    }
    for (const auto& [from, to] : edges_) {
      if (to < wanted.size() && wanted[to]) preds_of[to].push_back(from);
    }
    for (size_t rank = 0; rank < graph_.programs.size(); ++rank) {
      const auto& program = graph_.programs[rank];
      std::vector<uint32_t> reductions =
          rank < shard_reductions_.size() ? shard_reductions_[rank] : std::vector<uint32_t>();
      std::vector<int32_t> stages;
      for (uint32_t compute : program) {
        const int32_t stage = graph_.tasks[compute].action.stage.value();
        if (std::find(stages.begin(), stages.end(), stage) == stages.end()) stages.push_back(stage);
      }
      for (int32_t stage : stages) {
        if (static_cast<size_t>(stage) >= options_.collectives.size()) continue;
        const StageCollectives& collectives = options_.collectives[stage];
        size_t last_position = 0;
        for (size_t position = 0; position < program.size(); ++position) {
          if (graph_.tasks[program[position]].action.stage.value() == stage) {
            last_position = position;
          }
        }
        const uint32_t last_of_stage = program[last_position];
        if (!collectives.dp_buckets.empty()) {
          const uint32_t head = op_head_[last_of_stage];
          const size_t head_position = static_cast<size_t>(graph_.tasks[head].position);
          const Time work = graph_.tasks[head].duration;
          for (const auto& [fraction, reduce] : collectives.dp_buckets) {
            if (reduce.ns() <= 0) continue;
            uint32_t ready = ready_task_[last_of_stage];
            if (fraction < 1.0) {
              Task delay;
              delay.kind = TaskKind::kDelay;
              delay.rank = static_cast<int32_t>(rank);
              delay.action = graph_.tasks[last_of_stage].action;
              delay.duration = Time::Nanoseconds(
                  std::llround(static_cast<double>(work.ns()) * std::max(0.0, fraction)));
              ready = static_cast<uint32_t>(graph_.tasks.size());
              graph_.tasks.push_back(delay);
              for (uint32_t pred : preds_of[head]) edges_.emplace_back(pred, ready);
              if (head_position > 0) edges_.emplace_back(program[head_position - 1], ready);
            }
            const uint32_t collective =
                AddCollective(last_of_stage, PayloadKind::kDataParallel, reduce);
            edges_.emplace_back(ready, collective);
            reductions.push_back(collective);
          }
          continue;
        }
        if (collectives.dp_reduce.ns() <= 0) continue;
        const uint32_t collective =
            AddCollective(last_of_stage, PayloadKind::kDataParallel, collectives.dp_reduce);
        edges_.emplace_back(ready_task_[last_of_stage], collective);
        reductions.push_back(collective);
      }
      uint32_t step = kNoTask;
      if (rank < options_.optimizer_step.size() && options_.optimizer_step[rank].ns() > 0 &&
          !program.empty()) {
        step = AddCollective(program.back(), PayloadKind::kOptimizerStep,
                             options_.optimizer_step[rank]);
        edges_.emplace_back(ready_task_[program.back()], step);
        for (uint32_t reduction : reductions) edges_.emplace_back(reduction, step);
      }
      if (rank < options_.checkpoint_save.size() && options_.checkpoint_save[rank].ns() > 0 &&
          !program.empty()) {
        AddCheckpointSave(program.back(), step, reductions, options_.checkpoint_save[rank]);
      }
    }
  }

  // The blocking part of a checkpoint save (LowerOptions::checkpoint_save): after the rank's
  // optimizer step when it has one, else after its reductions and its last action.
  void AddCheckpointSave(uint32_t last, uint32_t step, const std::vector<uint32_t>& reductions,
                         Time duration) {
    const uint32_t save = AddCollective(last, PayloadKind::kCheckpointSave, duration);
    if (step != kNoTask) {
      edges_.emplace_back(step, save);
      return;
    }
    edges_.emplace_back(ready_task_[last], save);
    for (uint32_t reduction : reductions) edges_.emplace_back(reduction, save);
  }

  // The task producing the gradient that B/I of `stage` needs from stage + 1.
  Result<uint32_t> GradientProducer(const Task& consumer) const {
    const int32_t next = consumer.action.stage.value() + 1;
    const uint32_t producer = BackwardOf(next, consumer.action.microbatch);
    if (producer == kNoTask) {
      return Error{DescribeTask(graph_, Find(consumer.action.stage.value(), consumer.action.kind,
                                             consumer.action.microbatch)) +
                   " needs the gradient of stage " + std::to_string(next) + ", microbatch " +
                   std::to_string(consumer.action.microbatch.value()) +
                   ", but no B or I action produces it"};
    }
    return producer;
  }

  Status Require(uint32_t producer, uint32_t consumer, const char* what) {
    if (producer != kNoTask) return Status::Ok();
    return Error{DescribeTask(graph_, consumer) + " needs " + what + ", which no action produces"};
  }

  Status AddInputs(uint32_t consumer) {
    const Task task = graph_.tasks[consumer];
    const int32_t stage = task.action.stage.value();
    const MicrobatchId microbatch = task.action.microbatch;
    switch (task.action.kind) {
      case ActionKind::kForward:
        if (stage > 0) {
          const uint32_t producer = Find(stage - 1, ActionKind::kForward, microbatch);
          STAGECRAFT_RETURN_IF_ERROR(Require(producer, consumer, "the previous stage's forward"));
          Connect(producer, consumer, PayloadKind::kActivation);
        }
        return Status::Ok();
      case ActionKind::kBackward:
      case ActionKind::kInputGrad: {
        const uint32_t forward = Find(stage, ActionKind::kForward, microbatch);
        STAGECRAFT_RETURN_IF_ERROR(Require(forward, consumer, "its own forward"));
        Connect(forward, consumer, PayloadKind::kActivation);
        if (stage + 1 < schedule_.num_stages) {
          auto producer = GradientProducer(task);
          if (!producer.ok()) return producer.error();
          Connect(producer.value(), consumer, PayloadKind::kGradient);
        }
        return Status::Ok();
      }
      case ActionKind::kWeightGrad: {
        const uint32_t input = Find(stage, ActionKind::kInputGrad, microbatch);
        STAGECRAFT_RETURN_IF_ERROR(Require(input, consumer, "its input-gradient action (I)"));
        Connect(input, consumer, PayloadKind::kNone);
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  // Per-cut payload bytes and per-stage shadow compute, from the flows. Cut s joins stages s
  // and s + 1.
  Status PlanStates() {
    const int32_t stages = schedule_.num_stages;
    cut_forward_.assign(static_cast<size_t>(std::max(stages, 1)), 0);
    cut_backward_.assign(static_cast<size_t>(std::max(stages, 1)), 0);
    extra_forward_.assign(static_cast<size_t>(std::max(stages, 1)), Time());
    extra_backward_.assign(static_cast<size_t>(std::max(stages, 1)), Time());
    for (const StateFlow& flow : options_.states) {
      if (flow.producer_stage < 0 || flow.last_consumer_stage() >= stages) {
        return Error{"internal: a state flow refers to a stage outside 0.." +
                     std::to_string(stages - 1)};
      }
      const bool payload = flow.policy == StatePolicy::kPayload;
      const bool shadow = flow.policy == StatePolicy::kShadow;
      for (int32_t cut = flow.producer_stage; cut < flow.last_consumer_stage(); ++cut) {
        if (payload) {
          cut_forward_[cut] += flow.bytes;
          if (flow.differentiable) cut_backward_[cut] += flow.bytes;
        } else if (shadow) {
          cut_forward_[cut] += flow.shadow_bytes;
        }
      }
      if (!shadow) continue;
      for (int32_t stage : ReceivingStages(flow, graph_.stage_ranks)) {
        extra_forward_[stage] += flow.shadow_forward;
        extra_backward_[stage] += flow.shadow_backward;
      }
    }
    return Status::Ok();
  }

  // Direct flows: for every rank other than the producer's that holds consumers, one transfer
  // per microbatch from the producer's F to that rank's first consuming stage's F, and
  // (differentiable) one dState transfer from that stage's backward — the last on the rank — to
  // the producer's backward. On the producer's rank the state is resident and the stage order
  // already orders the actions.
  Status AddDirectStateTransfers() {
    for (size_t index = 0; index < options_.states.size(); ++index) {
      const StateFlow& flow = options_.states[index];
      if (flow.policy != StatePolicy::kDirect) continue;
      for (int32_t stage : ReceivingStages(flow, graph_.stage_ranks)) {
        for (int32_t mb = 0; mb < schedule_.num_microbatches; ++mb) {
          const MicrobatchId microbatch(mb);
          const uint32_t make = Find(flow.producer_stage, ActionKind::kForward, microbatch);
          const uint32_t use = Find(stage, ActionKind::kForward, microbatch);
          if (make == kNoTask || use == kNoTask) {
            return Error{"internal: a direct state flow needs forwards the schedule lacks"};
          }
          AddTransfer(make, use, PayloadKind::kState, flow.bytes, flow.bytes,
                      static_cast<int32_t>(index));
          if (!flow.differentiable) continue;
          const uint32_t grad_from = BackwardOf(stage, microbatch);
          const uint32_t grad_to = BackwardOf(flow.producer_stage, microbatch);
          if (grad_from == kNoTask || grad_to == kNoTask) {
            return Error{"internal: a direct state flow needs backwards the schedule lacks"};
          }
          AddTransfer(grad_from, grad_to, PayloadKind::kStateGradient, flow.bytes, flow.bytes,
                      static_cast<int32_t>(index));
        }
      }
    }
    return Status::Ok();
  }

  // The B or I action of (stage, microbatch), whichever the schedule has.
  uint32_t BackwardOf(int32_t stage, MicrobatchId microbatch) const {
    const uint32_t full = Find(stage, ActionKind::kBackward, microbatch);
    return full != kNoTask ? full : Find(stage, ActionKind::kInputGrad, microbatch);
  }

  // A data dependency; a transfer task in between when the two run on different ranks. The
  // transfer between stages s and s + 1 carries the hidden state (or its gradient) of cut s
  // plus the payload-policy shared state crossing that cut. Inputs of the tail of an F&B op
  // are inputs of the op (its head).
  void Connect(uint32_t producer, uint32_t consumer, PayloadKind payload) {
    const Task& from = graph_.tasks[producer];
    const Task& to = graph_.tasks[consumer];
    if (op_head_[consumer] == producer && producer != consumer) {
      fused_self_dependency_ = Error{RankOf(to.rank) + ": the F&B op " + FormatAction(from.action) +
                                     " + " + FormatAction(to.action) +
                                     " overlaps two actions where one needs the other's output; "
                                     "pair actions of different microbatches or stages"};
      return;
    }
    if (from.rank == to.rank) {
      edges_.emplace_back(ready_task_[producer], op_head_[consumer]);  // after its collectives
      return;
    }
    const int32_t cut = std::min(from.action.stage.value(), to.action.stage.value());
    const int64_t state =
        payload == PayloadKind::kGradient ? cut_backward_[cut] : cut_forward_[cut];
    AddTransfer(producer, consumer, payload, costs_[cut].p2p_bytes + state, state, -1);
  }

  void AddTransfer(uint32_t producer, uint32_t consumer, PayloadKind payload, int64_t bytes,
                   int64_t state_bytes, int32_t flow) {
    AddTransferFrom(graph_.tasks[producer].rank, graph_.tasks[producer].action, producer, consumer,
                    payload, bytes, state_bytes, flow);
  }

  // A transfer from `from_rank`; `producer` may be kNoTask (the data exists at the start of the
  // iteration), then `shown` names it.
  void AddTransferFrom(int32_t from_rank, const Action& shown, uint32_t producer, uint32_t consumer,
                       PayloadKind payload, int64_t bytes, int64_t state_bytes, int32_t flow) {
    const Task& to = graph_.tasks[consumer];
    Task transfer;
    transfer.kind = TaskKind::kTransfer;
    transfer.payload = payload;
    transfer.rank = from_rank;
    transfer.peer = to.rank;
    transfer.link = LinkIndex(from_rank, to.rank);
    transfer.bytes = bytes;
    transfer.state_bytes = state_bytes;
    transfer.flow = flow;
    transfer.duration = TransferTime(options_.cluster, DeviceId(from_rank), DeviceId(to.rank),
                                     transfer.bytes, options_.cost_p2p);
    transfer.action = shown;
    transfer.consumer = to.action;
    transfer.producer_task = producer;
    transfer.consumer_task = op_head_[consumer];
    const uint32_t id = static_cast<uint32_t>(graph_.tasks.size());
    graph_.tasks.push_back(transfer);
    if (producer != kNoTask) edges_.emplace_back(ready_task_[producer], id);
    edges_.emplace_back(id, op_head_[consumer]);
  }

  // Shadow flows: once per iteration, the owner's parameters go to every replica on another
  // rank before the replica's first forward, and (when the replica computes gradients) the
  // replica's gradient goes back after its last action, before the owner's last action. The
  // dual placement holds two copies of the model, mirrored: each copy syncs its own replicas.
  void AddShadowTransfers() {
    const int copies = schedule_.placement == Placement::kDual ? 2 : 1;
    for (int copy = 0; copy < copies; ++copy) {
      for (size_t index = 0; index < options_.states.size(); ++index) {
        AddShadowTransfersOfFlow(index, copy == 1);
      }
    }
  }

  void AddShadowTransfersOfFlow(size_t index, bool mirrored) {
    const auto placed = [&](int32_t rank) {
      return mirrored ? schedule_.num_ranks - 1 - rank : rank;
    };
    const StateFlow& flow = options_.states[index];
    if (flow.policy != StatePolicy::kShadow || flow.shadow_param_bytes <= 0) return;
    const int32_t owner = placed(graph_.stage_ranks[flow.producer_stage]);
    for (int32_t stage : ReceivingStages(flow, graph_.stage_ranks)) {
      const int32_t replica = placed(graph_.stage_ranks[stage]);
      const uint32_t first = EdgeActionOf(replica, stage, /*first=*/true);
      const uint32_t last = EdgeActionOf(replica, stage, /*first=*/false);
      if (first == kNoTask || graph_.programs[owner].empty()) continue;
      AddTransferFrom(owner, Action{StageId(flow.producer_stage), ActionKind::kForward, {}},
                      kNoTask, first, PayloadKind::kShadowSync, flow.shadow_param_bytes,
                      flow.shadow_param_bytes, static_cast<int32_t>(index));
      if (flow.shadow_backward.ns() > 0) {
        AddTransfer(last, graph_.programs[owner].back(), PayloadKind::kShadowGradient,
                    flow.shadow_param_bytes, flow.shadow_param_bytes, static_cast<int32_t>(index));
      }
    }
  }

  // The first (or last) action of `stage` in `rank`'s program.
  uint32_t EdgeActionOf(int32_t rank, int32_t stage, bool first) const {
    const auto& program = graph_.programs[rank];
    uint32_t found = kNoTask;
    for (uint32_t task : program) {
      if (graph_.tasks[task].action.stage.value() != stage) continue;
      found = task;
      if (first) break;
    }
    return found;
  }

  // Rendezvous (NCCL-like matching). On each directed link the sender issues its sends in its
  // program order and the receiver posts its receives in its program order, the receive for X
  // when the action before X ends; the k-th send pairs with the k-th receive. Edges: each
  // transfer waits for the previous one in send order, the previous one in receive order, and
  // the consumer's predecessor. When the two orders disagree the edges form a cycle: the
  // ordering deadlock a real runtime hits.
  void AddRendezvousEdges() {
    std::vector<std::vector<uint32_t>> by_link(graph_.links.size());
    for (uint32_t id = 0; id < graph_.tasks.size(); ++id) {
      if (graph_.tasks[id].kind == TaskKind::kTransfer)
        by_link[graph_.tasks[id].link].push_back(id);
    }
    auto position = [&](uint32_t task) {
      return task == kNoTask ? -1 : graph_.tasks[task].position;
    };
    for (auto& transfers : by_link) {
      for (uint32_t transfer : transfers) {
        const Task& consumer = graph_.tasks[graph_.tasks[transfer].consumer_task];
        if (consumer.position > 0) {
          edges_.emplace_back(graph_.programs[consumer.rank][consumer.position - 1], transfer);
        }
      }
      auto chain = [&](auto key) {
        std::sort(transfers.begin(), transfers.end(),
                  [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
        for (size_t index = 1; index < transfers.size(); ++index) {
          edges_.emplace_back(transfers[index - 1], transfers[index]);
        }
      };
      // Sends of one action to one peer go out in the order the peer consumes them.
      chain([&](uint32_t t) {
        const Task& task = graph_.tasks[t];
        return std::tuple(position(task.producer_task), position(task.consumer_task), t);
      });
      chain([&](uint32_t t) {
        const Task& task = graph_.tasks[t];
        return std::tuple(position(task.consumer_task), position(task.producer_task), t);
      });
    }
  }

  // Links are keyed by (from, to) in a hash map, not a ranks x ranks table: a pipeline of
  // 10^5 ranks has 2 * 10^5 links but a table of 10^10 entries.
  static uint64_t LinkKey(int32_t from, int32_t to) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32) | static_cast<uint32_t>(to);
  }

  int32_t LinkIndex(int32_t from, int32_t to) {
    const auto [found, inserted] =
        link_index_.try_emplace(LinkKey(from, to), static_cast<int32_t>(graph_.links.size()));
    if (inserted) graph_.links.push_back(Link{from, to});
    return found->second;
  }

  // Links were numbered in discovery order and then sorted; point the transfers at the new ids.
  void RenumberLinks() {
    for (size_t id = 0; id < graph_.links.size(); ++id) {
      const Link& link = graph_.links[id];
      link_index_[LinkKey(link.from, link.to)] = static_cast<int32_t>(id);
    }
    for (Task& task : graph_.tasks) {
      if (task.kind == TaskKind::kTransfer)
        task.link = link_index_.at(LinkKey(task.rank, task.peer));
    }
  }

  // Every task's duration is at most kMaxRunDuration and so is their sum, so no start or end
  // time of the run can overflow (the run takes at most the sum of its tasks' durations).
  Status CheckTotalDuration() const {
    int64_t total = 0;
    for (const Task& task : graph_.tasks) {
      const int64_t duration = task.duration.ns();
      if (duration < 0 || duration > kMaxRunDuration.ns() - total) {
        return Error{"the run's " + std::to_string(graph_.tasks.size()) +
                     " tasks add up to more than 2^62 ns (about 146 years), the clock's limit; "
                     "lower the costs (--cost-*, the model's dimensions) or the microbatches"};
      }
      total += duration;
    }
    return Status::Ok();
  }

  const Schedule& schedule_;
  const std::vector<StageCost>& costs_;
  const LowerOptions& options_;
  TaskGraph graph_;
  std::vector<uint32_t> index_;
  std::vector<uint32_t> ready_task_;  // [compute task] → the task after which its outputs exist
                                      // (itself, or the last collective that follows it)
  std::vector<uint32_t> op_head_;  // [compute task] → the task that runs its op (itself, or the
                                   // head of its F&B pair)
  Status fused_self_dependency_ = Status::Ok();
  std::vector<std::vector<uint32_t>> shard_reductions_;  // [rank] ZeRO-3 reduce-scatters
  std::unordered_map<uint64_t, int32_t> link_index_;     // LinkKey(from, to) → link id
  std::vector<std::pair<uint32_t, uint32_t>> edges_;
  std::vector<int64_t> cut_forward_;   // [cut] payload-policy state bytes on the activation send
  std::vector<int64_t> cut_backward_;  // [cut] dState bytes on the gradient send
  std::vector<Time> extra_forward_;    // [stage] shadow-indexer compute added to each F
  std::vector<Time> extra_backward_;   // [stage] ... and to each B / I
};

}  // namespace

Result<TaskGraph> Lower(const Schedule& schedule, const std::vector<StageCost>& stage_costs,
                        const LowerOptions& options) {
  if (static_cast<int32_t>(stage_costs.size()) != schedule.num_stages) {
    return Error{"internal: " + std::to_string(stage_costs.size()) + " stage costs for " +
                 std::to_string(schedule.num_stages) + " stages"};
  }
  return Lowering(schedule, stage_costs, options).Run();
}

}  // namespace stagecraft
