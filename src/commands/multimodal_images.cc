// `stagecraft multimodal images [flags] [--json]`: a sample's images over context-parallel ranks
// under each sharding (position, balanced, replicated), with the I/O criterion
// rho < (B_IO / B_GPU) * C (multimodal/image_sharding.h).
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <ostream>
#include <utility>

#include "commands/commands.h"
#include "core/units.h"
#include "model/image_tokens.h"
#include "multimodal/image_sharding.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

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

// --- images ---

struct IoRates {
  double io_bytes_per_s = 0;
  double gpu_flops_per_s = 0;
  double flops_per_token = 0;
};

Result<IoRates> IoRatesFromFlags(const MultimodalTablesSpec& flags) {
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

Result<ImageSample> ImageSampleFromFlags(const MultimodalTablesSpec& flags) {
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

void PrintImagesHeader(const MultimodalTablesSpec& flags, const ImageSample& sample,
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

void WriteImagesJson(const MultimodalTablesSpec& flags, const ImageSample& sample,
                     const IoRates& rates, double bound_bytes_per_token, std::ostream& out) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("topic").String("images");
  json.Key("images").Int(static_cast<int64_t>(sample.image_tokens.size()));
  json.Key("image_tokens_distribution").String(flags.image_tokens);
  json.Key("seed").Int(static_cast<int64_t>(flags.seed));
  json.Key("seq_len").Int(sample.seq_len);
  json.Key("cp").Int(sample.cp);
  json.Key("image_tokens").BeginArray();
  for (int32_t tokens : sample.image_tokens) json.Int(tokens);
  json.EndArray();
  json.Key("bytes_per_image_token").Fixed(sample.bytes_per_image_token, 1);
  json.Key("io_gb_per_s").Fixed(rates.io_bytes_per_s / 1e9, 3);
  json.Key("gpu_tflop_per_s").Fixed(rates.gpu_flops_per_s / 1e12, 3);
  json.Key("gflop_per_token").Fixed(rates.flops_per_token / 1e9, 3);
  json.Key("bound_bytes_per_token").Fixed(bound_bytes_per_token, 1);
  json.Key("shardings").BeginArray();
  for (ImageSharding method :
       {ImageSharding::kPosition, ImageSharding::kBalanced, ImageSharding::kReplicated}) {
    const ImageShardingPlan plan = ShardImages(sample, method);
    const IoCriterion io =
        EvaluateIoCriterion(PlanBytesPerToken(plan, sample.seq_len), rates.io_bytes_per_s,
                            rates.gpu_flops_per_s, rates.flops_per_token);
    json.BeginObject();
    json.Key("method").String(ImageShardingName(method));
    json.Key("ranks").BeginArray();
    for (const RankImageLoad& load : plan.ranks) {
      json.BeginObject();
      json.Key("images").Int(load.images);
      json.Key("tokens").Int(load.tokens);
      json.Key("tflop").Fixed(load.flops / 1e12, 3);
      json.Key("bytes_read").Int(std::llround(load.bytes_read));
      json.EndObject();
    }
    json.EndArray();
    json.Key("imbalance").Fixed(plan.imbalance, 3);
    json.Key("read_amplification").Fixed(plan.read_amplification, 3);
    json.Key("rho_bytes_per_token").Fixed(io.bytes_per_token, 1);
    json.Key("holds").Bool(io.holds);
    json.Key("margin_bytes_per_token").Fixed(io.margin_bytes_per_token, 1);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  out << json.text() << "\n";
}

}  // namespace

Status RunMultimodalImages(const MultimodalTablesSpec& flags, Transcript& transcript) {
  std::ostream& out = transcript.out();
  auto sample = ImageSampleFromFlags(flags);
  if (!sample.ok()) return sample.error();
  auto rates = IoRatesFromFlags(flags);
  if (!rates.ok()) return rates.error();
  const IoRates& r = rates.value();
  const IoCriterion bound =
      EvaluateIoCriterion(0, r.io_bytes_per_s, r.gpu_flops_per_s, r.flops_per_token);
  if (flags.json) {
    WriteImagesJson(flags, sample.value(), r, bound.bound_bytes_per_token, out);
    return Status::Ok();
  }
  PrintImagesHeader(flags, sample.value(), r, bound.bound_bytes_per_token, out);
  for (ImageSharding method :
       {ImageSharding::kPosition, ImageSharding::kBalanced, ImageSharding::kReplicated}) {
    PrintShardingPlan(sample.value(), ShardImages(sample.value(), method), r, out);
  }
  return Status::Ok();
}

}  // namespace stagecraft
