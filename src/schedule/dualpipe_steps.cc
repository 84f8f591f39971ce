// The eight-step rank program shared by DualPipe and DualPipeV (DeepSeek-V3 technical report
// §3.2.1; the order of deepseek-ai/DualPipe). A rank runs two "phases": phase 0 is the stage its
// first-fed microbatches reach first, phase 1 the other. With n ranks along one direction, this
// rank at position h (0-based) and c microbatches per phase:
//   1  2(n−h−1) × F0                       warm-up of phase 0
//   2  (h+1) × (F0, F1)
//   3  (n−h−1) × (I1, W, F1)               split backward: W of the oldest deferred I
//   4  (c−2n+h+1) × (F0&B1, F1&B0)         the overlapped main loop; on the turning rank the
//                                          first F0 and B1 run one after the other
//   5  (n−h−1) × (B1, F1&B0)
//   6  (h+1) × (B1, B0)                    the second half of them split (I now, W later)
//   7  (n−h−1) × (W, I0)
//   8  (h+1) × W                           the deferred weight gradients, oldest first
// F&B ops are a forward fused with a full backward (B = I + W) of another microbatch.
#include <deque>

#include "schedule/dualpipe.h"

namespace stagecraft {
namespace {

class DualPipeRank {
 public:
  DualPipeRank(const DualPipeRankSpec& spec, std::vector<Action>& actions)
      : spec_(spec), actions_(actions) {}

  void Forward(int phase, bool overlapped = false) {
    Push(phase, ActionKind::kForward, forward_next_[phase]++, overlapped);
  }
  void Backward(int phase, bool split, bool overlapped = false) {
    const int32_t microbatch = backward_next_[phase]++;
    if (!split) {
      Push(phase, ActionKind::kBackward, microbatch, overlapped);
      return;
    }
    Push(phase, ActionKind::kInputGrad, microbatch, overlapped);
    deferred_.push_back(Action{spec_.stage[phase], ActionKind::kWeightGrad,
                               MicrobatchId(spec_.first_microbatch[phase] + microbatch)});
  }
  void Weight() {
    actions_.push_back(deferred_.front());
    deferred_.pop_front();
  }
  // F of `forward_phase` overlapped with the full B of the other phase.
  void ForwardBackward(int forward_phase) {
    Forward(forward_phase);
    Backward(1 - forward_phase, /*split=*/false, /*overlapped=*/true);
  }

 private:
  void Push(int phase, ActionKind kind, int32_t microbatch, bool overlapped) {
    Action action{spec_.stage[phase], kind,
                  MicrobatchId(spec_.first_microbatch[phase] + microbatch)};
    action.overlapped = overlapped;
    actions_.push_back(action);
  }

  const DualPipeRankSpec& spec_;
  std::vector<Action>& actions_;
  int32_t forward_next_[2] = {0, 0};
  int32_t backward_next_[2] = {0, 0};
  std::deque<Action> deferred_;  // W passes of split backwards, oldest first
};

}  // namespace

void AppendDualPipeRank(const DualPipeRankSpec& spec, std::vector<Action>& actions) {
  const int32_t n = spec.ranks_per_direction;
  const int32_t h = spec.position;
  const int32_t c = spec.microbatches_per_phase;
  DualPipeRank rank(spec, actions);
  for (int32_t i = 0; i < 2 * (n - h - 1); ++i) rank.Forward(0);
  for (int32_t i = 0; i < h + 1; ++i) {
    rank.Forward(0);
    rank.Forward(1);
  }
  for (int32_t i = 0; i < n - h - 1; ++i) {
    rank.Backward(1, /*split=*/true);
    rank.Weight();
    rank.Forward(1);
  }
  const bool turning = h == n - 1;
  for (int32_t i = 0; i < c - 2 * n + h + 1; ++i) {
    if (i == 0 && turning) {
      rank.Forward(0);  // not overlapped: the turning rank feeds its own B1 with this F0
      rank.Backward(1, /*split=*/false);
    } else {
      rank.ForwardBackward(0);
    }
    rank.ForwardBackward(1);
  }
  for (int32_t i = 0; i < n - h - 1; ++i) {
    rank.Backward(1, /*split=*/false);
    rank.ForwardBackward(1);
  }
  // Step 6 splits the backwards from the middle on: from B1 of iteration (h+1)/2 for odd h,
  // from B0 of that iteration for even h; either way h + 1 of the 2(h + 1) are split, which the
  // h + 1 W passes of step 8 (with step 7's n − h − 1) drain.
  const int32_t steps = h + 1;
  bool split = false;
  for (int32_t i = 0; i < steps; ++i) {
    if (i == steps / 2 && h % 2 == 1) split = true;
    rank.Backward(1, split);
    if (i == steps / 2 && h % 2 == 0) split = true;
    rank.Backward(0, split);
  }
  for (int32_t i = 0; i < n - h - 1; ++i) {
    rank.Weight();
    rank.Backward(0, /*split=*/true);
  }
  for (int32_t i = 0; i < h + 1; ++i) rank.Weight();
}

}  // namespace stagecraft
