// The rate searches of serve-plan share one step: halve the bracket between the highest rate
// known to meet a bound (`good`) and the lowest known to miss it (`bad`).
#pragma once

#include "core/result.h"

namespace stagecraft {

// `steps` bisections of [good, bad]: meets(rate) -> Result<bool> probes a rate (and keeps what it
// needs of a probe that meets); good rises on a meet, bad falls otherwise. Stops at an error.
template <typename Meets>
Status BisectRate(int steps, double& good, double& bad, Meets meets) {
  for (int step = 0; step < steps; ++step) {
    const double middle = (good + bad) / 2;
    auto met = meets(middle);
    if (!met.ok()) return met.error();
    (met.value() ? good : bad) = middle;
  }
  return Status::Ok();
}

}  // namespace stagecraft
