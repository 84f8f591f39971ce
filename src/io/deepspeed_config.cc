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
#include <vector>

#include "core/suggest.h"
#include "io/megatron_args.h"

namespace stagecraft {
namespace {

std::string Where(const std::string& source, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return source + ": ";
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) +
         ": ";
}

const std::vector<std::string>& TopLevelKeys() {
  static const std::vector<std::string> kKeys = {
      "train_batch_size",
      "train_micro_batch_size_per_gpu",
      "gradient_accumulation_steps",
      "bf16",
      "fp16",
      "amp",
      "zero_optimization",
      "gradient_clipping",
      "steps_per_print",
      "wall_clock_breakdown",
      "memory_breakdown",
      "optimizer",
      "scheduler",
      "activation_checkpointing",
      "prescale_gradients",
      "gradient_predivide_factor",
      "communication_data_type",
      "zero_allow_untested_optimizer",
      "flops_profiler",
      "tensorboard",
      "wandb",
      "csv_monitor",
      "comms_logger",
      "pipeline",
      "data_types",
      "dump_state",
      "compile",
      "checkpoint",
      "aio",
      "elasticity",
      "sparse_attention",
      "data_efficiency",
      "autotuning",
      "dataloader_drop_last",
      "timers",
      "tensor_parallel",
      "weight_quantization",
  };
  return kKeys;
}

// A whole number >= `low` at `key` of `map`, or 0 when absent.
Result<int64_t> Count(const YAML::Node& map, const char* key, int64_t low,
                      const std::string& source) {
  const YAML::Node node = map[key];
  if (!node) return int64_t{0};
  try {
    const int64_t value = node.as<int64_t>();
    if (value >= low && value <= (int64_t{1} << 30)) return value;
  } catch (const YAML::Exception&) {
  }
  return Error{Where(source, node) + "'" + key + "' must be a whole number from " +
               std::to_string(low) + " to 2^30"};
}

Result<bool> Enabled(const YAML::Node& root, const char* section, const std::string& source) {
  const YAML::Node node = root[section];
  if (!node) return false;
  if (!node.IsMap()) return Error{Where(source, node) + "'" + section + "' must be an object"};
  const YAML::Node enabled = node["enabled"];
  if (!enabled) return false;
  try {
    return enabled.as<bool>();
  } catch (const YAML::Exception&) {
    return Error{Where(source, enabled) + "'" + section + ".enabled' must be true or false"};
  }
}

// The batch sizes as DeepSpeed settles them: {train, micro, accumulation}.
Status SettleBatch(const YAML::Node& root, const std::string& source, int64_t dp, int64_t& train,
                   int64_t& micro, int64_t& accumulation) {
  auto t = Count(root, "train_batch_size", 1, source);
  if (!t.ok()) return t.error();
  auto m = Count(root, "train_micro_batch_size_per_gpu", 1, source);
  if (!m.ok()) return m.error();
  auto a = Count(root, "gradient_accumulation_steps", 1, source);
  if (!a.ok()) return a.error();
  train = t.value();
  micro = m.value();
  accumulation = a.value();
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

// zero_optimization.stage (0 when absent); offloading is an error.
Result<int32_t> ReadZeroStage(const YAML::Node& root, const std::string& source) {
  const YAML::Node zero = root["zero_optimization"];
  if (!zero) return 0;
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
  auto stage = Count(zero, "stage", 0, source);
  if (!stage.ok()) return stage.error();
  if (stage.value() > 3) {
    return Error{Where(source, zero["stage"]) + "zero_optimization.stage " +
                 std::to_string(stage.value()) + " (expected 0, 1, 2 or 3)"};
  }
  return static_cast<int32_t>(stage.value());
}

Result<YAML::Node> ParseJson(const std::string& json, const std::string& source) {
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
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>("");
    const std::vector<std::string>& known = TopLevelKeys();
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
  int64_t train = 0;
  int64_t micro = 0;
  int64_t accumulation = 0;
  STAGECRAFT_RETURN_IF_ERROR(SettleBatch(root, json_source, p.dp, train, micro, accumulation));
  const int64_t args_global = int64_t{p.microbatches} * p.dp * config.model.micro_batch_size;
  if (micro != config.model.micro_batch_size || train != args_global) {
    return Error{json_source + ": train_batch_size " + std::to_string(train) +
                 " and train_micro_batch_size_per_gpu " + std::to_string(micro) +
                 " disagree with " + args_source + "'s --global-batch-size " +
                 std::to_string(args_global) + " and --micro-batch-size " +
                 std::to_string(config.model.micro_batch_size) + " (expected the same batch)"};
  }
  auto zero = ReadZeroStage(root, json_source);
  if (!zero.ok()) return zero.error();
  const bool args_zero = args.find("--zero-stage") != std::string::npos;
  if (args_zero && zero.value() != p.zero_stage) {
    return Error{json_source + ": zero_optimization.stage " + std::to_string(zero.value()) +
                 " disagrees with " + args_source + "'s --zero-stage " +
                 std::to_string(p.zero_stage) + " (expected the same stage)"};
  }
  p.zero_stage = zero.value();
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
  auto fp16 = Enabled(root, "fp16", json_source);
  if (!fp16.ok()) return fp16.error();
  auto bf16 = Enabled(root, "bf16", json_source);
  if (!bf16.ok()) return bf16.error();
  if (fp16.value() || !bf16.value()) {
    return Error{json_source + ": " + (fp16.value() ? "fp16" : "fp32 training (bf16 not enabled)") +
                 " is not read (expected \"bf16\": {\"enabled\": true})"};
  }
  config.model.name = "megatron-deepspeed-args";
  return config;
}

}  // namespace stagecraft
