#include "check/checker.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace stagecraft {

std::vector<P2pMode> AllCheckModes() {
  return {P2pMode::kAsync, P2pMode::kRendezvous, P2pMode::kTorchPipelining};
}

namespace {

struct Position {
  int32_t rank = -1;
  size_t index = 0;
};

// Where each action sits: [stage][microbatch][kind] → every (rank, position) holding it.
class ActionIndex {
 public:
  explicit ActionIndex(const Schedule& schedule) : schedule_(schedule) {
    slots_.resize(ActionSlotCount(schedule));
    for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
      const auto& actions = schedule.rank_actions[rank];
      for (size_t index = 0; index < actions.size(); ++index) {
        slots_[Slot(actions[index])].push_back({static_cast<int32_t>(rank), index});
      }
    }
  }
  const std::vector<Position>& At(int32_t stage, ActionKind kind, int32_t microbatch) const {
    return slots_[Slot(Action{StageId(stage), kind, MicrobatchId(microbatch)})];
  }

 private:
  size_t Slot(const Action& action) const { return ActionSlot(schedule_, action); }
  const Schedule& schedule_;
  std::vector<std::vector<Position>> slots_;
};

std::string Name(int32_t stage, ActionKind kind, int32_t microbatch) {
  return FormatAction(Action{StageId(stage), kind, MicrobatchId(microbatch)});
}

// Ids outside [0, num_stages) x [0, num_microbatches): reported, and the other checks skipped
// (they index by these ids). Returns true when every id is in range.
bool CheckIds(const Schedule& schedule, std::vector<Violation>& out) {
  bool in_range = true;
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    for (const Action& action : schedule.rank_actions[rank]) {
      const int32_t stage = action.stage.value();
      const int32_t microbatch = action.microbatch.value();
      if (stage >= 0 && stage < schedule.num_stages && microbatch >= 0 &&
          microbatch < schedule.num_microbatches) {
        continue;
      }
      in_range = false;
      out.push_back({ViolationKind::kShape, static_cast<int32_t>(rank), FormatAction(action),
                     "action " + FormatAction(action) + " is outside the schedule's " +
                         std::to_string(schedule.num_stages) + " stages x " +
                         std::to_string(schedule.num_microbatches) + " microbatches",
                     "stages run 0.." + std::to_string(schedule.num_stages - 1) +
                         ", microbatches 0.." + std::to_string(schedule.num_microbatches - 1)});
    }
  }
  return in_range;
}

void CheckShape(const Schedule& schedule, std::vector<Violation>& out) {
  if (schedule.num_ranks > 0 && schedule.num_stages % schedule.num_ranks != 0) {
    out.push_back({ViolationKind::kShape, -1, "",
                   std::to_string(schedule.num_stages) + " stages cannot be spread evenly over " +
                       std::to_string(schedule.num_ranks) + " ranks",
                   "every rank must hold the same number of stages (pp * vpp stages)"});
  }
}

// A stage's weights live on one rank: its home is the rank holding most of its actions (the
// lowest on a tie); every other rank holding some is a violation.
void CheckStagePlacement(const Schedule& schedule, std::vector<Violation>& out) {
  if (schedule.placement == Placement::kDual) {
    // Two copies of every stage: each action must sit where its microbatch's copy lives.
    for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
      for (const Action& action : schedule.rank_actions[rank]) {
        const int32_t home = PlacedRank(schedule, action);
        if (home == static_cast<int32_t>(rank)) continue;
        out.push_back(
            {ViolationKind::kStageOnTwoRanks, static_cast<int32_t>(rank), FormatAction(action),
             FormatAction(action) + " is on rank " + std::to_string(rank) +
                 ", but the dual placement puts stage " + std::to_string(action.stage.value()) +
                 " of microbatch " + std::to_string(action.microbatch.value()) +
                 "'s copy on rank " + std::to_string(home),
             "move it to rank " + std::to_string(home) +
                 " (microbatches below m/2 run stage s on rank s, the others on "
                 "rank p-1-s)"});
      }
    }
    return;
  }
  std::vector<std::map<int32_t, int32_t>> counts(static_cast<size_t>(schedule.num_stages));
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    for (const Action& action : schedule.rank_actions[rank]) {
      ++counts[action.stage.value()][static_cast<int32_t>(rank)];
    }
  }
  for (int32_t stage = 0; stage < schedule.num_stages; ++stage) {
    if (counts[stage].size() <= 1) continue;
    int32_t home = counts[stage].begin()->first;
    // The list is in every violation of the stage: at most kListedRanks ranks, so that a stage
    // on n ranks costs O(n), not O(n^2), bytes (a CSV of 20,000 rows all running stage 0).
    constexpr size_t kListedRanks = 8;
    std::string list;
    size_t listed = 0;
    for (const auto& [rank, count] : counts[stage]) {
      if (listed++ < kListedRanks) list += (list.empty() ? "" : ", ") + std::to_string(rank);
      if (count > counts[stage][home]) home = rank;
    }
    if (listed > kListedRanks) list += " and " + std::to_string(listed - kListedRanks) + " more";
    for (const auto& [rank, count] : counts[stage]) {
      if (rank == home) continue;
      out.push_back({ViolationKind::kStageOnTwoRanks, rank, "",
                     "stage " + std::to_string(stage) + " is placed on ranks " + list + " (" +
                         std::to_string(count) + " of its actions on rank " + std::to_string(rank) +
                         ")",
                     "a stage's weights live on one rank: move these actions to rank " +
                         std::to_string(home) + ", which holds most of the stage"});
    }
  }
}

void CheckDuplicates(const ActionIndex& index, int32_t stage, int32_t microbatch,
                     std::vector<Violation>& out) {
  for (ActionKind kind : {ActionKind::kForward, ActionKind::kBackward, ActionKind::kInputGrad,
                          ActionKind::kWeightGrad}) {
    const auto& positions = index.At(stage, kind, microbatch);
    for (size_t copy = 1; copy < positions.size(); ++copy) {
      out.push_back(
          {ViolationKind::kDuplicateAction, positions[copy].rank, Name(stage, kind, microbatch),
           "action " + Name(stage, kind, microbatch) + " appears more than once", "keep one copy"});
    }
  }
}

// `rank`: where the stage's actions for this microbatch belong (-1 when unknown).
void CheckCompleteness(const ActionIndex& index, int32_t rank, int32_t stage, int32_t microbatch,
                       std::vector<Violation>& out) {
  const std::string where = rank >= 0 ? "rank " + std::to_string(rank) + "'s row" : "a rank's row";
  const bool forward = !index.At(stage, ActionKind::kForward, microbatch).empty();
  const bool full = !index.At(stage, ActionKind::kBackward, microbatch).empty();
  const bool input = !index.At(stage, ActionKind::kInputGrad, microbatch).empty();
  const bool weight = !index.At(stage, ActionKind::kWeightGrad, microbatch).empty();
  auto missing = [&](ActionKind kind, const std::string& what) {
    const std::string name = Name(stage, kind, microbatch);
    out.push_back({ViolationKind::kMissingAction, rank, name,
                   "microbatch " + std::to_string(microbatch) + " has no " + what + " on stage " +
                       std::to_string(stage) + " (" + name + ")",
                   "add " + name + " to " + where});
  };
  if (!forward) missing(ActionKind::kForward, "forward");
  if (full && (input || weight)) {
    out.push_back({ViolationKind::kMixedBackward, rank,
                   Name(stage, ActionKind::kBackward, microbatch),
                   "microbatch " + std::to_string(microbatch) + " on stage " +
                       std::to_string(stage) + " has both a full backward (B) and split I/W",
                   "use either B or the pair I + W"});
  } else if (!full && !input && !weight) {
    missing(ActionKind::kBackward, "backward");
  } else if (input && !weight) {
    missing(ActionKind::kWeightGrad, "weight-gradient backward");
  } else if (weight && !input) {
    missing(ActionKind::kInputGrad, "input-gradient backward");
  }
}

// B/I after its own F, W after its I — on the same rank, in program order.
void CheckOrder(const ActionIndex& index, int32_t stage, int32_t microbatch,
                std::vector<Violation>& out) {
  auto before = [&](ActionKind first, ActionKind second, ViolationKind kind, const char* what) {
    const auto& a = index.At(stage, first, microbatch);
    const auto& b = index.At(stage, second, microbatch);
    if (a.empty() || b.empty() || a[0].rank != b[0].rank || a[0].index < b[0].index) return;
    const std::string later = Name(stage, first, microbatch);
    const std::string earlier = Name(stage, second, microbatch);
    out.push_back({kind, b[0].rank, earlier,
                   earlier + " (position " + std::to_string(b[0].index) + ") runs before " + later +
                       " (position " + std::to_string(a[0].index) + "): " + what,
                   "move " + later + " before " + earlier + " in rank " +
                       std::to_string(b[0].rank) + "'s row"});
  };
  before(ActionKind::kForward, ActionKind::kBackward, ViolationKind::kBackwardBeforeForward,
         "a backward needs its forward's activations");
  before(ActionKind::kForward, ActionKind::kInputGrad, ViolationKind::kBackwardBeforeForward,
         "a backward needs its forward's activations");
  before(ActionKind::kInputGrad, ActionKind::kWeightGrad, ViolationKind::kWeightBeforeInput,
         "the weight gradient needs the output gradient that I receives");
}

// F&B pairs (DualPipe's overlapped ops): the second action of a pair is marked overlapped; the
// pair must be one forward and one backward (B or I) that do not feed each other.
void CheckOverlaps(const Schedule& schedule, std::vector<Violation>& out) {
  const std::string hint =
      "an F&B op pairs one forward with another microbatch's backward, e.g. "
      "'(0F3;0B1)OVERLAP_F_B'";
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    const auto& program = schedule.rank_actions[rank];
    for (size_t position = 0; position < program.size(); ++position) {
      const Action& tail = program[position];
      if (!tail.overlapped) continue;
      const int32_t where = static_cast<int32_t>(rank);
      const std::string name = FormatAction(tail);
      if (position == 0 || program[position - 1].overlapped) {
        out.push_back(
            {ViolationKind::kBadOverlap, where, name,
             name + " is marked overlapped but has no action of its own to pair with " +
                 (position == 0 ? "(it is the rank's first)" : "(a pair already ends there)"),
             hint});
        continue;
      }
      const Action& head = program[position - 1];
      const bool head_forward = head.kind == ActionKind::kForward;
      const bool tail_forward = tail.kind == ActionKind::kForward;
      const Action& forward = head_forward ? head : tail;
      const Action& backward = head_forward ? tail : head;
      if (head_forward == tail_forward || !ReleasesActivation(backward.kind)) {
        out.push_back({ViolationKind::kBadOverlap, where, name,
                       "the F&B op " + FormatAction(head) + " + " + name +
                           " does not pair one forward with one backward (B or I)",
                       hint});
      } else if (SameAction({forward.stage, ActionKind::kForward, forward.microbatch},
                            {backward.stage, ActionKind::kForward, backward.microbatch})) {
        out.push_back({ViolationKind::kBadOverlap, where, name,
                       "the F&B op " + FormatAction(head) + " + " + name +
                           " overlaps a backward with its own forward, which it needs first",
                       "run " + FormatAction(forward) + " earlier and pair " +
                           FormatAction(backward) + " with a later forward"});
      }
    }
  }
}

std::string JoinModes(const std::vector<P2pMode>& modes) {
  std::string text;
  for (size_t index = 0; index < modes.size(); ++index) {
    if (index > 0) text += index + 1 == modes.size() ? " and " : ", ";
    text += P2pModeName(modes[index]);
  }
  return text;
}

std::string DeadlockHint(P2pMode mode, bool explicit_comms) {
  switch (mode) {
    case P2pMode::kAsync:
      return "reorder the actions in the cycle so each input is produced before the rank that "
             "needs it blocks on it";
    case P2pMode::kRendezvous:
      return "order each rank's actions so that a send's receiver reaches the matching action "
             "without first waiting on the sender";
    case P2pMode::kTorchPipelining:
      return explicit_comms
                 ? "order each link's SEND and RECV actions alike, each RECV before the action "
                   "that needs it"
                 : "reorder the actions in the cycle; torch.distributed.pipelining stops on this "
                   "order when it places the sends and receives (_add_send_recv: 'Malformed "
                   "compute schedule')";
  }
  return "";
}

// A cycle among one (stage, microbatch)'s own actions on its rank: B or I before its F, W before
// its I — what the order checks already report, so not a deadlock of its own.
bool WithinOneAction(const TaskGraph& graph, const Deadlock& deadlock) {
  if (deadlock.cycle.empty()) return false;
  const Task& first = graph.tasks[deadlock.cycle.front().waiter];
  return std::all_of(deadlock.cycle.begin(), deadlock.cycle.end(), [&](const WaitEdge& edge) {
    const Task& task = graph.tasks[edge.waiter];
    return task.kind == TaskKind::kCompute && task.action.stage == first.action.stage &&
           task.action.microbatch == first.action.microbatch;
  });
}

// One deadlock search per mode; identical findings (same stuck ranks and cycle) merge.
void CheckDeadlocks(const Schedule& schedule, const std::vector<StageCost>& costs,
                    const CheckOptions& options, bool structure_sound,
                    std::vector<Violation>& out) {
  std::vector<std::pair<std::string, size_t>> found;  // (deadlock text, index in out)
  for (P2pMode mode : options.modes) {
    LowerOptions lower = options.lower;
    lower.mode = mode;
    auto graph = Lower(schedule, costs, lower);
    if (!graph.ok()) {
      const bool comms = mode == P2pMode::kTorchPipelining && !schedule.rank_comms.empty();
      if (comms) {
        out.push_back({ViolationKind::kCommOrder, -1, "", graph.error().message,
                       "torch.distributed.pipelining runs a compute_comms row as written: every "
                       "transfer between ranks needs its SEND after the producer and its RECV "
                       "before the consumer"});
      } else if (structure_sound) {
        out.push_back({ViolationKind::kMissingAction, -1, "", graph.error().message, ""});
      }
      continue;  // without structure there is no graph to search: the structural violations say why
    }
    const auto deadlock = FindDeadlock(graph.value());
    if (!deadlock || WithinOneAction(graph.value(), *deadlock)) continue;
    const std::string text = FormatDeadlock(graph.value(), *deadlock);
    const auto same = std::find_if(found.begin(), found.end(),
                                   [&](const auto& entry) { return entry.first == text; });
    if (same != found.end()) {
      out[same->second].modes.push_back(mode);
      continue;
    }
    const uint32_t culprit = DeadlockCulprit(graph.value(), *deadlock);
    const Task& task = graph.value().tasks[culprit];
    found.emplace_back(text, out.size());
    out.push_back({ViolationKind::kDeadlock,
                   task.rank,
                   FormatAction(task.action),
                   text,
                   DeadlockHint(mode, !schedule.rank_comms.empty()),
                   {mode}});
  }
  for (const auto& [text, index] : found) {
    Violation& violation = out[index];
    violation.message = "deadlock with " + JoinModes(violation.modes) +
                        " point-to-point: no action can run and work remains\n" + text;
  }
}

}  // namespace

const char* ViolationKindName(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kShape:
      return "shape";
    case ViolationKind::kDuplicateAction:
      return "duplicate-action";
    case ViolationKind::kMissingAction:
      return "missing-action";
    case ViolationKind::kMixedBackward:
      return "mixed-backward";
    case ViolationKind::kStageOnTwoRanks:
      return "stage-on-two-ranks";
    case ViolationKind::kBackwardBeforeForward:
      return "backward-before-forward";
    case ViolationKind::kWeightBeforeInput:
      return "weight-before-input";
    case ViolationKind::kStateBeforeProducer:
      return "state-before-producer";
    case ViolationKind::kProducerBackwardFirst:
      return "producer-backward-first";
    case ViolationKind::kStaleRead:
      return "stale-read";
    case ViolationKind::kBadOverlap:
      return "bad-overlap";
    case ViolationKind::kCommOrder:
      return "comm-order";
    case ViolationKind::kDeadlock:
      return "deadlock";
  }
  return "unknown";
}

std::vector<Violation> CheckSchedule(const Schedule& schedule,
                                     const std::vector<StageCost>& stage_costs,
                                     const CheckOptions& options) {
  std::vector<Violation> violations;
  if (!CheckIds(schedule, violations)) return violations;
  CheckShape(schedule, violations);
  CheckStagePlacement(schedule, violations);
  CheckOverlaps(schedule, violations);
  const ActionIndex index(schedule);
  const std::vector<int32_t> stage_ranks = StageRanks(schedule);
  std::optional<std::pair<int32_t, int32_t>> stopped;  // (stage, microbatch) not checked
  for (int32_t stage = 0; stage < schedule.num_stages && !stopped; ++stage) {
    for (int32_t microbatch = 0; microbatch < schedule.num_microbatches; ++microbatch) {
      if (violations.size() >= kMaxViolationsCollected) {
        stopped = std::pair(stage, microbatch);
        break;
      }
      CheckDuplicates(index, stage, microbatch, violations);
      const int32_t rank = schedule.placement == Placement::kDual
                               ? PlacedRank(schedule, Action{StageId(stage), ActionKind::kForward,
                                                             MicrobatchId(microbatch)})
                               : stage_ranks[stage];
      CheckCompleteness(index, rank, stage, microbatch, violations);
      CheckOrder(index, stage, microbatch, violations);
    }
  }
  std::stable_sort(violations.begin(), violations.end(),
                   [](const Violation& a, const Violation& b) {
                     return std::tuple(static_cast<int>(a.kind), a.rank) <
                            std::tuple(static_cast<int>(b.kind), b.rank);
                   });
  if (stopped) {
    violations.insert(
        violations.begin(),
        Violation{ViolationKind::kShape,
                  -1,
                  "",
                  "checking stopped after " + std::to_string(violations.size()) +
                      " violations, at stage " + std::to_string(stopped->first) + ", microbatch " +
                      std::to_string(stopped->second) + " of " +
                      std::to_string(schedule.num_stages) + " stages x " +
                      std::to_string(schedule.num_microbatches) +
                      " microbatches: the rest of the schedule was not checked",
                  "fix these first; so many usually means a wrong file or one misplaced index "
                  "(the highest stage and microbatch set the schedule's size)",
                  {}});
    return violations;
  }
  const bool structure_sound = violations.empty();
  CheckStateOrder(schedule, options.lower.states, options.state_buffer_slots, violations);
  if (static_cast<int32_t>(stage_costs.size()) == schedule.num_stages) {
    CheckDeadlocks(schedule, stage_costs, options, structure_sound, violations);
  }
  return violations;
}

std::optional<Deadlock> FindDeadlock(const TaskGraph& graph) {
  const size_t num_tasks = graph.num_tasks();
  std::vector<uint32_t> missing(num_tasks);
  std::vector<uint8_t> done(num_tasks, 0);
  std::vector<size_t> next(graph.programs.size(), 0);
  std::vector<uint32_t> ready;  // tasks whose dependencies are met
  for (uint32_t task = 0; task < num_tasks; ++task) {
    missing[task] = graph.num_preds(task);
    if (missing[task] == 0) ready.push_back(task);
  }
  std::vector<uint8_t> dependencies_met(num_tasks, 0);
  std::vector<uint32_t> runnable;
  size_t finished = 0;
  auto finish = [&](uint32_t task) {
    done[task] = 1;
    ++finished;
    for (uint32_t index = graph.succ_begin[task]; index < graph.succ_begin[task + 1]; ++index) {
      if (--missing[graph.succs[index]] == 0) ready.push_back(graph.succs[index]);
    }
  };
  while (!ready.empty()) {
    const uint32_t task = ready.back();
    ready.pop_back();
    const Task& info = graph.tasks[task];
    // Transfers and collectives run on first-come-first-served resources (links, the
    // collective stream) in the order they become ready: they never wait for order.
    if (info.kind != TaskKind::kCompute) {
      finish(task);
      continue;
    }
    dependencies_met[task] = 1;
    // Run the rank's program as far as its dependencies allow.
    const auto& program = graph.programs[info.rank];
    while (next[info.rank] < program.size() && dependencies_met[program[next[info.rank]]]) {
      finish(program[next[info.rank]++]);
    }
  }
  if (finished == num_tasks) return std::nullopt;
  return AnalyzeDeadlock(graph, done);
}

std::string FormatViolations(const std::vector<Violation>& violations) {
  std::string text;
  const size_t shown = std::min(violations.size(), kMaxViolationsShown);
  for (size_t index = 0; index < shown; ++index) {
    const Violation& violation = violations[index];
    text += "error[";
    text += ViolationKindName(violation.kind);
    text += "]";
    if (violation.rank >= 0) text += " rank " + std::to_string(violation.rank);
    if (!violation.action.empty()) text += " " + violation.action;
    text += ": " + violation.message;
    if (!text.empty() && text.back() != '\n') text += "\n";
    if (!violation.hint.empty()) text += "  hint: " + violation.hint + "\n";
  }
  if (shown == violations.size()) return text;
  std::map<std::string, size_t> hidden;  // kind name → violations not shown
  for (size_t index = shown; index < violations.size(); ++index) {
    ++hidden[ViolationKindName(violations[index].kind)];
  }
  text += "... and " + std::to_string(violations.size() - shown) + " more (the first " +
          std::to_string(shown) + " are shown):";
  for (const auto& [kind, count] : hidden) text += " " + std::to_string(count) + " " + kind + ",";
  text.back() = '\n';
  return text;
}

}  // namespace stagecraft
