// GraphEditor: adds work around the pipeline to a lowered TaskGraph — the multimodal pieces
// (src/multimodal/): a vision encoder's work on a rank's compute stream between its actions,
// devices of its own, the transfers of image embeddings and their gradients, Engram all-to-alls
// on the collective stream — with every dependency explicit, so the simulator and the reports
// treat them like the rest of the graph. Tasks are added against the graph as lowered (program
// positions name the original programs); Finish() renumbers positions and links and rebuilds the
// adjacency.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "lower/task_graph.h"

namespace stagecraft {

class GraphEditor {
 public:
  // Edits `graph` in place; it must outlive the editor. Call Finish() once, at the end.
  explicit GraphEditor(TaskGraph& graph);

  // A new device with an empty program; returns its rank.
  int32_t AddRank();

  // Work (TaskKind::kWork) on `rank`'s compute stream, before the task at `position` of the
  // rank's original program (the program's size: after its last action). Work added at one
  // position runs in the order it was added. `bytes`: activation bytes a forward holds from its
  // start, or a backward frees at its end (analysis/memory.h).
  uint32_t AddWork(int32_t rank, size_t position, PayloadKind payload, ActionKind direction,
                   MicrobatchId microbatch, Time duration, int64_t bytes);

  // A transfer `from` → `to` of `bytes`, costed on the graph's cluster (TransferTime).
  uint32_t AddTransfer(PayloadKind payload, int32_t from, int32_t to, int64_t bytes,
                       MicrobatchId microbatch);
  // ... taking `duration` (for devices outside the pipeline, whose links the caller knows).
  uint32_t AddTransfer(PayloadKind payload, int32_t from, int32_t to, int64_t bytes,
                       MicrobatchId microbatch, Time duration);

  // A collective on `rank`'s collective stream.
  uint32_t AddCollective(int32_t rank, PayloadKind payload, Time duration, int64_t bytes);

  void AddEdge(uint32_t from, uint32_t to);

  // The task now at `position` of `rank`'s original program.
  uint32_t ProgramTask(int32_t rank, size_t position) const;
  size_t OriginalProgramSize(int32_t rank) const;

  void Finish();

 private:
  TaskGraph& graph_;
  std::vector<std::vector<uint32_t>> original_programs_;
  // (rank, position, order added, task) for each work task.
  std::vector<std::pair<std::pair<int32_t, size_t>, uint32_t>> inserted_;
  std::vector<std::pair<uint32_t, uint32_t>> new_edges_;
  bool finished_ = false;
};

}  // namespace stagecraft
