// The table of Megatron's arguments (io/megatron_args_table.h): how each value parses, what a
// read argument sets, and what a config writes, one row per argument. What holds across
// arguments (the layout against the layers, the batch against the cluster) is
// io/megatron_args.cc's.
#include "io/megatron_args_table.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "core/suggest.h"
#include "io/hf_config.h"
#include "schedule/partition.h"

namespace stagecraft::megatron_args {
namespace {

// A whole number from `low` to 2^31 - 1.
Status ParseWholeNumber(ArgLine& line, int64_t low) {
  const char* end = line.value.data() + line.value.size();
  const auto [stop, error] = std::from_chars(line.value.data(), end, line.number);
  if (error != std::errc() || stop != end || line.number < low ||
      line.number > std::numeric_limits<int32_t>::max()) {
    return Error{line.where + line.flag + " '" + EscapeBytes(line.value) +
                 "' is not a whole number >= " + std::to_string(low)};
  }
  return Status::Ok();
}

Status ParseCount(const MegatronArgument&, ArgLine& line) { return ParseWholeNumber(line, 1); }

Status ParseCountOrZero(const MegatronArgument&, ArgLine& line) {
  return ParseWholeNumber(line, 0);
}

// A count of decoder layers: at most kMaxTransformerLayers.
Status ParseLayerCount(const MegatronArgument& argument, ArgLine& line) {
  STAGECRAFT_RETURN_IF_ERROR(ParseCount(argument, line));
  if (line.number <= kMaxTransformerLayers) return Status::Ok();
  return Error{line.where + "--num-layers " + std::to_string(line.number) +
               " is above the limit of " + std::to_string(kMaxTransformerLayers) +
               " layers (more than any published model; expected a real layer count)"};
}

Status ParseChoice(const MegatronArgument& argument, ArgLine& line) {
  std::string expected;
  for (const char* name : argument.choices) {
    if (name == nullptr) break;
    if (line.value == name) return Status::Ok();
    expected += std::string(expected.empty() ? "" : ", ") + name;
  }
  return Error{line.where + line.flag + " '" + EscapeBytes(line.value) + "' (expected " + expected +
               ")"};
}

// Any text: a path or a name that changes nothing simulated, or a layout read once all is known.
Status ParseText(const MegatronArgument&, ArgLine&) { return Status::Ok(); }

// Megatron's moe_freq_type (arguments.py): an int N (every N-th layer MoE) or a Python list
// expression. stagecraft models a dense prefix: 1, or [0]*K+[1]*N (in parentheses or not), K
// dense layers then N MoE layers.
Status ParseMoeLayerFreq(const MegatronArgument&, ArgLine& line) {
  std::string spelled = line.value;
  if (spelled.size() >= 2 && spelled.front() == '(' && spelled.back() == ')') {
    spelled = spelled.substr(1, spelled.size() - 2);
  }
  if (spelled == "1") return Status::Ok();
  const auto count = [](const std::string& digits, int64_t* out) {
    const char* end = digits.data() + digits.size();
    const auto [stop, error] = std::from_chars(digits.data(), end, *out);
    return error == std::errc() && stop == end && *out >= 0 && *out <= kMaxTransformerLayers;
  };
  const size_t plus = spelled.find("+[1]*");
  if (spelled.rfind("[0]*", 0) == 0 && plus != std::string::npos &&
      count(spelled.substr(4, plus - 4), &line.dense_layers) &&
      count(spelled.substr(plus + 5), &line.moe_layers)) {
    return Status::Ok();
  }
  return Error{line.where + "--moe-layer-freq '" + EscapeBytes(line.value) +
               "' (expected 1 or ([0]*K+[1]*N): stagecraft models K dense layers, then MoE "
               "layers, as `plan --export megatron` writes them)"};
}

void ApplyMoeLayerFreq(const ArgLine& line, Arguments& args) {
  args.moe_layer_freq_where = line.where;
  if (line.moe_layers < 0) return;  // 1: every layer (or as an earlier line said)
  args.transformer().dense_layers = static_cast<int32_t>(line.dense_layers);
  args.moe_layers = line.moe_layers;
}

// A latent-attention rank or head width, read only with --multi-latent-attention.
void NoteLatentWhere(const ArgLine& line, Arguments& args) { args.latent_where = line.where; }

// A parsed whole number as the int32_t fields hold it (ParseWholeNumber caps it at 2^31 - 1).
int32_t Narrow(int64_t number) { return static_cast<int32_t>(number); }

using Written = std::optional<std::string>;

Written Number(int64_t value) { return std::to_string(value); }
// A switch: written ("") or not.
Written Switch(bool on) { return on ? Written("") : std::nullopt; }
// `value` where `on`, else not written.
Written NumberIf(bool on, int64_t value) { return on ? Number(value) : std::nullopt; }

// Grouped-query attention: fewer KV heads than query heads.
bool Grouped(const WriteInput& in) {
  return in.t().kv_heads > 0 && in.t().kv_heads != in.t().heads;
}

// The pipeline's split as Megatron's layout string (megatron/core/transformer/
// pipeline_parallel_layer_layout.py): a layout read as one, or counts other than Megatron's even
// split, or counts pp x vpp does not divide (which Megatron runs only as a layout, the even split
// included). "" = the even split, which needs no argument.
std::string LayoutString(const WriteInput& in) {
  const ParallelSpec& p = in.p();
  if (p.partition == PartitionMethod::kLayout) return p.layout;
  if (p.partition != PartitionMethod::kCounts || p.layer_counts.empty()) return "";
  const int32_t stages = p.pp * p.vpp;
  const int32_t layers = in.t().layers;
  if (p.layer_counts == EvenTransformerCounts(layers, stages) && layers % stages == 0) return "";
  return TransformerLayoutString(p.layer_counts);
}

// Megatron's full recomputation: the method and its N, settled once all is read (SettleRecompute).
void ApplyRecomputeMethod(const ArgLine& line, Arguments& args) {
  args.recompute_method = line.value;
  args.recompute_method_where = line.where;
}

Written WriteRecomputeMethod(const WriteInput& in) {
  const ParallelSpec& p = in.p();
  if (p.recompute != Recompute::kFull) return std::nullopt;
  if (p.recompute_num_layers == 0) return "uniform";
  return p.recompute_method == RecomputeMethod::kUniform ? "uniform" : "block";
}

// Every argument read, in the order `plan --export` writes them (Megatron's argument groups,
// megatron/training/arguments.py); "did you mean" searches the switches first, then the rest.
constexpr MegatronArgument kArguments[] = {
    // The model's shape.
    {"--num-layers", Engines::kBoth, ParseLayerCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().layers = Narrow(line.number); },
     [](const WriteInput& in) { return Number(in.t().layers); }},
    {"--hidden-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().hidden = line.number; },
     [](const WriteInput& in) { return Number(in.t().hidden); }},
    {"--num-attention-heads", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().heads = line.number; },
     [](const WriteInput& in) { return Number(in.t().heads); }},
    {"--group-query-attention", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.grouped = true; },
     [](const WriteInput& in) { return Switch(Grouped(in)); }},
    {"--num-query-groups", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().kv_heads = line.number; },
     [](const WriteInput& in) { return NumberIf(Grouped(in), in.t().kv_heads); }},
    {"--kv-channels", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().head_dim = line.number; },
     [](const WriteInput& in) {
       const TransformerSpec& t = in.t();
       return NumberIf(t.head_dim > 0 && t.head_dim != t.hidden / t.heads, t.head_dim);
     }},
    // Multi-head latent attention (DeepSeek-V2/V3; Megatron's MLATransformerConfig,
    // arguments.py's
    // MLA group): the query's low rank (0 = a full projection), the KV latent, the heads'
    // no-RoPE
    // and RoPE widths and the value width.
    {"--multi-latent-attention", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.latent = true; },
     [](const WriteInput& in) { return Switch(in.t().mla()); }},
    {"--q-lora-rank", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().q_lora_rank = line.number;
       NoteLatentWhere(line, args);
     },
     [](const WriteInput& in) {
       return NumberIf(in.t().mla() && in.t().q_lora_rank > 0, in.t().q_lora_rank);
     }},
    {"--kv-lora-rank", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().kv_lora_rank = line.number;
       NoteLatentWhere(line, args);
     },
     [](const WriteInput& in) { return NumberIf(in.t().mla(), in.t().kv_lora_rank); }},
    {"--qk-head-dim", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().qk_nope_dim = line.number;
       NoteLatentWhere(line, args);
     },
     [](const WriteInput& in) { return NumberIf(in.t().mla(), in.t().qk_nope_dim); }},
    {"--qk-pos-emb-head-dim", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().qk_rope_dim = line.number;
       NoteLatentWhere(line, args);
     },
     [](const WriteInput& in) { return NumberIf(in.t().mla(), in.t().qk_rope_dim); }},
    {"--v-head-dim", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().v_head_dim = line.number;
       NoteLatentWhere(line, args);
     },
     [](const WriteInput& in) { return NumberIf(in.t().mla(), in.t().v_head_dim); }},
    {"--ffn-hidden-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().ffn_hidden = line.number; },
     [](const WriteInput& in) { return Number(in.t().ffn_or_default()); }},
    // Mixture of experts; the shared experts' width becomes a count once all is read.
    {"--num-experts", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().experts = line.number; },
     [](const WriteInput& in) { return NumberIf(in.t().moe(), in.t().experts); }},
    // The dense first layers (DeepSeek-V3's 3 of 61) as Megatron's list expression; the others
    // MoE (the launcher never globs the arguments, so its brackets and stars pass as written).
    {"--moe-layer-freq", Engines::kBoth, ParseMoeLayerFreq, ApplyMoeLayerFreq,
     [](const WriteInput& in) -> Written {
       const TransformerSpec& t = in.t();
       if (!t.moe() || t.dense_layers == 0) return std::nullopt;
       return "([0]*" + std::to_string(t.dense_layers) + "+[1]*" +
              std::to_string(t.layers - t.dense_layers) + ")";
     }},
    {"--moe-router-topk", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().experts_per_token = line.number;
     },
     [](const WriteInput& in) { return NumberIf(in.t().moe(), in.t().experts_per_token); }},
    {"--moe-ffn-hidden-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().expert_ffn = line.number; },
     [](const WriteInput& in) { return NumberIf(in.t().moe(), in.t().expert_ffn); }},
    {"--moe-shared-expert-intermediate-size", Engines::kBoth, ParseCountOrZero,
     [](const ArgLine& line, Arguments& args) { args.transformer().shared_experts = line.number; },
     [](const WriteInput& in) {
       const TransformerSpec& t = in.t();
       return NumberIf(t.moe() && t.shared_experts > 0, t.shared_experts * t.expert_ffn);
     }},
    // What stagecraft costs: the experts as one grouped GEMM, the tokens dispatched and
    // combined
    // by an all-to-all over the expert-parallel group.
    {"--moe-grouped-gemm", Engines::kBoth, nullptr, nullptr,
     [](const WriteInput& in) { return Switch(in.t().moe()); }},
    {"--moe-token-dispatcher-type",
     Engines::kBoth,
     ParseChoice,
     nullptr,
     [](const WriteInput& in) { return in.t().moe() ? Written("alltoall") : std::nullopt; },
     {"alltoall"}},
    // The MLP, the norm, the biases, the positions and the head.
    {"--swiglu", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().swiglu = true; },
     [](const WriteInput& in) { return Switch(in.t().swiglu); }},
    {"--normalization",
     Engines::kBoth,
     ParseChoice,
     nullptr,
     [](const WriteInput& in) { return Written(in.t().bias ? "LayerNorm" : "RMSNorm"); },
     {"LayerNorm", "RMSNorm"}},
    {"--disable-bias-linear", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().bias = false; },
     [](const WriteInput& in) { return Switch(!in.t().bias); }},
    {"--position-embedding-type",
     Engines::kBoth,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().learned_positions = line.value == "learned_absolute";
     },
     [](const WriteInput& in) {
       return Written(in.t().learned_positions ? "learned_absolute" : "rope");
     },
     {"learned_absolute", "rope"}},
    {"--untie-embeddings-and-output-weights", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().tied_embeddings = false; },
     [](const WriteInput& in) { return Switch(!in.t().tied_embeddings); }},
    // The sequence, the vocabulary and the batch; the data is Megatron's mock data (the user
    // puts
    // a tokenizer and data in).
    {"--seq-length", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.config.model.seq_len = Narrow(line.number); },
     [](const WriteInput& in) { return Number(in.config.model.seq_len); }},
    {"--max-position-embeddings", Engines::kBoth, ParseCount, nullptr,
     [](const WriteInput& in) { return Number(in.config.model.seq_len); }},
    {"--tokenizer-type", Engines::kBoth, ParseText, nullptr,
     [](const WriteInput&) { return Written("NullTokenizer"); }},
    {"--vocab-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().vocab = line.number; },
     [](const WriteInput& in) { return Number(in.t().vocab); }},
    {"--mock-data", Engines::kBoth, nullptr, nullptr,
     [](const WriteInput&) { return Switch(true); }},
    {"--micro-batch-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.config.model.micro_batch_size = Narrow(line.number);
     },
     [](const WriteInput& in) { return Number(in.config.model.micro_batch_size); }},
    {"--global-batch-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.global_batch = line.number; },
     [](const WriteInput& in) { return Number(in.context.global_batch); }},
    // Parallelism and the pipeline's layout.
    {"--tensor-model-parallel-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().tp = Narrow(line.number); },
     [](const WriteInput& in) { return Number(in.p().tp); }},
    {"--pipeline-model-parallel-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().pp = Narrow(line.number); },
     [](const WriteInput& in) { return Number(in.p().pp); }},
    // An uneven split as the layout string: the chunks in virtual-stage order, the embedding
    // with
    // the first and the loss with the last; the number of chunks over pp is the virtual
    // pipeline
    // size, so --num-layers-per-virtual-pipeline-stage is not given with it (arguments.py).
    {"--pipeline-model-parallel-layout", Engines::kMegatronLm, ParseText,
     [](const ArgLine& line, Arguments& args) {
       args.layout = line.value;
       args.layout_where = line.where;
     },
     [](const WriteInput& in) -> Written {
       std::string layout = LayoutString(in);
       if (layout.empty()) return std::nullopt;
       return layout;
     }},
    {"--num-layers-per-virtual-pipeline-stage", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.layers_per_virtual_stage = line.number; },
     [](const WriteInput& in) {
       const ParallelSpec& p = in.p();
       return NumberIf(p.vpp > 1 && LayoutString(in).empty(), in.t().layers / (p.pp * p.vpp));
     }},
    // A first/last split is also read this way; it is written as the layout string above.
    {"--decoder-first-pipeline-num-layers", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.first_stage_layers = line.number; }, nullptr},
    {"--decoder-last-pipeline-num-layers", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.last_stage_layers = line.number; }, nullptr},
    {"--context-parallel-size", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().cp = Narrow(line.number); },
     [](const WriteInput& in) { return Number(in.p().cp); }},
    {"--expert-model-parallel-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().ep = Narrow(line.number); },
     [](const WriteInput& in) { return NumberIf(in.p().ep > 1, in.p().ep); }},
    // Megatron-DeepSpeed's runs leave it out: the plan runs DeepSpeed's TP without it.
    {"--sequence-parallel", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().sequence_parallel = true; },
     [](const WriteInput& in) { return Switch(in.p().sequence_parallel); }},
    // Recomputation. Full: block, Megatron's, or Megatron-DeepSpeed's without its pipe;
    // uniform,
    // groups of N (the pipe model's activation_checkpoint_interval); every layer is uniform 1.
    {"--recompute-granularity",
     Engines::kBoth,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) {
       args.parallel().recompute = line.value == "full" ? Recompute::kFull : Recompute::kSelective;
     },
     [](const WriteInput& in) -> Written {
       if (in.p().recompute == Recompute::kSelective) return "selective";
       if (in.p().recompute == Recompute::kFull) return "full";
       return std::nullopt;
     },
     {"selective", "full"}},
    {"--recompute-method",
     Engines::kBoth,
     ParseChoice,
     ApplyRecomputeMethod,
     WriteRecomputeMethod,
     {"uniform", "block"}},
    {"--recompute-num-layers", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.recompute_num_layers = line.number; },
     [](const WriteInput& in) {
       const ParallelSpec& p = in.p();
       return NumberIf(p.recompute == Recompute::kFull, std::max(1, p.recompute_num_layers));
     }},
    // The optimizer and the overlaps: the recipe Megatron's examples run, the distributed
    // optimizer (ZeRO-1) with both overlaps.
    {"--use-distributed-optimizer", Engines::kMegatronLm, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().distributed_optimizer = true; },
     [](const WriteInput& in) { return Switch(in.p().distributed_optimizer); }},
    {"--overlap-param-gather", Engines::kMegatronLm, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().overlap_param_gather = true; },
     [](const WriteInput& in) { return Switch(in.p().overlap_param_gather); }},
    {"--overlap-grad-reduce", Engines::kMegatronLm, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().overlap_grad_reduce = true; },
     [](const WriteInput& in) { return Switch(in.p().overlap_grad_reduce); }},
    {"--bf16", Engines::kBoth, nullptr, nullptr, [](const WriteInput&) { return Switch(true); }},
    // FP8 through Transformer Engine: the format (either runs the GEMMs in FP8) and the recipe
    // (default delayed); settled once all is read (megatron_args.cc).
    {"--fp8-format",
     Engines::kMegatronLm,
     ParseChoice,
     [](const ArgLine&, Arguments& args) { args.parallel().fp8 = true; },
     [](const WriteInput& in) { return in.p().fp8 ? Written("hybrid") : std::nullopt; },
     {"e4m3", "hybrid"}},
    {"--fp8-recipe",
     Engines::kMegatronLm,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) {
       args.fp8_recipe = line.value;
       args.fp8_recipe_where = line.where;
     },
     [](const WriteInput& in) -> Written {
       // torchao's rowwise recipes have no Megatron name: none written (Megatron runs delayed).
       const Fp8Recipe recipe = in.p().fp8_recipe;
       if (!in.p().fp8 || recipe == Fp8Recipe::kRowwise || recipe == Fp8Recipe::kRowwiseWithGwHp) {
         return std::nullopt;
       }
       return std::string(Fp8RecipeName(recipe));
     },
     {"tensorwise", "delayed", "mxfp8", "blockwise"}},
    {"--use-flash-attn", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().causal = true; },
     [](const WriteInput& in) { return Switch(in.t().causal); }},
    // Megatron-DeepSpeed's own: DeepSpeed, its config (written beside the arguments) and ZeRO.
    {"--deepspeed", Engines::kDeepSpeed, nullptr, nullptr,
     [](const WriteInput&) { return Switch(true); }},
    {"--deepspeed_config", Engines::kDeepSpeed, ParseText, nullptr,
     [](const WriteInput&) { return Written("ds_config.json"); }},
    {"--zero-stage",
     Engines::kDeepSpeed,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) { args.parallel().zero_stage = line.value[0] - '0'; },
     [](const WriteInput& in) { return Number(in.p().zero_stage); },
     {"0", "1", "2", "3"}},
    // Without pipeline stages, Megatron's own model rather than DeepSpeed's pipe model
    // (pretrain_gpt.py): the pipe engine asserts ZeRO < 2 and has no block recomputation.
    {"--no-pipeline-parallel", Engines::kDeepSpeed, nullptr,
     [](const ArgLine&, Arguments& args) { args.no_pipeline_parallel = true; },
     [](const WriteInput& in) { return Switch(in.p().pp == 1); }},
};

}  // namespace

std::span<const MegatronArgument> ArgumentTable() { return kArguments; }

bool TakenBy(const MegatronArgument& argument, MegatronDialect dialect) {
  return argument.engines == Engines::kBoth ||
         argument.engines == (dialect == MegatronDialect::kMegatronDeepSpeed
                                  ? Engines::kDeepSpeed
                                  : Engines::kMegatronLm);
}

const MegatronArgument* FindArgument(std::string_view flag) {
  for (const MegatronArgument& argument : kArguments) {
    if (flag == argument.flag) return &argument;
  }
  return nullptr;
}

}  // namespace stagecraft::megatron_args
