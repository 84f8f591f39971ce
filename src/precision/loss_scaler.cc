#include "precision/loss_scaler.h"

#include <algorithm>
#include <unordered_set>

namespace stagecraft {

LossScalerConfig TorchGradScalerConfig() { return LossScalerConfig{}; }

LossScalerConfig MegatronGradScalerConfig() {
  LossScalerConfig config;
  config.initial_scale = 4294967296.0;  // 2^32
  config.growth_interval = 1000;
  config.hysteresis = 2;
  config.min_scale = 1.0;
  return config;
}

DynamicLossScaler::DynamicLossScaler(const LossScalerConfig& config)
    : config_(config), scale_(config.initial_scale), hysteresis_tracker_(config.hysteresis) {}

bool DynamicLossScaler::Update(bool overflow) {
  if (overflow) {
    growth_tracker_ = 0;
    if (--hysteresis_tracker_ <= 0) {
      scale_ = std::max(scale_ * config_.backoff_factor, config_.min_scale);
    }
    return true;
  }
  if (++growth_tracker_ == config_.growth_interval) {
    growth_tracker_ = 0;
    hysteresis_tracker_ = config_.hysteresis;
    scale_ *= config_.growth_factor;
  }
  return false;
}

LossScalingRun SimulateLossScaling(const LossScalerConfig& config, int64_t steps,
                                   const std::vector<int64_t>& overflow_steps) {
  const std::unordered_set<int64_t> overflows(overflow_steps.begin(), overflow_steps.end());
  DynamicLossScaler scaler(config);
  LossScalingRun run;
  run.steps = steps;
  for (int64_t step = 0; step < steps; ++step) {
    if (scaler.Update(overflows.count(step) > 0)) ++run.skipped;
  }
  run.final_scale = scaler.scale();
  return run;
}

}  // namespace stagecraft
