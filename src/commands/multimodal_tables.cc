// `stagecraft multimodal contrastive|contrastive-order|engram|cp|images [flags] [--json]`: the
// multimodal cost formulas as tables or JSON (src/multimodal/): contrastive-loss memory and
// traffic per loss, one contrastive step in the sequential and the overlapped order, Engram table
// bytes per owner count, the context-parallel indexer balance of contiguous and zig-zag shards;
// `images` (a sample's images over context-parallel ranks) is in multimodal_images.cc.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <ostream>
#include <sstream>

#include "commands/commands.h"
#include "core/suggest.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "multimodal/context_parallel.h"
#include "multimodal/contrastive.h"
#include "multimodal/contrastive_timeline.h"
#include "multimodal/engram.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

// "8,16,32" → the numbers, each >= 1.
Result<std::vector<int32_t>> CountList(const std::string& text, const std::string& flag) {
  std::vector<int32_t> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    try {
      size_t used = 0;
      const int value = std::stoi(item, &used);
      if (used != item.size() || value < 1) throw std::invalid_argument(item);
      values.push_back(value);
    } catch (const std::exception&) {
      return Error{flag + ": '" + item + "' is not a whole number >= 1 (expected a list such as " +
                   "8,16,32)"};
    }
  }
  if (values.empty()) return Error{flag + ": empty list (expected e.g. 8,16,32)"};
  return values;
}

// A duration flag, >= 0; `fallback` when the flag was left empty.
Result<Time> DurationFlag(const std::string& text, const std::string& flag, Time fallback) {
  if (text.empty()) return fallback;
  auto time = ParseDuration(text);
  if (!time.ok()) return Error{flag + ": " + time.error().message};
  if (time.value() < Time()) return Error{flag + ": '" + text + "' is negative (expected >= 0)"};
  return time.value();
}

// --- contrastive-order ---

// The tower and loss times from the flags, without the gathers.
Result<ContrastiveStepTimes> TowerTimesFromFlags(const MultimodalTablesSpec& flags) {
  auto vision = DurationFlag(flags.vision_forward, "--vision-forward", Time());
  if (!vision.ok()) return vision.error();
  auto text = DurationFlag(flags.text_forward, "--text-forward", Time());
  if (!text.ok()) return text.error();
  // Backward ≈ 2 × forward for trainable matmuls (csa2.md, "Per-layer cost formulas").
  auto vision_back = DurationFlag(flags.vision_backward, "--vision-backward", vision.value() * 2);
  if (!vision_back.ok()) return vision_back.error();
  auto text_back = DurationFlag(flags.text_backward, "--text-backward", text.value() * 2);
  if (!text_back.ok()) return text_back.error();
  auto loss = DurationFlag(flags.loss, "--loss", Time());
  if (!loss.ok()) return loss.error();
  ContrastiveStepTimes times;
  times.vision_forward = vision.value();
  times.text_forward = text.value();
  times.vision_backward = vision_back.value();
  times.text_backward = text_back.value();
  times.text_grad = times.vision_grad = loss.value();
  return times;
}

// The nodes of `device` that hold `ranks` ranks, as a cluster preset ("h800x8").
Result<ClusterSpec> GatherCluster(const std::string& device, int32_t ranks) {
  auto preset = FindDevicePreset(device);
  if (!preset.ok()) return Error{"--device: " + preset.error().message};
  const int32_t per_node = preset.value()->devices_per_node;
  const int32_t nodes = (ranks + per_node - 1) / per_node;
  return ClusterFromPreset(device + (nodes > 1 ? "x" + std::to_string(nodes) : ""));
}

// The tasks of one step in start order.
std::vector<uint32_t> TasksByStart(const ContrastiveStep& step) {
  std::vector<uint32_t> order(step.built.graph.num_tasks());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return step.trace.timings[a].start < step.trace.timings[b].start;
  });
  return order;
}

void PrintStepTimeline(const ContrastiveStep& step, std::ostream& out) {
  const TaskGraph& graph = step.built.graph;
  const std::vector<uint32_t> order = TasksByStart(step);
  out << ContrastiveOrderName(step.order) << " order (ms)\n"
      << "  task       stream              start               end\n";
  for (uint32_t task : order) {
    const bool work = graph.tasks[task].kind == TaskKind::kWork;
    out << "  " << PadRight(step.built.labels[task], 11) << PadRight(work ? "compute" : "comm", 8)
        << PadLeft(FormatMs(step.trace.timings[task].start), 17)
        << PadLeft(FormatMs(step.trace.timings[task].end), 18) << "\n";
  }
}

void PrintOrderHeader(const MultimodalTablesSpec& flags, const ClusterSpec& cluster,
                      const CollectiveCost& gather, const ContrastiveStepTimes& t,
                      std::ostream& out) {
  const int64_t gathered = int64_t{flags.ranks} * flags.batch * flags.width * 2;
  out << "contrastive step on one of D = " << flags.ranks << " ranks, b = " << flags.batch
      << " pairs per rank, e = " << flags.width << " (bf16 embeddings); gathers on "
      << cluster.nodes << " node(s) of " << cluster.devices_per_node << " " << flags.device << "\n";
  out << "  all-gather per modality: " << FormatBytes(gathered) << " gathered in "
      << FormatMs(gather.time) << " ms (" << gather.formula << ")\n";
  out << "  fwd(V) " << FormatMs(t.vision_forward) << ", fwd(T) " << FormatMs(t.text_forward)
      << ", bwd(V) " << FormatMs(t.vision_backward) << ", bwd(T) " << FormatMs(t.text_backward)
      << ", grad(T) = grad(V) " << FormatMs(t.text_grad) << " ms\n";
}

void WriteOrderJson(const MultimodalTablesSpec& flags, const ClusterSpec& cluster,
                    const CollectiveCost& gather, const ContrastiveStepTimes& t,
                    const std::vector<const ContrastiveStep*>& steps, std::ostream& out) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("topic").String("contrastive-order");
  json.Key("ranks").Int(flags.ranks);
  json.Key("batch").Int(flags.batch);
  json.Key("width").Int(flags.width);
  json.Key("device").String(flags.device);
  json.Key("nodes").Int(cluster.nodes);
  json.Key("gathered_bytes").Int(int64_t{flags.ranks} * flags.batch * flags.width * 2);
  json.Key("gather_ms").Raw(FormatMs(gather.time));
  json.Key("gather_formula").String(gather.formula);
  json.Key("vision_forward_ms").Raw(FormatMs(t.vision_forward));
  json.Key("text_forward_ms").Raw(FormatMs(t.text_forward));
  json.Key("vision_backward_ms").Raw(FormatMs(t.vision_backward));
  json.Key("text_backward_ms").Raw(FormatMs(t.text_backward));
  json.Key("loss_grad_ms").Raw(FormatMs(t.text_grad));
  json.Key("orders").BeginArray();
  for (const ContrastiveStep* step : steps) {
    json.BeginObject();
    json.Key("order").String(ContrastiveOrderName(step->order));
    json.Key("step_ms").Raw(FormatMs(step->step));
    json.Key("compute_ms").Raw(FormatMs(step->compute));
    json.Key("exposed_gather_ms").Raw(FormatMs(step->exposed_gather));
    json.Key("tasks").BeginArray();
    for (uint32_t task : TasksByStart(*step)) {
      const bool work = step->built.graph.tasks[task].kind == TaskKind::kWork;
      json.BeginObject();
      json.Key("task").String(step->built.labels[task]);
      json.Key("stream").String(work ? "compute" : "comm");
      json.Key("start_ms").Raw(FormatMs(step->trace.timings[task].start));
      json.Key("end_ms").Raw(FormatMs(step->trace.timings[task].end));
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  out << json.text() << "\n";
}

Status RunContrastiveOrder(const MultimodalTablesSpec& flags, std::ostream& out) {
  auto times = TowerTimesFromFlags(flags);
  if (!times.ok()) return times.error();
  auto cluster = GatherCluster(flags.device, flags.ranks);
  if (!cluster.ok()) return cluster.error();
  auto gather = ContrastiveGatherCost(cluster.value(), flags.ranks, flags.batch, flags.width, 2);
  if (!gather.ok()) return Error{"multimodal contrastive-order: " + gather.error().message};
  ContrastiveStepTimes t = times.value();
  t.vision_gather = t.text_gather = gather.value().time;
  const ContrastiveStep sequential = SimulateContrastiveStep(t, ContrastiveOrder::kSequential);
  const ContrastiveStep overlapped = SimulateContrastiveStep(t, ContrastiveOrder::kOverlapped);
  if (flags.json) {
    WriteOrderJson(flags, cluster.value(), gather.value(), t, {&sequential, &overlapped}, out);
    return Status::Ok();
  }
  PrintOrderHeader(flags, cluster.value(), gather.value(), t, out);
  out << "  order                step_ms        compute_ms  exposed_gather_ms\n";
  for (const ContrastiveStep* step : {&sequential, &overlapped}) {
    out << "  " << PadRight(ContrastiveOrderName(step->order), 11)
        << PadLeft(FormatMs(step->step), 16) << PadLeft(FormatMs(step->compute), 18)
        << PadLeft(FormatMs(step->exposed_gather), 19) << "\n";
  }
  PrintStepTimeline(sequential, out);
  PrintStepTimeline(overlapped, out);
  return Status::Ok();
}
// --- contrastive, engram, cp ---

Status RunContrastive(const MultimodalTablesSpec& flags, std::ostream& out) {
  const ContrastiveLoss losses[] = {ContrastiveLoss::kGlobal, ContrastiveLoss::kLocal,
                                    ContrastiveLoss::kSigLipRing};
  if (flags.json) {
    JsonWriter json(/*pretty=*/true);
    json.BeginObject();
    json.Key("topic").String("contrastive");
    json.Key("ranks").Int(flags.ranks);
    json.Key("batch").Int(flags.batch);
    json.Key("width").Int(flags.width);
    json.Key("losses").BeginArray();
    for (ContrastiveLoss loss : losses) {
      const ContrastiveCost cost =
          ContrastiveLossCost(loss, flags.ranks, flags.batch, flags.width, 2);
      json.BeginObject();
      json.Key("loss").String(ContrastiveLossName(loss));
      json.Key("logits_bytes_per_rank").Int(static_cast<int64_t>(cost.logits_bytes));
      json.Key("received_bytes").Int(static_cast<int64_t>(cost.received_bytes));
      json.Key("sent_bytes").Int(static_cast<int64_t>(cost.sent_bytes));
      json.Key("steps").Int(cost.steps);
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
    out << json.text() << "\n";
    return Status::Ok();
  }
  out << "contrastive loss over D = " << flags.ranks << " ranks, b = " << flags.batch
      << " pairs per rank, e = " << flags.width << " (bf16 embeddings, fp32 logits)\n";
  out << "  loss          logits_per_rank     received         sent  steps\n";
  for (ContrastiveLoss loss : losses) {
    const ContrastiveCost cost =
        ContrastiveLossCost(loss, flags.ranks, flags.batch, flags.width, 2);
    std::string name = ContrastiveLossName(loss);
    name.resize(12, ' ');
    out << "  " << name << PadLeft(FormatBytes(static_cast<int64_t>(cost.logits_bytes)), 17)
        << PadLeft(FormatBytes(static_cast<int64_t>(cost.received_bytes)), 13)
        << PadLeft(FormatBytes(static_cast<int64_t>(cost.sent_bytes)), 13)
        << PadLeft(std::to_string(cost.steps), 7) << "\n";
  }
  return Status::Ok();
}

// One owner count's row of the Engram table.
struct EngramRow {
  int32_t owners = 0;
  EngramTraffic device;  // tables in device memory
  EngramTraffic host;    // tables in host memory, over PCIe
};

void WriteEngramJson(const MultimodalTablesSpec& flags, const EngramSpec& spec,
                     const EngramTraffic& bytes, const std::vector<EngramRow>& rows,
                     std::ostream& out) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("topic").String("engram");
  json.Key("tokens").Int(flags.tokens);
  json.Key("device").String(flags.device);
  json.Key("row_bytes").Int(EngramRowBytes(spec));
  json.Key("lookup_bytes_per_token").Int(EngramLookupBytesPerToken(spec));
  json.Key("id_bytes").Int(bytes.id_bytes);
  json.Key("row_bytes_per_rank").Int(bytes.row_bytes);
  json.Key("gradient_bytes").Int(bytes.gradient_bytes);
  json.Key("owners").BeginArray();
  for (const EngramRow& row : rows) {
    json.BeginObject();
    json.Key("owners").Int(row.owners);
    json.Key("bytes_per_owner").Int(EngramOwnerBytes(spec, row.owners));
    json.Key("fetch_ms").Raw(FormatMs(row.device.fetch));
    json.Key("gradient_ms").Raw(FormatMs(row.device.gradient));
    json.Key("fetch_host_ms").Raw(FormatMs(row.host.fetch));
    json.Key("gradient_host_ms").Raw(FormatMs(row.host.gradient));
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  out << json.text() << "\n";
}

Status RunEngram(const MultimodalTablesSpec& flags, std::ostream& out) {
  auto owners = CountList(flags.owners, "--owners");
  if (!owners.ok()) return owners.error();
  const EngramSpec spec;
  // The all-to-alls of one Engram layer for a rank's local batch, among G owners one per node
  // (a stage's data-parallel peers when a node holds one pipeline's stages), on the device's
  // preset nodes; with the tables in host memory the owners add PCIe reads and writes.
  // Only the preset's links matter: one owner per node puts every exchange on the network.
  auto cluster = GatherCluster(flags.device, 1);
  if (!cluster.ok()) return cluster.error();
  std::vector<EngramRow> rows;
  for (int32_t g : owners.value()) {
    EngramSharding sharding;
    sharding.owners = g;
    EngramRow row;
    row.owners = g;
    row.device = EngramIterationTraffic(spec, sharding, flags.tokens, cluster.value(), 1);
    sharding.host_memory = true;
    row.host = EngramIterationTraffic(spec, sharding, flags.tokens, cluster.value(), 1);
    rows.push_back(row);
  }
  const EngramTraffic bytes =
      EngramIterationTraffic(spec, EngramSharding{}, flags.tokens, ClusterSpec{}, 1);
  if (flags.json) {
    WriteEngramJson(flags, spec, bytes, rows, out);
    return Status::Ok();
  }
  out << "Engram tables (V4.1: 2 tables of 384,006,168 and 384,016,682 rows, "
      << EngramRowBytes(spec) << " B per row): " << EngramLookupBytesPerToken(spec)
      << " B looked up per token per module\n";
  out << "per rank and Engram layer for " << flags.tokens << " tokens: ids "
      << FormatBytes(bytes.id_bytes) << ", rows " << FormatBytes(bytes.row_bytes) << ", gradients "
      << FormatBytes(bytes.gradient_bytes) << "; all-to-alls among G owners "
      << "one per " << flags.device << " node (ms), host memory over PCIe at 50 GB/s\n";
  out << "  owners  bytes_per_owner      fetch_ms   gradient_ms  fetch_host_ms  grad_host_ms\n";
  for (const EngramRow& row : rows) {
    out << PadLeft(std::to_string(row.owners), 8)
        << PadLeft(FormatBytes(EngramOwnerBytes(spec, row.owners)), 17)
        << PadLeft(FormatMs(row.device.fetch), 14) << PadLeft(FormatMs(row.device.gradient), 14)
        << PadLeft(FormatMs(row.host.fetch), 14) << PadLeft(FormatMs(row.host.gradient), 14)
        << "\n";
  }
  return Status::Ok();
}

Status RunCp(const MultimodalTablesSpec& flags, std::ostream& out) {
  std::vector<std::vector<double>> loads;  // contiguous, then zig-zag
  for (const bool zigzag : {false, true}) {
    auto load = IndexerScanLoad(flags.seq_len, flags.compress_ratio, flags.ranks, zigzag);
    if (!load.ok()) return Error{"multimodal cp: " + load.error().message};
    loads.push_back(load.value());
  }
  if (flags.json) {
    JsonWriter json(/*pretty=*/true);
    json.BeginObject();
    json.Key("topic").String("cp");
    json.Key("seq_len").Int(flags.seq_len);
    json.Key("compress_ratio").Int(flags.compress_ratio);
    json.Key("cp").Int(flags.ranks);
    for (size_t sharding = 0; sharding < loads.size(); ++sharding) {
      json.Key(sharding == 0 ? "contiguous" : "zigzag").BeginArray();
      for (double value : loads[sharding]) json.Fixed(value, 3);
      json.EndArray();
    }
    json.EndObject();
    out << json.text() << "\n";
    return Status::Ok();
  }
  out << "CSA2 indexer scan per context-parallel rank, relative to the average (s = "
      << flags.seq_len << ", m = " << flags.compress_ratio << ", cp = " << flags.ranks << ")\n";
  for (size_t sharding = 0; sharding < loads.size(); ++sharding) {
    out << (sharding == 0 ? "  contiguous " : "  zig-zag    ");
    for (double value : loads[sharding]) out << " " << FormatFixed(value, 3);
    out << "\n";
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& MultimodalTopics() {
  static const std::vector<std::string> kTopics = {"contrastive", "contrastive-order", "engram",
                                                   "cp", "images"};
  return kTopics;
}

namespace {

// Every topic's sizes within bounds before any work: products of them (the gathered bytes
// D x b x e x 2, an Engram table's rows, a sample's images) stay far inside 64 bits, and a
// sample's images are drawn only when they fit its sequence.
Status CheckSizes(const MultimodalTablesSpec& flags) {
  const struct {
    const char* flag;
    int64_t value;
    int64_t high;
    const char* what;
  } bounds[] = {
      {"--ranks", flags.ranks, int64_t{1} << 16, "ranks"},
      {"--batch", flags.batch, int64_t{1} << 20, "pairs per rank"},
      {"--width", flags.width, int64_t{1} << 16, "embedding elements"},
      {"--tokens", flags.tokens, int64_t{1} << 40, "tokens"},
      {"--seq-len", flags.seq_len, int64_t{1} << 40, "tokens"},
      {"--images", flags.images, int64_t{1} << 20, "images"},
      {"--compress-ratio", flags.compress_ratio, int64_t{1} << 20, "tokens per compressed entry"},
  };
  for (const auto& bound : bounds) {
    if (bound.value < 1 || bound.value > bound.high) {
      return Error{std::string(bound.flag) + ": expected 1 to " + std::to_string(bound.high) + " " +
                   bound.what + ", got " + std::to_string(bound.value)};
    }
  }
  if (flags.topic == "images" && flags.images > flags.seq_len) {
    return Error{"--images " + std::to_string(flags.images) + ": more images than the " +
                 std::to_string(flags.seq_len) +
                 " tokens of --seq-len (each image takes at least one token)"};
  }
  return Status::Ok();
}

}  // namespace

Status RunMultimodal(const MultimodalTablesSpec& flags, Transcript& transcript) {
  if (std::find(MultimodalTopics().begin(), MultimodalTopics().end(), flags.topic) !=
      MultimodalTopics().end()) {
    STAGECRAFT_RETURN_IF_ERROR(CheckSizes(flags));
  }
  if (flags.topic == "contrastive") return RunContrastive(flags, transcript.out());
  if (flags.topic == "engram") return RunEngram(flags, transcript.out());
  if (flags.topic == "cp") return RunCp(flags, transcript.out());
  if (flags.topic == "images") return RunMultimodalImages(flags, transcript);
  if (flags.topic == "contrastive-order") return RunContrastiveOrder(flags, transcript.out());
  if (flags.topic.empty()) {
    return Error{"multimodal: expected a topic: " + JoinChoices(MultimodalTopics()) +
                 " (stagecraft multimodal TOPIC --help)"};
  }
  return Error{"multimodal: unknown topic '" + flags.topic + "'" +
               DidYouMean(flags.topic, MultimodalTopics()) + " (expected " +
               JoinChoices(MultimodalTopics()) + ")"};
}

}  // namespace stagecraft
