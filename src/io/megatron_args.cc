// ReadMegatronArgs: Megatron-LM's and Megatron-DeepSpeed's arguments, one row per argument in
// io/megatron_args_table.h's table (its flag, the engines that take it, how its value parses and
// what it sets), read line by line; then the rules across arguments, by group (DeepSpeed's
// pipeline model, recomputation, the model's shape, MLA, MoE, the pipeline's layout, the batch)
// in the order their errors are reported. WriteMegatronArgs walks the same rows.
#include "io/megatron_args.h"

#include <sstream>
#include <vector>

#include "core/suggest.h"
#include "io/megatron_args_table.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

using megatron_args::ArgLine;
using megatron_args::Arguments;
using megatron_args::ArgumentTable;
using megatron_args::Engines;
using megatron_args::FindArgument;
using megatron_args::MegatronArgument;
using megatron_args::TakenBy;
using megatron_args::WriteInput;

MegatronDialect Dialect(bool deepspeed) {
  return deepspeed ? MegatronDialect::kMegatronDeepSpeed : MegatronDialect::kMegatronLm;
}

// The error for a flag the dialect does not take: Megatron-LM's own under Megatron-DeepSpeed
// says why, anything else gets "did you mean".
Error UnknownArgument(const ArgLine& line, const MegatronArgument* found, bool deepspeed) {
  const MegatronDialect dialect = Dialect(deepspeed);
  std::vector<std::string> known;
  for (const bool switches : {true, false}) {
    for (const MegatronArgument& argument : ArgumentTable()) {
      if (TakenBy(argument, dialect) && (argument.parse == nullptr) == switches) {
        known.push_back(argument.flag);
      }
    }
  }
  const bool elsewhere = deepspeed && found != nullptr && found->engines == Engines::kMegatronLm;
  const std::string engine = deepspeed ? "Megatron-DeepSpeed" : "Megatron";
  const std::string exporter = deepspeed ? "deepspeed" : "megatron";
  return Error{line.where + "unknown " + engine + " argument '" + EchoInput(line.flag) + "'" +
               (elsewhere ? " (Megatron-LM's; DeepSpeed's pipeline engine has no interleaving, "
                            "context parallelism or distributed optimizer: ZeRO is "
                            "--zero-stage)"
                          : DidYouMean(line.flag, known) +
                                " (stagecraft reads the arguments `plan --export " + exporter +
                                "` writes)")};
}

// One line: blank lines and `#` comments are skipped, anything else is one `--flag [value]`.
Status ReadLine(const std::string& text, const std::string& where, Arguments& args) {
  ArgLine line;
  line.where = where;
  std::istringstream words(text);
  std::string extra;
  if (!(words >> line.flag) || line.flag[0] == '#') return Status::Ok();
  words >> line.value;
  if (words >> extra) {
    return Error{where + "'" + EscapeBytes(text) +
                 "' holds more than one argument (expected "
                 "one '--flag [value]' per line)"};
  }
  const MegatronArgument* found = FindArgument(line.flag);
  if (found == nullptr || !TakenBy(*found, Dialect(args.deepspeed))) {
    return UnknownArgument(line, found, args.deepspeed);
  }
  if (found->parse == nullptr && !line.value.empty()) {
    return Error{where + line.flag + " takes no value, got '" + EscapeBytes(line.value) + "'"};
  }
  if (found->parse != nullptr) {
    if (line.value.empty()) return Error{where + line.flag + " needs a value"};
    STAGECRAFT_RETURN_IF_ERROR(found->parse(*found, line));
  }
  if (found->apply != nullptr) found->apply(line, args);
  return Status::Ok();
}

Status ReadLines(const std::string& text, const std::string& source, Arguments& args) {
  std::istringstream lines(text);
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    const std::string where = source + ":" + std::to_string(line_number) + ": ";
    STAGECRAFT_RETURN_IF_ERROR(ReadLine(line, where, args));
  }
  return Status::Ok();
}

// Megatron-DeepSpeed builds DeepSpeed's pipeline model (GPTModelPipe) unless
// --no-pipeline-parallel (pretrain_gpt.py, model_provider). That model checkpoints through
// the pipeline engine's activation_checkpoint_interval, taken from the uniform method only
// ("deepspeed's pipeline doesn't support the block recompute method", gpt_model.py: with
// block it checkpoints nothing), and DeepSpeed's PipelineEngine asserts ZeRO stage < 2
// (deepspeed/runtime/pipe/engine.py). stagecraft reads --no-pipeline-parallel with pp 1, as
// `plan --export deepspeed` writes it (arguments.py's own check of that is commented out).
Status CheckDeepSpeedPipeline(const Arguments& args, const std::string& source) {
  const ParallelSpec& p = args.config.parallel;
  if (args.no_pipeline_parallel && p.pp != 1) {
    return Error{source +
                 ": --no-pipeline-parallel is read with --pipeline-model-parallel-size "
                 "1 only (as `plan --export deepspeed` writes it); drop it to run "
                 "DeepSpeed's pipeline engine"};
  }
  if (!args.no_pipeline_parallel && p.zero_stage >= 2) {
    return Error{source + ": --zero-stage " + std::to_string(p.zero_stage) +
                 " with DeepSpeed's pipeline model: its PipelineEngine asserts ZeRO stage < 2 "
                 "(deepspeed/runtime/pipe/engine.py); add --no-pipeline-parallel (pp 1) or use "
                 "--zero-stage 0 or 1"};
  }
  if (!args.no_pipeline_parallel && p.recompute == Recompute::kFull &&
      args.recompute_method == "block") {
    return Error{args.recompute_method_where +
                 "--recompute-method block with DeepSpeed's pipeline model checkpoints nothing "
                 "(Megatron-DeepSpeed's gpt_model.py takes the interval from the uniform method "
                 "only); add --no-pipeline-parallel (pp 1, Megatron's block method) or use "
                 "--recompute-method uniform"};
  }
  return Status::Ok();
}

// Megatron's full recomputation: 'uniform' with N recomputes every layer in groups of N, each
// keeping its input; 'block' with N the first N layers of each pipeline chunk
// (megatron/core/transformer/transformer_block.py, _checkpointed_forward). Megatron-DeepSpeed's
// pipeline model takes the uniform N as its activation_checkpoint_interval.
Status SettleRecompute(Arguments& args, const std::string& source) {
  if (args.deepspeed) STAGECRAFT_RETURN_IF_ERROR(CheckDeepSpeedPipeline(args, source));
  ParallelSpec& p = args.parallel();
  if (args.recompute_num_layers > 0) {
    if (args.recompute_method == "block") {
      p.recompute_num_layers = static_cast<int32_t>(args.recompute_num_layers);
    } else if (args.recompute_num_layers > 1) {
      p.recompute_num_layers = static_cast<int32_t>(args.recompute_num_layers);
      p.recompute_method = RecomputeMethod::kUniform;
    }
  }
  return Status::Ok();
}

// FP8: --fp8-format turns it on, --fp8-recipe (default delayed) says how; Megatron ignores a
// recipe without a format, which here is an error, as parallel.fp8_recipe without fp8 is.
Status SettleFp8(Arguments& args) {
  ParallelSpec& p = args.parallel();
  if (!p.fp8) {
    if (args.fp8_recipe_where.empty()) return Status::Ok();
    return Error{args.fp8_recipe_where + "--fp8-recipe " + args.fp8_recipe +
                 " scales FP8 GEMMs, and no --fp8-format turns them on (expected --fp8-format "
                 "e4m3|hybrid, or no --fp8-recipe)"};
  }
  p.fp8_recipe = kFp8RecipeNames.Parse(args.fp8_recipe).value_or(Fp8Recipe::kDelayed);
  return Status::Ok();
}

// The arguments every run needs, then grouped-query and multi-head latent attention
// (Megatron's MLATransformerConfig): the ranks and head widths without --multi-latent-attention
// are ignored by Megatron's GPT model, so reading them would simulate attention the run does not
// have.
Status SettleAttention(Arguments& args, const std::string& source) {
  TransformerSpec& t = args.transformer();
  if (t.layers == 0 || t.hidden == 0 || t.heads == 0 || t.vocab == 0 || args.global_batch == 0) {
    return Error{source +
                 ": needs --num-layers, --hidden-size, --num-attention-heads, --vocab-size and "
                 "--global-batch-size (the arguments `plan --export " +
                 std::string(args.deepspeed ? "deepspeed" : "megatron") + "` writes)"};
  }
  if (!args.grouped) t.kv_heads = 0;
  if (args.latent &&
      (t.kv_lora_rank == 0 || t.qk_nope_dim == 0 || t.qk_rope_dim == 0 || t.v_head_dim == 0)) {
    return Error{source +
                 ": --multi-latent-attention needs --kv-lora-rank, --qk-head-dim, "
                 "--qk-pos-emb-head-dim and --v-head-dim (--q-lora-rank is optional: 0 = a full "
                 "query projection)"};
  }
  if (!args.latent && !args.latent_where.empty()) {
    return Error{args.latent_where +
                 "a latent-attention rank or head width without --multi-latent-attention "
                 "(add it, or drop the MLA arguments)"};
  }
  return Status::Ok();
}

// --moe-layer-freq against the layers; the shared experts' width as a count of experts.
Status SettleExperts(Arguments& args, const std::string& source) {
  TransformerSpec& t = args.transformer();
  if (!args.moe_layer_freq_where.empty()) {
    if (t.experts == 0) {
      return Error{args.moe_layer_freq_where + "--moe-layer-freq without --num-experts"};
    }
    if (args.moe_layers >= 0 && t.dense_layers + args.moe_layers != t.layers) {
      return Error{args.moe_layer_freq_where + "--moe-layer-freq lists " +
                   std::to_string(t.dense_layers + args.moe_layers) + " layers, --num-layers is " +
                   std::to_string(t.layers) + " (expected one entry a layer)"};
    }
  }
  if (t.shared_experts > 0) {
    if (t.expert_ffn == 0 || t.shared_experts % t.expert_ffn != 0) {
      return Error{source +
                   ": --moe-shared-expert-intermediate-size must be a multiple of "
                   "--moe-ffn-hidden-size"};
    }
    t.shared_experts /= t.expert_ffn;
  }
  return Status::Ok();
}

// The virtual pipeline from --num-layers-per-virtual-pipeline-stage, which the layout excludes.
Status SettleVirtualStages(Arguments& args, const std::string& source) {
  ParallelSpec& p = args.parallel();
  const TransformerSpec& t = args.transformer();
  p.vpp = 1;
  if (!args.layout.empty() && (args.layers_per_virtual_stage > 0 || args.first_stage_layers > 0 ||
                               args.last_stage_layers > 0)) {
    // megatron/training/arguments.py (no more than one of the virtual-stage arguments and the
    // layout) and transformer_config.py (the layout with no other pipeline layout argument).
    return Error{
        args.layout_where +
        "--pipeline-model-parallel-layout cannot be set with "
        "--num-layers-per-virtual-pipeline-stage or --decoder-first/last-pipeline-num-"
        "layers (Megatron's arguments.py and transformer_config.py; expected one of them)"};
  }
  if (args.layers_per_virtual_stage > 0) {
    if (t.layers % (int64_t{p.pp} * args.layers_per_virtual_stage) != 0) {
      return Error{source + ": --num-layers-per-virtual-pipeline-stage " +
                   std::to_string(args.layers_per_virtual_stage) + " does not split " +
                   std::to_string(t.layers) + " layers over " + std::to_string(p.pp) + " stages"};
    }
    p.vpp = static_cast<int32_t>(t.layers / (p.pp * args.layers_per_virtual_stage));
  }
  return Status::Ok();
}

// Megatron's syntax (megatron/core/transformer/pipeline_parallel_layer_layout.py,
// parse_str_to_list): commas are cosmetic; 'E' the embedding, 't' a decoder, 'L' the loss,
// 'm' an MTP layer; X*N and (...)*N repeat; '|' separates the pp x vpp stages, listed
// virtual stage by virtual stage (stage vpp_rank x pp + pp_rank), as stagecraft's loop
// placement numbers them. The flattened layout spells E, the decoders, L
// (validate_layer_layout). On success args.layout holds it without its commas.
Status SettleLayout(Arguments& args) {
  ParallelSpec& p = args.parallel();
  std::string spelled;
  for (char c : args.layout) {
    if (c != ',') spelled += c;
  }
  if (spelled.find('m') != std::string::npos) {
    return Error{args.layout_where + "--pipeline-model-parallel-layout '" +
                 EscapeBytes(args.layout) +
                 "' places MTP layers ('m'), which stagecraft does not model (expected 'E', 't', "
                 "'L', '|', '*N' and '(...)*N')"};
  }
  std::string letters =
      "E" + std::string(static_cast<size_t>(args.transformer().layers), 't') + "L";
  auto partition = PartitionFromLayout(spelled, letters);
  if (!partition.ok()) {
    return Error{args.layout_where + "--pipeline-model-parallel-layout " +
                 partition.error().message};
  }
  const int32_t stages = partition.value().num_stages();
  if (stages % p.pp != 0) {
    return Error{args.layout_where + "--pipeline-model-parallel-layout has " +
                 std::to_string(stages) + " stages, not a multiple of pp " + std::to_string(p.pp) +
                 " (Megatron's arguments.py: the layout's length divided "
                 "by pp is the virtual pipeline size)"};
  }
  p.vpp = stages / p.pp;
  args.layout = spelled;
  return Status::Ok();
}

// dp from the cluster's GPUs, the microbatches from the global batch.
Status SettleBatch(Arguments& args, const std::string& source) {
  const Config& config = args.config;
  ParallelSpec& p = args.parallel();
  const int64_t world =
      config.cluster.given ? int64_t{config.cluster.nodes} * config.cluster.devices_per_node : 0;
  const int64_t model_ranks = int64_t{p.tp} * p.pp * p.cp;
  if (world == 0 || world % model_ranks != 0) {
    return Error{source + ": tp x pp x cp = " + std::to_string(model_ranks) +
                 " must divide the cluster's GPUs (give --cluster DEVICExNODES with the plan's "
                 "nodes)"};
  }
  p.dp = static_cast<int32_t>(world / model_ranks);
  const int64_t per_step = int64_t{p.dp} * config.model.micro_batch_size;
  if (args.global_batch % per_step != 0) {
    return Error{source + ": --global-batch-size " + std::to_string(args.global_batch) +
                 " is not divisible by dp x micro-batch size = " + std::to_string(per_step)};
  }
  p.microbatches = static_cast<int32_t>(args.global_batch / per_step);
  return Status::Ok();
}

// Megatron's default layout, as plan/plan.cc's candidates run; DeepSpeed's pipeline model
// splits the decoders itself, any count over any pp (DeepSpeedTransformerCounts). Megatron's
// uneven split (megatron/core/transformer/transformer_config.py): the first and the last stage
// take what is given, the middle stages the rest evenly. Read for vpp 1 and both ends given, as
// `plan --export megatron` writes it.
Status SettleLayerCounts(Arguments& args, const std::string& source) {
  ParallelSpec& p = args.parallel();
  const TransformerSpec& t = args.transformer();
  p.partition = PartitionMethod::kCounts;
  p.layer_counts = args.deepspeed && p.pp > 1 && t.layers >= p.pp
                       ? DeepSpeedTransformerCounts(static_cast<int32_t>(t.layers), p.pp)
                       : EvenTransformerCounts(t.layers, p.pp * p.vpp);
  if (args.first_stage_layers == 0 && args.last_stage_layers == 0) return Status::Ok();
  if (args.first_stage_layers == 0 || args.last_stage_layers == 0 || p.vpp != 1 || p.pp < 3) {
    return Error{source +
                 ": --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers "
                 "are read together, with pp >= 3 and no virtual pipeline (as `plan --export "
                 "megatron` writes them)"};
  }
  const int64_t middle = t.layers - args.first_stage_layers - args.last_stage_layers;
  if (middle < p.pp - 2 || middle % (p.pp - 2) != 0) {
    return Error{source + ": " + std::to_string(middle) +
                 " decoders left for the middle stages do not split evenly over " +
                 std::to_string(p.pp - 2) +
                 " stages (Megatron's rule for --decoder-first/last-pipeline-num-layers)"};
  }
  p.layer_counts.assign(static_cast<size_t>(p.pp), static_cast<int32_t>(middle / (p.pp - 2)));
  p.layer_counts.front() = static_cast<int32_t>(args.first_stage_layers) + 1;  // and the embedding
  p.layer_counts.back() = static_cast<int32_t>(args.last_stage_layers) + 1;    // and the head
  return Status::Ok();
}

// The pipeline: virtual stages, the layout, dp and the microbatches, the schedule and the split.
Status SettlePipeline(Arguments& args, const std::string& source) {
  STAGECRAFT_RETURN_IF_ERROR(SettleVirtualStages(args, source));
  const bool layout_read = !args.layout.empty();
  if (layout_read) STAGECRAFT_RETURN_IF_ERROR(SettleLayout(args));
  STAGECRAFT_RETURN_IF_ERROR(SettleBatch(args, source));
  ParallelSpec& p = args.parallel();
  args.config.schedule.name = p.vpp > 1 ? "interleaved-1f1b" : "1f1b";
  args.config.schedule.group_size = 0;
  STAGECRAFT_RETURN_IF_ERROR(SettleLayerCounts(args, source));
  if (layout_read) {
    p.partition = PartitionMethod::kLayout;
    p.layout = args.layout;
    p.layer_counts.clear();
  }
  return Status::Ok();
}

}  // namespace

Result<Config> ReadMegatronArgs(const std::string& text, const std::string& source, Config base,
                                MegatronDialect dialect) {
  Arguments args;
  args.deepspeed = dialect == MegatronDialect::kMegatronDeepSpeed;
  args.config = std::move(base);
  args.config.model = ModelSpec();
  TransformerSpec& t = args.transformer();
  t.causal = false;
  t.bias = true;
  t.learned_positions = true;
  t.tied_embeddings = true;
  ParallelSpec& p = args.parallel();
  p = ParallelSpec();
  p.pp = 1;
  p.microbatches = 1;
  p.engine = args.deepspeed ? TrainingEngine::kMegatronDeepSpeed : TrainingEngine::kMegatronLm;
  STAGECRAFT_RETURN_IF_ERROR(ReadLines(text, source, args));
  STAGECRAFT_RETURN_IF_ERROR(SettleRecompute(args, source));
  STAGECRAFT_RETURN_IF_ERROR(SettleFp8(args));
  STAGECRAFT_RETURN_IF_ERROR(SettleAttention(args, source));
  STAGECRAFT_RETURN_IF_ERROR(SettleExperts(args, source));
  args.config.model.name = args.deepspeed ? "megatron-deepspeed-args" : "megatron-args";
  STAGECRAFT_RETURN_IF_ERROR(SettlePipeline(args, source));
  return std::move(args.config);
}

std::vector<std::pair<std::string, std::string>> WriteMegatronArgs(
    const Config& config, const MegatronWriteContext& context) {
  const WriteInput in{config, context};
  std::vector<std::pair<std::string, std::string>> written;
  for (const MegatronArgument& argument : ArgumentTable()) {
    if (argument.write == nullptr || !TakenBy(argument, context.dialect)) continue;
    std::optional<std::string> value = argument.write(in);
    if (value) written.emplace_back(argument.flag, std::move(*value));
  }
  return written;
}

}  // namespace stagecraft
