// Sharded Engram tables (csa2.md, "Engram at scale"): per token 24 lookups (n-gram orders 2-4 x
// 8 hash heads) of 256 values, each table row FP8 with a scale per 32 columns, 264 bytes; the
// rows are sharded over G owners, so an owner holds (rows / G) · 264 bytes of each table.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "core/time.h"
#include "hardware/cluster_spec.h"
#include "lower/task_graph.h"
#include "model/multimodal_spec.h"
#include "sim/simulator.h"

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

struct EngramTraffic {
  int64_t id_bytes = 0;   // per rank and Engram layer, sent (and received) by the ids' all-to-all
  int64_t row_bytes = 0;  // ... by the rows' all-to-all
  int64_t gradient_bytes = 0;  // ... by the gradients' all-to-all
  Time fetch;                  // ids + rows (+ the host reads), per Engram layer
  Time gradient;               // gradients (+ the host writes), per Engram layer
};

// The tables of a model with `engram_layers` Engram layers, sharded as `sharding` says.
EngramSpec EngramTables(const EngramSharding& sharding, int32_t engram_layers);

// `tokens`: the local batch one rank looks up per iteration (m · b · s / cp). `per_node`: the
// owners sharing a node.
EngramTraffic EngramIterationTraffic(const EngramSpec& spec, const EngramSharding& sharding,
                                     int64_t tokens, const ClusterSpec& cluster, int32_t per_node);

// Adds the all-to-alls to `graph` for the Engram layers of each stage (`layers_per_stage[s]`):
// the fetch on the stage rank's collective stream from the start, the stage's first forward
// waiting for it; the gradients after the stage's last backward.
void AddEngramExchanges(const std::vector<int32_t>& layers_per_stage, const EngramTraffic& traffic,
                        TaskGraph& graph);

// The Engram traffic in a finished trace: its time, and how long a stage's first forward waited
// for its fetch after everything else it needed was there. (What the traffic adds to the step
// in all, the fetches and the gradients queued before the data-parallel reduction, is the
// difference to a run without it: the CLI simulates both.)
struct EngramExposure {
  Time fetch;        // the Engram fetch time summed over the collectives
  Time fetch_delay;  // the longest a stage's first forward waited for its fetch alone
  Time gradient;     // the gradient all-to-all time summed
};
EngramExposure MeasureEngramExposure(const TaskGraph& graph, const Trace& trace);

// Checks `owners` against the ranks that hold an Engram layer's stage (dp · cp of them): it must
// divide them. Messages name multimodal.engram.owners.
Status CheckEngramSharding(const EngramSharding& sharding, int32_t stage_peers,
                           int32_t engram_layers);

}  // namespace stagecraft
