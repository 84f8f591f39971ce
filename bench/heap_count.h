// The heap a benchmark program holds, counted by its replaced global operator new and delete
// (heap_count.cc, linked into the program): each block's usable size (malloc_usable_size), live
// and at its peak. Unlike the peak RSS it does not depend on what ran before in the process.
#pragma once

#include <cstdint>

namespace stagecraft {

// Starts a new peak from the bytes live now, and returns them.
int64_t ResetHeapPeak();
// The most bytes live at once since the last ResetHeapPeak.
int64_t HeapPeakBytes();

}  // namespace stagecraft
