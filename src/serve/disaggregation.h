// Prefill/decode disaggregation arithmetic (DistServe, Zhong et al., OSDI'24): prefill and
// decode instances on separate GPUs, each sustaining its own SLO-bound rate; a placement unit
// of np prefill and nd decode instances serves min(np x prefill rate, nd x decode rate), and a
// target rate is met by replicating each phase's instances, ceil(rate / per-instance rate)
// of each (DistServe §4.1, Algorithm 1: the phases are sized independently).
#pragma once

#include <cstdint>

namespace stagecraft {

struct DisaggregatedUnit {
  int64_t prefill_instances = 0;
  int64_t decode_instances = 0;
  int32_t gpus_per_instance = 1;
  int64_t gpus() const { return (prefill_instances + decode_instances) * gpus_per_instance; }
};

// Requests per second the unit sustains: the slower of its two phases.
double DisaggregatedRate(const DisaggregatedUnit& unit, double prefill_rps_per_instance,
                         double decode_rps_per_instance);
// The unit's rate over its GPUs.
double DisaggregatedRatePerGpu(const DisaggregatedUnit& unit, double prefill_rps_per_instance,
                               double decode_rps_per_instance);
// The instances of each phase that serve `rate_rps`. REQUIRES: every rate > 0.
DisaggregatedUnit ReplicateForRate(double rate_rps, double prefill_rps_per_instance,
                                   double decode_rps_per_instance, int32_t gpus_per_instance = 1);

}  // namespace stagecraft
