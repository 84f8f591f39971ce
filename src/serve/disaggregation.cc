#include "serve/disaggregation.h"

#include <algorithm>
#include <cmath>

namespace stagecraft {

double DisaggregatedRate(const DisaggregatedUnit& unit, double prefill_rps_per_instance,
                         double decode_rps_per_instance) {
  return std::min(static_cast<double>(unit.prefill_instances) * prefill_rps_per_instance,
                  static_cast<double>(unit.decode_instances) * decode_rps_per_instance);
}

double DisaggregatedRatePerGpu(const DisaggregatedUnit& unit, double prefill_rps_per_instance,
                               double decode_rps_per_instance) {
  if (unit.gpus() == 0) return 0;
  return DisaggregatedRate(unit, prefill_rps_per_instance, decode_rps_per_instance) /
         static_cast<double>(unit.gpus());
}

DisaggregatedUnit ReplicateForRate(double rate_rps, double prefill_rps_per_instance,
                                   double decode_rps_per_instance, int32_t gpus_per_instance) {
  DisaggregatedUnit unit;
  unit.gpus_per_instance = gpus_per_instance;
  // A relative 1e-9 slack keeps an exact multiple (20 / 10) from rounding up on its last bit.
  const auto instances = [rate_rps](double per_instance) {
    return static_cast<int64_t>(std::ceil(rate_rps / per_instance * (1 - 1e-9)));
  };
  unit.prefill_instances = instances(prefill_rps_per_instance);
  unit.decode_instances = instances(decode_rps_per_instance);
  return unit;
}

}  // namespace stagecraft
