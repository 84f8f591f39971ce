// `stagecraft multimodal contrastive|engram|cp [flags]`: the multimodal cost formulas as tables
// (src/multimodal/): contrastive-loss memory and traffic per loss, Engram table bytes per owner
// count, and the context-parallel indexer balance of contiguous and zig-zag shards.
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "core/suggest.h"
#include "core/units.h"
#include "multimodal/context_parallel.h"
#include "multimodal/contrastive.h"
#include "multimodal/engram.h"

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
    const EngramSpec spec;
    out << "Engram tables (V4.1: 2 tables of 384,006,168 and 384,016,682 rows, "
        << EngramRowBytes(spec) << " B per row): " << EngramLookupBytesPerToken(spec)
        << " B looked up per token per module\n";
    out << "  owners  bytes_per_owner\n";
    for (int32_t g : owners.value()) {
      out << PadLeft(std::to_string(g), 8) << PadLeft(FormatBytes(EngramOwnerBytes(spec, g)), 17)
          << "\n";
    }
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
  const std::vector<std::string> topics = {"contrastive", "engram", "cp"};
  return Fail(err, "multimodal: unknown topic '" + flags.topic + "'" +
                       DidYouMean(flags.topic, topics) + " (expected " + JoinChoices(topics) + ")");
}

}  // namespace stagecraft
