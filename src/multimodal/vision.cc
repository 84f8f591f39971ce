#include "multimodal/vision.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "comm/collective.h"
#include "lower/graph_edit.h"
#include "model/layer_costs.h"
#include "multimodal/image_sharding.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

constexpr uint32_t kNoTask = UINT32_MAX;

// Gaps shorter than this are left alone: a piece of encoder work has a launch cost of its own.
constexpr int64_t kMinPieceNs = 10'000;

Time Scaled(Time time, double factor) {
  return Time::Nanoseconds(std::llround(static_cast<double>(time.ns()) * factor));
}

int64_t ScaledBytes(int64_t bytes, double factor) {
  return std::llround(static_cast<double>(bytes) * factor);
}

// Where the first stage runs each microbatch: its forward and the backward that yields the
// gradient of its input (B, or I when the backward is split).
struct FirstStage {
  std::vector<uint32_t> forward;   // [microbatch]
  std::vector<uint32_t> backward;  // [microbatch]
};

Result<FirstStage> FindFirstStage(const TaskGraph& graph, int32_t microbatches) {
  FirstStage first;
  first.forward.assign(static_cast<size_t>(microbatches), kNoTask);
  first.backward.assign(static_cast<size_t>(microbatches), kNoTask);
  for (uint32_t task = 0; task < graph.num_tasks(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.kind != TaskKind::kCompute || info.action.stage.value() != 0) continue;
    const int32_t mb = info.action.microbatch.value();
    if (mb >= microbatches) continue;
    if (info.action.kind == ActionKind::kForward) first.forward[mb] = task;
    if (info.action.kind == ActionKind::kBackward || info.action.kind == ActionKind::kInputGrad) {
      first.backward[mb] = task;
    }
  }
  for (int32_t mb = 0; mb < microbatches; ++mb) {
    if (first.forward[mb] == kNoTask || first.backward[mb] == kNoTask) {
      return Error{
          "vision encoder: the schedule has no forward and backward of stage 0 for "
          "microbatch " +
          std::to_string(mb)};
    }
  }
  return first;
}

// A position of `rank`'s original program before which work may go: never between the two
// halves of an F&B op (the tail is `overlapped`).
size_t Before(const TaskGraph& graph, const GraphEditor& editor, int32_t rank, size_t position) {
  while (position > 0 && position < editor.OriginalProgramSize(rank) &&
         graph.tasks[editor.ProgramTask(rank, position)].action.overlapped) {
    --position;
  }
  return position;
}

size_t After(const TaskGraph& graph, const GraphEditor& editor, int32_t rank, size_t position) {
  size_t next = position + 1;
  while (next < editor.OriginalProgramSize(rank) &&
         graph.tasks[editor.ProgramTask(rank, next)].action.overlapped) {
    ++next;
  }
  return next;
}

Time Sum(const std::vector<Time>& times) {
  return std::accumulate(times.begin(), times.end(), Time());
}

void PlaceColocated(const VisionWork& work, const FirstStage& first, TaskGraph& graph,
                    GraphEditor& editor) {
  for (size_t mb = 0; mb < work.forward.size(); ++mb) {
    // Copies, not references: adding work grows graph.tasks.
    const Task forward = graph.tasks[first.forward[mb]];
    const Task backward = graph.tasks[first.backward[mb]];
    const MicrobatchId id(static_cast<int32_t>(mb));
    const size_t before =
        Before(graph, editor, forward.rank, static_cast<size_t>(forward.position));
    const size_t after =
        After(graph, editor, backward.rank, static_cast<size_t>(backward.position));
    const uint32_t encode =
        editor.AddWork(forward.rank, before, PayloadKind::kVisionForward, ActionKind::kForward, id,
                       work.forward[mb], work.activation_bytes[mb]);
    editor.AddEdge(encode, first.forward[mb]);
    const uint32_t back =
        editor.AddWork(backward.rank, after, PayloadKind::kVisionBackward, ActionKind::kBackward,
                       id, work.backward[mb], work.activation_bytes[mb]);
    editor.AddEdge(first.backward[mb], back);
  }
}

// Every pipeline rank encodes a share of all the local batch's images: largest first to the
// least loaded rank (ties: the lower rank), so the shares are even within one image. A rank
// encodes its share of each microbatch in turn before its first action and runs the backwards
// after its last; the first stage's F of j waits for every share of j.
void PlaceDecoupled(const VisionWork& work, const FirstStage& first, TaskGraph& graph,
                    GraphEditor& editor) {
  struct Image {
    int32_t mb;
    Time forward;
    double share;  // of its microbatch (by tokens)
  };
  std::vector<Image> images;
  const size_t microbatches = work.forward.size();
  for (size_t mb = 0; mb < microbatches; ++mb) {
    const int64_t total_tokens =
        std::accumulate(work.image_tokens[mb].begin(), work.image_tokens[mb].end(), int64_t{0});
    for (int32_t tokens : work.image_tokens[mb]) {
      // The token share is exact for the linear terms and close for the N_p² one.
      const double share = static_cast<double>(tokens) / static_cast<double>(total_tokens);
      images.push_back({static_cast<int32_t>(mb), Scaled(work.forward[mb], share), share});
    }
  }
  std::vector<size_t> order(images.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return images[a].forward > images[b].forward; });
  const int32_t ranks = graph.num_ranks;
  std::vector<Time> load(static_cast<size_t>(ranks));
  // [rank][microbatch] the rank's share of the microbatch.
  std::vector<std::vector<double>> share(static_cast<size_t>(ranks),
                                         std::vector<double>(microbatches, 0.0));
  for (size_t index : order) {
    const auto rank =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[rank] += images[index].forward;
    share[rank][images[index].mb] += images[index].share;
  }
  for (int32_t rank = 0; rank < ranks; ++rank) {
    for (size_t mb = 0; mb < microbatches; ++mb) {
      const double part = share[rank][mb];
      if (part <= 0) continue;
      const MicrobatchId id(static_cast<int32_t>(mb));
      const int64_t activation = ScaledBytes(work.activation_bytes[mb], part);
      const int64_t embedding = ScaledBytes(work.embedding_bytes[mb], part);
      const uint32_t encode =
          editor.AddWork(rank, 0, PayloadKind::kVisionForward, ActionKind::kForward, id,
                         Scaled(work.forward[mb], part), activation);
      const uint32_t back =
          editor.AddWork(rank, editor.OriginalProgramSize(rank), PayloadKind::kVisionBackward,
                         ActionKind::kBackward, id, Scaled(work.backward[mb], part), activation);
      const int32_t target = graph.tasks[first.forward[mb]].rank;
      if (target == rank) {
        editor.AddEdge(encode, first.forward[mb]);
      } else {
        const uint32_t send =
            editor.AddTransfer(PayloadKind::kVisionEmbedding, rank, target, embedding, id);
        editor.AddEdge(encode, send);
        editor.AddEdge(send, first.forward[mb]);
      }
      const int32_t source = graph.tasks[first.backward[mb]].rank;
      if (source == rank) {
        editor.AddEdge(first.backward[mb], back);
      } else {
        const uint32_t grad =
            editor.AddTransfer(PayloadKind::kVisionGradient, source, rank, embedding, id);
        editor.AddEdge(first.backward[mb], grad);
        editor.AddEdge(grad, back);
      }
    }
  }
}

// The encoder's own devices: dp replicas of a tp × pp layout; microbatch j on replica j mod dp.
// A replica runs its work in the order the first stage needs it, taken from the pipeline run
// alone: a backward keyed by when the first stage's backward of its microbatch ends, a forward
// by when the first stage starts the F of the microbatch `lead` places before it (backward
// first on a tie). Every edge this adds points forward in the pipeline's time, so it cannot
// close a cycle (whatever the schedule, DualPipe's two directions included), and a replica
// holds the activations of at most about twice the microbatches the first stage holds. The
// encoder's stages are linked in a node, its last stage to the first language-model stage over
// the network.
int32_t PlaceDisaggregated(const VisionSpec& spec, const VisionWork& work, const FirstStage& first,
                           TaskGraph& graph, GraphEditor& editor) {
  const int32_t dp = spec.dp();
  const int32_t pp = spec.pp;
  const double per_stage = 1.0 / (spec.tp * pp);
  const Trace alone = Simulate(graph);
  const int32_t base = graph.num_ranks;
  for (int32_t index = 0; index < dp * pp; ++index) editor.AddRank();
  const ClusterSpec& cluster = graph.cluster;
  const auto link_time = [&](const LinkSpec& link, int64_t bytes) {
    return LinkTransferTime(cluster, link, bytes, graph.cost_p2p);
  };
  const size_t microbatches = work.forward.size();
  const bool known = !alone.deadlock.has_value();
  // When the first stage needs each microbatch's embeddings and returns their gradient.
  std::vector<std::pair<Time, size_t>> needed;
  std::vector<std::pair<Time, size_t>> returned;
  for (size_t mb = 0; mb < microbatches; ++mb) {
    needed.emplace_back(known ? alone.timings[first.forward[mb]].start : Time(), mb);
    returned.emplace_back(known ? alone.timings[first.backward[mb]].end : Time::Max(), mb);
  }
  std::sort(needed.begin(), needed.end());
  std::sort(returned.begin(), returned.end());
  // The most microbatches the first stage holds at once (needed, not yet returned).
  size_t holds = 1;
  for (size_t k = 0, back = 0; k < needed.size(); ++k) {
    while (back < returned.size() && returned[back].first <= needed[k].first) ++back;
    holds = std::max(holds, k + 1 - back);
  }
  // A replica runs ahead of that need by what it holds (1F1B's warm-up), so that a slow encoder
  // can keep working while the pipeline has not yet returned a gradient: each forward takes the
  // time the first stage needed the microbatch `lead` places before it. Moving forwards earlier
  // only removes waits, so it adds no cycle.
  const size_t lead = (holds + static_cast<size_t>(dp) - 1) / static_cast<size_t>(dp);
  // (key, backward first, microbatch, is forward), sorted: the encoder's program order.
  std::vector<std::tuple<Time, int, size_t, bool>> order;
  std::vector<std::vector<Time>> replica_needs(static_cast<size_t>(dp));
  for (const auto& [time, mb] : needed) replica_needs[mb % static_cast<size_t>(dp)].push_back(time);
  std::vector<size_t> seen(static_cast<size_t>(dp), 0);
  for (const auto& [time, mb] : needed) {
    const size_t replica = mb % static_cast<size_t>(dp);
    const size_t index = seen[replica]++;
    const Time key = index < lead ? Time() : replica_needs[replica][index - lead];
    order.emplace_back(key, 1, mb, true);
  }
  for (const auto& [time, mb] : returned) order.emplace_back(time, 0, mb, false);
  std::sort(order.begin(), order.end());
  // [microbatch][encoder stage] its forward and backward work.
  std::vector<std::vector<uint32_t>> forward(microbatches), backward(microbatches);
  for (const auto& [key, tie, mb, is_forward] : order) {
    const int32_t replica = static_cast<int32_t>(mb) % dp;
    const MicrobatchId id(static_cast<int32_t>(mb));
    for (int32_t stage = 0; stage < pp; ++stage) {
      const int32_t rank = base + replica * pp + stage;
      const uint32_t task = editor.AddWork(
          rank, 0, is_forward ? PayloadKind::kVisionForward : PayloadKind::kVisionBackward,
          is_forward ? ActionKind::kForward : ActionKind::kBackward, id,
          Scaled(is_forward ? work.forward[mb] : work.backward[mb], per_stage),
          ScaledBytes(work.activation_bytes[mb], per_stage));
      (is_forward ? forward : backward)[mb].push_back(task);
    }
  }
  for (size_t mb = 0; mb < microbatches; ++mb) {
    const MicrobatchId id(static_cast<int32_t>(mb));
    int64_t patches = 0;
    for (int32_t tokens : work.image_tokens[mb]) {
      patches += static_cast<int64_t>(tokens) * spec.unshuffle * spec.unshuffle;
    }
    const int64_t cut_bytes = patches * spec.hidden * 2;  // [N_p, d_v] bf16 at a stage cut
    const int32_t replica = static_cast<int32_t>(mb) % dp;
    for (int32_t stage = 0; stage + 1 < pp; ++stage) {
      const int32_t from = base + replica * pp + stage;
      const Time time = link_time(cluster.intra_node, cut_bytes);
      const uint32_t ahead =
          editor.AddTransfer(PayloadKind::kActivation, from, from + 1, cut_bytes, id, time);
      editor.AddEdge(forward[mb][stage], ahead);
      editor.AddEdge(ahead, forward[mb][stage + 1]);
      const uint32_t back =
          editor.AddTransfer(PayloadKind::kGradient, from + 1, from, cut_bytes, id, time);
      editor.AddEdge(backward[mb][stage + 1], back);
      editor.AddEdge(back, backward[mb][stage]);
    }
    const int32_t last = base + replica * pp + pp - 1;
    const Time time = link_time(cluster.inter_node, work.embedding_bytes[mb]);
    const int32_t target = graph.tasks[first.forward[mb]].rank;
    const uint32_t send = editor.AddTransfer(PayloadKind::kVisionEmbedding, last, target,
                                             work.embedding_bytes[mb], id, time);
    editor.AddEdge(forward[mb][pp - 1], send);
    editor.AddEdge(send, first.forward[mb]);
    const int32_t source = graph.tasks[first.backward[mb]].rank;
    const uint32_t grad = editor.AddTransfer(PayloadKind::kVisionGradient, source, last,
                                             work.embedding_bytes[mb], id, time);
    editor.AddEdge(first.backward[mb], grad);
    editor.AddEdge(grad, backward[mb][pp - 1]);
  }
  return dp * pp;
}

// ---- bubble-fill --------------------------------------------------------------------------

// A share of one microbatch's encoder work on one rank.
struct Piece {
  int32_t rank = 0;
  size_t position = 0;  // before this task of the rank's original program
  int32_t mb = 0;
  bool forward = true;
  Time duration;
  int64_t activation = 0;  // held from the forward piece's start to its backward's end
  int64_t embedding = 0;   // sent to the first stage (its gradient comes back)
  bool in_gap = false;     // placed into an idle gap of the pipeline
};

// Builds the graph with `pieces` added to a copy of `base`.
Result<TaskGraph> WithPieces(const TaskGraph& base, const FirstStage& first,
                             const std::vector<Piece>& pieces) {
  TaskGraph graph = base;
  GraphEditor editor(graph);
  for (const Piece& piece : pieces) {
    const MicrobatchId id(piece.mb);
    const uint32_t work =
        editor.AddWork(piece.rank, piece.position,
                       piece.forward ? PayloadKind::kVisionForward : PayloadKind::kVisionBackward,
                       piece.forward ? ActionKind::kForward : ActionKind::kBackward, id,
                       piece.duration, piece.activation);
    if (piece.forward) {
      const int32_t target = graph.tasks[first.forward[piece.mb]].rank;
      if (target == piece.rank) {
        editor.AddEdge(work, first.forward[piece.mb]);
      } else {
        const uint32_t send = editor.AddTransfer(PayloadKind::kVisionEmbedding, piece.rank, target,
                                                 piece.embedding, id);
        editor.AddEdge(work, send);
        editor.AddEdge(send, first.forward[piece.mb]);
      }
    } else {
      const int32_t source = graph.tasks[first.backward[piece.mb]].rank;
      if (source == piece.rank) {
        editor.AddEdge(first.backward[piece.mb], work);
      } else {
        const uint32_t grad = editor.AddTransfer(PayloadKind::kVisionGradient, source, piece.rank,
                                                 piece.embedding, id);
        editor.AddEdge(first.backward[piece.mb], grad);
        editor.AddEdge(grad, work);
      }
    }
  }
  editor.Finish();
  return graph;
}

struct Gap {
  int32_t rank = 0;
  size_t position = 0;  // work placed here runs before this task of the original program
  Time cursor;          // where the next piece may start
  Time end;
};

// The idle stretches of each rank's compute stream in `trace` of a graph built from `base`
// (whose original programs name the positions): before each action (after the previous one, or
// the start) and after the last action until the run ends. Never inside an F&B op.
std::vector<Gap> FindGaps(const TaskGraph& base, const TaskGraph& graph, const Trace& trace) {
  Time run_end;
  for (const TaskTiming& timing : trace.timings) run_end = std::max(run_end, timing.end);
  std::vector<Gap> gaps;
  for (int32_t rank = 0; rank < base.num_ranks; ++rank) {
    const std::vector<uint32_t>& program = base.programs[rank];
    // Work placed before the first action (the prologue) ends the first gap's left edge.
    Time previous_end;
    for (uint32_t task : graph.programs[rank]) {
      if (graph.tasks[task].kind != TaskKind::kWork) break;
      previous_end = trace.timings[task].end;
    }
    for (size_t position = 0; position <= program.size(); ++position) {
      const bool at_end = position == program.size();
      if (!at_end && base.tasks[program[position]].action.overlapped) {
        previous_end = std::max(previous_end, trace.timings[program[position]].end);
        continue;
      }
      const Time start = at_end ? run_end : trace.timings[program[position]].start;
      if ((start - previous_end).ns() >= kMinPieceNs) {
        gaps.push_back({rank, position, previous_end, start});
      }
      if (!at_end) previous_end = trace.timings[program[position]].end;
    }
  }
  std::stable_sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) {
    return std::pair(a.cursor, a.rank) < std::pair(b.cursor, b.rank);
  });
  return gaps;
}

// A forward piece: `part` of microbatch `mb`'s encoder work, with that share of its activations
// and embeddings.
Piece ShareOf(const VisionWork& work, int32_t mb, Time part, int32_t rank, size_t position) {
  const double share = static_cast<double>(part.ns()) / static_cast<double>(work.forward[mb].ns());
  Piece piece;
  piece.rank = rank;
  piece.position = position;
  piece.mb = mb;
  piece.duration = part;
  piece.activation = ScaledBytes(work.activation_bytes[mb], share);
  piece.embedding = ScaledBytes(work.embedding_bytes[mb], share);
  return piece;
}

// When the embedding gradient of microbatch `mb` reaches `rank`.
Time BackwardReady(const VisionWork& work, int32_t mb, int32_t rank, const TaskGraph& graph,
                   const Trace& trace, const FirstStage& first) {
  const Task& source = graph.tasks[first.backward[mb]];
  const Time end = trace.timings[first.backward[mb]].end;
  if (source.rank == rank) return end;
  return end + TransferTime(graph.cluster, DeviceId(source.rank), DeviceId(rank),
                            work.embedding_bytes[mb], graph.cost_p2p);
}

// Idle time left on `rank` after `ready`, in gaps long enough for a piece.
Time Capacity(const std::vector<Gap>& gaps, int32_t rank, Time ready) {
  Time total;
  for (const Gap& gap : gaps) {
    const Time begin = std::max(gap.cursor, ready);
    if (gap.rank == rank && (gap.end - begin).ns() >= kMinPieceNs) total += gap.end - begin;
  }
  return total;
}

// The backward of `forward` (a forward piece) on its rank, where its activations are: into the
// rank's gaps after `ready` as far as they go, the rest after the rank's last action. Appends
// the pieces.
void PlaceBackwardOf(const Piece& forward, Time duration, Time ready, size_t program_size,
                     std::vector<Gap>& gaps, std::vector<Piece>& pieces) {
  Time left = duration;
  std::vector<Piece> placed;
  for (Gap& gap : gaps) {
    if (left.ns() == 0) break;
    if (gap.rank != forward.rank) continue;
    const Time begin = std::max(gap.cursor, ready);
    if ((gap.end - begin).ns() < kMinPieceNs) continue;
    Piece piece = forward;
    piece.position = gap.position;
    piece.forward = false;
    piece.duration = std::min(left, gap.end - begin);
    piece.in_gap = true;
    placed.push_back(piece);
    gap.cursor = begin + piece.duration;
    left -= piece.duration;
  }
  if (left.ns() > 0) {
    Piece piece = forward;
    piece.position = program_size;
    piece.forward = false;
    piece.duration = left;
    piece.in_gap = false;
    placed.push_back(piece);
  }
  // Each piece frees, and receives the embedding gradient of, its share of the forward's bytes.
  int64_t freed = 0;
  int64_t received = 0;
  for (size_t k = 0; k < placed.size(); ++k) {
    const bool last = k + 1 == placed.size();
    const double share =
        static_cast<double>(placed[k].duration.ns()) / static_cast<double>(duration.ns());
    placed[k].activation =
        last ? forward.activation - freed : ScaledBytes(forward.activation, share);
    placed[k].embedding =
        last ? forward.embedding - received : ScaledBytes(forward.embedding, share);
    freed += placed[k].activation;
    received += placed[k].embedding;
  }
  pieces.insert(pieces.end(), placed.begin(), placed.end());
}

// Microbatch `mb`'s encoder work into the gaps. Its forward pieces end before the first stage's
// F of `mb` starts (less the embeddings' transfer from another rank). A first pass takes only as
// much forward work on a rank as that rank can also hide the backward of (after the embedding
// gradient arrives); later passes place the rest of the forward anyway, its backward then partly
// after the rank's last action. False, changing nothing, when the forward does not fit.
bool PlaceMicrobatch(const VisionWork& work, int32_t mb, const TaskGraph& graph, const Trace& trace,
                     const FirstStage& first, std::vector<Gap>& gaps, std::vector<Piece>& pieces) {
  const Task& consumer = graph.tasks[first.forward[mb]];
  const Time deadline = trace.timings[first.forward[mb]].start;
  const double ratio = static_cast<double>(work.backward[mb].ns()) /
                       static_cast<double>(std::max<int64_t>(1, work.forward[mb].ns()));
  Time left = work.forward[mb];
  std::vector<Gap> trial = gaps;
  std::vector<Piece> placed;
  const int32_t ranks = graph.num_ranks;
  for (const int pass : {0, 1, 2}) {
    const bool hide_backward = pass == 0;
    // Pass 1 spreads what pass 0 could not hide evenly over the ranks, so that the backwards
    // left for after the pipeline run side by side; pass 2 takes whatever still fits.
    const Time quota = pass == 1 ? Time::Nanoseconds((left.ns() + ranks - 1) / ranks) : left;
    std::vector<Time> taken(static_cast<size_t>(ranks));
    for (size_t index = 0; index < trial.size() && left.ns() > 0; ++index) {
      Gap& gap = trial[index];
      const Time transfer =
          gap.rank == consumer.rank
              ? Time()
              : TransferTime(graph.cluster, DeviceId(gap.rank), DeviceId(consumer.rank),
                             work.embedding_bytes[mb], graph.cost_p2p);
      const Time end = std::min(gap.end, deadline - transfer);
      if ((end - gap.cursor).ns() < kMinPieceNs) continue;
      Time part = std::min({left, end - gap.cursor, quota - taken[gap.rank]});
      const Time ready = BackwardReady(work, mb, gap.rank, graph, trace, first);
      if (hide_backward) {
        part = std::min(part, Scaled(Capacity(trial, gap.rank, ready), 1.0 / ratio));
        if (part.ns() < kMinPieceNs && part != left) continue;
      }
      if (part.ns() <= 0) continue;
      Piece piece = ShareOf(work, mb, part, gap.rank, gap.position);
      piece.in_gap = true;
      gap.cursor += part;
      left -= part;
      taken[gap.rank] += part;
      placed.push_back(piece);
      PlaceBackwardOf(piece, Scaled(part, ratio), ready, graph.programs[gap.rank].size(), trial,
                      placed);
    }
  }
  if (left.ns() > 0) return false;
  gaps = std::move(trial);
  pieces.insert(pieces.end(), placed.begin(), placed.end());
  return true;
}

Result<VisionPlacementStats> PlaceBubbleFill(const VisionWork& work, const FirstStage& first,
                                             TaskGraph& graph) {
  const TaskGraph base = graph;
  const int32_t ranks = base.num_ranks;
  const auto microbatches = static_cast<int32_t>(work.forward.size());
  std::vector<uint8_t> in_prologue(static_cast<size_t>(microbatches), 0);
  if (microbatches > 0) in_prologue[0] = 1;  // the first stage starts with microbatch 0's images
  constexpr int kMaxRounds = 8;
  int rounds = 0;
  for (;;) {
    // The prologue: its microbatches' encoding split evenly over every rank, before the pipeline.
    std::vector<Piece> prologue;
    for (int32_t mb = 0; mb < microbatches; ++mb) {
      if (!in_prologue[mb] || work.forward[mb].ns() == 0) continue;
      const int64_t each = work.forward[mb].ns() / ranks;
      for (int32_t rank = 0; rank < ranks; ++rank) {
        const Time part = Time::Nanoseconds(
            rank + 1 == ranks ? work.forward[mb].ns() - each * (ranks - 1) : each);
        if (part.ns() > 0) prologue.push_back(ShareOf(work, mb, part, rank, 0));
      }
    }
    auto baseline = WithPieces(base, first, prologue);
    if (!baseline.ok()) return baseline.error();
    const Trace trace = Simulate(baseline.value());
    // The pipeline itself deadlocks (the prologue only feeds first-stage forwards): leave the
    // graph as it is, and the run reports the wait-for cycle.
    if (trace.deadlock) return VisionPlacementStats{};
    std::vector<Gap> gaps = FindGaps(base, baseline.value(), trace);
    std::vector<Piece> pieces = prologue;
    // The prologue's backwards first: their microbatches come back first.
    for (const Piece& piece : prologue) {
      const double ratio = static_cast<double>(work.backward[piece.mb].ns()) /
                           static_cast<double>(work.forward[piece.mb].ns());
      PlaceBackwardOf(piece, Scaled(piece.duration, ratio),
                      BackwardReady(work, piece.mb, piece.rank, base, trace, first),
                      base.programs[piece.rank].size(), gaps, pieces);
    }
    // Every microbatch that does not fit joins the prologue and the search runs again on the
    // baseline that makes; after a few rounds the rest of the microbatches join too, so it ends.
    bool fits = true;
    for (int32_t mb = 0; mb < microbatches; ++mb) {
      if (in_prologue[mb] || work.forward[mb].ns() == 0) continue;
      if (!fits && rounds >= kMaxRounds) {
        in_prologue[mb] = 1;
      } else if (!PlaceMicrobatch(work, mb, base, trace, first, gaps, pieces)) {
        in_prologue[mb] = 1;
        fits = false;
      }
    }
    ++rounds;
    if (!fits) continue;
    VisionPlacementStats stats;
    for (const Piece& piece : pieces) {
      if (!piece.in_gap) continue;
      (piece.forward ? stats.forward_in_bubbles : stats.backward_in_bubbles) += piece.duration;
    }
    for (int32_t mb = 0; mb < microbatches; ++mb) {
      if (in_prologue[mb]) stats.prologue.push_back(mb);
    }
    auto placed = WithPieces(base, first, pieces);
    if (!placed.ok()) return placed.error();
    graph = std::move(placed).value();
    return stats;
  }
}

// The encoder's gradients, reduced over every copy of the encoder (fp32, ring all-reduce) on the
// collective stream after a rank's last encoder backward: over the first stage's ranks of all
// pipeline replicas (colocated), every rank of every replica (decoupled, bubble-fill), or the
// encoder replicas of all pipeline replicas, each a tp · pp share (disaggregated). Nothing
// without a cluster to time it on.
void AddEncoderReductions(const VisionSpec& spec, int32_t pipeline_ranks, int64_t replicas,
                          VisionPlacementStats& stats, TaskGraph& graph) {
  const ClusterSpec& cluster = graph.cluster;
  if (!cluster.given) return;
  int64_t group = replicas;
  int32_t per_node = std::max(1, cluster.devices_per_node / std::max(1, pipeline_ranks));
  switch (spec.placement) {
    case VisionPlacement::kColocated:
      break;
    case VisionPlacement::kDecoupled:
    case VisionPlacement::kBubbleFill:
      group = replicas * pipeline_ranks;
      per_node = cluster.devices_per_node;
      break;
    case VisionPlacement::kDisaggregated:
      group = replicas * spec.dp();
      per_node = std::max(1, cluster.devices_per_node / (spec.tp * spec.pp));
      break;
  }
  if (group <= 1) return;
  std::vector<uint32_t> last(static_cast<size_t>(graph.num_ranks), UINT32_MAX);
  for (int32_t rank = 0; rank < graph.num_ranks; ++rank) {
    for (uint32_t task : graph.programs[rank]) {
      if (graph.tasks[task].payload == PayloadKind::kVisionBackward) last[rank] = task;
    }
  }
  GraphEditor editor(graph);
  for (int32_t rank = 0; rank < graph.num_ranks; ++rank) {
    const double params = stats.params_per_rank[rank];
    if (params <= 0 || last[rank] == UINT32_MAX) continue;
    const auto bytes = std::llround(params * 4);  // fp32 gradients
    const Time time = RingTime(cluster, Collective::kAllReduce, static_cast<int32_t>(group),
                               per_node, static_cast<double>(bytes));
    const uint32_t reduce = editor.AddCollective(rank, PayloadKind::kDataParallel, time, bytes);
    graph.tasks[reduce].action = graph.tasks[last[rank]].action;
    editor.AddEdge(last[rank], reduce);
    stats.encoder_reduce = std::max(stats.encoder_reduce, time);
  }
  editor.Finish();
}

}  // namespace

Result<VisionPlacementStats> PlaceVision(const VisionSpec& spec, const VisionWork& work,
                                         TaskGraph& graph, int64_t replicas) {
  auto first = FindFirstStage(graph, static_cast<int32_t>(work.forward.size()));
  if (!first.ok()) return first.error();
  const int32_t pipeline_ranks = graph.num_ranks;
  VisionPlacementStats stats;
  if (spec.placement == VisionPlacement::kBubbleFill) {
    auto placed = PlaceBubbleFill(work, first.value(), graph);
    if (!placed.ok()) return placed.error();
    stats = std::move(placed).value();
  } else {
    GraphEditor editor(graph);
    switch (spec.placement) {
      case VisionPlacement::kColocated:
        PlaceColocated(work, first.value(), graph, editor);
        break;
      case VisionPlacement::kDecoupled:
        PlaceDecoupled(work, first.value(), graph, editor);
        break;
      case VisionPlacement::kDisaggregated:
        stats.encoder_ranks = PlaceDisaggregated(spec, work, first.value(), graph, editor);
        stats.encoder_devices = spec.devices;
        break;
      case VisionPlacement::kBubbleFill:
        break;
    }
    editor.Finish();
  }
  stats.work_total = Sum(work.forward) + Sum(work.backward);
  // Who holds the encoder's parameters: the first stage's rank (colocated), every pipeline rank
  // (decoupled, bubble-fill: each encodes any image), or the encoder's ranks (a 1/(tp·pp) share).
  stats.params_per_rank.assign(static_cast<size_t>(graph.num_ranks), 0.0);
  for (int32_t rank = 0; rank < graph.num_ranks; ++rank) {
    switch (spec.placement) {
      case VisionPlacement::kColocated:
        for (uint32_t task : first.value().forward) {
          if (graph.tasks[task].rank == rank) stats.params_per_rank[rank] = work.params;
        }
        break;
      case VisionPlacement::kDecoupled:
      case VisionPlacement::kBubbleFill:
        stats.params_per_rank[rank] = work.params;
        break;
      case VisionPlacement::kDisaggregated:
        if (rank >= pipeline_ranks) stats.params_per_rank[rank] = work.params / (spec.tp * spec.pp);
        break;
    }
  }
  if (!first.value().forward.empty()) {
    const int32_t first_rank = graph.tasks[first.value().forward[0]].rank;
    for (uint32_t task : graph.programs[first_rank]) {
      if (graph.tasks[task].kind == TaskKind::kWork) {
        stats.work_on_first_rank += graph.tasks[task].duration;
      }
    }
  }
  AddEncoderReductions(spec, pipeline_ranks, replicas, stats, graph);
  return stats;
}

}  // namespace stagecraft
