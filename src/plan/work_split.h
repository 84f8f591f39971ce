// The planner's MPI work split (`mpirun -n K stagecraft plan ...`, when built with MPI): the
// same WorkSplit interface as the threads of core/work_split.h, its pieces taken by the
// processes of the MPI job.
#pragma once

#include <memory>

#include "core/result.h"
#include "core/work_split.h"

namespace stagecraft {

// Under mpirun (an MPI world of more than one process): the MPI split, with MPI initialized
// here and finalized at exit; nullptr when this process was not started by mpirun. An error when
// it was but this stagecraft was built without MPI (each process would plan alone and print).
Result<std::unique_ptr<WorkSplit>> MpiSplitFromEnvironment();

}  // namespace stagecraft
