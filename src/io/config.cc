// ParseConfig: the YAML config (doc/config.md) as a Config. Every problem becomes an Error that
// names "source:line:col", the key path, the bad value, what was expected and a suggestion. This
// file reads the document and its cluster, parallel, schedule and multimodal sections;
// config_model.cc the model section, config_reader.cc the values (io/config_reader.h).
#include "io/config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/suggest.h"
#include "hardware/presets.h"
#include "io/config_reader.h"
#include "schedule/generator.h"

namespace stagecraft {
namespace config_yaml {
namespace {

constexpr char kSyntaxHint[] =
    "check the indentation (spaces, not tabs), the ':' after each key, and that quotes and "
    "brackets match";

// parallel.cp_mode: the ring (false) or the all-gather of KV (ParallelSpec::cp_all_gather).
constexpr EnumTable<bool> kCpModeNames = {{"ring", false}, {"all-gather", true}};

Status ReadLink(const Reader& reader, const Field& field, LinkSpec* link) {
  return reader.ReadMap(field,
                        {{"latency", DurationInto(reader, Sign::kNonNegative, &link->latency)},
                         {"bandwidth", BandwidthInto(reader, &link->bandwidth_bytes_per_s)}});
}

// The compute of one device: peak_tflops (TFLOP/s) and the fraction of it a layer achieves.
Status ReadDevice(const Reader& reader, const Field& field, ClusterSpec* cluster) {
  const Apply peak = [&reader, cluster](const Field& value) -> Status {
    double tflops = 0;
    STAGECRAFT_RETURN_IF_ERROR(reader.Number(value, std::numeric_limits<double>::infinity(),
                                             "TFLOP/s, a number > 0 such as 989.5", &tflops));
    cluster->peak_flops_per_s = tflops * 1e12;
    return Status::Ok();
  };
  return reader.ReadMap(field,
                        {{"peak_tflops", peak},
                         {"memory", BytesInto(reader, &cluster->hbm_bytes)},
                         {"memory_reserve", BytesInto(reader, &cluster->memory_reserve_bytes)},
                         {"efficiency",
                          [&reader, cluster](const Field& value) {
                            cluster->efficiency_given = true;
                            return reader.Number(value, 1.0, "a fraction > 0 and <= 1 such as 0.4",
                                                 &cluster->compute_efficiency);
                          }},
                         {"memory_efficiency", [&reader, cluster](const Field& value) {
                            return reader.Number(value, 1.0, "a fraction > 0 and <= 1 such as 0.8",
                                                 &cluster->memory_efficiency);
                          }}});
}

// Writing the section at all (even empty) turns the cluster model on.
// `preset: h100x2` starts from a preset cluster (hardware/presets.h); the other keys override it.
Status ReadCluster(const Reader& reader, const Field& field, ClusterSpec* cluster) {
  cluster->given = true;
  if (field.value.IsMap()) {
    for (const auto& entry : field.value) {
      if (entry.first.as<std::string>("") != "preset") continue;
      const Field preset{entry.first, entry.second, field.path + ".preset"};
      std::string name;
      STAGECRAFT_RETURN_IF_ERROR(StringInto(reader, &name)(preset));
      auto spec = ClusterFromPreset(name);
      if (!spec.ok()) return reader.At(preset, spec.error().message);
      *cluster = std::move(spec).value();
    }
  }
  const auto link = [&reader](LinkSpec* out) -> Apply {
    return [&reader, out](const Field& value) { return ReadLink(reader, value, out); };
  };
  STAGECRAFT_RETURN_IF_ERROR(
      reader.ReadMap(field, {{"preset", [](const Field&) { return Status::Ok(); }},
                             {"devices_per_node", CountInto(reader, &cluster->devices_per_node)},
                             {"nodes", CountInto(reader, &cluster->nodes)},
                             {"intra_node", link(&cluster->intra_node)},
                             {"inter_node", link(&cluster->inter_node)},
                             {"device", [&reader, cluster](const Field& value) {
                                return ReadDevice(reader, value, cluster);
                              }}}));
  if (int64_t{cluster->nodes} * cluster->devices_per_node > kMaxClusterDevices) {
    return reader.At(field, std::to_string(cluster->nodes) + " nodes x " +
                                std::to_string(cluster->devices_per_node) +
                                " devices per node are more than the limit of " +
                                std::to_string(kMaxClusterDevices) + " devices");
  }
  return Status::Ok();
}

// parallel.layer_counts: a non-empty list of integers >= 1.
Status ReadLayerCounts(const Reader& reader, const Field& field, std::vector<int32_t>* counts) {
  if (!field.value.IsSequence() || field.value.size() == 0) {
    return reader.At(field,
                     "found " + Describe(field.value) +
                         " (expected a list of layer counts, one per stage, such as [3, 4, 3])");
  }
  counts->clear();
  for (const YAML::Node& item : field.value) {
    const Field count{YAML::Node(), item, field.path + "[" + std::to_string(counts->size()) + "]"};
    STAGECRAFT_RETURN_IF_ERROR(reader.Int(count, 1, &counts->emplace_back()));
  }
  return Status::Ok();
}

// layer_counts goes with partition: counts and layout with partition: layout; either one
// alone implies its partition.
Status CheckPartition(const Reader& reader, const Written& written, ParallelSpec* parallel) {
  const Field* partition = Find(written, "partition");
  const Field* counts = Find(written, "layer_counts");
  const Field* layout = Find(written, "layout");
  if (counts != nullptr && layout != nullptr) {
    return reader.At(*layout, "give layer_counts or layout, not both");
  }
  if (layout != nullptr && parallel->layout.empty()) {
    return reader.At(*layout, "is empty (expected a layout such as 'Et*3|t*4|t*3L')");
  }
  if (partition == nullptr) {
    if (counts != nullptr) parallel->partition = PartitionMethod::kCounts;
    if (layout != nullptr) parallel->partition = PartitionMethod::kLayout;
    return Status::Ok();
  }
  const std::string method = "'" + partition->value.Scalar() + "'";
  const bool counts_used = parallel->partition == PartitionMethod::kCounts;
  const bool layout_used = parallel->partition == PartitionMethod::kLayout;
  if (counts_used && counts == nullptr) {
    return reader.At(*partition, method + " needs parallel.layer_counts, one count per stage");
  }
  if (layout_used && layout == nullptr) {
    return reader.At(*partition, method + " needs parallel.layout, e.g. 'Et*3|t*4|t*3L'");
  }
  const Field* given = counts != nullptr ? counts : layout;  // at most one of them
  if (given == nullptr || (given == counts ? counts_used : layout_used)) return Status::Ok();
  return reader.At(*given, "is not used with partition: " + partition->value.Scalar() +
                               " (remove it, or set partition: " +
                               (given == counts ? "counts" : "layout") + ")");
}

Status ReadParallel(const Reader& reader, const Field& field, ParallelSpec* parallel) {
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(reader.ReadMap(
      field,
      {{"pp", CountInto(reader, &parallel->pp)},
       {"vpp", CountInto(reader, &parallel->vpp)},
       {"microbatches", CountInto(reader, &parallel->microbatches)},
       {"placement", EnumInto(reader, "placement", kPlacementNames, &parallel->placement)},
       {"partition",
        EnumInto(reader, "partition method", kPartitionMethodNames, &parallel->partition)},
       {"layer_counts",
        [&reader, parallel](const Field& value) {
          return ReadLayerCounts(reader, value, &parallel->layer_counts);
        }},
       {"layout", StringInto(reader, &parallel->layout)},
       {"tp", CountInto(reader, &parallel->tp)},
       {"dp", CountInto(reader, &parallel->dp)},
       {"cp", CountInto(reader, &parallel->cp)},
       {"ep", CountInto(reader, &parallel->ep)},
       {"cp_mode", EnumInto(reader, "cp mode", kCpModeNames, &parallel->cp_all_gather)},
       {"context_parallel_rotate_method",
        EnumInto(reader, "rotate method", kCpRotateNames, &parallel->cp_rotate)},
       {"cp_sharding", EnumInto(reader, "cp sharding", kCpShardingNames, &parallel->cp_sharding)},
       {"cp_overlap", BoolInto(reader, &parallel->cp_overlap)},
       {"sequence_parallel", BoolInto(reader, &parallel->sequence_parallel)},
       {"recompute", EnumInto(reader, "recompute", kRecomputeNames, &parallel->recompute)},
       {"recompute_num_layers", CountInto(reader, &parallel->recompute_num_layers)},
       {"recompute_method",
        EnumInto(reader, "recompute method", kRecomputeMethodNames, &parallel->recompute_method)},
       {"distributed_optimizer", BoolInto(reader, &parallel->distributed_optimizer)},
       {"fp8", BoolInto(reader, &parallel->fp8)},
       {"fp8_recipe", EnumInto(reader, "fp8 recipe", kFp8RecipeNames, &parallel->fp8_recipe)},
       {"enable_fsdp_float8_all_gather", BoolInto(reader, &parallel->fp8_all_gather)},
       {"fused_kernels", BoolInto(reader, &parallel->fused_kernels)},
       {"engine", EnumInto(reader, "engine", kTrainingEngineNames, &parallel->engine)},
       {"cross_entropy_fusion", EnumInto(reader, "cross entropy fusion", kCrossEntropyFusionNames,
                                         &parallel->cross_entropy_fusion)},
       {"overlap_grad_reduce", BoolInto(reader, &parallel->overlap_grad_reduce)},
       {"overlap_param_gather", BoolInto(reader, &parallel->overlap_param_gather)},
       {"tp_comm_overlap", BoolInto(reader, &parallel->tp_comm_overlap)},
       {"async_tp", BoolInto(reader, &parallel->async_tp)},
       {"fsdp_reshard_after_forward",
        [&reader, parallel](const Field& value) -> Status {
          bool reshard = true;
          const Status read = BoolInto(reader, &reshard)(value);
          if (!read.ok()) return read;
          parallel->reshard_after_forward =
              reshard ? ReshardAfterForward::kYes : ReshardAfterForward::kNo;
          return Status::Ok();
        }},
       {"grad_buckets",
        EnumInto(reader, "gradient buckets", kGradBucketsNames, &parallel->grad_buckets)},
       {"fsdp",
        [&reader, parallel](const Field& value) -> Status {
          std::string mode;
          const Status read =
              reader.Choice(value, "fsdp sharding strategy",
                            {"no-shard", "shard-grad-op", "full-shard", "hybrid"}, &mode);
          if (!read.ok()) return read;
          parallel->zero_stage = mode == "no-shard" ? 0 : mode == "shard-grad-op" ? 2 : 3;
          parallel->hybrid_shard = mode == "hybrid";
          return Status::Ok();
        }},
       {"zero_stage",
        [&reader, parallel](const Field& value) -> Status {
          const Status read = reader.Int(value, 0, &parallel->zero_stage);
          if (!read.ok()) return read;
          if (parallel->zero_stage > kMaxZeroStage) {
            return reader.At(value, "is " + std::to_string(parallel->zero_stage) + " (" +
                                        kZeroStageExpected + ")");
          }
          return Status::Ok();
        }},
       {"precision", EnumInto(reader, "precision", kTrainingPrecisionNames, &parallel->precision)}},
      &written));
  // The recomputation's layer count and method shape full recomputation only (Megatron's
  // --recompute-num-layers and --recompute-method go with --recompute-granularity full).
  for (const char* key : {"recompute_num_layers", "recompute_method"}) {
    const Field* found = Find(written, key);
    if (found != nullptr && parallel->recompute != Recompute::kFull) {
      return reader.At(*found, std::string("applies with recompute: full (the layers that "
                                           "recompute, or their groups), but recompute is '") +
                                   RecomputeName(parallel->recompute) +
                                   "': set recompute: full, or drop " + key);
    }
  }
  const Field* recipe = Find(written, "fp8_recipe");
  if (recipe != nullptr && !parallel->fp8) {
    return reader.At(*recipe,
                     "scales the FP8 linear layers, and this run has none (fp8 is "
                     "false): add fp8: true, or drop fp8_recipe");
  }
  return CheckPartition(reader, written, parallel);
}

Status ReadScheduleName(const Reader& reader, const Field& field, std::string* out) {
  STAGECRAFT_RETURN_IF_ERROR(reader.String(field, out));
  if (FindCostAwareScheduleGenerator(*out) != nullptr) return Status::Ok();
  auto generator = FindScheduleGenerator(*out);
  if (!generator.ok()) return reader.At(field, generator.error().message);
  return Status::Ok();
}

Status ReadSchedule(const Reader& reader, const Field& field, ScheduleSpec* schedule) {
  return reader.ReadMap(
      field, {{"name",
               [&reader, schedule](const Field& value) {
                 return ReadScheduleName(reader, value, &schedule->name);
               }},
              {"group_size", CountInto(reader, &schedule->group_size)},
              {"p2p", EnumInto(reader, "mode", kP2pModeNames, &schedule->p2p)},
              {"cost_p2p", DurationInto(reader, Sign::kNonNegative, &schedule->cost_p2p)},
              {"csv", StringInto(reader, &schedule->csv)},
              {"state_policy",
               EnumInto(reader, "state policy", kStatePolicyNames, &schedule->state_policy)},
              {"shadow_reading",
               EnumInto(reader, "shadow reading", kShadowReadingNames, &schedule->shadow_reading)},
              {"state_buffer_slots", IntInto(reader, 0, &schedule->state_buffer_slots)}});
}

// multimodal.vision: the vision encoder and where it runs (multimodal/vision.h);
// multimodal.engram: how the Engram tables are sharded (multimodal/engram.h).
Status ReadVision(const Reader& reader, const Field& field, VisionSpec* vision) {
  vision->given = true;
  const Apply tokens = [&reader, vision](const Field& value) -> Status {
    std::string text;
    STAGECRAFT_RETURN_IF_ERROR(reader.String(value, &text));
    auto dist = ParseImageTokens(text);
    if (!dist.ok()) return reader.At(value, dist.error().message);
    const uint64_t seed = vision->image_tokens.seed;
    vision->image_tokens = std::move(dist).value();
    vision->image_tokens.seed = seed;
    return Status::Ok();
  };
  const Apply seed = [&reader, vision](const Field& value) -> Status {
    int32_t number = 0;
    STAGECRAFT_RETURN_IF_ERROR(reader.Int(value, 0, &number));
    vision->image_tokens.seed = static_cast<uint64_t>(number);
    return Status::Ok();
  };
  return reader.ReadMap(
      field, {{"placement",
               EnumInto(reader, "vision placement", kVisionPlacementNames, &vision->placement)},
              {"layers", CountInto(reader, &vision->layers)},
              {"hidden", CountInto(reader, &vision->hidden)},
              {"heads", CountInto(reader, &vision->heads)},
              {"mlp", CountInto(reader, &vision->mlp)},
              {"patch", CountInto(reader, &vision->patch)},
              {"unshuffle", CountInto(reader, &vision->unshuffle)},
              {"images_per_sample", CountInto(reader, &vision->images_per_sample)},
              {"recompute", BoolInto(reader, &vision->recompute)},
              {"image_tokens", tokens},
              {"seed", seed},
              {"devices", CountInto(reader, &vision->devices)},
              {"tp", CountInto(reader, &vision->tp)},
              {"pp", CountInto(reader, &vision->pp)}});
}

Status ReadEngram(const Reader& reader, const Field& field, EngramSharding* engram) {
  engram->given = true;
  return reader.ReadMap(field,
                        {{"owners", CountInto(reader, &engram->owners)},
                         {"host_memory", BoolInto(reader, &engram->host_memory)},
                         {"pcie_bandwidth", BandwidthInto(reader, &engram->pcie_bytes_per_s)},
                         {"table_rows", [&reader, engram](const Field& value) -> Status {
                            int32_t rows = 0;  // up to 2^31 - 1 rows per table
                            STAGECRAFT_RETURN_IF_ERROR(reader.Int(value, 1, &rows));
                            engram->table_rows = rows;
                            return Status::Ok();
                          }}});
}

Status ReadMultimodal(const Reader& reader, const Field& field, MultimodalSpec* multimodal) {
  return reader.ReadMap(
      field, {{"vision",
               [&](const Field& value) { return ReadVision(reader, value, &multimodal->vision); }},
              {"engram", [&](const Field& value) {
                 return ReadEngram(reader, value, &multimodal->engram);
               }}});
}

Status ReadDocument(const Reader& reader, const YAML::Node& root, Config* config) {
  const std::vector<KeyHandler> sections = {
      {"model", [&](const Field& value) { return ReadModel(reader, value, &config->model); }},
      {"cluster", [&](const Field& value) { return ReadCluster(reader, value, &config->cluster); }},
      {"parallel",
       [&](const Field& value) { return ReadParallel(reader, value, &config->parallel); }},
      {"schedule",
       [&](const Field& value) { return ReadSchedule(reader, value, &config->schedule); }},
      {"multimodal",
       [&](const Field& value) { return ReadMultimodal(reader, value, &config->multimodal); }}};
  const std::string expected =
      " (expected a map with sections " + JoinChoices(KeysOf(sections)) + ")";
  if (root.IsNull()) return Error{reader.Where(YAML::Mark()) + "the config is empty" + expected};
  if (!root.IsMap()) {
    return Error{reader.Where(root.Mark()) + "the config is " + Describe(root) + ", not a map" +
                 expected};
  }
  return reader.ReadMap(Field{YAML::Node(), root, ""}, sections);
}

// Where each document of a YAML stream starts and whether it holds anything. It replaces
// YAML::LoadAll, which in yaml-cpp 0.7 loops forever, allocating, when a document consumes
// nothing, as after a stray ',' at the top level (jbeder/yaml-cpp#1040, fixed upstream by #1319;
// found by fuzz/fuzz_config): the scan stops at the first document that made no progress.
class DocumentScan : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark mark;   // of its first node
    bool null = true;  // holds nothing (a trailing '---')
    bool seen = false;
  };

  // Scans the whole stream; throws YAML::ParserException on malformed YAML.
  explicit DocumentScan(const std::string& text) {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    while (parser.HandleNextDocument(*this)) {
      const size_t count = documents_.size();
      if (count >= 2 && documents_[count - 1].null && documents_[count - 2].null &&
          documents_[count - 1].mark.pos == documents_[count - 2].mark.pos) {
        stalled_at_ = documents_.back().mark;  // no progress: the next call would do the same
        documents_.pop_back();
        break;
      }
      if (count > text.size() + 1) break;  // every real document consumes a character
    }
  }
  const std::vector<Document>& documents() const { return documents_; }
  // Where the parser stopped making progress, if it did.
  const std::optional<YAML::Mark>& stalled_at() const { return stalled_at_; }

  void OnDocumentStart(const YAML::Mark&) override { documents_.emplace_back(); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark, false);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark, bool null) {
    if (documents_.empty()) documents_.emplace_back();
    Document& document = documents_.back();
    if (document.seen) return;
    document = Document{mark, null, true};
  }

  std::vector<Document> documents_;
  std::optional<YAML::Mark> stalled_at_;
};

Result<Config> ParseDocuments(const Reader& reader, std::string_view yaml_text) {
  const std::string text(yaml_text);
  const DocumentScan scan(text);
  if (scan.stalled_at()) {
    return Error{reader.Where(*scan.stalled_at()) +
                 "malformed YAML: the parser cannot read past this point (a stray ',', '?' or "
                 "flow indicator outside [] or {}?) (" +
                 kSyntaxHint + ")"};
  }
  for (size_t index = 1; index < scan.documents().size(); ++index) {
    const DocumentScan::Document& document = scan.documents()[index];
    if (document.null) continue;  // a trailing '---' adds an empty document
    return Error{reader.Where(document.mark) +
                 "found a second YAML document (expected one; remove the '---' line above it)"};
  }
  Config config;
  STAGECRAFT_RETURN_IF_ERROR(ReadDocument(reader, YAML::Load(text), &config));  // the first
  return config;
}

}  // namespace
}  // namespace config_yaml

std::string ConfigLocations::Where(const std::string& path) const {
  const auto found = by_path.find(path);
  return (found == by_path.end() ? source : found->second) + ": " + path + ": ";
}

Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source,
                           ConfigLocations* locations, const ParseOptions& options) {
  if (locations != nullptr) *locations = ConfigLocations{std::string(source), {}};
  const config_yaml::Reader reader(source, locations, options);
  try {
    return config_yaml::ParseDocuments(reader, yaml_text);
  } catch (const YAML::Exception& exception) {
    return Error{reader.Where(exception.mark) + "malformed YAML: " + exception.msg + " (" +
                 config_yaml::kSyntaxHint + ")"};
  }
}

}  // namespace stagecraft
