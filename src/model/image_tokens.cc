#include "model/image_tokens.h"

#include <algorithm>
#include <numeric>

#include "core/splitmix.h"

namespace stagecraft {
namespace {

constexpr const char* kForms = "fixed:N, uniform:A-B or choices:256x3,576x2,1024";

Result<int32_t> Positive(const std::string& text, const std::string& whole) {
  try {
    size_t used = 0;
    const long value = std::stol(text, &used);
    if (used == text.size() && value >= 1 && value <= 1 << 24) return static_cast<int32_t>(value);
  } catch (const std::exception&) {
  }
  return Error{"image tokens '" + whole + "': '" + text +
               "' is not a whole number of tokens >= 1 (expected " + kForms + ")"};
}

}  // namespace

Result<ImageTokenDistribution> ParseImageTokens(const std::string& text) {
  ImageTokenDistribution dist;
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (colon == std::string::npos || rest.empty() ||
      (kind != "fixed" && kind != "uniform" && kind != "choices")) {
    return Error{"image tokens '" + text + "': expected " + kForms};
  }
  if (kind == "fixed") {
    auto n = Positive(rest, text);
    if (!n.ok()) return n.error();
    dist.min = dist.max = n.value();
    return dist;
  }
  if (kind == "uniform") {
    dist.kind = ImageTokenDistribution::Kind::kUniform;
    const size_t dash = rest.find('-');
    if (dash == std::string::npos) {
      return Error{"image tokens '" + text + "': uniform needs a range A-B (expected " + kForms +
                   ")"};
    }
    auto low = Positive(rest.substr(0, dash), text);
    if (!low.ok()) return low.error();
    auto high = Positive(rest.substr(dash + 1), text);
    if (!high.ok()) return high.error();
    if (high.value() < low.value()) {
      return Error{"image tokens '" + text + "': the range is empty (A must be <= B)"};
    }
    dist.min = low.value();
    dist.max = high.value();
    return dist;
  }
  dist.kind = ImageTokenDistribution::Kind::kChoices;
  size_t begin = 0;
  while (begin <= rest.size()) {
    size_t end = rest.find(',', begin);
    if (end == std::string::npos) end = rest.size();
    const std::string item = rest.substr(begin, end - begin);
    const size_t times = item.find('x');
    auto value = Positive(item.substr(0, times), text);
    if (!value.ok()) return value.error();
    int32_t weight = 1;
    if (times != std::string::npos) {
      auto w = Positive(item.substr(times + 1), text);
      if (!w.ok()) return w.error();
      weight = w.value();
    }
    dist.values.push_back(value.value());
    dist.weights.push_back(weight);
    begin = end + 1;
  }
  dist.min = *std::min_element(dist.values.begin(), dist.values.end());
  dist.max = *std::max_element(dist.values.begin(), dist.values.end());
  return dist;
}

std::string FormatImageTokens(const ImageTokenDistribution& dist) {
  switch (dist.kind) {
    case ImageTokenDistribution::Kind::kFixed:
      return "fixed:" + std::to_string(dist.min);
    case ImageTokenDistribution::Kind::kUniform:
      return "uniform:" + std::to_string(dist.min) + "-" + std::to_string(dist.max);
    case ImageTokenDistribution::Kind::kChoices:
      break;
  }
  std::string text = "choices:";
  for (size_t i = 0; i < dist.values.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(dist.values[i]);
    if (dist.weights[i] != 1) text += "x" + std::to_string(dist.weights[i]);
  }
  return text;
}

std::vector<int32_t> DrawImageTokens(const ImageTokenDistribution& dist, int64_t count,
                                     uint64_t stream) {
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<size_t>(count));
  SplitMix64 random(dist.seed * 0x2545f4914f6cdd1dull + stream * 0x9e3779b97f4a7c15ull);
  const uint64_t total =
      std::accumulate(dist.weights.begin(), dist.weights.end(), static_cast<uint64_t>(0));
  for (int64_t i = 0; i < count; ++i) {
    switch (dist.kind) {
      case ImageTokenDistribution::Kind::kFixed:
        tokens.push_back(dist.min);
        break;
      case ImageTokenDistribution::Kind::kUniform:
        tokens.push_back(dist.min + static_cast<int32_t>(random.NextBelow(
                                        static_cast<uint64_t>(dist.max - dist.min) + 1)));
        break;
      case ImageTokenDistribution::Kind::kChoices: {
        uint64_t pick = random.NextBelow(total);
        size_t index = 0;
        while (pick >= static_cast<uint64_t>(dist.weights[index])) pick -= dist.weights[index++];
        tokens.push_back(dist.values[index]);
        break;
      }
    }
  }
  return tokens;
}

double MeanImageTokens(const ImageTokenDistribution& dist) {
  switch (dist.kind) {
    case ImageTokenDistribution::Kind::kFixed:
      return dist.min;
    case ImageTokenDistribution::Kind::kUniform:
      return (static_cast<double>(dist.min) + dist.max) / 2.0;
    case ImageTokenDistribution::Kind::kChoices:
      break;
  }
  double sum = 0;
  double weights = 0;
  for (size_t i = 0; i < dist.values.size(); ++i) {
    sum += static_cast<double>(dist.values[i]) * dist.weights[i];
    weights += dist.weights[i];
  }
  return sum / weights;
}

}  // namespace stagecraft
