// torchtitan's job config read (io/torchtitan_config.h): its tables, the llama3 flavors, the
// layout, the activation checkpointing and the engine options, by torchtitan's rules, ported from
// (pytorch/torchtitan):
//   torchtitan/config/job_config.py @ 000204a4a8bf3d0f31adc44fc29855fbb6ea13d8: the tables, keys
//     and defaults (activation_checkpoint.mode "selective" with option "2", training.seq_len
//     2048, data_parallel_shard_degree -1, pipeline_parallel_schedule "1F1B",
//     pipeline_parallel_microbatch_size 1; global_batch_size -1 = local x dp);
//   torchtitan/distributed/parallel_dims.py, ParallelDims._validate: dp_shard -1 takes the ranks
//     left over; dp_replicate x dp_shard x cp x tp x pp = WORLD_SIZE; with ep > 1 (etp = tp) ep
//     divisible by cp and dividing dp_shard x cp; seq_len_divisor: seq_len divisible by tp x 2cp;
//   torchtitan/models/llama3/__init__.py @ 8c6bf93e5c5874c1f89c3a8e5a22fa5724ddebe7: the llama3
//     flavors; torchtitan/models/llama3/model.py, FeedForward: the MLP width from
//     ffn_dim_multiplier and multiple_of; the tiktoken tokenizer's 128,256 tokens;
//   torchtitan/models/llama3/parallelize_llama.py: async TP needs torch.compile;
// the pipeline's rules are io/torchtitan_pipeline.cc's.
#include "io/torchtitan_config.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/suggest.h"
#include "io/toml.h"
#include "io/torchtitan_pipeline.h"
#include "io/torchtitan_table.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

using torchtitan_job::ModuleCounts;
using torchtitan_job::ReadPipeline;
using torchtitan_job::TableValues;

// The tables whose keys are read, each key known (so a typo gets "did you mean").
const std::vector<std::pair<std::string, std::vector<std::string>>>& ReadTables() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kTables = {
      {"model",
       {"name", "flavor", "tokenizer_path", "hf_assets_path", "converters",
        "print_after_conversion"}},
      {"training",
       {"dataset", "dataset_path", "local_batch_size", "batch_size", "global_batch_size", "seq_len",
        "max_norm", "steps", "enable_cpu_offload", "mixed_precision_param",
        "mixed_precision_reduce", "compile", "gc_freq", "gc_debug", "seed", "deterministic",
        "warmup_steps"}},
      {"parallelism",
       {"data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_loss_parallel",
        "enable_async_tensor_parallel",
        "enable_compiled_autograd",
        "pipeline_parallel_degree",
        "pipeline_parallel_split_points",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "pipeline_parallel_microbatches",
        "module_fqns_per_model_part",
        "context_parallel_degree",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree"}},
      {"activation_checkpoint",
       {"mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns"}},
      {"compile", {"enable", "components"}},
  };
  return kTables;
}

// Tables torchtitan has whose keys change nothing stagecraft simulates (read, not checked).
const std::vector<std::string>& IgnoredTables() {
  static const std::vector<std::string> kTables = {
      "job",          "profiling",         "metrics",         "optimizer",
      "lr_scheduler", "checkpoint",        "float8",          "mx",
      "comm",         "memory_estimation", "fault_tolerance", "experimental",
      "validation",   "quantize",          "float8_linear"};
  return kTables;
}

Status CheckTables(const TomlDocument& document, const std::string& source) {
  std::vector<std::string> known;
  for (const auto& [name, keys] : ReadTables()) known.push_back(name);
  known.insert(known.end(), IgnoredTables().begin(), IgnoredTables().end());
  for (const TomlTable& table : document.tables) {
    if (table.name.empty()) {
      if (!table.keys.empty()) {
        return Error{source + ":" + std::to_string(table.keys.front().second.line) + ": key '" +
                     table.keys.front().first +
                     "' outside a table (expected it under a [table] header such as "
                     "[training])"};
      }
      continue;
    }
    if (std::find(known.begin(), known.end(), table.name) == known.end()) {
      return Error{source + ":" + std::to_string(table.line) + ": unknown table [" +
                   EscapeBytes(table.name) + "]" + DidYouMean(table.name, known) +
                   " (torchtitan's job config tables, torchtitan/config/job_config.py)"};
    }
    if (table.name == "experimental") {
      for (const auto& [key, value] : table.keys) {
        if (key.rfind("pipeline_parallel", 0) == 0 || key.rfind("context_parallel", 0) == 0 ||
            key == "enable_async_tensor_parallel") {
          return Error{source + ":" + std::to_string(value.line) + ": [experimental] " + key +
                       " moved to [parallelism] in torchtitan 0.2 (expected it there)"};
        }
      }
    }
    for (const auto& [name, keys] : ReadTables()) {
      if (name != table.name) continue;
      for (const auto& [key, value] : table.keys) {
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        return Error{source + ":" + std::to_string(value.line) + ": unknown key '" +
                     EscapeBytes(key) + "' in [" + name + "]" + DidYouMean(key, keys) +
                     " (torchtitan/config/job_config.py)"};
      }
    }
  }
  return Status::Ok();
}

TableValues Table(const TomlDocument& document, const std::string& source,
                  const std::string& name) {
  return TableValues(document.Find(name), source, name);
}

struct Flavor {
  const char* name;
  int32_t layers;
  int64_t dim;
  int64_t heads;
  int64_t kv_heads;
  int64_t multiplier_tenths;  // ffn_dim_multiplier x 10
  int64_t multiple_of;
};

// torchtitan's FeedForward width: 2/3 of 4 x dim, times the multiplier, rounded up.
int64_t FlavorFfn(const Flavor& flavor) {
  int64_t hidden = 2 * (4 * flavor.dim) / 3;
  hidden = flavor.multiplier_tenths * hidden / 10;
  return flavor.multiple_of * ((hidden + flavor.multiple_of - 1) / flavor.multiple_of);
}

const std::vector<Flavor>& Llama3Flavors() {
  static const std::vector<Flavor> kFlavors = {{"8B", 32, 4096, 32, 8, 13, 1024},
                                               {"70B", 80, 8192, 64, 8, 13, 4096},
                                               {"405B", 126, 16384, 128, 8, 12, 4096}};
  return kFlavors;
}

constexpr int64_t kLlama3Vocab = 128256;  // the tiktoken tokenizer of Llama 3

// The model: the base's (checked against a known flavor) or the flavor's.
Status ReadModel(const TomlDocument& document, const std::string& source, bool model_given,
                 ModelSpec& model) {
  const TableValues table = Table(document, source, "model");
  STAGECRAFT_ASSIGN_OR_RETURN(name, table.String("name"));
  STAGECRAFT_ASSIGN_OR_RETURN(flavor_name, table.String("flavor"));
  const Flavor* flavor = nullptr;
  std::vector<std::string> flavors;
  for (const Flavor& candidate : Llama3Flavors()) {
    flavors.push_back(candidate.name);
    if (name.value_or("llama3") == "llama3" && flavor_name && *flavor_name == candidate.name) {
      flavor = &candidate;
    }
  }
  if (model_given) {
    if (!model.is_transformer()) {
      return Error{source +
                   ": the model given is not a transformer (expected --hf-config FILE "
                   "or a config with model.type: transformer)"};
    }
    if (flavor == nullptr) return Status::Ok();
    const TransformerSpec& t = model.transformer;
    if (t.layers != flavor->layers || t.hidden != flavor->dim || t.heads != flavor->heads ||
        t.kv_heads_or_heads() != flavor->kv_heads || t.ffn_or_default() != FlavorFfn(*flavor)) {
      return table.Fail("flavor", "'" + *flavor_name + "' is llama3's " +
                                      std::to_string(flavor->layers) + " layers of dim " +
                                      std::to_string(flavor->dim) + ", not the model given (" +
                                      std::to_string(t.layers) + " layers of " +
                                      std::to_string(t.hidden) +
                                      "); expected the flavor of the model you simulate");
    }
    return Status::Ok();
  }
  if (flavor == nullptr) {
    const std::string what = flavor_name ? "'" + EscapeBytes(*flavor_name) + "'" : "no flavor";
    return Error{source + ": " + what + (name ? " of model '" + EscapeBytes(*name) + "'" : "") +
                 " names no dimensions stagecraft knows (llama3 flavors " + JoinChoices(flavors) +
                 DidYouMean(flavor_name.value_or(""), flavors) +
                 "); give the model with --hf-config FILE or a config"};
  }
  TransformerSpec t;
  t.layers = flavor->layers;
  t.hidden = flavor->dim;
  t.heads = flavor->heads;
  t.kv_heads = flavor->kv_heads;
  t.ffn_hidden = FlavorFfn(*flavor);
  t.vocab = kLlama3Vocab;
  t.swiglu = true;
  t.causal = true;
  t.tied_embeddings = false;
  t.bias = false;
  t.learned_positions = false;
  ModelSpec flavored;
  flavored.seq_len = model.seq_len;
  flavored.micro_batch_size = model.micro_batch_size;
  flavored.name = "llama3 " + *flavor_name;
  flavored.transformer = t;
  model = flavored;
  return Status::Ok();
}

struct Layout {
  int64_t replicate = 1;
  int64_t shard = -1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
};

Result<Layout> ReadLayout(const TableValues& p, int64_t world, int32_t seq_len) {
  Layout l;
  STAGECRAFT_ASSIGN_OR_RETURN(replicate, p.Int("data_parallel_replicate_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(shard, p.Int("data_parallel_shard_degree", -1));
  STAGECRAFT_ASSIGN_OR_RETURN(tp, p.Int("tensor_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(pp, p.Int("pipeline_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(cp, p.Int("context_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(ep, p.Int("expert_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(etp, p.Int("expert_tensor_parallel_degree", 1));
  l.replicate = replicate.value_or(1);
  l.shard = shard.value_or(-1);
  l.tp = tp.value_or(1);
  l.pp = pp.value_or(1);
  l.cp = cp.value_or(1);
  l.ep = ep.value_or(1);
  if (l.shard == 0) {
    return p.Fail("data_parallel_shard_degree", "= 0 (expected -1, the ranks left over, or >= 1)");
  }
  int64_t others = 1;
  for (const int64_t degree : {l.replicate, l.cp, l.tp, l.pp}) {
    others *= degree;  // each degree <= 2^30 and the product so far <= world: no overflow
    if (others > world) {
      return p.Fail("data_parallel_shard_degree",
                    "has no ranks left: replicate " + std::to_string(l.replicate) + " x cp " +
                        std::to_string(l.cp) + " x tp " + std::to_string(l.tp) + " x pp " +
                        std::to_string(l.pp) + " exceed the cluster's " + std::to_string(world) +
                        " GPUs (torchtitan's parallel_dims.py; give --cluster DEVICExNODES with "
                        "the run's nodes, or other degrees)");
    }
  }
  if (l.shard < 0) {
    if (world % others != 0) {
      return p.Fail(
          "data_parallel_shard_degree",
          "-1 takes the ranks left over, but replicate x cp x tp x pp = " + std::to_string(others) +
              " does not divide the cluster's " + std::to_string(world) +
              " GPUs (torchtitan's parallel_dims.py; give --cluster DEVICExNODES with "
              "the run's nodes, or other degrees)");
    }
    l.shard = world / others;
  }
  if (l.replicate * l.shard * l.cp * l.tp * l.pp != world) {
    return p.Fail("data_parallel_shard_degree",
                  "x replicate x cp x tp x pp = " + std::to_string(l.shard * others) +
                      " is not the cluster's " + std::to_string(world) +
                      " GPUs (torchtitan's parallel_dims.py asserts it equals WORLD_SIZE; give "
                      "--cluster DEVICExNODES with the run's nodes)");
  }
  if (l.replicate > 1 && l.shard * l.cp > 1) {
    return p.Fail("data_parallel_replicate_degree",
                  "with data_parallel_shard_degree x context_parallel_degree > 1 is HSDP, which "
                  "stagecraft does not read yet (expected replicate 1, or shard and cp 1: DDP)");
  }
  if (l.ep > 1 && (etp.value_or(1) != 1 && etp.value_or(1) != l.tp)) {
    return p.Fail("expert_tensor_parallel_degree", "must be 1 or the tp degree (parallel_dims.py)");
  }
  if (l.ep > 1 && (l.ep % l.cp != 0 || (l.shard * l.cp) % l.ep != 0)) {
    return p.Fail("expert_parallel_degree",
                  "= " + std::to_string(l.ep) + " must be a multiple of cp (" +
                      std::to_string(l.cp) + ") dividing dp_shard x cp (" +
                      std::to_string(l.shard * l.cp) + ") (parallel_dims.py)");
  }
  if (seq_len % (l.tp * 2 * l.cp) != 0) {
    return p.Fail("tensor_parallel_degree",
                  "x 2 x context_parallel_degree = " + std::to_string(l.tp * 2 * l.cp) +
                      " does not divide seq_len " + std::to_string(seq_len) +
                      " (parallel_dims.py, seq_len_divisor: sequence parallelism splits the "
                      "sequence over tp, context parallelism into 2 x cp chunks)");
  }
  return l;
}

// The activation checkpointing into p.recompute and p.recompute_num_layers. "selective" with a
// number N is torchtitan's layer policy (torchtitan/distributed/activation_checkpoint.py at v0.2.0,
// _apply_layer_sac): one process-wide counter over the transformer blocks, a block checkpointed
// (recomputed whole) when the count is a multiple of N, every block when N is 0. Without pipeline
// parallelism the process holds the whole model, so floor(layers / N) of its blocks recompute
// (recompute_num_layers, costed as that share of the layers; none when N > layers). Under
// pipeline parallelism the counter runs over a rank's chunks, so chunks recompute different
// counts: refused.
Status ReadRecompute(const TableValues& ac, int32_t layers, ParallelSpec& p) {
  STAGECRAFT_ASSIGN_OR_RETURN(mode, ac.String("mode"));
  STAGECRAFT_ASSIGN_OR_RETURN(option, ac.String("selective_ac_option"));
  p.recompute_num_layers = 0;
  const std::string m = mode.value_or("selective");
  if (m == "none" || m == "full") {
    p.recompute = m == "none" ? Recompute::kNone : Recompute::kFull;
    return Status::Ok();
  }
  if (m != "selective") {
    return ac.Fail("mode", "'" + EscapeBytes(m) + "'" +
                               DidYouMean(m, {"none", "selective", "full"}) +
                               " (expected 'none', 'selective' or 'full')");
  }
  const std::string o = option.value_or("2");
  if (o == "op") {
    p.recompute = Recompute::kSelectiveOp;
    return Status::Ok();
  }
  const std::string what =
      std::string(option ? ""
                  : mode ? "'selective' with torchtitan's default option "
                         : "absent: torchtitan's default 'selective' with option ") +
      "'" + EscapeBytes(o) + "'";
  int64_t every = 0;
  const bool number = !o.empty() && o.size() <= 9 &&
                      std::all_of(o.begin(), o.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!number) {
    return ac.Fail(option ? "selective_ac_option" : "mode",
                   what + " (expected 'op' or a number N: every Nth layer checkpointed)");
  }
  for (char c : o) every = every * 10 + (c - '0');
  if (every <= 1) {  // 0 and 1: every block
    p.recompute = Recompute::kFull;
    return Status::Ok();
  }
  if (p.pp > 1) {
    return ac.Fail(option ? "selective_ac_option" : "mode",
                   what +
                       " (every Nth layer checkpointed) is read without pipeline parallelism "
                       "only: torchtitan's counter runs over a rank's chunks, which then "
                       "recompute different counts (expected selective_ac_option 'op', or mode "
                       "'full' or 'none')");
  }
  const int64_t recomputed = layers / every;
  p.recompute = recomputed > 0 ? Recompute::kFull : Recompute::kNone;
  p.recompute_num_layers =
      recomputed > 0 && recomputed < layers ? static_cast<int32_t>(recomputed) : 0;
  return Status::Ok();
}

// FSDP's resharding, compile (fused kernels), async TP, float8; what is not modelled is an error.
Status ReadEngineOptions(const TableValues& model, const TableValues& training,
                         const TableValues& parallelism, const TableValues& compile,
                         ParallelSpec& p) {
  STAGECRAFT_ASSIGN_OR_RETURN(reshard, parallelism.String("fsdp_reshard_after_forward"));
  const std::string r = reshard.value_or("default");
  if (r != "default" && r != "always" && r != "never") {
    return parallelism.Fail("fsdp_reshard_after_forward",
                            "'" + EscapeBytes(r) + "' (expected 'default', 'always' or 'never')");
  }
  p.reshard_after_forward = r == "always"  ? ReshardAfterForward::kYes
                            : r == "never" ? ReshardAfterForward::kNo
                                           : ReshardAfterForward::kDefault;
  // Context parallelism is PyTorch's context_parallel, with torchtitan's rotate method (default
  // "allgather": config_manager.py at 9dec370; torch's _cp_options.rotate_method likewise).
  STAGECRAFT_ASSIGN_OR_RETURN(rotate, parallelism.String("context_parallel_rotate_method"));
  const std::string method = rotate.value_or("allgather");
  const std::optional<CpRotate> chosen = kCpRotateNames.Parse(method);
  if (!chosen) {
    return parallelism.Fail(
        "context_parallel_rotate_method",
        "'" + EscapeBytes(method) + "' (expected " + kCpRotateNames.Joined() + ")");
  }
  p.cp_all_gather = false;
  p.cp_rotate = p.cp <= 1 ? CpRotate::kNone : *chosen;
  STAGECRAFT_ASSIGN_OR_RETURN(old_compile, training.Bool("compile"));
  STAGECRAFT_ASSIGN_OR_RETURN(compile_enable, compile.Bool("enable"));
  p.fused_kernels = compile_enable.value_or(old_compile.value_or(false));
  // The loss is PyTorch's cross_entropy on the logits cast to fp32 (torchtitan's
  // cross_entropy_loss, components/loss.py), compiled with the model where compile is on and
  // compile.components (default ["model", "loss"]) names it: build_cross_entropy_loss at
  // e7c0cae and later. torchtitan of 2024 (train.py at 9dec370) left it eager under compile;
  // a config of that generation says cross_entropy_fusion: torch.
  STAGECRAFT_ASSIGN_OR_RETURN(components, compile.Names("components"));
  const bool loss_compiled =
      p.fused_kernels && (components.empty() || std::find(components.begin(), components.end(),
                                                          "loss") != components.end());
  p.cross_entropy_fusion =
      loss_compiled ? CrossEntropyFusion::kTorchCompiled : CrossEntropyFusion::kTorch;
  STAGECRAFT_ASSIGN_OR_RETURN(async_tp, parallelism.Bool("enable_async_tensor_parallel"));
  p.async_tp = async_tp.value_or(false);
  if (p.async_tp && !p.fused_kernels) {
    return parallelism.Fail("enable_async_tensor_parallel",
                            "needs torch.compile (expected [compile] enable = true; "
                            "parallelize_llama.py raises without it)");
  }
  STAGECRAFT_ASSIGN_OR_RETURN(converters, model.Names("converters"));
  p.fp8 = false;
  for (const std::string& converter : converters) {
    if (converter == "float8") {
      p.fp8 = true;
    } else {
      return model.Fail("converters", "'" + EscapeBytes(converter) +
                                          "' is not read (expected \"float8\" or none)");
    }
  }
  STAGECRAFT_ASSIGN_OR_RETURN(precision, training.String("mixed_precision_param"));
  if (precision.value_or("bfloat16") != "bfloat16") {
    return training.Fail("mixed_precision_param",
                         "'" + EscapeBytes(*precision) + "' is not read (expected \"bfloat16\")");
  }
  STAGECRAFT_ASSIGN_OR_RETURN(offload, training.Bool("enable_cpu_offload"));
  if (offload.value_or(false)) {
    return training.Fail("enable_cpu_offload", "is not modelled (expected false)");
  }
  return Status::Ok();
}

// [float8] recipe_name (torchtitan/config/job_config.py: tensorwise, rowwise or
// rowwise_with_gw_hp; unset builds torchao's Float8LinearConfig(), tensorwise). Read with the
// float8 converter only, as torchtitan reads it.
Status ReadFloat8Recipe(const TableValues& float8, ParallelSpec& p) {
  STAGECRAFT_ASSIGN_OR_RETURN(name, float8.String("recipe_name"));
  p.fp8_recipe = Fp8Recipe::kTensorwise;
  if (!p.fp8 || !name) return Status::Ok();
  const std::optional<Fp8Recipe> recipe = kFp8RecipeNames.Parse(*name);
  if (!recipe || (*recipe != Fp8Recipe::kTensorwise && *recipe != Fp8Recipe::kRowwise &&
                  *recipe != Fp8Recipe::kRowwiseWithGwHp)) {
    return float8.Fail("recipe_name", "'" + EscapeBytes(*name) +
                                          "' (expected \"tensorwise\", \"rowwise\" or "
                                          "\"rowwise_with_gw_hp\": torchao's float8 recipes)");
  }
  p.fp8_recipe = *recipe;
  return Status::Ok();
}

}  // namespace

std::string Llama3FlavorOf(const TransformerSpec& t) {
  for (const Flavor& flavor : Llama3Flavors()) {
    if (t.layers == flavor.layers && t.hidden == flavor.dim && t.heads == flavor.heads &&
        t.kv_heads_or_heads() == flavor.kv_heads && t.ffn_or_default() == FlavorFfn(flavor) &&
        t.vocab == kLlama3Vocab && !t.moe() && !t.mla()) {
      return flavor.name;
    }
  }
  return "";
}

Result<Config> ReadTorchtitanConfig(const std::string& text, const std::string& source, Config base,
                                    bool model_given) {
  auto parsed = ParseToml(text, source);
  if (!parsed.ok()) return parsed.error();
  return ReadTorchtitanDocument(parsed.value(), source, std::move(base), model_given);
}

Result<Config> ReadTorchtitanDocument(const TomlDocument& document, const std::string& source,
                                      Config base, bool model_given) {
  STAGECRAFT_RETURN_IF_ERROR(CheckTables(document, source));
  Config config = std::move(base);
  const TableValues model = Table(document, source, "model");
  const TableValues training = Table(document, source, "training");
  const TableValues parallelism = Table(document, source, "parallelism");
  const TableValues ac = Table(document, source, "activation_checkpoint");
  const TableValues compile = Table(document, source, "compile");
  STAGECRAFT_RETURN_IF_ERROR(ReadModel(document, source, model_given, config.model));
  const TransformerSpec& t = config.model.transformer;
  STAGECRAFT_ASSIGN_OR_RETURN(seq_len, training.Int("seq_len", 1));
  config.model.seq_len = static_cast<int32_t>(seq_len.value_or(2048));
  if (!config.cluster.given) {
    return Error{source +
                 ": torchtitan's layout fills the cluster's GPUs (WORLD_SIZE); give "
                 "--cluster DEVICExNODES with the run's nodes"};
  }
  const int64_t world = int64_t{config.cluster.nodes} * config.cluster.devices_per_node;
  STAGECRAFT_ASSIGN_OR_RETURN(layout, ReadLayout(parallelism, world, config.model.seq_len));
  STAGECRAFT_ASSIGN_OR_RETURN(local_batch, training.Int("local_batch_size", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(old_batch, training.Int("batch_size", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(global_batch, training.Int("global_batch_size", -1));
  if (local_batch && old_batch) {
    return training.Fail("batch_size",
                         "and local_batch_size both given (expected local_batch_size)");
  }
  const int64_t local = local_batch.value_or(old_batch.value_or(8));
  const int64_t dp = layout.replicate * layout.shard;
  const int64_t global = global_batch.value_or(-1) < 0 ? local * dp : *global_batch;
  if (global == 0 || global % (local * dp) != 0) {
    return training.Fail("global_batch_size", "= " + std::to_string(global) +
                                                  " is not a multiple of local_batch_size x dp = " +
                                                  std::to_string(local * dp) +
                                                  " (torchtitan's train.py asserts it)");
  }
  const int64_t accumulation = global / (local * dp);
  ParallelSpec& p = config.parallel;
  p.engine = TrainingEngine::kTorchtitan;
  p.tp = static_cast<int32_t>(layout.tp);
  p.pp = static_cast<int32_t>(layout.pp);
  p.cp = static_cast<int32_t>(layout.cp);
  p.ep = static_cast<int32_t>(layout.ep);
  p.dp = static_cast<int32_t>(dp);
  config.schedule.name = "1f1b";
  config.schedule.group_size = 0;
  p.vpp = 1;
  STAGECRAFT_ASSIGN_OR_RETURN(modules, ModuleCounts(parallelism, t.layers));
  if (modules && p.pp == 1 && modules->size() != 1) {
    return parallelism.Fail("module_fqns_per_model_part",
                            "gives " + std::to_string(modules->size()) +
                                " stages without pipeline parallelism (expected "
                                "pipeline_parallel_degree > 1, or none)");
  }
  if (p.pp > 1) {
    STAGECRAFT_RETURN_IF_ERROR(ReadPipeline(parallelism, t, local, accumulation, modules, p,
                                            config.model, config.schedule));
  } else {
    config.model.micro_batch_size = static_cast<int32_t>(local);
    p.microbatches = static_cast<int32_t>(accumulation);
  }
  STAGECRAFT_RETURN_IF_ERROR(ReadRecompute(ac, t.layers, p));
  // The layout torchtitan runs (pipeline_parallel.py, generate_llm_fqn_per_model_part): its
  // splitter with the first and last stage's less-layers weights (default 1 each), as the
  // planner's torchtitan candidates run it (plan/plan.cc, Candidate::StageCounts).
  p.partition = PartitionMethod::kCounts;
  p.layout.clear();
  p.layer_counts = EvenTransformerCounts(t.layers, p.pp * p.vpp);
  if (modules && p.pp > 1) {
    p.layer_counts = *modules;
  } else if (p.pp * p.vpp > 1) {
    STAGECRAFT_ASSIGN_OR_RETURN(first_less,
                                parallelism.Int("pipeline_parallel_first_stage_less_layers", 0));
    STAGECRAFT_ASSIGN_OR_RETURN(last_less,
                                parallelism.Int("pipeline_parallel_last_stage_less_layers", 0));
    auto counts = TorchtitanTransformerCounts(t.layers, p.pp * p.vpp,
                                              static_cast<int32_t>(first_less.value_or(1)),
                                              static_cast<int32_t>(last_less.value_or(1)));
    if (!counts.ok()) {
      return parallelism.Fail(
          "pipeline_parallel_first_stage_less_layers",
          "and pipeline_parallel_last_stage_less_layers: " + counts.error().message +
              " (torchtitan's pipeline_parallel.py, "
              "generate_llm_fqn_per_model_part)");
    }
    p.layer_counts = std::move(counts).value();
  }
  p.placement = Placement::kLoop;
  p.sequence_parallel = p.tp > 1;  // torchtitan's TP always shards the sequence
  p.distributed_optimizer = false;
  p.overlap_grad_reduce = false;
  p.overlap_param_gather = false;
  p.grad_buckets = GradBuckets::kNone;
  p.zero_stage = layout.shard * layout.cp > 1 ? 3 : 0;  // FSDP2 over dp_shard x cp
  STAGECRAFT_RETURN_IF_ERROR(ReadEngineOptions(model, training, parallelism, compile, p));
  STAGECRAFT_RETURN_IF_ERROR(ReadFloat8Recipe(Table(document, source, "float8"), p));
  config.model.name = config.model.name.empty() ? source : config.model.name;
  return config;
}

}  // namespace stagecraft
