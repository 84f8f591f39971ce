// DeepSpeed's rules, ported (deepspeedai/DeepSpeed; config.py read at 3a890ec57fb7, pipe/engine.py
// at e787c16394e5):
//   deepspeed/runtime/config.py, DeepSpeedConfig._set_batch_related_parameters and
//     _batch_assertion: of train_batch_size, train_micro_batch_size_per_gpu and
//     gradient_accumulation_steps any two give the third (one alone: no accumulation), and
//     train_batch_size = micro batch x accumulation x the data-parallel ranks;
//   deepspeed/runtime/pipe/engine.py, PipelineEngine.__init__: ZeRO stage 2 and 3 are
//     incompatible with pipeline parallelism; the pipeline's microbatches are the gradient
//     accumulation steps; deepspeed/runtime/pipe/schedule.py: one schedule, TrainSchedule (1F1B),
//     no interleaving;
//   deepspeed/runtime/zero/config.py: zero_optimization.stage 0-3, offload_optimizer and
//     offload_param (not modelled here: errors).
#include "io/deepspeed_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/suggest.h"
#include "io/megatron_args.h"
#include "io/strict_json.h"

namespace stagecraft {
namespace {

std::string Where(const std::string& source, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return source + ": ";
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) +
         ": ";
}

// What the keys say, read row by row; the rules across keys (and against the arguments) settle
// them after. Absent keys leave the defaults.
struct JsonValues {
  int64_t train = 0;         // train_batch_size; 0 = absent
  int64_t micro = 0;         // train_micro_batch_size_per_gpu; 0 = absent
  int64_t accumulation = 0;  // gradient_accumulation_steps; 0 = absent
  bool bf16 = false;         // bf16.enabled
  bool fp16 = false;         // fp16.enabled
  int32_t zero_stage = 0;    // zero_optimization.stage
};

// A whole number from `low` to 2^30 at `node`, named `key` in the error.
Result<int64_t> Count(const YAML::Node& node, const std::string& key, int64_t low,
                      const std::string& source) {
  try {
    const int64_t value = node.as<int64_t>();
    if (value >= low && value <= (int64_t{1} << 30)) return value;
  } catch (const YAML::Exception&) {
  }
  return Error{Where(source, node) + "'" + key + "' must be a whole number from " +
               std::to_string(low) + " to 2^30"};
}

Status ReadCount(const YAML::Node& node, const std::string& key, const std::string& source,
                 int64_t& out) {
  auto count = Count(node, key, 1, source);
  if (!count.ok()) return count.error();
  out = count.value();
  return Status::Ok();
}

// A section's "enabled" (false when absent).
Result<bool> Enabled(const YAML::Node& node, const std::string& section,
                     const std::string& source) {
  if (!node.IsMap()) return Error{Where(source, node) + "'" + section + "' must be an object"};
  const YAML::Node enabled = node["enabled"];
  if (!enabled) return false;
  try {
    return enabled.as<bool>();
  } catch (const YAML::Exception&) {
    return Error{Where(source, enabled) + "'" + section + ".enabled' must be true or false"};
  }
}

Status ReadEnabled(const YAML::Node& node, const std::string& section, const std::string& source,
                   bool& out) {
  auto enabled = Enabled(node, section, source);
  if (!enabled.ok()) return enabled.error();
  out = enabled.value();
  return Status::Ok();
}

// zero_optimization.stage (0 when absent); offloading is an error.
Status ReadZeroStage(const YAML::Node& zero, const std::string& source, int32_t& out) {
  if (!zero.IsMap()) return Error{Where(source, zero) + "'zero_optimization' must be an object"};
  for (const char* offload : {"offload_optimizer", "offload_param"}) {
    const YAML::Node node = zero[offload];
    if (!node || node.IsNull()) continue;
    const bool none = node.IsMap() && node["device"] && node["device"].IsScalar() &&
                      node["device"].Scalar() == "none";
    if (!none) {
      return Error{Where(source, node) + "zero_optimization." + offload +
                   " is not modelled (expected none; stagecraft simulates the GPUs only)"};
    }
  }
  if (!zero["stage"]) return Status::Ok();
  auto stage = Count(zero["stage"], "stage", 0, source);
  if (!stage.ok()) return stage.error();
  if (stage.value() > 3) {
    return Error{Where(source, zero["stage"]) + "zero_optimization.stage " +
                 std::to_string(stage.value()) + " (expected 0, 1, 2 or 3)"};
  }
  out = static_cast<int32_t>(stage.value());
  return Status::Ok();
}

// One top-level key of ds_config.json: how ReadDeepSpeedConfig reads its value when given, and
// what WriteDeepSpeedJson writes for a config (a JSON value, or nothing).
using ReadKey = Status (*)(const YAML::Node& value, const std::string& source, JsonValues& values);
using WriteKey = std::optional<std::string> (*)(const Config& config, int64_t global_batch);
struct JsonKey {
  const char* key;
  ReadKey read;    // nullptr: one of DeepSpeed's keys that changes nothing simulated
  WriteKey write;  // nullptr: read, never written
};

// DeepSpeed's top-level keys (runtime/config.py), in the order the export writes them; "did you
// mean" searches them in this order. The export: the batch, bf16, ZeRO (overlapping its
// reduce-scatter with the backward from stage 2), and DeepSpeed's usual clipping and logging.
constexpr JsonKey kKeys[] = {
    {"train_batch_size",
     [](const YAML::Node& value, const std::string& source, JsonValues& values) {
       return ReadCount(value, "train_batch_size", source, values.train);
     },
     [](const Config&, int64_t global_batch) -> std::optional<std::string> {
       return std::to_string(global_batch);
     }},
    {"train_micro_batch_size_per_gpu",
     [](const YAML::Node& value, const std::string& source, JsonValues& values) {
       return ReadCount(value, "train_micro_batch_size_per_gpu", source, values.micro);
     },
     [](const Config& config, int64_t) -> std::optional<std::string> {
       return std::to_string(config.model.micro_batch_size);
     }},
    {"gradient_accumulation_steps",
     [](const YAML::Node& value, const std::string& source, JsonValues& values) {
       return ReadCount(value, "gradient_accumulation_steps", source, values.accumulation);
     },
     [](const Config& config, int64_t) -> std::optional<std::string> {
       return std::to_string(config.parallel.microbatches);
     }},
    {"bf16",
     [](const YAML::Node& value, const std::string& source, JsonValues& values) {
       return ReadEnabled(value, "bf16", source, values.bf16);
     },
     [](const Config&, int64_t) -> std::optional<std::string> { return "{\"enabled\": true}"; }},
    {"fp16",
     [](const YAML::Node& value, const std::string& source, JsonValues& values) {
       return ReadEnabled(value, "fp16", source, values.fp16);
     },
     nullptr},
    {"amp", nullptr, nullptr},
    {"zero_optimization",
     [](const YAML::Node& value, const std::string& source, JsonValues& values) {
       return ReadZeroStage(value, source, values.zero_stage);
     },
     [](const Config& config, int64_t) -> std::optional<std::string> {
       const int32_t stage = config.parallel.zero_stage;
       return "{\"stage\": " + std::to_string(stage) +
              (stage >= 2 ? ", \"overlap_comm\": true" : "") + "}";
     }},
    {"gradient_clipping", nullptr,
     [](const Config&, int64_t) -> std::optional<std::string> { return "1.0"; }},
    {"steps_per_print", nullptr,
     [](const Config&, int64_t) -> std::optional<std::string> { return "10"; }},
    {"wall_clock_breakdown", nullptr, nullptr},
    {"memory_breakdown", nullptr, nullptr},
    {"optimizer", nullptr, nullptr},
    {"scheduler", nullptr, nullptr},
    {"activation_checkpointing", nullptr, nullptr},
    {"prescale_gradients", nullptr, nullptr},
    {"gradient_predivide_factor", nullptr, nullptr},
    {"communication_data_type", nullptr, nullptr},
    {"zero_allow_untested_optimizer", nullptr, nullptr},
    {"flops_profiler", nullptr, nullptr},
    {"tensorboard", nullptr, nullptr},
    {"wandb", nullptr, nullptr},
    {"csv_monitor", nullptr, nullptr},
    {"comms_logger", nullptr, nullptr},
    {"pipeline", nullptr, nullptr},
    {"data_types", nullptr, nullptr},
    {"dump_state", nullptr, nullptr},
    {"compile", nullptr, nullptr},
    {"checkpoint", nullptr, nullptr},
    {"aio", nullptr, nullptr},
    {"elasticity", nullptr, nullptr},
    {"sparse_attention", nullptr, nullptr},
    {"data_efficiency", nullptr, nullptr},
    {"autotuning", nullptr, nullptr},
    {"dataloader_drop_last", nullptr, nullptr},
    {"timers", nullptr, nullptr},
    {"tensor_parallel", nullptr, nullptr},
    {"weight_quantization", nullptr, nullptr},
};

// Each key given, read by its row, in the table's order.
Status ReadKeys(const YAML::Node& root, const std::string& source, JsonValues& values) {
  for (const JsonKey& key : kKeys) {
    const YAML::Node value = root[key.key];
    if (key.read != nullptr && value) STAGECRAFT_RETURN_IF_ERROR(key.read(value, source, values));
  }
  return Status::Ok();
}

// The batch sizes as DeepSpeed settles them (values.train, micro and accumulation).
Status SettleBatch(const YAML::Node& root, const std::string& source, int64_t dp,
                   JsonValues& values) {
  int64_t& train = values.train;
  int64_t& micro = values.micro;
  int64_t& accumulation = values.accumulation;
  if (train == 0 && micro == 0) {
    return Error{source +
                 ": either train_batch_size or train_micro_batch_size_per_gpu needs to be given "
                 "(DeepSpeed's runtime/config.py)"};
  }
  auto indivisible = [&](int64_t per_step, const std::string& what) {
    return Error{Where(source, root["train_batch_size"]) + "train_batch_size " +
                 std::to_string(train) + " is not a multiple of " + what + " = " +
                 std::to_string(per_step) + " (DeepSpeed's runtime/config.py)"};
  };
  if (train > 0 && micro > 0 && accumulation == 0) {
    if (train % (micro * dp) != 0) {
      return indivisible(micro * dp, "train_micro_batch_size_per_gpu x " + std::to_string(dp) +
                                         " data-parallel ranks");
    }
    accumulation = train / (micro * dp);
  } else if (train > 0 && micro == 0) {
    if (accumulation == 0) accumulation = 1;
    if (train % (accumulation * dp) != 0) {
      return indivisible(accumulation * dp, "gradient_accumulation_steps x " + std::to_string(dp) +
                                                " data-parallel ranks");
    }
    micro = train / (accumulation * dp);
  } else if (train == 0) {
    if (accumulation == 0) accumulation = 1;
    train = micro * accumulation * dp;
  }
  // micro x dp <= 2^30 x the GPUs: no overflow; the division keeps accumulation out of it.
  if (micro < 1 || accumulation < 1 || train % (micro * dp) != 0 ||
      train / (micro * dp) != accumulation) {
    return Error{Where(source, root["train_batch_size"]) + "train_batch_size " +
                 std::to_string(train) + " is not train_micro_batch_size_per_gpu " +
                 std::to_string(micro) + " x gradient_accumulation_steps " +
                 std::to_string(accumulation) + " x " + std::to_string(dp) +
                 " data-parallel ranks (DeepSpeed's _batch_assertion, runtime/config.py)"};
  }
  return Status::Ok();
}

Result<YAML::Node> ParseJson(const std::string& json, const std::string& source) {
  STAGECRAFT_RETURN_IF_ERROR(CheckStrictJson(json, source, "DeepSpeed's ds_config.json"));
  YAML::Node root;
  try {
    root = YAML::Load(json);
  } catch (const YAML::Exception& error) {
    return Error{source + ":" + std::to_string(error.mark.line + 1) + ":" +
                 std::to_string(error.mark.column + 1) + ": not valid JSON: " + error.msg +
                 " (expected DeepSpeed's ds_config.json object)"};
  }
  if (!root.IsMap()) {
    return Error{source + ": expected a JSON object (DeepSpeed's ds_config.json)"};
  }
  std::vector<std::string> known;
  for (const JsonKey& key : kKeys) known.emplace_back(key.key);
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>("");
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Error{Where(source, entry.first) + "unknown key '" + EscapeBytes(key) + "'" +
                   DidYouMean(key, known) + " (DeepSpeed's config keys, runtime/config.py)"};
    }
  }
  return root;
}

}  // namespace

Result<Config> ReadDeepSpeedConfig(const std::string& json, const std::string& json_source,
                                   const std::string& args, const std::string& args_source,
                                   Config base) {
  auto parsed = ParseJson(json, json_source);
  if (!parsed.ok()) return parsed.error();
  const YAML::Node& root = parsed.value();
  auto config_or =
      ReadMegatronArgs(args, args_source, std::move(base), MegatronDialect::kMegatronDeepSpeed);
  if (!config_or.ok()) return config_or.error();
  Config config = std::move(config_or).value();
  ParallelSpec& p = config.parallel;
  JsonValues values;
  STAGECRAFT_RETURN_IF_ERROR(ReadKeys(root, json_source, values));
  STAGECRAFT_RETURN_IF_ERROR(SettleBatch(root, json_source, p.dp, values));
  const int64_t train = values.train;
  const int64_t micro = values.micro;
  const int64_t args_global = int64_t{p.microbatches} * p.dp * config.model.micro_batch_size;
  if (micro != config.model.micro_batch_size || train != args_global) {
    return Error{json_source + ": train_batch_size " + std::to_string(train) +
                 " and train_micro_batch_size_per_gpu " + std::to_string(micro) +
                 " disagree with " + args_source + "'s --global-batch-size " +
                 std::to_string(args_global) + " and --micro-batch-size " +
                 std::to_string(config.model.micro_batch_size) + " (expected the same batch)"};
  }
  const bool args_zero = args.find("--zero-stage") != std::string::npos;
  if (args_zero && values.zero_stage != p.zero_stage) {
    return Error{json_source + ": zero_optimization.stage " + std::to_string(values.zero_stage) +
                 " disagrees with " + args_source + "'s --zero-stage " +
                 std::to_string(p.zero_stage) + " (expected the same stage)"};
  }
  p.zero_stage = values.zero_stage;
  if (p.pp > 1 && p.zero_stage >= 2) {
    return Error{Where(json_source, root["zero_optimization"]["stage"]) + "ZeRO stage " +
                 std::to_string(p.zero_stage) + " with pipeline parallelism (pp " +
                 std::to_string(p.pp) +
                 "): DeepSpeed's pipeline engine asserts stage < 2 (runtime/pipe/engine.py); "
                 "expected zero_optimization.stage 0 or 1"};
  }
  if (p.zero_stage > 0 && p.dp == 1) {
    return Error{json_source + ": ZeRO stage " + std::to_string(p.zero_stage) +
                 " shards over one data-parallel rank (expected stage 0 with dp 1)"};
  }
  if (values.fp16 || !values.bf16) {
    return Error{json_source + ": " + (values.fp16 ? "fp16" : "fp32 training (bf16 not enabled)") +
                 " is not read (expected \"bf16\": {\"enabled\": true})"};
  }
  config.model.name = "megatron-deepspeed-args";
  return config;
}

std::string WriteDeepSpeedJson(const Config& config, int64_t global_batch) {
  std::string json = "{";
  for (const JsonKey& key : kKeys) {
    if (key.write == nullptr) continue;
    const std::optional<std::string> value = key.write(config, global_batch);
    if (!value) continue;
    json += std::string(json.size() > 1 ? "," : "") + "\n  \"" + key.key + "\": " + *value;
  }
  return json + "\n}\n";
}

}  // namespace stagecraft
