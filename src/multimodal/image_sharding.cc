#include "multimodal/image_sharding.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "model/layer_costs.h"

namespace stagecraft {
namespace {

int64_t TotalTokens(const std::vector<int32_t>& image_tokens) {
  return std::accumulate(image_tokens.begin(), image_tokens.end(), int64_t{0});
}

std::vector<int32_t> OwnersByPosition(const ImageSample& sample) {
  std::vector<int32_t> owner;
  for (int64_t start : ImageStartPositions(sample)) {
    owner.push_back(ShardOfPosition(start, sample.seq_len, sample.cp));
  }
  return owner;
}

// Longest processing time first (Graham 1969): the largest image to the least-loaded rank.
// Ties: equal FLOPs by image index, equal loads to the lowest rank, so the plan is deterministic.
std::vector<int32_t> OwnersByLpt(const ImageSample& sample) {
  const size_t count = sample.image_tokens.size();
  std::vector<double> flops(count);
  for (size_t image = 0; image < count; ++image) {
    flops[image] = ImageEncoderFlops(sample.encoder, sample.image_tokens[image]);
  }
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return flops[a] > flops[b]; });
  std::vector<double> load(sample.cp, 0.0);
  std::vector<int32_t> owner(count, 0);
  for (size_t image : order) {
    const auto least = std::min_element(load.begin(), load.end());  // first of equal minima
    owner[image] = static_cast<int32_t>(least - load.begin());
    *least += flops[image];
  }
  return owner;
}

void AddImage(const ImageSample& sample, size_t image, RankImageLoad& rank) {
  const int32_t tokens = sample.image_tokens[image];
  ++rank.images;
  rank.tokens += tokens;
  rank.flops += ImageEncoderFlops(sample.encoder, tokens);
  rank.bytes_read += tokens * sample.bytes_per_image_token;
}

void Summarize(const ImageSample& sample, ImageShardingPlan& plan) {
  double max_flops = 0, sum_flops = 0, bytes_read = 0;
  for (const RankImageLoad& rank : plan.ranks) {
    max_flops = std::max(max_flops, rank.flops);
    sum_flops += rank.flops;
    bytes_read += rank.bytes_read;
  }
  const double distinct_bytes =
      static_cast<double>(TotalTokens(sample.image_tokens)) * sample.bytes_per_image_token;
  plan.imbalance = max_flops / (sum_flops / sample.cp);
  plan.read_amplification = bytes_read / distinct_bytes;
}

}  // namespace

Result<ImageSharding> ParseImageSharding(std::string_view name) {
  if (const auto method = kImageShardingNames.Parse(name)) return *method;
  return Error{"unknown image sharding '" + std::string(name) + "'" +
               kImageShardingNames.DidYouMean(name) + " (expected " + kImageShardingNames.Joined() +
               ")"};
}

Status CheckImageSample(const ImageSample& sample) {
  if (sample.cp < 1) {
    return Error{"cp " + std::to_string(sample.cp) + ": needs at least 1 context-parallel rank"};
  }
  if (sample.image_tokens.empty()) return Error{"no images: a sample needs at least 1 image"};
  if (sample.seq_len < sample.cp) {
    return Error{"a sequence of " + std::to_string(sample.seq_len) +
                 " tokens cannot be split over " + std::to_string(sample.cp) +
                 " context-parallel ranks (expected seq_len >= cp)"};
  }
  for (size_t image = 0; image < sample.image_tokens.size(); ++image) {
    if (sample.image_tokens[image] < 1) {
      return Error{"image " + std::to_string(image) + " has " +
                   std::to_string(sample.image_tokens[image]) + " tokens (expected >= 1)"};
    }
  }
  const int64_t total = TotalTokens(sample.image_tokens);
  if (total > sample.seq_len) {
    return Error{std::to_string(sample.image_tokens.size()) + " images hold " +
                 std::to_string(total) + " image tokens, more than the sequence's " +
                 std::to_string(sample.seq_len) +
                 " tokens (expected the sum of image tokens <= seq_len: fewer or smaller images, "
                 "or a longer sequence)"};
  }
  if (!(sample.bytes_per_image_token > 0)) {
    return Error{"bytes per image token must be > 0"};
  }
  return Status::Ok();
}

std::vector<int64_t> ImageStartPositions(const ImageSample& sample) {
  const int64_t count = static_cast<int64_t>(sample.image_tokens.size());
  const int64_t text = sample.seq_len - TotalTokens(sample.image_tokens);
  std::vector<int64_t> starts;
  int64_t images_before = 0;
  for (int64_t image = 0; image < count; ++image) {
    starts.push_back(images_before + image * text / count);
    images_before += sample.image_tokens[image];
  }
  return starts;
}

int32_t ShardOfPosition(int64_t position, int64_t seq_len, int32_t cp) {
  // k·s/cp <= position < (k+1)·s/cp  ⇔  k = ⌊position·cp / s⌋.
  return static_cast<int32_t>(position * cp / seq_len);
}

double ImageEncoderFlops(const VisionEncoderShape& encoder, int32_t tokens) {
  return VisionEncoderFlops(encoder.layers, encoder.width, encoder.mlp_width,
                            int64_t{encoder.patches_per_token} * tokens);
}

ImageShardingPlan ShardImages(const ImageSample& sample, ImageSharding method) {
  ImageShardingPlan plan;
  plan.method = method;
  plan.ranks.assign(sample.cp, RankImageLoad{});
  const size_t count = sample.image_tokens.size();
  if (method == ImageSharding::kReplicated) {
    plan.owner.assign(count, -1);
    for (RankImageLoad& rank : plan.ranks) {
      for (size_t image = 0; image < count; ++image) AddImage(sample, image, rank);
    }
  } else {
    plan.owner =
        method == ImageSharding::kPosition ? OwnersByPosition(sample) : OwnersByLpt(sample);
    for (size_t image = 0; image < count; ++image) {
      AddImage(sample, image, plan.ranks[plan.owner[image]]);
    }
  }
  Summarize(sample, plan);
  return plan;
}

IoCriterion EvaluateIoCriterion(double bytes_per_token, double io_bytes_per_s,
                                double gpu_flops_per_s, double flops_per_token) {
  IoCriterion criterion;
  criterion.bytes_per_token = bytes_per_token;
  // B_IO·C / B_GPU rather than (B_IO / B_GPU)·C: one rounding fewer, so the flip at ρ = bound
  // is exact whenever the bound is representable.
  criterion.bound_bytes_per_token = io_bytes_per_s * flops_per_token / gpu_flops_per_s;
  criterion.holds = bytes_per_token < criterion.bound_bytes_per_token;
  criterion.margin_bytes_per_token = criterion.bound_bytes_per_token - bytes_per_token;
  return criterion;
}

double PlanBytesPerToken(const ImageShardingPlan& plan, int64_t seq_len) {
  double max_bytes = 0;
  for (const RankImageLoad& rank : plan.ranks) max_bytes = std::max(max_bytes, rank.bytes_read);
  const double tokens_per_rank = static_cast<double>(seq_len) / plan.ranks.size();
  return max_bytes / tokens_per_rank;
}

}  // namespace stagecraft
