// Context parallelism for CSA2 (csa2.md, "Context parallelism (V4 / V4.1)"): the indexer of a
// full layer scores, for a query at position t, every compressed entry it can see (⌊t/m⌋ of
// them), so a rank's scan load is the sum of ⌊t/m⌋ over its positions. Contiguous shards leave
// the last rank ≈ (2·cp − 1)/cp of the average; 2·cp zig-zag chunks (rank k takes chunks k and
// 2·cp − 1 − k) balance it to ≈ 1. Shards hold whole compression groups.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"

namespace stagecraft {

// Each rank's indexer scan load relative to the average over the ranks. Errors when the sequence
// does not split into whole compression groups per shard (contiguous: s/cp, zig-zag: s/(2·cp)
// must be a multiple of m).
Result<std::vector<double>> IndexerScanLoad(int64_t seq_len, int32_t compress_ratio, int32_t cp,
                                            bool zigzag);

}  // namespace stagecraft
