#include "model/engine_host.h"

namespace stagecraft {

double HostSecondsPerKernel(TrainingEngine engine, const KernelModel& device) {
  if (engine == TrainingEngine::kMegatronDeepSpeed) {
    return kMegatronDeepSpeedHostSecondsPerLayer / kGptLayerKernelsWithRecompute;
  }
  return device.host_seconds_per_kernel;
}

const char* HostSecondsSource(TrainingEngine engine) {
  switch (engine) {
    case TrainingEngine::kMegatronDeepSpeed:
      return "megatron-deepspeed, measured: vTrain's micro-batch-1 floor";
    case TrainingEngine::kUnstated:
      return "assumed; parallel.engine not given";
    default:
      return "assumed; no measurement of this engine's host time";
  }
}

}  // namespace stagecraft
