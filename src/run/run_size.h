// How much memory a run takes, estimated from its shape before anything is allocated, and the one
// check of it that every command simulating a run shares: simulate and check (generated and CSV
// schedules, with or without a trace), and the planner on each candidate (issue 35, D3-D5).
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace stagecraft {

// A run's shape as the estimate reads it.
struct RunSize {
  int64_t ranks = 1;         // pipeline ranks (pp; a CSV's rows)
  int64_t stages = 1;        // pp x vpp (a CSV's highest stage index + 1)
  int64_t microbatches = 1;  // m
  bool trace = false;        // a Chrome trace is written (--trace): its events are held too
};

// The estimate's terms. A run holds about 5 tasks per stage and microbatch (its F, I and W
// actions and the two transfers across the stage's cut); simulate measured about 170 B per task
// in a Debug build (schedule, graph, trace, metrics), counted as 256. A Chrome trace adds its
// events, their text and the memory counters: about 530 B per task measured (Release, pp 4,
// 10^5 microbatches: 1.30 GB with --trace, 0.24 GB without), counted as 768. Each rank holds its
// streams, metrics and memory timeline whatever its tasks: about 660 B measured (pp 10^5, one
// microbatch), counted as 1 KiB.
inline constexpr int64_t kTasksPerStageMicrobatch = 5;
inline constexpr int64_t kBytesPerTask = 256;
inline constexpr int64_t kTraceBytesPerTask = 768;
inline constexpr int64_t kBytesPerRank = 1024;
// The most a run may take: 2 GiB (2^23 tasks without a trace, 2^21 with one).
inline constexpr int64_t kMaxRunBytes = int64_t{1} << 31;

// The estimated bytes of a run of `size` (long double: the factors may be near 2^31 each).
long double EstimateRunBytes(const RunSize& size);

// `bytes` in GiB, with one decimal unless whole ("9.3 GiB", "2 GiB").
std::string RunGibText(long double bytes);

// The most microbatches a run of `size`'s ranks, stages and trace may have within kMaxRunBytes
// (0 when not even one fits).
int64_t MaxMicrobatches(const RunSize& size);

// Ok when the estimate is within kMaxRunBytes; else an error naming `shape` (where the counts come
// from: "pp 4 x vpp 2", "a.csv's highest indices"), the estimate, the limit, the microbatches that
// would fit, and `lower` (the flags or inputs to lower), plus --trace when a trace is asked for.
Status CheckRunSize(const RunSize& size, const std::string& shape, const std::string& lower);

}  // namespace stagecraft
