// `stagecraft multimodal contrastive|contrastive-order|engram|cp|images [flags]`: the multimodal
// cost formulas as tables (src/multimodal/): contrastive-loss memory and traffic per loss, one
// contrastive step in the sequential and the overlapped order, Engram table bytes per owner
// count, the context-parallel indexer balance of contiguous and zig-zag shards, and a sample's
// images over context-parallel ranks with the I/O criterion.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "core/suggest.h"
#include "core/units.h"
#include "hardware/presets.h"
#include "multimodal/context_parallel.h"
#include "multimodal/contrastive.h"
#include "multimodal/contrastive_timeline.h"
#include "multimodal/engram.h"
#include "multimodal/image_sharding.h"
#include "multimodal/image_tokens.h"

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

// "400TFLOP/s", "105GFLOP", "4e14": a number > 0, an optional SI prefix (k, M, G, T, P) and the
// unit (FLOP/s or FLOPS for a rate, FLOP otherwise); a bare number is FLOPs (per second).
Result<double> ParseFlops(const std::string& text, bool rate, const std::string& flag) {
  const std::string example = rate ? "400TFLOP/s or 4e14" : "105GFLOP or 1.05e11";
  const Error bad{flag + ": '" + text + "' is not " + (rate ? "a FLOP rate" : "a FLOP count") +
                  " > 0 (expected e.g. " + example + ")"};
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(number) || number <= 0) return bad;
  std::string unit(end);
  double scale = 1;
  static constexpr std::pair<char, double> kPrefixes[] = {
      {'k', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}, {'P', 1e15}};
  for (const auto& [letter, factor] : kPrefixes) {
    if (!unit.empty() && unit.front() == letter) {
      scale = factor;
      unit.erase(0, 1);
      break;
    }
  }
  const bool unit_ok = rate ? (unit == "FLOP/s" || unit == "FLOPS" || unit.empty())
                            : (unit == "FLOP" || unit.empty());
  if (!unit_ok || (unit.empty() && scale != 1)) return bad;
  return number * scale;
}

// A duration flag, >= 0; `fallback` when the flag was left empty.
Result<Time> DurationFlag(const std::string& text, const std::string& flag, Time fallback) {
  if (text.empty()) return fallback;
  auto time = ParseDuration(text);
  if (!time.ok()) return Error{flag + ": " + time.error().message};
  if (time.value() < Time()) return Error{flag + ": '" + text + "' is negative (expected >= 0)"};
  return time.value();
}

// --- images ---

struct IoRates {
  double io_bytes_per_s = 0;
  double gpu_flops_per_s = 0;
  double flops_per_token = 0;
};

Result<IoRates> IoRatesFromFlags(const MultimodalFlags& flags) {
  auto io = ParseBandwidth(flags.io_bandwidth);
  if (!io.ok()) return Error{"--io-bandwidth: " + io.error().message};
  if (!(io.value() > 0)) {
    return Error{"--io-bandwidth: '" + flags.io_bandwidth + "' must be > 0 (e.g. 2GB/s)"};
  }
  auto gpu = ParseFlops(flags.gpu_flops, /*rate=*/true, "--gpu-flops");
  if (!gpu.ok()) return gpu.error();
  auto per_token = ParseFlops(flags.flops_per_token, /*rate=*/false, "--flops-per-token");
  if (!per_token.ok()) return per_token.error();
  return IoRates{io.value(), gpu.value(), per_token.value()};
}

Result<ImageSample> ImageSampleFromFlags(const MultimodalFlags& flags) {
  if (flags.ranks < 1) {
    return Error{"--ranks: needs at least 1 context-parallel rank, got " +
                 std::to_string(flags.ranks)};
  }
  if (flags.images < 1) {
    return Error{"--images: needs at least 1 image, got " + std::to_string(flags.images)};
  }
  if (!(flags.bytes_per_image_token > 0)) {
    return Error{"--bytes-per-image-token: must be > 0, got " +
                 FormatFixed(flags.bytes_per_image_token, 1)};
  }
  auto dist = ParseImageTokens(flags.image_tokens);
  if (!dist.ok()) return Error{"--image-tokens: " + dist.error().message};
  ImageTokenDistribution drawn = dist.value();
  drawn.seed = flags.seed;
  ImageSample sample;
  sample.seq_len = flags.seq_len;
  sample.cp = flags.ranks;
  sample.image_tokens = DrawImageTokens(drawn, flags.images, /*stream=*/0);
  sample.bytes_per_image_token = flags.bytes_per_image_token;
  const Status fits = CheckImageSample(sample);
  if (!fits.ok()) return Error{"multimodal images: " + fits.error().message};
  return sample;
}

const char* ShardingDescription(ImageSharding method) {
  switch (method) {
    case ImageSharding::kPosition:
      return "the rank whose shard [k*s/cp, (k+1)*s/cp) holds the image's first token";
    case ImageSharding::kBalanced:
      return "V4.1's even spread as greedy LPT: largest image first, to the least-loaded rank";
    case ImageSharding::kReplicated:
      return "every rank reads and encodes every image";
  }
  return "";
}

void PrintImagesHeader(const MultimodalFlags& flags, const ImageSample& sample,
                       const IoRates& rates, double bound_bytes_per_token, std::ostream& out) {
  const int64_t total =
      std::accumulate(sample.image_tokens.begin(), sample.image_tokens.end(), int64_t{0});
  out << "multimodal images: " << sample.image_tokens.size() << " images (" << flags.image_tokens
      << ", seed " << flags.seed << ") in a sample of " << sample.seq_len
      << " tokens over cp = " << sample.cp << " ranks\n";
  out << "  image tokens:";
  for (int32_t tokens : sample.image_tokens) out << " " << tokens;
  out << " (" << total << " in all)\n";
  const VisionEncoderShape& encoder = sample.encoder;
  out << "  encoder forward per image: " << encoder.layers << " layers, width " << encoder.width
      << ", MLP " << encoder.mlp_width << ", " << encoder.patches_per_token
      << " patches per token; " << FormatFixed(sample.bytes_per_image_token, 1)
      << " B read per image token\n";
  out << "  I/O criterion rho < (B_IO / B_GPU) * C: B_IO "
      << FormatFixed(rates.io_bytes_per_s / 1e9, 3) << " GB/s, B_GPU "
      << FormatFixed(rates.gpu_flops_per_s / 1e12, 3) << " TFLOP/s, C "
      << FormatFixed(rates.flops_per_token / 1e9, 3) << " GFLOP per token -> bound "
      << FormatFixed(bound_bytes_per_token, 1) << " B per token\n";
}

void PrintShardingPlan(const ImageSample& sample, const ImageShardingPlan& plan,
                       const IoRates& rates, std::ostream& out) {
  out << ImageShardingName(plan.method) << ": " << ShardingDescription(plan.method) << "\n";
  out << "  rank  images  tokens       TFLOP   bytes_read\n";
  for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
    const RankImageLoad& load = plan.ranks[rank];
    out << PadLeft(std::to_string(rank), 6) << PadLeft(std::to_string(load.images), 8)
        << PadLeft(std::to_string(load.tokens), 8) << PadLeft(FormatFixed(load.flops / 1e12, 3), 12)
        << PadLeft(FormatBytes(std::llround(load.bytes_read)), 13) << "\n";
  }
  out << "  imbalance " << FormatFixed(plan.imbalance, 3)
      << " (max / mean encoder FLOPs), read amplification "
      << FormatFixed(plan.read_amplification, 3) << "\n";
  const IoCriterion io =
      EvaluateIoCriterion(PlanBytesPerToken(plan, sample.seq_len), rates.io_bytes_per_s,
                          rates.gpu_flops_per_s, rates.flops_per_token);
  out << "  rho " << FormatFixed(io.bytes_per_token, 1)
      << " B per token (the busiest reader's bytes over s/cp tokens): "
      << (io.holds ? "holds" : "fails") << ", margin " << FormatFixed(io.margin_bytes_per_token, 1)
      << " B per token\n";
}

int RunImages(const MultimodalFlags& flags, std::ostream& out, std::ostream& err) {
  auto sample = ImageSampleFromFlags(flags);
  if (!sample.ok()) return Fail(err, sample.error().message);
  auto rates = IoRatesFromFlags(flags);
  if (!rates.ok()) return Fail(err, rates.error().message);
  const IoRates& r = rates.value();
  const IoCriterion bound =
      EvaluateIoCriterion(0, r.io_bytes_per_s, r.gpu_flops_per_s, r.flops_per_token);
  PrintImagesHeader(flags, sample.value(), r, bound.bound_bytes_per_token, out);
  for (ImageSharding method :
       {ImageSharding::kPosition, ImageSharding::kBalanced, ImageSharding::kReplicated}) {
    PrintShardingPlan(sample.value(), ShardImages(sample.value(), method), r, out);
  }
  return kExitOk;
}

// --- contrastive-order ---

// The tower and loss times from the flags, without the gathers.
Result<ContrastiveStepTimes> TowerTimesFromFlags(const MultimodalFlags& flags) {
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

void PrintStepTimeline(const ContrastiveStep& step, std::ostream& out) {
  const TaskGraph& graph = step.built.graph;
  std::vector<uint32_t> order(graph.num_tasks());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return step.trace.timings[a].start < step.trace.timings[b].start;
  });
  out << ContrastiveOrderName(step.order) << " order (ms)\n"
      << "  task       stream              start               end\n";
  for (uint32_t task : order) {
    const bool work = graph.tasks[task].kind == TaskKind::kWork;
    out << "  " << PadRight(step.built.labels[task], 11) << PadRight(work ? "compute" : "comm", 8)
        << PadLeft(FormatMs(step.trace.timings[task].start), 17)
        << PadLeft(FormatMs(step.trace.timings[task].end), 18) << "\n";
  }
}

void PrintOrderHeader(const MultimodalFlags& flags, const ClusterSpec& cluster,
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

int RunContrastiveOrder(const MultimodalFlags& flags, std::ostream& out, std::ostream& err) {
  if (flags.ranks < 1 || flags.batch < 1 || flags.width < 1) {
    return Fail(err, "multimodal contrastive-order: --ranks, --batch and --width must be >= 1");
  }
  auto times = TowerTimesFromFlags(flags);
  if (!times.ok()) return Fail(err, times.error().message);
  auto cluster = GatherCluster(flags.device, flags.ranks);
  if (!cluster.ok()) return Fail(err, cluster.error().message);
  auto gather = ContrastiveGatherCost(cluster.value(), flags.ranks, flags.batch, flags.width, 2);
  if (!gather.ok()) return Fail(err, "multimodal contrastive-order: " + gather.error().message);
  ContrastiveStepTimes t = times.value();
  t.vision_gather = t.text_gather = gather.value().time;
  PrintOrderHeader(flags, cluster.value(), gather.value(), t, out);
  const ContrastiveStep sequential = SimulateContrastiveStep(t, ContrastiveOrder::kSequential);
  const ContrastiveStep overlapped = SimulateContrastiveStep(t, ContrastiveOrder::kOverlapped);
  out << "  order                step_ms        compute_ms  exposed_gather_ms\n";
  for (const ContrastiveStep* step : {&sequential, &overlapped}) {
    out << "  " << PadRight(ContrastiveOrderName(step->order), 11)
        << PadLeft(FormatMs(step->step), 16) << PadLeft(FormatMs(step->compute), 18)
        << PadLeft(FormatMs(step->exposed_gather), 19) << "\n";
  }
  PrintStepTimeline(sequential, out);
  PrintStepTimeline(overlapped, out);
  return kExitOk;
}
}  // namespace

int RunMultimodal(const MultimodalFlags& flags, std::ostream& out, std::ostream& err) {
  if (flags.topic == "contrastive") {
    if (flags.ranks < 1 || flags.batch < 1 || flags.width < 1) {
      return Fail(err, "multimodal contrastive: --ranks, --batch and --width must be >= 1");
    }
    out << "contrastive loss over D = " << flags.ranks << " ranks, b = " << flags.batch
        << " pairs per rank, e = " << flags.width << " (bf16 embeddings, fp32 logits)\n";
    out << "  loss          logits_per_rank     received         sent  steps\n";
    for (ContrastiveLoss loss :
         {ContrastiveLoss::kGlobal, ContrastiveLoss::kLocal, ContrastiveLoss::kSigLipRing}) {
      const ContrastiveCost cost =
          ContrastiveLossCost(loss, flags.ranks, flags.batch, flags.width, 2);
      std::string name = ContrastiveLossName(loss);
      name.resize(12, ' ');
      out << "  " << name << PadLeft(FormatBytes(static_cast<int64_t>(cost.logits_bytes)), 17)
          << PadLeft(FormatBytes(static_cast<int64_t>(cost.received_bytes)), 13)
          << PadLeft(FormatBytes(static_cast<int64_t>(cost.sent_bytes)), 13)
          << PadLeft(std::to_string(cost.steps), 7) << "\n";
    }
    return kExitOk;
  }
  if (flags.topic == "engram") {
    auto owners = CountList(flags.owners, "--owners");
    if (!owners.ok()) return Fail(err, owners.error().message);
    if (flags.tokens < 1) return Fail(err, "multimodal engram: --tokens must be >= 1");
    const EngramSpec spec;
    out << "Engram tables (V4.1: 2 tables of 384,006,168 and 384,016,682 rows, "
        << EngramRowBytes(spec) << " B per row): " << EngramLookupBytesPerToken(spec)
        << " B looked up per token per module\n";
    // The all-to-alls of one Engram layer for a rank's local batch, among G owners one per node
    // (a stage's data-parallel peers when a node holds one pipeline's stages), on the device's
    // preset nodes; with the tables in host memory the owners add PCIe reads and writes.
    // Only the preset's links matter: one owner per node puts every exchange on the network.
    auto cluster = GatherCluster(flags.device, 1);
    if (!cluster.ok()) return Fail(err, cluster.error().message);
    std::string rows;
    for (int32_t g : owners.value()) {
      EngramSharding sharding;
      sharding.owners = g;
      const EngramTraffic device =
          EngramIterationTraffic(spec, sharding, flags.tokens, cluster.value(), 1);
      sharding.host_memory = true;
      const EngramTraffic host =
          EngramIterationTraffic(spec, sharding, flags.tokens, cluster.value(), 1);
      rows += PadLeft(std::to_string(g), 8) + PadLeft(FormatBytes(EngramOwnerBytes(spec, g)), 17) +
              PadLeft(FormatMs(device.fetch), 14) + PadLeft(FormatMs(device.gradient), 14) +
              PadLeft(FormatMs(host.fetch), 14) + PadLeft(FormatMs(host.gradient), 14) + "\n";
    }
    const EngramTraffic bytes =
        EngramIterationTraffic(spec, EngramSharding{}, flags.tokens, ClusterSpec{}, 1);
    out << "per rank and Engram layer for " << flags.tokens << " tokens: ids "
        << FormatBytes(bytes.id_bytes) << ", rows " << FormatBytes(bytes.row_bytes)
        << ", gradients " << FormatBytes(bytes.gradient_bytes) << "; all-to-alls among G owners "
        << "one per " << flags.device << " node (ms), host memory over PCIe at 50 GB/s\n";
    out << "  owners  bytes_per_owner      fetch_ms   gradient_ms  fetch_host_ms  grad_host_ms\n"
        << rows;
    return kExitOk;
  }
  if (flags.topic == "cp") {
    std::string rows;
    for (const bool zigzag : {false, true}) {
      auto load = IndexerScanLoad(flags.seq_len, flags.compress_ratio, flags.ranks, zigzag);
      if (!load.ok()) return Fail(err, "multimodal cp: " + load.error().message);
      rows += zigzag ? "  zig-zag    " : "  contiguous ";
      for (double value : load.value()) rows += " " + FormatFixed(value, 3);
      rows += "\n";
    }
    out << "CSA2 indexer scan per context-parallel rank, relative to the average (s = "
        << flags.seq_len << ", m = " << flags.compress_ratio << ", cp = " << flags.ranks << ")\n"
        << rows;
    return kExitOk;
  }
  if (flags.topic == "images") return RunImages(flags, out, err);
  if (flags.topic == "contrastive-order") return RunContrastiveOrder(flags, out, err);
  const std::vector<std::string> topics = {"contrastive", "contrastive-order", "engram", "cp",
                                           "images"};
  return Fail(err, "multimodal: unknown topic '" + flags.topic + "'" +
                       DidYouMean(flags.topic, topics) + " (expected " + JoinChoices(topics) + ")");
}

}  // namespace stagecraft
