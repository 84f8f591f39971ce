// CheckStateOrder: the shared-state rules of DESIGN.md §5 checked on each rank's program order.
#include <algorithm>

#include "check/checker.h"

namespace stagecraft {
namespace {

constexpr int32_t kAbsent = -1;

// Where each action sits: [ActionSlot] → (rank, position), or kAbsent.
struct Positions {
  std::vector<int32_t> rank;
  std::vector<int32_t> position;
};

Positions IndexPositions(const Schedule& schedule) {
  Positions index{std::vector<int32_t>(ActionSlotCount(schedule), kAbsent),
                  std::vector<int32_t>(ActionSlotCount(schedule), kAbsent)};
  for (size_t rank = 0; rank < schedule.rank_actions.size(); ++rank) {
    const auto& actions = schedule.rank_actions[rank];
    for (size_t position = 0; position < actions.size(); ++position) {
      const size_t slot = ActionSlot(schedule, actions[position]);
      index.rank[slot] = static_cast<int32_t>(rank);
      index.position[slot] = static_cast<int32_t>(position);
    }
  }
  return index;
}

class StateOrderChecker {
 public:
  StateOrderChecker(const Schedule& schedule, std::vector<Violation>& out)
      : schedule_(schedule), index_(IndexPositions(schedule)), out_(out) {}

  void Check(const StateFlow& flow, int32_t buffer_slots) {
    for (int32_t stage : flow.consumer_stages) {
      if (stage == flow.producer_stage) continue;
      for (int32_t mb = 0; mb < schedule_.num_microbatches; ++mb) CheckPair(flow, stage, mb);
    }
    if (buffer_slots > 0) CheckSlots(flow, buffer_slots);
  }

 private:
  struct Where {
    int32_t rank = kAbsent;
    int32_t position = kAbsent;
    Action action;
  };

  Where Find(int32_t stage, ActionKind kind, int32_t mb) const {
    Action action{StageId(stage), kind, MicrobatchId(mb)};
    size_t slot = ActionSlot(schedule_, action);
    if (kind == ActionKind::kBackward && index_.rank[slot] == kAbsent) {
      action.kind = ActionKind::kInputGrad;  // split backward: I carries the dState
      slot = ActionSlot(schedule_, action);
    }
    return {index_.rank[slot], index_.position[slot], action};
  }

  static std::string Describe(const StateFlow& flow) {
    return std::string(StateKindName(flow.kind)) + " of layer " +
           std::to_string(flow.producer_layer) + " (stage " + std::to_string(flow.producer_stage) +
           ")";
  }

  // "stage 3 (layer 6)": the consumers of `flow` on `stage`.
  static std::string Consumers(const StateFlow& flow, int32_t stage) {
    std::string layers;
    for (size_t index = 0; index < flow.consumer_layers.size(); ++index) {
      if (index < flow.consumer_layer_stages.size() && flow.consumer_layer_stages[index] != stage) {
        continue;
      }
      layers += (layers.empty() ? "" : ", ") + std::to_string(flow.consumer_layers[index]);
    }
    return "stage " + std::to_string(stage) + " (layer " + layers + ")";
  }

  // Same rank only: across ranks the dependencies order them, or the deadlock check reports it.
  void CheckPair(const StateFlow& flow, int32_t stage, int32_t mb) {
    const Where make = Find(flow.producer_stage, ActionKind::kForward, mb);
    const Where use = Find(stage, ActionKind::kForward, mb);
    if (make.rank != kAbsent && make.rank == use.rank && use.position < make.position) {
      out_.push_back({ViolationKind::kStateBeforeProducer, use.rank, FormatAction(use.action),
                      FormatAction(use.action) + " (position " + std::to_string(use.position) +
                          ") runs " + Consumers(flow, stage) + ", which reads " + Describe(flow) +
                          ", but " + FormatAction(make.action) + " makes it later (position " +
                          std::to_string(make.position) + ")",
                      "move " + FormatAction(make.action) + " before " + FormatAction(use.action) +
                          " in rank " + std::to_string(use.rank) + "'s row"});
    }
    const Where producer_back = Find(flow.producer_stage, ActionKind::kBackward, mb);
    const Where consumer_back = Find(stage, ActionKind::kBackward, mb);
    if (!flow.differentiable || producer_back.rank == kAbsent ||
        producer_back.rank != consumer_back.rank ||
        producer_back.position > consumer_back.position) {
      return;
    }
    out_.push_back({ViolationKind::kProducerBackwardFirst, producer_back.rank,
                    FormatAction(producer_back.action),
                    FormatAction(producer_back.action) + " (position " +
                        std::to_string(producer_back.position) + ") is the backward of " +
                        Describe(flow) + ", but the dState of " + Consumers(flow, stage) +
                        " comes from " + FormatAction(consumer_back.action) + " (position " +
                        std::to_string(consumer_back.position) + ")",
                    "move " + FormatAction(consumer_back.action) + " before " +
                        FormatAction(producer_back.action)});
  }

  // With k slots, microbatch j + k reuses j's slot: on every rank holding the state, its first
  // forward there must come after j's last backward there.
  void CheckSlots(const StateFlow& flow, int32_t slots) {
    const std::vector<int32_t> holders = HolderStages(flow);
    for (int32_t rank = 0; rank < schedule_.num_ranks; ++rank) {
      for (int32_t mb = 0; mb + slots < schedule_.num_microbatches; ++mb) {
        const Where last_read = Extreme(holders, rank, ActionKind::kBackward, mb, true);
        const Where overwrite = Extreme(holders, rank, ActionKind::kForward, mb + slots, false);
        if (last_read.rank == kAbsent || overwrite.rank == kAbsent ||
            overwrite.position > last_read.position) {
          continue;
        }
        out_.push_back(
            {ViolationKind::kStaleRead, rank, FormatAction(last_read.action),
             "with " + std::to_string(slots) + (slots == 1 ? " buffer slot, " : " buffer slots, ") +
                 FormatAction(overwrite.action) + " (position " +
                 std::to_string(overwrite.position) + ") overwrites the slot of microbatch " +
                 std::to_string(mb) + "'s " + Describe(flow) + " before its last read by " +
                 FormatAction(last_read.action) + " (position " +
                 std::to_string(last_read.position) + "): a stale read",
             "raise state_buffer_slots to at least the microbatches this rank keeps in flight, "
             "or reorder so the backward comes first"});
      }
    }
  }

  // Among `stages` on `rank`: the latest (or earliest) action of `kind` for `mb`.
  Where Extreme(const std::vector<int32_t>& stages, int32_t rank, ActionKind kind, int32_t mb,
                bool latest) const {
    Where best;
    for (int32_t stage : stages) {
      const Where where = Find(stage, kind, mb);
      if (where.rank != rank) continue;
      if (best.rank == kAbsent ||
          (latest ? where.position > best.position : where.position < best.position)) {
        best = where;
      }
    }
    return best;
  }

  const Schedule& schedule_;
  const Positions index_;
  std::vector<Violation>& out_;
};

}  // namespace

void CheckStateOrder(const Schedule& schedule, const std::vector<StateFlow>& flows,
                     int32_t buffer_slots, std::vector<Violation>& out) {
  StateOrderChecker checker(schedule, out);
  for (const StateFlow& flow : flows) checker.Check(flow, buffer_slots);
}

}  // namespace stagecraft
