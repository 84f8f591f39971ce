// Sharded Engram tables (csa2.md, "Engram at scale"): per token 24 lookups (n-gram orders 2-4 x
// 8 hash heads) of 256 values, each table row FP8 with a scale per 32 columns, 264 bytes; the
// rows are sharded over G owners, so an owner holds (rows / G) · 264 bytes of each table.
#pragma once

#include <cstdint>
#include <vector>

namespace stagecraft {

struct EngramSpec {
  int32_t lookups_per_token = 24;  // n-gram orders 2-4 x 8 hash heads
  int32_t values_per_row = 256;
  int32_t scale_columns = 32;  // one FP8 scale per 32 values
  // The two V4.1 tables' rows (NeMo AutoModel's DeepseekV41TextConfig engram_num_embeddings).
  std::vector<int64_t> table_rows = {384006168, 384016682};
};

// Bytes of one row: FP8 values plus one byte of scale per scale_columns (264 for V4.1).
int64_t EngramRowBytes(const EngramSpec& spec);
// Rows one token fetches from one module: lookups_per_token rows (24 x 264 = 6336 bytes).
int64_t EngramLookupBytesPerToken(const EngramSpec& spec);
// Bytes of all tables one of `owners` owners holds (rows split evenly, rounded up).
// REQUIRES: owners >= 1.
int64_t EngramOwnerBytes(const EngramSpec& spec, int32_t owners);

}  // namespace stagecraft
