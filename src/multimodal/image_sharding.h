// Which context-parallel rank reads and encodes each image of a sample, and whether reading the
// images from storage hides behind the rank's training compute. DeepSeek-V4.1 spreads a
// sample's images evenly across its CP ranks and reads and encodes each once (csa2.md,
// "Multimodal"); the three methods here compare that spread with a naive and a wasteful one:
//   position    the rank whose contiguous sequence shard holds the image's first token
//   balanced    V4.1's even spread, as greedy longest-processing-time (LPT) on encoder FLOPs
//   replicated  every rank reads and encodes every image (what "read once" avoids)
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/enum_table.h"
#include "core/result.h"

namespace stagecraft {

enum class ImageSharding : uint8_t { kPosition, kBalanced, kReplicated };
inline constexpr EnumTable<ImageSharding> kImageShardingNames = {
    {"position", ImageSharding::kPosition},
    {"balanced", ImageSharding::kBalanced},
    {"replicated", ImageSharding::kReplicated}};
constexpr const char* ImageShardingName(ImageSharding method) {
  return kImageShardingNames.Name(method);
}
Result<ImageSharding> ParseImageSharding(std::string_view name);

// The V4.1 vision encoder (csa2.md, "Multimodal"): 32 layers, width 1024, MLP 2816, patch 14;
// a 3×3 pixel-unshuffle turns 9 patches into one output token.
struct VisionEncoderShape {
  int32_t layers = 32;
  int64_t width = 1024;
  int64_t mlp_width = 2816;
  int32_t patches_per_token = 9;  // 3×3 pixel-unshuffle
  bool operator==(const VisionEncoderShape&) const = default;
};

// Raw RGB bytes behind one image token: 9 patches × 14×14 pixels × 3 bytes = 5292 B. An
// assumption (uncompressed 8-bit pixels at the encoder's input resolution); a stored JPEG is
// smaller, a higher-resolution original larger.
inline constexpr double kRawBytesPerImageToken = 9.0 * 14 * 14 * 3;

// One sample: a sequence of seq_len tokens holding images of the given token counts, split over
// cp context-parallel ranks.
struct ImageSample {
  int64_t seq_len = 65536;            // s, tokens of the sample (text and image tokens)
  int32_t cp = 1;                     // context-parallel ranks
  std::vector<int32_t> image_tokens;  // T_i, output tokens of image i (>= 1 each)
  double bytes_per_image_token = kRawBytesPerImageToken;  // storage bytes read per image token
  VisionEncoderShape encoder;
  bool operator==(const ImageSample&) const = default;
};

// Errors, naming the numbers and what was expected: cp < 1, no images, a token count < 1,
// seq_len < cp (a rank without tokens), images that do not fit the sequence (Σ T_i > seq_len),
// bytes_per_image_token <= 0.
Status CheckImageSample(const ImageSample& sample);

// The first position of each image in the `position` layout: image i starts after the images
// before it and i equal shares of the text, ⌊i·(s − Σ T)/n⌋ text tokens in all (text follows
// each image, e.g. its caption), so image 0 starts at 0 and n images of equal size start at
// ⌊i·s/n⌋. REQUIRES: CheckImageSample ok.
std::vector<int64_t> ImageStartPositions(const ImageSample& sample);
// The rank whose shard [k·s/cp, (k+1)·s/cp) holds `position` (exact rational bounds).
int32_t ShardOfPosition(int64_t position, int64_t seq_len, int32_t cp);

// Forward FLOPs of the encoder on one image of `tokens` output tokens (N_p = 9·T patches,
// VisionEncoderFlops, csa2.md "Per-layer cost formulas").
double ImageEncoderFlops(const VisionEncoderShape& encoder, int32_t tokens);

struct RankImageLoad {
  int32_t images = 0;
  int64_t tokens = 0;     // image tokens encoded
  double flops = 0;       // encoder forward FLOPs
  double bytes_read = 0;  // image bytes read from storage
  bool operator==(const RankImageLoad&) const = default;
};

struct ImageShardingPlan {
  ImageSharding method = ImageSharding::kBalanced;
  std::vector<int32_t> owner;        // [image] → rank that encodes it; -1 when every rank does
  std::vector<RankImageLoad> ranks;  // [rank]
  double imbalance = 1;              // max / mean encoder FLOPs over the ranks
  double read_amplification = 1;     // bytes read by all ranks / bytes of the distinct images
  bool operator==(const ImageShardingPlan&) const = default;
};

// REQUIRES: CheckImageSample(sample) ok.
ImageShardingPlan ShardImages(const ImageSample& sample, ImageSharding method);

// The I/O criterion ρ < (B_IO / B_GPU)·C. The report's own definitions are not available to us;
// this is our reading: a rank reads ρ bytes of image data per token it trains on and spends C
// FLOPs per token; B_IO is its storage read bandwidth (bytes/s) and B_GPU its sustained FLOP/s.
// Reading hides behind compute when ρ/B_IO < C/B_GPU, i.e. ρ < (B_IO/B_GPU)·C.
struct IoCriterion {
  double bytes_per_token = 0;         // ρ
  double bound_bytes_per_token = 0;   // (B_IO / B_GPU)·C, computed as B_IO·C / B_GPU
  bool holds = false;                 // ρ < bound (strict: at equality reading is not hidden)
  double margin_bytes_per_token = 0;  // bound − ρ (negative when it fails)
  bool operator==(const IoCriterion&) const = default;
};

// REQUIRES: io_bytes_per_s > 0, gpu_flops_per_s > 0, flops_per_token > 0, bytes_per_token >= 0.
IoCriterion EvaluateIoCriterion(double bytes_per_token, double io_bytes_per_s,
                                double gpu_flops_per_s, double flops_per_token);

// ρ of a plan: the busiest reader's bytes over the s/cp tokens each rank trains on (the
// slowest reader sets whether reading hides).
double PlanBytesPerToken(const ImageShardingPlan& plan, int64_t seq_len);

}  // namespace stagecraft
