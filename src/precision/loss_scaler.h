// Dynamic loss scaling for fp16/bf16 mixed precision, with the semantics of the two common
// implementations (defaults from the reference facts):
//   - PyTorch torch.amp.GradScaler: initial 2^16; after `growth_interval` (2000) steps without
//     overflow the scale doubles; an overflow halves it at once and skips the step.
//   - Megatron-LM DynamicGradScaler: initial 2^32, growth window 1000, hysteresis 2 (the scale
//     backs off only after that many overflows since the last growth), minimum 1; an overflow
//     skips the step.
// Every overflow costs one skipped optimizer step; SimulateLossScaling counts them for a given
// overflow pattern; `goodput` counts the steps it skips (fault/goodput.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace stagecraft {

struct LossScalerConfig {
  double initial_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int32_t growth_interval = 2000;  // clean steps between growths
  int32_t hysteresis = 1;          // overflows tolerated before backing off (PyTorch: 1)
  double min_scale = 0.0;          // the scale never drops below this (PyTorch: no floor)
};

LossScalerConfig TorchGradScalerConfig();     // 2^16, x2 / 2000 steps, x0.5, hysteresis 1
LossScalerConfig MegatronGradScalerConfig();  // 2^32, x2 / 1000 steps, x0.5, hysteresis 2, min 1

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(const LossScalerConfig& config);
  double scale() const { return scale_; }
  // One optimizer step; `overflow` = the gradients held an inf or NaN. Returns true when the
  // step is skipped (always on overflow).
  bool Update(bool overflow);

 private:
  LossScalerConfig config_;
  double scale_;
  int32_t growth_tracker_ = 0;
  int32_t hysteresis_tracker_;
};

struct LossScalingRun {
  int64_t steps = 0;
  int64_t skipped = 0;
  double final_scale = 0.0;
};
// Runs `steps` steps with overflows at the given step indices (0-based, sorted or not).
LossScalingRun SimulateLossScaling(const LossScalerConfig& config, int64_t steps,
                                   const std::vector<int64_t>& overflow_steps);

}  // namespace stagecraft
