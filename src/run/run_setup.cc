#include "run/run_setup.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include "core/enum_table.h"
#include "core/units.h"
#include "hardware/fp8_recipe.h"
#include "hardware/presets.h"
#include "io/deepspeed_config.h"
#include "io/hf_config.h"
#include "io/megatron_args.h"
#include "io/torchtitan_config.h"
#include "io/torchtitan_registry.h"
#include "model/layer_costs.h"
#include "model/model_spec.h"
#include "run/bundled_config.h"
#include "run/run_shape.h"
#include "run/run_size.h"
#include "schedule/generator.h"
#include "schedule/schedule_csv.h"

namespace stagecraft {
namespace {

std::string BaseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

Status ApplyDuration(const std::string& value, const char* name, bool positive, Time& field) {
  auto parsed = ParseDuration(value);
  if (!parsed.ok()) return Error{std::string(name) + ": " + parsed.error().message};
  if (parsed.value().ns() < 0 || (positive && parsed.value().ns() == 0)) {
    return Error{std::string(name) + ": '" + value + "' must be " +
                 (positive ? "positive" : "zero or more") +
                 " (expected a duration such as '1.5ms'; a bare number means ms)"};
  }
  field = parsed.value();
  return Status::Ok();
}

// A count flag: an integer >= 1.
Result<int32_t> ParseCount(const std::string& text, const char* name) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error == std::errc::result_out_of_range ||
      (error == std::errc() && stop == end && value > std::numeric_limits<int32_t>::max())) {
    return Error{std::string(name) + ": '" + text + "' is out of range (expected a whole " +
                 "number from 1 to " + std::to_string(std::numeric_limits<int32_t>::max()) +
                 ", e.g. " + name + " 4)"};
  }
  if (error != std::errc() || stop != end) {
    return Error{std::string(name) + ": '" + text + "' is not an integer (expected a whole " +
                 "number >= 1 written in digits, e.g. " + name + " 4)"};
  }
  if (value < 1) {
    return Error{std::string(name) + ": must be at least 1, got " + text};
  }
  return static_cast<int32_t>(value);
}

Status ApplyCount(const std::string& value, const char* name, int32_t& field) {
  auto count = ParseCount(value, name);
  if (!count.ok()) return count.error();
  field = count.value();
  return Status::Ok();
}

// A flag whose value is one of a few names.
template <typename Enum>
Status ApplyChoice(const std::string& value, const char* name, const EnumTable<Enum>& choices,
                   Enum& field) {
  const std::optional<Enum> chosen = choices.Parse(value);
  if (!chosen) {
    return Error{std::string(name) + ": unknown value '" + value + "'" + choices.DidYouMean(value) +
                 " (expected " + choices.Joined() + ")"};
  }
  field = *chosen;
  return Status::Ok();
}

Status ApplyP2p(const std::string& value, const char* name, Config& config) {
  const std::optional<P2pMode> chosen = kP2pModeNames.Parse(value);
  if (!chosen) {
    return Error{std::string(name) + ": unknown mode '" + value + "'" +
                 kP2pModeNames.DidYouMean(value) + " (expected " + kP2pModeNames.Joined() +
                 "; stagecraft list p2p)"};
  }
  config.schedule.p2p = *chosen;
  return Status::Ok();
}

Status ApplyZeroStage(const std::string& text, const char* name, Config& config) {
  if (text.size() != 1 || text[0] < '0' || text[0] > '0' + kMaxZeroStage) {
    return Error{std::string(name) + ": '" + text + "' is not a ZeRO stage (" + kZeroStageExpected +
                 "; 1 shards the optimizer state, 2 the gradients too, 3 the parameters too)"};
  }
  config.parallel.zero_stage = text[0] - '0';
  return Status::Ok();
}

Status ApplyVisionPlacement(const std::string& value, const char* name, Config& config) {
  if (!config.multimodal.vision.given) {
    return Error{std::string(name) +
                 ": the config has no vision encoder (add a multimodal.vision "
                 "section, as examples/v41-flash-multimodal.yaml)"};
  }
  return ApplyChoice(value, name, kVisionPlacementNames, config.multimodal.vision.placement);
}

constexpr const char* kTimeHelp = "(ns, us, ms, s; a bare number means ms)";

std::vector<RunOverride> MakeRunOverrides() {
  using C = Config;
  using S = const std::string&;
  using F = const char*;
  return {
      {"--schedule", "schedule.name", "NAME", "schedule generator (stagecraft list schedules)",
       &RunSpec::schedule,
       [](S v, F, C& c) {
         c.schedule.name = v;
         return Status::Ok();
       }},
      {"--pp", "parallel.pp", "P", "pipeline-parallel ranks P", &RunSpec::pp,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.parallel.pp); }},
      {"--hf-config", "model", "FILE",
       "take the model from a HuggingFace config.json: dense (Llama, Mistral, Qwen2), "
       "MoE (Mixtral, DeepSeek), MLA (DeepSeek-V2/V3) or DeepSeek-V4.1's CSA2 layers; "
       "seq_len and micro_batch_size stay the config's (model.seq_len, --seq-len); "
       "without a config: one node of --cluster (h100), pp 1, dp filling it",
       &RunSpec::hf_config},
      {"--cluster", "cluster", "PRESET",
       "replace the config's cluster by a preset DEVICE or DEVICExNODES, e.g. h100x2 "
       "(stagecraft list presets)",
       &RunSpec::cluster},
      {"--recompute", "parallel.recompute", "MODE",
       "activation recomputation: none, selective, selective-op or full "
       "(parallel.recompute)",
       &RunSpec::recompute,
       [](S v, F f, C& c) { return ApplyChoice(v, f, kRecomputeNames, c.parallel.recompute); }},
      {"--zero-stage", "parallel.zero_stage", "Z",
       "ZeRO stage 0-3: 1 shards the optimizer state over dp, 2 the gradients too, "
       "3 the parameters too (parallel.zero_stage)",
       &RunSpec::zero_stage, ApplyZeroStage},
      {"--global-batch-size", "parallel.microbatches", "N",
       "sequences per iteration N: microbatches = N / (dp x micro_batch_size), which "
       "must divide (instead of --microbatches)",
       &RunSpec::global_batch_size},
      {"--seq-len", "model.seq_len", "S",
       "tokens per sequence S (layer-list and transformer models)", &RunSpec::seq_len,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.model.seq_len); }},
      {"--micro-batch-size", "model.micro_batch_size", "B",
       "sequences per microbatch B (layer-list and transformer models)", &RunSpec::micro_batch_size,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.model.micro_batch_size); }},
      {"--tp", "parallel.tp", "T",
       "tensor-parallel ranks per stage T (transformer and CSA2 layer-list models)", &RunSpec::tp,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.parallel.tp); }},
      {"--dp", "parallel.dp", "D", "data-parallel replicas D (transformer models)", &RunSpec::dp,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.parallel.dp); }},
      {"--cp", "parallel.cp", "C",
       "context-parallel ranks C (transformer and CSA2 layer-list models)", &RunSpec::cp,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.parallel.cp); }},
      {"--cp-sharding", "parallel.cp_sharding", "SHARDING",
       "CSA2 layer lists: how cp splits the sequence, zigzag (2C chunks, the indexer "
       "balanced) or contiguous",
       &RunSpec::cp_sharding,
       [](S v, F f, C& c) { return ApplyChoice(v, f, kCpShardingNames, c.parallel.cp_sharding); }},
      {"--ep", "parallel.ep", "E", "expert-parallel ranks E within dp (MoE transformer models)",
       &RunSpec::ep, [](S v, F f, C& c) { return ApplyCount(v, f, c.parallel.ep); }},
      {"--vpp", "parallel.vpp", "V", "chunks (virtual stages) per rank V", &RunSpec::vpp,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.parallel.vpp); }},
      {"--microbatches", "parallel.microbatches", "M", "microbatches per iteration M",
       &RunSpec::microbatches,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.parallel.microbatches); }},
      {"--group-size", "schedule.group_size", "G",
       "interleaved-1f1b microbatch group size (default P)", &RunSpec::group_size,
       [](S v, F f, C& c) { return ApplyCount(v, f, c.schedule.group_size); }},
      {"--cost-forward", "model.forward", "T",
       std::string("forward time of one microbatch on one rank; each of V chunks costs T/V ") +
           kTimeHelp,
       &RunSpec::cost_forward,
       [](S v, F f, C& c) { return ApplyDuration(v, f, true, c.model.forward); }},
      {"--cost-input-grad", "model.input_grad", "T",
       std::string("input-gradient backward time, same unit ") + kTimeHelp,
       &RunSpec::cost_input_grad,
       [](S v, F f, C& c) { return ApplyDuration(v, f, true, c.model.input_grad); }},
      {"--cost-weight-grad", "model.weight_grad", "T",
       std::string("weight-gradient backward time; full backward = input-grad + weight-grad ") +
           kTimeHelp,
       &RunSpec::cost_weight_grad,
       [](S v, F f, C& c) { return ApplyDuration(v, f, false, c.model.weight_grad); }},
      {"--cost-fb", "model.fb", "T",
       std::string("cost of one overlapped F&B op (a forward and another microbatch's full "
                   "backward, DualPipe); default F + B, no gain ") +
           kTimeHelp,
       &RunSpec::cost_fb, [](S v, F f, C& c) { return ApplyDuration(v, f, true, c.model.fb); }},
      {"--cost-p2p", "schedule.cost_p2p", "T",
       std::string("fixed time added to every transfer between two ranks ") + kTimeHelp,
       &RunSpec::cost_p2p,
       [](S v, F f, C& c) { return ApplyDuration(v, f, false, c.schedule.cost_p2p); }},
      {"--p2p", "schedule.p2p", "MODE",
       "point-to-point semantics: async (default), rendezvous or torch-pipelining "
       "(stagecraft list p2p); check: the only mode searched",
       &RunSpec::p2p, ApplyP2p},
      {"--state-policy", "schedule.state_policy", "POLICY",
       "shared-state movement: payload, direct, shadow or auto (layer-list models)",
       &RunSpec::state_policy,
       [](S v, F f, C& c) {
         return ApplyChoice(v, f, kStatePolicyNames, c.schedule.state_policy);
       }},
      {"--partition", "parallel.partition", "METHOD",
       "layers to stages: state-aware, cost, counts or layout (layer-list models)",
       &RunSpec::partition,
       [](S v, F f, C& c) {
         return ApplyChoice(v, f, kPartitionMethodNames, c.parallel.partition);
       }},
      {"--vision-placement", "multimodal.vision.placement", "PLACEMENT",
       "the vision encoder: colocated, decoupled, disaggregated or bubble-fill "
       "(configs with multimodal.vision)",
       &RunSpec::vision_placement, ApplyVisionPlacement},
      {"--from-megatron", "model, parallel", "FILE",
       "take the model and the layout from Megatron-LM arguments, one per line, as `plan "
       "--export megatron` writes them (megatron-args.txt); dp from the cluster's GPUs",
       &RunSpec::from_megatron},
      {"--from-torchtitan", "model, parallel", "FILE",
       "take the layout from torchtitan's TOML job config (0.2 releases, FILE.toml) or its "
       "Python config registry function (FILE.py), as `plan --export torchtitan` writes them "
       "(torchtitan.toml, stagecraft_plan.py); the model from the config, --hf-config or its "
       "llama3 flavor; its GPUs are the cluster's",
       &RunSpec::from_torchtitan},
      {"--from-deepspeed", "model, parallel", "DIR|JSON",
       "take the model and the layout from DeepSpeed's ds_config.json and the "
       "megatron-deepspeed-args.txt beside it, as `plan --export deepspeed` writes them (a "
       "folder or the JSON); dp from the cluster's GPUs",
       &RunSpec::from_deepspeed},
      {"--schedule-csv", "schedule.csv", "FILE",
       "load the schedule from a torch.distributed.pipelining compute-only CSV",
       &RunSpec::schedule_csv,
       [](S v, F, C& c) {
         c.schedule.csv = v;
         return Status::Ok();
       }},
  };
}

Status ApplyFlags(const RunSpec& spec, Config& config) {
  for (const RunOverride& row : RunOverrides()) {
    const std::optional<std::string>& value = spec.*row.field;
    if (!value || row.apply == nullptr) continue;
    STAGECRAFT_RETURN_IF_ERROR(row.apply(*value, row.flag, config));
  }
  return Status::Ok();
}

std::string Plural(int64_t count, const std::string& word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

// pp x tp x cp x dp within kMaxClusterDevices, so that every device count stays in int32.
Status CheckWorldSize(const Config& c) {
  const ParallelSpec& p = c.parallel;
  const long double world = static_cast<long double>(p.pp) * p.tp * p.cp * p.dp;
  if (world <= static_cast<long double>(kMaxClusterDevices)) return Status::Ok();
  return Error{"pp " + std::to_string(p.pp) + " x tp " + std::to_string(p.tp) + " x cp " +
               std::to_string(p.cp) + " x dp " + std::to_string(p.dp) + " = " +
               FormatFixed(static_cast<double>(world), 0) + " devices, more than the limit of " +
               std::to_string(kMaxClusterDevices) + "; lower --pp, --tp, --cp or --dp"};
}

// An FP8 recipe the device's tensor cores run: mxfp8 needs block-scaled (MX) tensor cores.
Status CheckFp8Recipe(const Config& config, const ConfigLocations& locations) {
  const ParallelSpec& p = config.parallel;
  if (!p.fp8 || RecipeRuns(config.cluster.kernels, p.fp8_recipe)) return Status::Ok();
  std::string devices;
  for (const DevicePreset& preset : DevicePresets()) {
    if (!RecipeRuns(preset.kernels, p.fp8_recipe)) continue;
    devices += (devices.empty() ? "" : ", ") + std::string(preset.name);
  }
  const std::string device =
      config.cluster.device == "custom" ? "a custom cluster" : "'" + config.cluster.device + "'";
  return Error{locations.Where("parallel.fp8_recipe") + "'" + Fp8RecipeName(p.fp8_recipe) +
               "' needs block-scaled (MX) FP8 tensor cores, which " + device +
               " does not have (devices that have them: " + devices +
               "); pick another recipe (tensorwise, delayed, rowwise, rowwise_with_gw_hp, "
               "blockwise) or device"};
}

Status CheckGeneratedRunSize(const Config& c, bool trace) {
  const RunSize size{c.parallel.pp, int64_t{c.parallel.pp} * c.parallel.vpp,
                     c.parallel.microbatches, trace};
  return CheckRunSize(
      size, "pp " + std::to_string(c.parallel.pp) + " x vpp " + std::to_string(c.parallel.vpp),
      "--pp, --vpp or --microbatches");
}

// Every stage's F, I and W within the clock's per-action limit (costs derived from a model's
// dimensions can be arbitrarily long).
// `model` names where the model comes from, for the message.
Status CheckStageCosts(const PreparedRun& run, const std::string& model) {
  for (size_t stage = 0; stage < run.stage_costs.size(); ++stage) {
    const StageCost& cost = run.stage_costs[stage];
    for (const auto& [name, time] :
         {std::pair{"forward", cost.forward}, std::pair{"input_grad", cost.input_grad},
          std::pair{"weight_grad", cost.weight_grad}}) {
      if (time <= kMaxInputDuration) continue;
      return Error{model + ": stage " + std::to_string(stage) + "'s " + name + " takes " +
                   (time == Time::Max()
                        ? std::string("longer than int64 nanoseconds hold")
                        : FormatFixed(static_cast<double>(time.ns()) / 1e9, 0) + " s") +
                   ", more than the limit of " +
                   FormatFixed(static_cast<double>(kMaxInputDuration.ns()) / 1e9, 0) +
                   " s per action (2^42 ns); the model's dimensions, seq_len or "
                   "micro_batch_size are too large for this device (expected a smaller "
                   "--seq-len or --micro-batch-size, more --pp or --tp, or a faster --cluster)"};
    }
  }
  return Status::Ok();
}

// A CSV schedule fixes pp, the stage count and the microbatches it uses. A flag that disagrees
// is an error; more microbatches than the CSV uses are allowed (the missing ones show up in the
// check). Layout values in the config file are for generators: when they differ from the CSV
// they are ignored, with a note.
Result<Schedule> LoadCsvSchedule(const std::string& path, const RunSpec& flags,
                                 const Config& config, const ConfigLocations& locations,
                                 std::vector<std::string>& notes) {
  auto text = flags.files.read(path);
  if (!text.ok()) return text.error();
  const std::string csv = BaseName(path);
  auto schedule = ParseScheduleCsv(text.value(), csv);
  if (!schedule.ok()) return schedule.error();
  Schedule loaded = std::move(schedule).value();
  if (loaded.num_ranks > kMaxClusterDevices) {
    return Error{csv + " has " + std::to_string(loaded.num_ranks) +
                 " rows, one per rank: more than the limit of " +
                 std::to_string(kMaxClusterDevices) +
                 " ranks (2^20, a cluster's most devices); expected one row per pipeline rank"};
  }
  STAGECRAFT_RETURN_IF_ERROR(CheckRunSize(
      RunSize{loaded.num_ranks, loaded.num_stages, loaded.num_microbatches, flags.trace},
      csv + "'s rows and highest indices", "the rows, stages or microbatches of " + csv));
  const ParallelSpec& parallel = config.parallel;
  auto disagree = [&](const std::optional<std::string>& flag, const char* flag_name,
                      const char* key, bool differs, const std::string& csv_has) -> Status {
    if (!differs) return Status::Ok();
    if (flag) {
      return Error{std::string(flag_name) + " " + *flag + " disagrees with " + csv + ", which " +
                   csv_has + "; drop " + flag_name + " or fix the CSV"};
    }
    if (locations.by_path.count(key) > 0) {
      notes.push_back(locations.Where(key) + "ignored: " + csv + " " + csv_has);
    }
    return Status::Ok();
  };
  STAGECRAFT_RETURN_IF_ERROR(
      disagree(flags.pp, "--pp", "parallel.pp", parallel.pp != loaded.num_ranks,
               "has " + Plural(loaded.num_ranks, "row") + " (one per rank)"));
  STAGECRAFT_RETURN_IF_ERROR(disagree(flags.vpp, "--vpp", "parallel.vpp",
                                      parallel.vpp * loaded.num_ranks != loaded.num_stages,
                                      "has " + std::to_string(loaded.num_stages) + " stages on " +
                                          std::to_string(loaded.num_ranks) + " ranks"));
  if (flags.microbatches) {
    if (parallel.microbatches < loaded.num_microbatches) {
      return Error{"--microbatches " + *flags.microbatches + " is less than the " +
                   std::to_string(loaded.num_microbatches) + " microbatches " + csv + " uses"};
    }
    loaded.num_microbatches = parallel.microbatches;
    STAGECRAFT_RETURN_IF_ERROR(CheckRunSize(
        RunSize{loaded.num_ranks, loaded.num_stages, loaded.num_microbatches, flags.trace},
        csv + " with --microbatches " + *flags.microbatches, "--microbatches"));
  } else {
    STAGECRAFT_RETURN_IF_ERROR(
        disagree(flags.microbatches, "--microbatches", "parallel.microbatches",
                 parallel.microbatches != loaded.num_microbatches,
                 "uses " + std::to_string(loaded.num_microbatches) +
                     (loaded.num_microbatches == 1 ? " microbatch" : " microbatches")));
  }
  return loaded;
}

Status CheckLayout(const Config& config, const ConfigLocations& locations,
                   const Schedule& schedule) {
  const int32_t layers = config.model.is_layer_list()
                             ? static_cast<int32_t>(config.model.layers.size())
                             : config.model.num_layers;
  if (layers > 0 && schedule.num_stages > layers) {
    return Error{locations.Where("model.layers") + "the model has only " + Plural(layers, "layer") +
                 " but the pipeline has " + Plural(schedule.num_stages, "stage") + " (pp " +
                 std::to_string(schedule.num_ranks) + " x vpp " +
                 std::to_string(schedule.chunks_per_rank()) +
                 "); expected at most one stage per layer: lower --pp or --vpp"};
  }
  const int32_t world =
      schedule.num_ranks * config.parallel.tp * config.parallel.cp * config.parallel.dp;
  if (config.cluster.given && world > config.cluster.num_devices()) {
    return Error{
        locations.Where("cluster") + "pp = " + std::to_string(schedule.num_ranks) +
        (world != schedule.num_ranks ? " x tp = " + std::to_string(config.parallel.tp) +
                                           " x cp = " + std::to_string(config.parallel.cp) +
                                           " x dp = " + std::to_string(config.parallel.dp)
                                     : std::string()) +
        " needs " + Plural(world, "device") + " but the cluster has " +
        std::to_string(config.cluster.num_devices()) + " (" + Plural(config.cluster.nodes, "node") +
        " x " + Plural(config.cluster.devices_per_node, "device") +
        " per node); lower --pp or add nodes"};
  }
  return Status::Ok();
}

GeneratorParams ParamsOf(const Config& c) {
  return GeneratorParams{c.parallel.pp, c.parallel.vpp, c.parallel.microbatches,
                         c.schedule.group_size};
}

// A generator from either table. A cost-aware generator (zb-1p, zb-2p; zb-v, v-half, v-min)
// times the pipeline while it builds it, which needs the stage costs and the transfers, which
// need a partition, which needs the placement: here it gets a cheap provisional schedule of the
// same shape and placement (the handcrafted ZB-V for the V ones, ZB-H1 for the others: one chunk
// per rank, loop placement), and TimeCostAwareSchedule replaces it once the run is lowered.
Result<Schedule> GenerateNamedSchedule(const Config& c) {
  const GeneratorParams params = ParamsOf(c);
  auto generator = FindScheduleGenerator(c.schedule.name);
  if (FindCostAwareScheduleGenerator(c.schedule.name) != nullptr) {
    const bool v_shape = RequiredChunksPerRank(c.schedule.name) == 2;
    if (v_shape) {
      STAGECRAFT_RETURN_IF_ERROR(CheckVShapeParams(params, c.schedule.name));
    } else {
      STAGECRAFT_RETURN_IF_ERROR(CheckZbAutoParams(params, c.schedule.name));
    }
    auto provisional = v_shape ? GenerateZbV(params) : GenerateZbH1(params);
    if (!provisional.ok()) return provisional.error();
    provisional.value().name = c.schedule.name;
    return provisional;
  }
  if (!generator.ok()) return Error{"--schedule: " + generator.error().message};
  return generator.value()->generate(params);
}

Result<Config> LoadConfig(const RunSpec& flags, std::string& label, ConfigLocations& locations) {
  if (flags.config_path.empty() && flags.hf_config) {
    label = BaseName(*flags.hf_config);
    locations = ConfigLocations{"--hf-config", {}};
    return HfDefaultConfig();
  }
  if (flags.config_path.empty()) {
    label = std::string("bundled example '") + BundledConfigName() + "'";
    return ParseConfig(BundledConfigText(), BundledConfigName(), &locations);
  }
  ParseOptions options;
  options.model_from_hf = flags.hf_config.has_value();
  label = BaseName(flags.config_path);
  if (flags.config_text) return ParseConfig(*flags.config_text, label, &locations, options);
  auto text = flags.files.read(flags.config_path);
  if (!text.ok()) return text.error();
  return ParseConfig(text.value(), BaseName(flags.config_path), &locations, options);
}

// --hf-config FILE: the model from a HuggingFace config.json (the config's seq_len and
// micro_batch_size stay).
Status ApplyHfModel(const RunSpec& flags, Config& config) {
  if (!flags.hf_config) return Status::Ok();
  auto text = flags.files.read(*flags.hf_config);
  if (!text.ok()) return Error{"--hf-config: " + text.error().message};
  auto model = ModelFromHfConfig(text.value(), BaseName(*flags.hf_config), config.model);
  if (!model.ok()) return model.error();
  config.model = std::move(model).value();
  return Status::Ok();
}

// --global-batch-size N: N sequences per iteration, so N / (dp x micro_batch_size) microbatches.
Status ApplyGlobalBatch(const RunSpec& flags, Config& config) {
  if (!flags.global_batch_size) return Status::Ok();
  auto sequences = ParseCount(*flags.global_batch_size, "--global-batch-size");
  if (!sequences.ok()) return sequences.error();
  if (flags.microbatches) {
    return Error{
        "--global-batch-size and --microbatches both set the microbatches per "
        "iteration; give one of them"};
  }
  const int64_t per_microbatch = int64_t{config.parallel.dp} * config.model.micro_batch_size;
  if (sequences.value() % per_microbatch != 0) {
    const int64_t lower = sequences.value() / per_microbatch * per_microbatch;
    return Error{"--global-batch-size: " + *flags.global_batch_size +
                 " sequences do not split into microbatches of dp " +
                 std::to_string(config.parallel.dp) + " x micro_batch_size " +
                 std::to_string(config.model.micro_batch_size) + " = " +
                 std::to_string(per_microbatch) + " sequences; expected a multiple of " +
                 std::to_string(per_microbatch) + ", e.g. " +
                 std::to_string(lower > 0 ? lower : per_microbatch) +
                 (lower > 0 ? " or " + std::to_string(lower + per_microbatch) : std::string())};
  }
  config.parallel.microbatches = static_cast<int32_t>(sequences.value() / per_microbatch);
  return Status::Ok();
}

}  // namespace

const std::vector<RunOverride>& RunOverrides() {
  static const std::vector<RunOverride> kRows = MakeRunOverrides();
  return kRows;
}

// The per-stage compute (shadow-indexer work included) and per-cut transfer times of the lowered
// provisional schedule (cluster links and payload state included), for a cost-aware generator;
// then the generator's schedule replaces the provisional one. Direct and shadow-sync transfers
// run beside the stage-to-stage chain and are not timed by the generator.
Status TimeCostAwareSchedule(PreparedRun& run, bool every_p2p_mode) {
  const CostAwareScheduleGenerator* timed =
      FindCostAwareScheduleGenerator(run.config.schedule.name);
  if (timed == nullptr || !run.config.schedule.csv.empty()) return Status::Ok();
  LowerOptions options = run.lower;
  options.mode = P2pMode::kAsync;
  auto graph = Lower(run.schedule, run.stage_costs, options);
  if (!graph.ok()) return graph.error();
  const int32_t stages = run.schedule.num_stages;
  PipelineCosts costs;
  costs.stages = run.stage_costs;
  costs.links_in_receiver_order = every_p2p_mode || run.lower.mode == P2pMode::kRendezvous;
  costs.activation_p2p.assign(static_cast<size_t>(std::max(0, stages - 1)), Time());
  costs.gradient_p2p = costs.activation_p2p;
  for (const Task& task : graph.value().tasks) {
    if (task.kind == TaskKind::kCompute && task.action.microbatch.value() == 0) {
      StageCost& stage = costs.stages[task.action.stage.value()];
      if (task.action.kind == ActionKind::kForward) stage.forward = task.duration;
      if (task.action.kind == ActionKind::kInputGrad) stage.input_grad = task.duration;
    }
    if (task.kind != TaskKind::kTransfer) continue;
    const int32_t cut = std::min(task.action.stage.value(), task.consumer.stage.value());
    if (task.payload == PayloadKind::kActivation) {
      costs.activation_p2p[cut] = std::max(costs.activation_p2p[cut], task.duration);
    } else if (task.payload == PayloadKind::kGradient) {
      costs.gradient_p2p[cut] = std::max(costs.gradient_p2p[cut], task.duration);
    }
  }
  auto schedule = timed->generate(ParamsOf(run.config), costs);
  if (!schedule.ok()) return schedule.error();
  run.schedule = std::move(schedule).value();
  return Status::Ok();
}

// --from-torchtitan FILE and --from-deepspeed DIR|JSON: an engine's exported layout read into
// the config (the model given by the config or --hf-config is read first for torchtitan, whose
// job config names the model only by its flavor).
Status ReadEngineExports(const RunSpec& flags, PreparedRun& run) {
  if (flags.from_torchtitan) {
    auto text = flags.files.read(*flags.from_torchtitan);
    if (!text.ok()) return Error{"--from-torchtitan: " + text.error().message};
    const bool model_given = flags.hf_config.has_value() ||
                             (!flags.config_path.empty() && run.config.model.is_transformer());
    if (!flags.loaded) STAGECRAFT_RETURN_IF_ERROR(ApplyHfModel(flags, run.config));
    const std::string& path = *flags.from_torchtitan;
    const bool python = path.size() >= 3 && path.compare(path.size() - 3, 3, ".py") == 0;
    auto config =
        python ? ReadTorchtitanRegistry(text.value(), BaseName(path), run.config, model_given)
               : ReadTorchtitanConfig(text.value(), BaseName(path), run.config, model_given);
    if (!config.ok()) return Error{"--from-torchtitan: " + config.error().message};
    run.config = std::move(config).value();
    run.label = BaseName(*flags.from_torchtitan);
    // pipeline_parallel_schedule_csv: torchtitan opens it from its working directory, which the
    // exported launchers make the job config's folder; read it from there (an absolute path, so
    // that a config file given beside --from-torchtitan does not move it).
    std::string& csv = run.config.schedule.csv;
    if (!csv.empty()) {
      const std::filesystem::path folder = std::filesystem::path(path).parent_path();
      std::error_code error;  // no working directory: keep the path relative to the config's
      const std::filesystem::path absolute = std::filesystem::absolute(folder / csv, error);
      csv = (error ? folder / csv : absolute).lexically_normal().string();
    }
  }
  if (flags.from_deepspeed) {
    const std::string& path = *flags.from_deepspeed;
    const bool is_json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
    const std::filesystem::path folder =
        is_json ? std::filesystem::path(path).parent_path() : std::filesystem::path(path);
    const std::string json_path = is_json ? path : (folder / "ds_config.json").string();
    const std::string args_path = (folder / "megatron-deepspeed-args.txt").string();
    auto json = flags.files.read(json_path);
    if (!json.ok()) return Error{"--from-deepspeed: " + json.error().message};
    auto args = flags.files.read(args_path);
    if (!args.ok()) {
      return Error{"--from-deepspeed: " + args.error().message +
                   " (the model and layout: Megatron-DeepSpeed's arguments, which `plan --export "
                   "deepspeed` writes beside ds_config.json)"};
    }
    auto config = ReadDeepSpeedConfig(json.value(), BaseName(json_path), args.value(),
                                      BaseName(args_path), run.config);
    if (!config.ok()) return Error{"--from-deepspeed: " + config.error().message};
    run.config = std::move(config).value();
    run.label = BaseName(json_path);
  }
  return Status::Ok();
}

Result<LoadedConfig> LoadRunConfig(const RunSpec& spec) {
  LoadedConfig loaded;
  auto config = LoadConfig(spec, loaded.label, loaded.locations);
  if (!config.ok()) return config.error();
  loaded.config = std::move(config).value();
  STAGECRAFT_RETURN_IF_ERROR(ApplyHfModel(spec, loaded.config));
  return loaded;
}

Result<PreparedRun> ResolveRun(const RunSpec& flags) {
  PreparedRun run;
  if (flags.loaded) {
    run.config = flags.loaded->config;
    run.locations = flags.loaded->locations;
    run.label = flags.loaded->label;
  } else {
    auto config = LoadConfig(flags, run.label, run.locations);
    if (!config.ok()) return config.error();
    run.config = std::move(config).value();
    // The model from --hf-config before anything edits it, as LoadRunConfig orders it: the
    // flags, the engine readers and `edit` (a planner's candidate splits the model's layers
    // over its stages) see the model's real layers.
    STAGECRAFT_RETURN_IF_ERROR(ApplyHfModel(flags, run.config));
  }
  STAGECRAFT_RETURN_IF_ERROR(ApplyFlags(flags, run.config));
  STAGECRAFT_RETURN_IF_ERROR(ApplyClusterFlag(flags, run));
  if (flags.from_megatron) {
    auto text = flags.files.read(*flags.from_megatron);
    if (!text.ok()) return Error{"--from-megatron: " + text.error().message};
    auto config = ReadMegatronArgs(text.value(), BaseName(*flags.from_megatron), run.config);
    if (!config.ok()) return Error{"--from-megatron: " + config.error().message};
    run.config = std::move(config).value();
    run.label = BaseName(*flags.from_megatron);
  }
  STAGECRAFT_RETURN_IF_ERROR(ReadEngineExports(flags, run));
  FillDataParallel(flags, run);
  STAGECRAFT_RETURN_IF_ERROR(ApplyGlobalBatch(flags, run.config));
  ImplyChunksPerRank(flags, run);
  if (flags.edit) STAGECRAFT_RETURN_IF_ERROR(flags.edit(run.config));
  STAGECRAFT_RETURN_IF_ERROR(CheckWorldSize(run.config));
  return run;
}

Result<PreparedRun> PrepareRun(const RunSpec& flags) {
  auto resolved = ResolveRun(flags);
  if (!resolved.ok()) return resolved.error();
  PreparedRun run = std::move(resolved).value();
  const bool csa2_layers = run.config.model.is_layer_list() && !run.config.model.is_transformer();
  if (csa2_layers && run.config.parallel.tp > 1) {
    const ParallelSpec& parallel = run.config.parallel;
    const std::string where = run.locations.Where("parallel.tp");
    if (!run.config.cluster.given) {
      return Error{where + std::to_string(parallel.tp) +
                   " tensor-parallel ranks: their collectives need a cluster to run on; add one "
                   "(cluster: {preset: h800x2}, stagecraft list presets)"};
    }
    const Status split =
        CheckLayerTensorParallel(run.config.model.layers, run.config.model.dims, parallel.tp);
    if (!split.ok()) return Error{where + split.error().message};
    const int64_t rank_tokens = run.config.model.tokens_per_microbatch() / std::max(1, parallel.cp);
    if (parallel.sequence_parallel && rank_tokens % parallel.tp != 0) {
      return Error{where + std::to_string(parallel.tp) +
                   " with sequence_parallel does not divide " + "the " +
                   std::to_string(rank_tokens) +
                   " tokens of a microbatch on one context-parallel rank (each TP rank holds "
                   "s·b/(cp·tp) of them); pick a divisor or a seq_len that fits"};
    }
  }
  STAGECRAFT_RETURN_IF_ERROR(CheckContextParallel(run.config, run.locations));
  STAGECRAFT_RETURN_IF_ERROR(CheckFloat8AllGather(run.config, run.locations));
  STAGECRAFT_RETURN_IF_ERROR(CheckFp8Recipe(run.config, run.locations));
  if (csa2_layers && run.config.parallel.ep > 1 &&
      (run.config.parallel.dp % run.config.parallel.ep != 0 ||
       run.config.model.dims.routed_experts % run.config.parallel.ep != 0)) {
    return Error{run.locations.Where("parallel.ep") + "ep " +
                 std::to_string(run.config.parallel.ep) + " must divide dp (" +
                 std::to_string(run.config.parallel.dp) + ") and the " +
                 std::to_string(run.config.model.dims.routed_experts) + " routed experts"};
  }
  if ((csa2_layers || run.config.model.is_transformer()) && !run.config.cluster.given &&
      (run.config.parallel.dp > 1 || run.config.parallel.ep > 1)) {
    return Error{
        "dp/ep: the collectives need a cluster to run on; add one (cluster: {preset: "
        "h800x2}, stagecraft list presets)"};
  }
  if (!run.config.model.is_layer_list() &&
      (run.config.parallel.tp > 1 || run.config.parallel.dp > 1 || run.config.parallel.cp > 1 ||
       run.config.parallel.ep > 1)) {
    return Error{run.locations.Where(run.config.parallel.tp > 1 ? "parallel.tp" : "parallel.dp") +
                 "tensor and data parallelism are simulated for transformer models "
                 "(model.type: transformer) so far; this model is '" +
                 run.config.model.name + "': drop tp/dp or describe the model by its dimensions"};
  }
  if (run.config.model.is_transformer() && !run.config.cluster.given &&
      (run.config.parallel.tp > 1 || run.config.parallel.dp > 1 || run.config.parallel.cp > 1)) {
    return Error{
        "tp/dp: the collectives need a cluster to run on; add one (cluster: {preset: "
        "h100x2}, stagecraft list presets)"};
  }
  STAGECRAFT_RETURN_IF_ERROR(BuildTransformerModel(run.config));
  const Config& c = run.config;
  if (!c.schedule.csv.empty()) {
    std::string path = c.schedule.csv;
    if (!flags.schedule_csv && !flags.config_path.empty()) {  // relative to the config file
      path = (std::filesystem::path(flags.config_path).parent_path() / path).string();
    }
    auto schedule = LoadCsvSchedule(path, flags, c, run.locations, run.notes);
    if (!schedule.ok()) return schedule.error();
    run.schedule = std::move(schedule).value();
    run.label = BaseName(path) + (flags.config_path.empty() ? "" : " (with " + run.label + ")");
  } else {
    STAGECRAFT_RETURN_IF_ERROR(CheckGeneratedRunSize(c, flags.trace));
    auto schedule = GenerateNamedSchedule(c);
    if (!schedule.ok()) return schedule.error();
    run.schedule = std::move(schedule).value();
    if (run.locations.by_path.count("parallel.placement") > 0 &&
        c.parallel.placement != run.schedule.placement) {
      return Error{run.locations.Where("parallel.placement") + "'" +
                   PlacementName(c.parallel.placement) + "' does not fit schedule '" +
                   run.schedule.name + "', which places stages '" +
                   PlacementName(run.schedule.placement) +
                   "' (for a V placement load a schedule CSV written that way, or drop the key)"};
    }
  }
  STAGECRAFT_RETURN_IF_ERROR(CheckLayout(c, run.locations, run.schedule));
  NoteIdleDevices(flags, run);
  run.lower.mode = c.schedule.p2p;
  run.lower.cost_p2p = c.schedule.cost_p2p;
  run.lower.cluster = c.cluster;
  if (c.model.is_layer_list()) {
    for (const auto& [flag, name] : {std::pair{&flags.cost_forward, "--cost-forward"},
                                     std::pair{&flags.cost_input_grad, "--cost-input-grad"},
                                     std::pair{&flags.cost_weight_grad, "--cost-weight-grad"},
                                     std::pair{&flags.cost_fb, "--cost-fb"}}) {
      if (*flag) {
        return Error{std::string(name) +
                     ": sets the cost of a uniform model; a layer-list "
                     "model derives its costs from dimensions or takes them per layer "
                     "(forward/input_grad/weight_grad on a layer, doc/config.md)"};
      }
    }
    STAGECRAFT_RETURN_IF_ERROR(PrepareLayerModel(run));
    STAGECRAFT_RETURN_IF_ERROR(CheckStageCosts(
        run, flags.hf_config ? "--hf-config " + BaseName(*flags.hf_config) : run.label));
    STAGECRAFT_RETURN_IF_ERROR(TimeCostAwareSchedule(run, flags.every_p2p_mode));
    run.parallel_plan = PlanParallel(c, run.partition, run.schedule);
    run.lower.collectives = run.parallel_plan.collectives;
    run.lower.optimizer_step = run.parallel_plan.optimizer_step;
    auto multimodal = PlanMultimodal(run);
    if (!multimodal.ok()) return multimodal.error();
    run.multimodal = std::move(multimodal).value();
    return run;
  }
  const char* kIgnored =
      "ignored: a uniform model has no layers to partition and no shared "
      "state (use model.type: layers)";
  for (const char* key : {"parallel.partition", "parallel.layer_counts", "parallel.layout",
                          "schedule.state_policy", "schedule.shadow_reading"}) {
    if (run.locations.by_path.count(key) > 0) {
      run.notes.push_back(run.locations.Where(key) + kIgnored);
    }
  }
  if (flags.state_policy) run.notes.push_back(std::string("--state-policy: ") + kIgnored);
  auto multimodal = PlanMultimodal(run);  // a uniform model: an error when configured
  if (!multimodal.ok()) return multimodal.error();
  if (flags.partition) run.notes.push_back(std::string("--partition: ") + kIgnored);
  const int32_t chunks = std::max(1, run.schedule.chunks_per_rank());
  run.stage_costs = UniformStageCosts(c.model, std::max(1, run.schedule.num_stages), chunks);
  run.stage_costs.resize(static_cast<size_t>(run.schedule.num_stages), run.stage_costs.front());
  STAGECRAFT_RETURN_IF_ERROR(TimeCostAwareSchedule(run, flags.every_p2p_mode));
  return run;
}

}  // namespace stagecraft
