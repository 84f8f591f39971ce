#include "io/megatron_args.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <sstream>
#include <vector>

#include "core/suggest.h"
#include "io/hf_config.h"
#include "schedule/partition.h"

namespace stagecraft {

Result<Config> ReadMegatronArgs(const std::string& text, const std::string& source, Config base,
                                MegatronDialect dialect) {
  const bool deepspeed = dialect == MegatronDialect::kMegatronDeepSpeed;
  Config config = std::move(base);
  config.model = ModelSpec();
  TransformerSpec& t = config.model.transformer;
  t.causal = false;
  t.bias = true;
  t.learned_positions = true;
  t.tied_embeddings = true;
  ParallelSpec& p = config.parallel;
  p = ParallelSpec();
  p.pp = 1;
  p.microbatches = 1;
  int64_t global_batch = 0;
  int64_t layers_per_virtual_stage = 0;
  bool grouped = false;
  bool latent = false;       // --multi-latent-attention
  std::string latent_where;  // where a latent rank was given
  int64_t moe_layers = -1;   // --moe-layer-freq's MoE layers; -1 = every layer
  std::string moe_layer_freq_where;
  std::istringstream lines(text);
  std::string line;
  int line_number = 0;
  const std::vector<std::string> megatron_switches = {"--group-query-attention",
                                                      "--swiglu",
                                                      "--disable-bias-linear",
                                                      "--untie-embeddings-and-output-weights",
                                                      "--mock-data",
                                                      "--sequence-parallel",
                                                      "--multi-latent-attention",
                                                      "--moe-grouped-gemm",
                                                      "--use-distributed-optimizer",
                                                      "--overlap-param-gather",
                                                      "--overlap-grad-reduce",
                                                      "--bf16",
                                                      "--use-flash-attn"};
  const std::vector<std::string> megatron_valued = {"--num-layers",
                                                    "--hidden-size",
                                                    "--num-attention-heads",
                                                    "--num-query-groups",
                                                    "--kv-channels",
                                                    "--ffn-hidden-size",
                                                    "--num-experts",
                                                    "--moe-router-topk",
                                                    "--moe-ffn-hidden-size",
                                                    "--moe-shared-expert-intermediate-size",
                                                    "--moe-layer-freq",
                                                    "--moe-token-dispatcher-type",
                                                    "--q-lora-rank",
                                                    "--kv-lora-rank",
                                                    "--qk-head-dim",
                                                    "--qk-pos-emb-head-dim",
                                                    "--v-head-dim",
                                                    "--normalization",
                                                    "--position-embedding-type",
                                                    "--seq-length",
                                                    "--max-position-embeddings",
                                                    "--tokenizer-type",
                                                    "--vocab-size",
                                                    "--micro-batch-size",
                                                    "--global-batch-size",
                                                    "--tensor-model-parallel-size",
                                                    "--pipeline-model-parallel-size",
                                                    "--num-layers-per-virtual-pipeline-stage",
                                                    "--context-parallel-size",
                                                    "--expert-model-parallel-size",
                                                    "--recompute-granularity",
                                                    "--recompute-method",
                                                    "--recompute-num-layers",
                                                    "--decoder-first-pipeline-num-layers",
                                                    "--decoder-last-pipeline-num-layers",
                                                    "--pipeline-model-parallel-layout"};
  const std::vector<std::string> megatron_only = {"--use-distributed-optimizer",
                                                  "--overlap-param-gather",
                                                  "--overlap-grad-reduce",
                                                  "--context-parallel-size",
                                                  "--num-layers-per-virtual-pipeline-stage",
                                                  "--decoder-first-pipeline-num-layers",
                                                  "--decoder-last-pipeline-num-layers",
                                                  "--pipeline-model-parallel-layout"};
  std::vector<std::string> switches = megatron_switches;
  std::vector<std::string> valued = megatron_valued;
  if (deepspeed) {
    for (std::vector<std::string>* list : {&switches, &valued}) {
      list->erase(std::remove_if(list->begin(), list->end(),
                                 [&](const std::string& flag) {
                                   return std::find(megatron_only.begin(), megatron_only.end(),
                                                    flag) != megatron_only.end();
                                 }),
                  list->end());
    }
    switches.push_back("--deepspeed");
    switches.push_back("--no-pipeline-parallel");
    valued.push_back("--deepspeed_config");
    valued.push_back("--zero-stage");
  }
  const std::string engine = deepspeed ? "Megatron-DeepSpeed" : "Megatron";
  const std::string exporter = deepspeed ? "deepspeed" : "megatron";
  int64_t first_stage_layers = 0;  // --decoder-first/last-pipeline-num-layers, 0 = not given
  int64_t last_stage_layers = 0;
  bool no_pipeline_parallel =
      false;  // Megatron-DeepSpeed: the Megatron model, not DeepSpeed's pipe
  std::string recompute_method = "uniform";
  std::string recompute_method_where;
  int64_t recompute_num_layers = 0;
  std::string layout;  // --pipeline-model-parallel-layout, "" = not given
  std::string layout_where;
  while (std::getline(lines, line)) {
    ++line_number;
    const std::string where = source + ":" + std::to_string(line_number) + ": ";
    std::istringstream words(line);
    std::string flag;
    std::string value;
    std::string extra;
    if (!(words >> flag) || flag[0] == '#') continue;
    words >> value;
    if (words >> extra) {
      return Error{where + "'" + EscapeBytes(line) +
                   "' holds more than one argument (expected "
                   "one '--flag [value]' per line)"};
    }
    const bool is_switch = std::find(switches.begin(), switches.end(), flag) != switches.end();
    const bool is_valued = std::find(valued.begin(), valued.end(), flag) != valued.end();
    if (!is_switch && !is_valued) {
      std::vector<std::string> known = switches;
      known.insert(known.end(), valued.begin(), valued.end());
      const bool elsewhere = deepspeed && std::find(megatron_only.begin(), megatron_only.end(),
                                                    flag) != megatron_only.end();
      return Error{where + "unknown " + engine + " argument '" + EscapeBytes(flag) + "'" +
                   (elsewhere ? " (Megatron-LM's; DeepSpeed's pipeline engine has no interleaving, "
                                "context parallelism or distributed optimizer: ZeRO is "
                                "--zero-stage)"
                              : DidYouMean(flag, known) +
                                    " (stagecraft reads the arguments `plan --export " + exporter +
                                    "` writes)")};
    }
    if (is_switch && !value.empty()) {
      return Error{where + flag + " takes no value, got '" + EscapeBytes(value) + "'"};
    }
    if (is_valued && value.empty()) return Error{where + flag + " needs a value"};
    int64_t number = 0;
    auto integer = [&](int64_t low) -> Status {
      const char* end = value.data() + value.size();
      const auto [stop, error] = std::from_chars(value.data(), end, number);
      if (error != std::errc() || stop != end || number < low ||
          number > std::numeric_limits<int32_t>::max()) {
        return Error{where + flag + " '" + EscapeBytes(value) +
                     "' is not a whole number >= " + std::to_string(low)};
      }
      return Status::Ok();
    };
    auto choice = [&](std::initializer_list<const char*> names) -> Status {
      for (const char* name : names) {
        if (value == name) return Status::Ok();
      }
      std::string expected;
      for (const char* name : names) expected += std::string(expected.empty() ? "" : ", ") + name;
      return Error{where + flag + " '" + EscapeBytes(value) + "' (expected " + expected + ")"};
    };
    if (flag == "--group-query-attention") grouped = true;
    if (flag == "--multi-latent-attention") latent = true;
    if (flag == "--swiglu") t.swiglu = true;
    if (flag == "--disable-bias-linear") t.bias = false;
    if (flag == "--untie-embeddings-and-output-weights") t.tied_embeddings = false;
    if (flag == "--sequence-parallel") p.sequence_parallel = true;
    if (flag == "--use-distributed-optimizer") p.distributed_optimizer = true;
    if (flag == "--overlap-param-gather") p.overlap_param_gather = true;
    if (flag == "--overlap-grad-reduce") p.overlap_grad_reduce = true;
    if (flag == "--use-flash-attn") t.causal = true;
    if (flag == "--no-pipeline-parallel") no_pipeline_parallel = true;
    if (is_switch) continue;
    if (flag == "--normalization") {
      STAGECRAFT_RETURN_IF_ERROR(choice({"LayerNorm", "RMSNorm"}));
      continue;
    }
    if (flag == "--position-embedding-type") {
      STAGECRAFT_RETURN_IF_ERROR(choice({"learned_absolute", "rope"}));
      t.learned_positions = value == "learned_absolute";
      continue;
    }
    if (flag == "--tokenizer-type" || flag == "--deepspeed_config") continue;
    if (flag == "--moe-token-dispatcher-type") {
      // The dispatch stagecraft models is the all-to-all over the expert-parallel group.
      STAGECRAFT_RETURN_IF_ERROR(choice({"alltoall"}));
      continue;
    }
    if (flag == "--moe-layer-freq") {
      // Megatron's moe_freq_type (arguments.py): an int N (every N-th layer MoE) or a Python
      // list expression. stagecraft models a dense prefix: 1, or [0]*K+[1]*N (in parentheses or
      // not), K dense layers then N MoE layers.
      moe_layer_freq_where = where;
      std::string spelled = value;
      if (spelled.size() >= 2 && spelled.front() == '(' && spelled.back() == ')') {
        spelled = spelled.substr(1, spelled.size() - 2);
      }
      if (spelled == "1") continue;
      int64_t dense = -1;
      int64_t moe = -1;
      const auto count = [](const std::string& digits, int64_t* out) {
        const char* end = digits.data() + digits.size();
        const auto [stop, error] = std::from_chars(digits.data(), end, *out);
        return error == std::errc() && stop == end && *out >= 0 && *out <= kMaxTransformerLayers;
      };
      const size_t plus = spelled.find("+[1]*");
      if (spelled.rfind("[0]*", 0) == 0 && plus != std::string::npos &&
          count(spelled.substr(4, plus - 4), &dense) && count(spelled.substr(plus + 5), &moe)) {
        t.dense_layers = static_cast<int32_t>(dense);
        moe_layers = moe;
        continue;
      }
      return Error{where + "--moe-layer-freq '" + EscapeBytes(value) +
                   "' (expected 1 or ([0]*K+[1]*N): stagecraft models K dense layers, then MoE "
                   "layers, as `plan --export megatron` writes them)"};
    }
    if (flag == "--zero-stage") {
      STAGECRAFT_RETURN_IF_ERROR(choice({"0", "1", "2", "3"}));
      p.zero_stage = value[0] - '0';
      continue;
    }
    if (flag == "--recompute-granularity") {
      STAGECRAFT_RETURN_IF_ERROR(choice({"selective", "full"}));
      p.recompute = value == "full" ? Recompute::kFull : Recompute::kSelective;
      continue;
    }
    if (flag == "--recompute-method") {
      STAGECRAFT_RETURN_IF_ERROR(choice({"uniform", "block"}));
      recompute_method = value;
      recompute_method_where = where;
      continue;
    }
    if (flag == "--recompute-num-layers") {
      STAGECRAFT_RETURN_IF_ERROR(integer(1));
      recompute_num_layers = number;
      continue;
    }
    if (flag == "--pipeline-model-parallel-layout") {
      layout = value;
      layout_where = where;
      continue;
    }
    STAGECRAFT_RETURN_IF_ERROR(integer(flag == "--moe-shared-expert-intermediate-size" ? 0 : 1));
    if (flag == "--num-layers" && number > kMaxTransformerLayers) {
      return Error{where + "--num-layers " + std::to_string(number) + " is above the limit of " +
                   std::to_string(kMaxTransformerLayers) +
                   " layers (more than any published model; expected a real layer count)"};
    }
    if (flag == "--num-layers") t.layers = static_cast<int32_t>(number);
    if (flag == "--hidden-size") t.hidden = number;
    if (flag == "--num-attention-heads") t.heads = number;
    if (flag == "--num-query-groups") t.kv_heads = number;
    if (flag == "--kv-channels") t.head_dim = number;
    if (flag == "--ffn-hidden-size") t.ffn_hidden = number;
    if (flag == "--num-experts") t.experts = number;
    if (flag == "--moe-router-topk") t.experts_per_token = number;
    if (flag == "--moe-ffn-hidden-size") t.expert_ffn = number;
    if (flag == "--moe-shared-expert-intermediate-size") t.shared_experts = number;  // width, below
    if (flag == "--q-lora-rank") t.q_lora_rank = number;
    if (flag == "--kv-lora-rank") t.kv_lora_rank = number;
    if (flag == "--qk-head-dim") t.qk_nope_dim = number;
    if (flag == "--qk-pos-emb-head-dim") t.qk_rope_dim = number;
    if (flag == "--v-head-dim") t.v_head_dim = number;
    if (flag.rfind("--q", 0) == 0 || flag == "--kv-lora-rank" || flag == "--v-head-dim") {
      latent_where = where;
    }
    if (flag == "--seq-length") config.model.seq_len = static_cast<int32_t>(number);
    if (flag == "--vocab-size") t.vocab = number;
    if (flag == "--micro-batch-size") config.model.micro_batch_size = static_cast<int32_t>(number);
    if (flag == "--global-batch-size") global_batch = number;
    if (flag == "--tensor-model-parallel-size") p.tp = static_cast<int32_t>(number);
    if (flag == "--pipeline-model-parallel-size") p.pp = static_cast<int32_t>(number);
    if (flag == "--num-layers-per-virtual-pipeline-stage") layers_per_virtual_stage = number;
    if (flag == "--context-parallel-size") p.cp = static_cast<int32_t>(number);
    if (flag == "--expert-model-parallel-size") p.ep = static_cast<int32_t>(number);
    if (flag == "--decoder-first-pipeline-num-layers") first_stage_layers = number;
    if (flag == "--decoder-last-pipeline-num-layers") last_stage_layers = number;
  }
  // Megatron's full recomputation: 'uniform' with N recomputes every layer in groups of N, each
  // keeping its input; 'block' with N the first N layers of each pipeline chunk
  // (megatron/core/transformer/transformer_block.py, _checkpointed_forward). Megatron-DeepSpeed's
  // pipeline model takes the uniform N as its activation_checkpoint_interval.
  if (deepspeed) {
    // Megatron-DeepSpeed builds DeepSpeed's pipeline model (GPTModelPipe) unless
    // --no-pipeline-parallel (pretrain_gpt.py, model_provider). That model checkpoints through
    // the pipeline engine's activation_checkpoint_interval, taken from the uniform method only
    // ("deepspeed's pipeline doesn't support the block recompute method", gpt_model.py: with
    // block it checkpoints nothing), and DeepSpeed's PipelineEngine asserts ZeRO stage < 2
    // (deepspeed/runtime/pipe/engine.py). stagecraft reads --no-pipeline-parallel with pp 1, as
    // `plan --export deepspeed` writes it (arguments.py's own check of that is commented out).
    if (no_pipeline_parallel && p.pp != 1) {
      return Error{source +
                   ": --no-pipeline-parallel is read with --pipeline-model-parallel-size "
                   "1 only (as `plan --export deepspeed` writes it); drop it to run "
                   "DeepSpeed's pipeline engine"};
    }
    if (!no_pipeline_parallel && p.zero_stage >= 2) {
      return Error{source + ": --zero-stage " + std::to_string(p.zero_stage) +
                   " with DeepSpeed's pipeline model: its PipelineEngine asserts ZeRO stage < 2 "
                   "(deepspeed/runtime/pipe/engine.py); add --no-pipeline-parallel (pp 1) or use "
                   "--zero-stage 0 or 1"};
    }
    if (!no_pipeline_parallel && p.recompute == Recompute::kFull && recompute_method == "block") {
      return Error{recompute_method_where +
                   "--recompute-method block with DeepSpeed's pipeline model checkpoints nothing "
                   "(Megatron-DeepSpeed's gpt_model.py takes the interval from the uniform method "
                   "only); add --no-pipeline-parallel (pp 1, Megatron's block method) or use "
                   "--recompute-method uniform"};
    }
  }
  if (recompute_num_layers > 0) {
    if (recompute_method == "block") {
      p.recompute_num_layers = static_cast<int32_t>(recompute_num_layers);
    } else if (recompute_num_layers > 1) {
      p.recompute_num_layers = static_cast<int32_t>(recompute_num_layers);
      p.recompute_method = RecomputeMethod::kUniform;
    }
  }
  if (t.layers == 0 || t.hidden == 0 || t.heads == 0 || t.vocab == 0 || global_batch == 0) {
    return Error{source +
                 ": needs --num-layers, --hidden-size, --num-attention-heads, --vocab-size and "
                 "--global-batch-size (the arguments `plan --export " +
                 exporter + "` writes)"};
  }
  if (!grouped) t.kv_heads = 0;
  // Multi-head latent attention (Megatron's MLATransformerConfig): the ranks and head widths
  // without --multi-latent-attention are ignored by Megatron's GPT model, so reading them would
  // simulate attention the run does not have.
  if (latent &&
      (t.kv_lora_rank == 0 || t.qk_nope_dim == 0 || t.qk_rope_dim == 0 || t.v_head_dim == 0)) {
    return Error{source +
                 ": --multi-latent-attention needs --kv-lora-rank, --qk-head-dim, "
                 "--qk-pos-emb-head-dim and --v-head-dim (--q-lora-rank is optional: 0 = a full "
                 "query projection)"};
  }
  if (!latent && !latent_where.empty()) {
    return Error{latent_where +
                 "a latent-attention rank or head width without --multi-latent-attention "
                 "(add it, or drop the MLA arguments)"};
  }
  if (!moe_layer_freq_where.empty()) {
    if (t.experts == 0) {
      return Error{moe_layer_freq_where + "--moe-layer-freq without --num-experts"};
    }
    if (moe_layers >= 0 && t.dense_layers + moe_layers != t.layers) {
      return Error{moe_layer_freq_where + "--moe-layer-freq lists " +
                   std::to_string(t.dense_layers + moe_layers) + " layers, --num-layers is " +
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
  config.model.name = deepspeed ? "megatron-deepspeed-args" : "megatron-args";
  p.vpp = 1;
  if (!layout.empty() &&
      (layers_per_virtual_stage > 0 || first_stage_layers > 0 || last_stage_layers > 0)) {
    // megatron/training/arguments.py (no more than one of the virtual-stage arguments and the
    // layout) and transformer_config.py (the layout with no other pipeline layout argument).
    return Error{
        layout_where +
        "--pipeline-model-parallel-layout cannot be set with "
        "--num-layers-per-virtual-pipeline-stage or --decoder-first/last-pipeline-num-"
        "layers (Megatron's arguments.py and transformer_config.py; expected one of them)"};
  }
  if (layers_per_virtual_stage > 0) {
    if (t.layers % (int64_t{p.pp} * layers_per_virtual_stage) != 0) {
      return Error{source + ": --num-layers-per-virtual-pipeline-stage " +
                   std::to_string(layers_per_virtual_stage) + " does not split " +
                   std::to_string(t.layers) + " layers over " + std::to_string(p.pp) + " stages"};
    }
    p.vpp = static_cast<int32_t>(t.layers / (p.pp * layers_per_virtual_stage));
  }
  bool layout_read = false;
  if (!layout.empty()) {
    // Megatron's syntax (megatron/core/transformer/pipeline_parallel_layer_layout.py,
    // parse_str_to_list): commas are cosmetic; 'E' the embedding, 't' a decoder, 'L' the loss,
    // 'm' an MTP layer; X*N and (...)*N repeat; '|' separates the pp x vpp stages, listed
    // virtual stage by virtual stage (stage vpp_rank x pp + pp_rank), as stagecraft's loop
    // placement numbers them. The flattened layout spells E, the decoders, L
    // (validate_layer_layout).
    std::string spelled;
    for (char c : layout) {
      if (c != ',') spelled += c;
    }
    if (spelled.find('m') != std::string::npos) {
      return Error{layout_where + "--pipeline-model-parallel-layout '" + EscapeBytes(layout) +
                   "' places MTP layers ('m'), which stagecraft does not model (expected 'E', 't', "
                   "'L', '|', '*N' and '(...)*N')"};
    }
    std::string letters = "E" + std::string(static_cast<size_t>(t.layers), 't') + "L";
    auto partition = PartitionFromLayout(spelled, letters);
    if (!partition.ok()) {
      return Error{layout_where + "--pipeline-model-parallel-layout " + partition.error().message};
    }
    const int32_t stages = partition.value().num_stages();
    if (stages % p.pp != 0) {
      return Error{layout_where + "--pipeline-model-parallel-layout has " + std::to_string(stages) +
                   " stages, not a multiple of pp " + std::to_string(p.pp) +
                   " (Megatron's arguments.py: the layout's length divided "
                   "by pp is the virtual pipeline size)"};
    }
    p.vpp = stages / p.pp;
    layout_read = true;
    layout = spelled;
  }
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
  if (global_batch % per_step != 0) {
    return Error{source + ": --global-batch-size " + std::to_string(global_batch) +
                 " is not divisible by dp x micro-batch size = " + std::to_string(per_step)};
  }
  p.microbatches = static_cast<int32_t>(global_batch / per_step);
  config.schedule.name = p.vpp > 1 ? "interleaved-1f1b" : "1f1b";
  config.schedule.group_size = 0;
  // Megatron's default layout, as plan/plan.cc's candidates run; DeepSpeed's pipeline model
  // splits the decoders itself, any count over any pp (DeepSpeedTransformerCounts).
  p.partition = PartitionMethod::kCounts;
  p.layer_counts = deepspeed && p.pp > 1 && t.layers >= p.pp
                       ? DeepSpeedTransformerCounts(static_cast<int32_t>(t.layers), p.pp)
                       : EvenTransformerCounts(t.layers, p.pp * p.vpp);
  if (first_stage_layers > 0 || last_stage_layers > 0) {
    // Megatron's uneven split (megatron/core/transformer/transformer_config.py): the first and
    // the last stage take what is given, the middle stages the rest evenly. Read for vpp 1 and
    // both ends given, as `plan --export megatron` writes it.
    if (first_stage_layers == 0 || last_stage_layers == 0 || p.vpp != 1 || p.pp < 3) {
      return Error{source +
                   ": --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers "
                   "are read together, with pp >= 3 and no virtual pipeline (as `plan --export "
                   "megatron` writes them)"};
    }
    const int64_t middle = t.layers - first_stage_layers - last_stage_layers;
    if (middle < p.pp - 2 || middle % (p.pp - 2) != 0) {
      return Error{source + ": " + std::to_string(middle) +
                   " decoders left for the middle stages do not split evenly over " +
                   std::to_string(p.pp - 2) +
                   " stages (Megatron's rule for --decoder-first/last-pipeline-num-layers)"};
    }
    p.layer_counts.assign(static_cast<size_t>(p.pp), static_cast<int32_t>(middle / (p.pp - 2)));
    p.layer_counts.front() = static_cast<int32_t>(first_stage_layers) + 1;  // and the embedding
    p.layer_counts.back() = static_cast<int32_t>(last_stage_layers) + 1;    // and the head
  }
  if (layout_read) {
    p.partition = PartitionMethod::kLayout;
    p.layout = layout;
    p.layer_counts.clear();
  }
  return config;
}

}  // namespace stagecraft
